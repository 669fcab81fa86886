"""The relay: one request from a tool, down the road every git-sluice call takes, answered as GitHub would.

Whose call it is decides everything: a caller's own ``Authorization`` is
used and decides its pool (a forge per token, with kept answers of its own:
one token's answer never reaches another token). Without one, a call on the
Unix socket (private to the user) goes with the host's credentials; a TCP
caller without one is refused, since any local user can reach a port.

What the road does not do for a POST, the relay does for GraphQL: identical
queries of one token within ``sluice.graphqlWindow`` are answered once
(:mod:`.window`). Refusals come back in GitHub's own shape (:mod:`.shapes`).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from ..errors import (
    AllowanceSpent,
    CallTimedOut,
    CredentialsRefused,
    ForeignURL,
    ForgeUnavailable,
    Interrupted,
    SluiceError,
    WriteDeferred,
)
from ..forge.auth import StaticToken, UserPoolResolver
from ..forge.client import Answer, Forge
from ..forge.hoststore import BudgetRow
from ..forge.kept_answers import KeptAnswers
from ..forge.pacing import is_mutation
from ..forge.writepace import graphql_operation
from ..runtime.session import Session
from . import shapes
from .metrics import Metrics
from .window import QueryWindow, query_key

log = logging.getLogger("git_sluice")

MAX_FORGES = 64
"""Callers' tokens with a forge at once (least recently used closed first)."""
CALLER_SOURCE = "the caller's Authorization header"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Relay:
    """Answers requests for one clone's settings, on behalf of every caller of one ``serve``."""

    def __init__(self, session: Session, state_dir: Path, *, metrics: Metrics | None = None) -> None:
        self.session = session
        self.state_dir = state_dir
        self.clock = session.clock
        self.window = QueryWindow(session.clock, session.settings.graphql_window)
        self.metrics = metrics or Metrics(session.store)
        self._forges: OrderedDict[str, Forge] = OrderedDict()
        self._lock = threading.Lock()
        self._resolver = UserPoolResolver(session.settings.api, state_dir, source=CALLER_SOURCE,
                                          cancel=session.forge.waits.cancel)

    def close(self) -> None:
        with self._lock:
            forges, self._forges = list(self._forges.values()), OrderedDict()
        for forge in forges:
            try:
                forge.close()
            except Exception:
                pass

    # ------------------------------------------------------------------ whose call

    def forge_for(self, token: str | None) -> tuple[Forge, str]:
        """The forge a call goes through and the digest its kept GraphQL answers go under."""
        if token is None:
            return self.session.forge, "host"
        key = digest(token)
        with self._lock:
            forge = self._forges.get(key)
            if forge is not None:
                self._forges.move_to_end(key)
                return forge, key
        made = self._make_forge(token, key)
        with self._lock:
            forge = self._forges.setdefault(key, made)
            self._forges.move_to_end(key)
            evicted = [self._forges.popitem(last=False)[1] for _ in range(max(len(self._forges) - MAX_FORGES, 0))]
        for old in ([made] if forge is not made else []) + evicted:
            try:
                old.close()
            except Exception:
                pass
        return forge, key

    def _make_forge(self, token: str, key: str) -> Forge:
        session = self.session
        assert session.forge_with is not None
        credentials = StaticToken(value=token, source=CALLER_SOURCE, api=session.settings.api,
                                  resolver=self._resolver)
        kept = KeptAnswers(session.repo.sluice_dir / "serve-kept" / key[:24])
        forge: Forge = session.forge_with(kept, credentials)
        return forge

    # --------------------------------------------------------------------- a call

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes, *, tcp: bool) -> shapes.Reply:
        """One request, answered: never raises (an unexpected failure is a 500 that names the log)."""
        lowered = {k.lower(): v for k, v in headers.items()}
        where = shapes.route(method, target)
        if where.kind == "bad":
            return self._count(shapes.bad_request(where.path), "bad", None)
        if where.kind == "metrics":
            return shapes.Reply(200, {"content-type": self.metrics.content_type}, self.metrics.render())
        token = shapes.token_of(lowered.get("authorization"))
        if token is None and tcp:
            return self._count(shapes.unauthenticated(
                "git sluice serve answers a TCP port only for calls that carry their own token "
                "(any local user can reach a port); use the Unix socket, or send your token"), "refused", None)
        try:
            forge, who = self.forge_for(token)
            if where.kind == "graphql":
                return self._graphql(forge, who, lowered, body)
            caller = shapes.caller_base(lowered.get("host"), tcp=tcp, upstream=forge.api, prefix=where.prefix)
            return self._rest(forge, method, where.path, lowered, body, caller)
        except AllowanceSpent as exc:
            return self._count(shapes.spent(resource=exc.resource, pool=exc.pool, until=exc.until,
                                            now=self.clock.time(), limit=self._limit(exc.pool, exc.resource)),
                               "refused", exc.resource)
        except WriteDeferred as exc:
            self.metrics.deferred(exc.pool)
            return self._count(shapes.deferred(pool=exc.pool, until=exc.until, now=self.clock.time()),
                               "deferred", None)
        except CredentialsRefused as exc:
            return self._count(shapes.unauthenticated(f"GitHub refused the token ({exc})"), "refused", None)
        except ForeignURL as exc:
            return self._count(shapes.bad_request(f"a path under sluice.api ({exc})"), "bad", None)
        except CallTimedOut as exc:
            return self._count(shapes.unavailable(str(exc), retry=None, now=self.clock.time(), status=504),
                               "error", None)
        except ForgeUnavailable as exc:
            until = getattr(exc, "until", None) if exc.remembered else None  # a set-up failure: no retry time
            return self._count(shapes.unavailable(str(exc), retry=until if isinstance(until, float) else None,
                                                  now=self.clock.time()), "error", None)
        except Interrupted as exc:
            return self._count(shapes.unavailable(f"stopping: {exc}", retry=5.0 + self.clock.time(),
                                                  now=self.clock.time(), status=503), "error", None)
        except SluiceError as exc:
            return self._count(shapes.unavailable(str(exc), retry=None, now=self.clock.time()), "error", None)
        except Exception as exc:  # never a traceback to a caller: one line in the log, a 500 that says so
            log.error("serve: %s %s failed: %s: %s", method, where.path or "/graphql", type(exc).__name__, exc)
            return self._count(shapes.unavailable("internal error; see `git sluice status` and the log",
                                                  retry=None, now=self.clock.time(), status=500), "error", None)

    def _rest(self, forge: Forge, method: str, path: str, headers: Mapping[str, str], body: bytes,
              caller: str | None = None) -> shapes.Reply:
        """A REST call; the answer names ``caller`` (the base the caller addressed) where GitHub named itself."""
        answer = forge.request(method, path, content=body if body or method != "GET" else None,
                               headers={k: v for k, v in headers.items() if k in shapes.FORWARDED_REQUEST_HEADERS})
        reply = shapes.rebased(self._reply(answer), forge.api, caller)
        if method.upper() == "GET" and answer.status == 200 and shapes.not_modified_for(
                headers.get("if-none-match"), answer.headers.get("etag")):
            reply = shapes.Reply(304, {k: v for k, v in reply.headers.items() if k != "content-type"}, b"")
        return self._count(reply, self._how(answer), "core", forge)

    def _graphql(self, forge: Forge, who: str, headers: Mapping[str, str], body: bytes) -> shapes.Reply:
        query, name = graphql_operation(body)
        sent = {k: v for k, v in headers.items() if k in shapes.FORWARDED_REQUEST_HEADERS}
        key = None if is_mutation(query, name) else query_key(who, body)

        def ask() -> tuple[int, dict[str, str], bytes]:
            answer = forge.request("POST", forge.graphql_url, content=body, headers=sent)
            reply = self._reply(answer)
            return reply.status, reply.headers, reply.body

        if key is None:  # a mutation, or no GraphQL request: never kept
            status, out_headers, out = ask()
            return self._count(shapes.Reply(status, out_headers, out), "counted", "graphql", forge)
        kept, hit = self.window.answer(key, ask)
        out_headers = dict(kept.headers)
        if hit:
            age = max(self.clock.time() - kept.at, 0.0)
            out_headers["x-sluice"] = "kept"
            out_headers["x-sluice-age"] = f"{age:.0f}"
            out_headers.update(self._rate_now(forge, "graphql"))
            self.metrics.window_hit()
        return self._count(shapes.Reply(kept.status, out_headers, kept.body), "kept" if hit else "counted",
                           "graphql", forge)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _reply(answer: Answer) -> shapes.Reply:
        headers = shapes.passed_on(answer.headers)
        headers["x-sluice"] = ("shared" if answer.shared else "304" if answer.from_kept
                               else "counted" if answer.counted else "sent")
        return shapes.Reply(answer.status, headers, answer.body)

    @staticmethod
    def _how(answer: Answer) -> str:
        if answer.shared:
            return "shared"
        if answer.from_kept:
            return "not_modified"
        return "counted" if answer.counted else "sent"

    def _count(self, reply: shapes.Reply, how: str, resource: str | None, forge: Forge | None = None) -> shapes.Reply:
        pool = None
        if forge is not None:
            try:
                pool = forge.pool_for(resource or "core")
            except Exception:
                pool = None
        self.metrics.call(resource or "none", reply.status, pool or "unknown", how)
        return reply

    def _row(self, pool: str, resource: str) -> BudgetRow | None:
        try:
            for row in self.session.store.budget():
                if row.pool == pool and row.resource == resource:
                    return row
        except Exception:
            return None
        return None

    def _limit(self, pool: str, resource: str) -> int | None:
        row = self._row(pool, resource)
        return row.limit if row is not None else None

    def _rate_now(self, forge: Forge, resource: str) -> dict[str, str]:
        """The rate headers as the host last heard them, for a kept answer: its own are as old as it is,
        and a tool that paces itself by ``x-ratelimit-remaining`` must not read an old, higher number."""
        try:
            row = self._row(forge.pool_for(resource), resource)
        except Exception:
            return {}
        if row is None:
            return {}
        out = {"x-ratelimit-resource": resource}
        for name, value in (("limit", row.limit), ("remaining", row.remaining), ("used", row.used),
                            ("reset", int(row.reset) if row.reset is not None else None)):
            if value is not None:
                out[f"x-ratelimit-{name}"] = str(value)
        return out
