"""The forge client: the only way anything in git-sluice reaches GitHub.

Every call goes the same road, in this order, so no caller can skip a rule:

1. failure memory — an address that failed recently is not asked (kept.py);
2. single flight — one caller per address on the host; a caller that waited
   for someone else's call to the same address shares its answer (kept.py);
3. a permit from the host store — no call while (pool, resource) is paused,
   one probe at the pause's end, then cohorts of 1, 2, 4, 8 (hoststore.py);
4. the permit is *started* just before the wire: a throttle seen meanwhile by
   any process advanced the epoch, and the call is dropped unsent;
5. every GET is conditional; a 304 is answered from the kept body;
6. every answer is classified (rules.py); a throttle pauses the host (and,
   through ``on_pause``, the fleet); the rate headers go to the budget ledger.
"""

from __future__ import annotations

import json as jsonlib
import logging
import time as _time
from datetime import datetime
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping
from urllib.parse import urlencode, urlsplit

import httpx

from .. import __version__
from ..clock import Clock
from ..errors import AllowanceSpent, SluiceError, local_time
from . import rules
from .auth import Credentials
from .hoststore import HostStore, Outcome, PauseView, Permit, Wait
from .kept import KeptAnswers, Meta, address_of

log = logging.getLogger("git_sluice")

USER_AGENT = f"git-sluice/{__version__}"


class ForgeUnavailable(SluiceError):
    """GitHub did not answer usefully at an address; it is not asked again until ``until``."""

    def __init__(self, address: str, until: float, reason: str) -> None:
        self.address = address
        self.until = until
        self.reason = reason
        super().__init__(f"GitHub unavailable for {address}: {reason}; not asked again before {local_time(until)}")


class ForgeError(SluiceError):
    """GitHub answered with an error that is not a throttle (404, 401, a permission 403, …)."""

    def __init__(self, status: int, address: str, message: str) -> None:
        self.status = status
        self.address = address
        self.message = message
        super().__init__(f"GitHub answered {status} for {address}: {message}")


@dataclass
class Answer:
    """What a call produced. ``from_kept``: the body is the kept one (GitHub said 304, or a shared flight)."""

    status: int
    headers: dict[str, str]
    body: bytes
    url: str
    from_kept: bool = False
    shared: bool = False
    counted: bool = False

    def json(self) -> Any:
        return jsonlib.loads(self.body) if self.body else None

    @property
    def not_modified(self) -> bool:
        return self.from_kept and not self.shared

    def raise_for_status(self) -> "Answer":
        if self.status >= 400:
            message = ""
            try:
                data = self.json()
                if isinstance(data, dict):
                    message = str(data.get("message", ""))
            except ValueError:
                message = self.body[:200].decode("utf-8", "replace")
            raise ForgeError(self.status, self.url, message or "error")
        return self

    def next_url(self) -> str | None:
        """The ``rel="next"`` page from GitHub's Link header."""
        link = self.headers.get("link", "")
        for part in link.split(","):
            if 'rel="next"' in part:
                start, end = part.find("<"), part.find(">")
                if 0 <= start < end:
                    return part[start + 1 : end]
        return None


@dataclass
class Stats:
    """What this client did, for a round's report and the tests."""

    requests: int = 0  # calls that reached the wire
    counted: int = 0  # of them, counted against the allowance (REST calls)
    points: int = 0  # GraphQL points spent
    not_modified: int = 0  # 304s
    shared: int = 0  # answers shared from another caller's flight
    not_attempted: int = 0  # permits fenced before the wire
    failures: int = 0
    throttles: int = 0
    calls: list[tuple[str, int]] = field(default_factory=list)  # (address, status)


PauseListener = Callable[[PauseView], None]
WaitListener = Callable[[Wait], None]
ProbeClaim = Callable[[Permit], bool]
ProbeListener = Callable[[Permit], None]


class Forge:
    """GitHub through git-sluice's rules. Thread-safe enough for one process's threads."""

    def __init__(
        self,
        *,
        api: str,
        graphql_url: str,
        credentials: Credentials,
        store: HostStore,
        kept: KeptAnswers,
        clock: Clock,
        enforce: bool = True,
        on_pause: PauseListener | None = None,
        on_wait: WaitListener | None = None,
        probe_claim: ProbeClaim | None = None,
        on_probed: ProbeListener | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        permit_deadline: float = 60.0,
    ) -> None:
        self.api = api.rstrip("/")
        self.graphql_url = graphql_url
        self.credentials = credentials
        self.store = store
        self.kept = kept
        self.clock = clock
        self.enforce = enforce
        self.on_pause = on_pause
        self.on_wait = on_wait
        # across hosts: the one probe at a pause's end is claimed on the fleet's pause note
        self.probe_claim = probe_claim
        self.on_probed = on_probed
        self.permit_deadline = permit_deadline
        self.stats = Stats()
        self._http = httpx.Client(transport=transport, timeout=timeout, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Forge":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public ------------------------------------------------------------
    @property
    def pool(self) -> str:
        return self.credentials.pool_id()

    def url_for(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        if path.startswith(("http://", "https://")):
            if not path.startswith(self.api + "/") and not path.startswith(self.graphql_url):
                raise SluiceError(f"{path} is not under the configured API {self.api}")
            url = path
        else:
            url = f"{self.api}/{path.lstrip('/')}"
        if params:
            url += ("&" if "?" in url else "?") + urlencode({k: v for k, v in params.items() if v is not None})
        return url

    def get(
        self, path: str, params: Mapping[str, Any] | None = None, *, wait: bool = False, deadline: float | None = None
    ) -> Answer:
        """A conditional GET: 0 counted calls when GitHub says nothing changed."""
        return self.request("GET", path, params=params, wait=wait, deadline=deadline)

    def graphql(
        self, query: str, variables: Mapping[str, Any] | None = None, *, wait: bool = False, deadline: float | None = None
    ) -> dict[str, Any]:
        """One GraphQL document; a ``RATE_LIMITED`` answer pauses the graphql resource."""
        payload = {"query": query, "variables": dict(variables or {})}
        answer = self.request("POST", self.graphql_url, json_body=payload, wait=wait, deadline=deadline)
        answer.raise_for_status()
        data = answer.json()
        if not isinstance(data, dict):
            raise ForgeError(answer.status, answer.url, "GraphQL answer is not an object")
        return data

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        wait: bool = False,
        deadline: float | None = None,
    ) -> Answer:
        method = method.upper()
        url = self.url_for(path, params)
        address = address_of(method, url)
        if method == "GET":
            return self._get_single_flight(address, url, wait=wait, deadline=deadline)
        meta = self._check_failure_memory(address)
        return self._send(method, url, address, meta, json_body=json_body, wait=wait, deadline=deadline)

    # -- the road ----------------------------------------------------------
    def _check_failure_memory(self, address: str) -> Meta:
        meta = self.kept.meta(address)
        now = self.clock.time()
        if meta.fail_until is not None and meta.fail_until > now:
            raise ForgeUnavailable(address, meta.fail_until, meta.fail_reason or "failed recently")
        return meta

    def _get_single_flight(self, address: str, url: str, *, wait: bool, deadline: float | None) -> Answer:
        before = self._check_failure_memory(address)
        with self.kept.flight(address):
            meta = self.kept.meta(address)
            if meta.generation != before.generation:
                # another caller's call to this address finished while we waited for it: share it
                if meta.fail_until is not None and meta.fail_until > self.clock.time():
                    raise ForgeUnavailable(address, meta.fail_until, meta.fail_reason or "failed just now")
                kept = self.kept.body(address, meta)
                if kept is not None:
                    self.stats.shared += 1
                    return Answer(kept.status, dict(kept.headers), kept.body, url, from_kept=True, shared=True)
            return self._send("GET", url, address, meta, json_body=None, wait=wait, deadline=deadline)

    def _admit(self, resource: str, *, wait: bool, deadline: float | None) -> Permit:
        """A started permit for (pool, resource), waiting where the caller allows it."""
        pool = self.pool
        said_paused = False
        while True:
            decision = self.store.acquire(pool, resource, deadline=self.permit_deadline, enforce=self.enforce)
            now = self.clock.time()
            if isinstance(decision, Permit):
                if self.store.start(decision):
                    if decision.kind == "probe" and self.probe_claim is not None and not self.probe_claim(decision):
                        continue  # another host probes for the fleet; the claim recorded the wait
                    return decision
                # a throttle moved the epoch between our permit and the wire: not attempted
                self.stats.not_attempted += 1
                continue
            if decision.reason == "paused":
                if not wait or (deadline is not None and decision.until > deadline):
                    raise AllowanceSpent(pool, resource, decision.until)
                if not said_paused and self.on_wait is not None:
                    self.on_wait(decision)
                said_paused = True
                self.clock.sleep(max(decision.until - now, 0.0) + 0.001)
                continue
            # a probe or a cohort is in flight: its calls end within seconds
            if deadline is not None and now > deadline:
                raise AllowanceSpent(pool, resource, decision.until, reason=f"{decision.reason} in progress")
            # real time, not the injected clock: the wait is for another caller's call to end
            _time.sleep(0.005)

    def _send(
        self,
        method: str,
        url: str,
        address: str,
        meta: Meta,
        *,
        json_body: Any,
        wait: bool,
        deadline: float | None,
    ) -> Answer:
        path = urlsplit(url).path
        resource = rules.resource_for(method, path)
        kept_body = self.kept.body(address, meta) if method == "GET" else None
        while True:
            permit = self._admit(resource, wait=wait, deadline=deadline)
            headers = {
                "Authorization": f"token {self.credentials.token()}",
                "Accept": "application/vnd.github+json",
                "User-Agent": USER_AGENT,
            }
            if kept_body is not None:
                if meta.etag:
                    headers["If-None-Match"] = meta.etag
                if meta.last_modified:
                    headers["If-Modified-Since"] = meta.last_modified
            try:
                response = self._http.request(method, url, headers=headers, json=json_body)
                body = response.content
            except httpx.HTTPError as exc:
                reason = _transport_reason(exc)
                self.store.finish(permit, Outcome("failure"))
                self.stats.failures += 1
                meta = self.kept.fail(self.kept.meta(address), reason, self.clock.time())
                raise ForgeUnavailable(address, meta.fail_until or self.clock.time(), reason) from None
            self.stats.requests += 1
            status = response.status_code
            answer_headers = {k.lower(): v for k, v in response.headers.items()}
            self.stats.calls.append((address, status))
            now = self.clock.time()
            verdict = rules.classify(status, answer_headers, body, method=method, path=path, now=now)
            if verdict.kind in ("ok", "spent_ok") and status != 304 and body and not _parses(body):
                # GitHub's API speaks JSON; an HTML "unicorn" page or a cut body is a failure
                verdict = replace(verdict, kind="failure", reason=f"unparsable answer body ({status})")
            counted, cost = self._cost(status, verdict, body, path)
            self.store.record_rate(
                permit.pool, verdict.resource, rules.parse_rate_headers(answer_headers), counted=counted, cost=cost
            )
            self._record_graphql_rate(permit.pool, body, path)
            outcome_kind = {"ok": "ok", "spent_ok": "spent", "throttle": "throttle", "failure": "failure"}.get(
                verdict.kind, "ok"
            )
            pause = self.store.finish(permit, Outcome(outcome_kind, verdict))
            if permit.kind == "probe" and outcome_kind == "ok" and self.on_probed is not None:
                try:
                    self.on_probed(permit)
                except Exception as exc:
                    log.warning("could not tell the fleet the pause is over: %s", exc)
            if pause is not None and self.on_pause is not None and not pause.observe_only:
                try:
                    self.on_pause(pause)
                except Exception as exc:  # publishing to the fleet must never undo the host's own pause
                    log.warning("could not publish the pause to the remote: %s", exc)
            if verdict.kind == "throttle":
                self.stats.throttles += 1
                if self.enforce:
                    until = pause.until if pause is not None else now + rules.FALLBACK_BASE
                    if wait and (deadline is None or until <= deadline):
                        continue  # _admit waits the pause out
                    raise AllowanceSpent(permit.pool, verdict.resource, until, reason=verdict.reason)
                # observe-only: the answer goes back to the caller as it came
            if verdict.kind == "failure":
                self.stats.failures += 1
                meta = self.kept.fail(self.kept.meta(address), verdict.reason, now)
                raise ForgeUnavailable(address, meta.fail_until or now, verdict.reason)
            if status == 304:
                if kept_body is None:
                    # GitHub confirmed a body we no longer have: ask again, unconditionally
                    meta = self.kept.forget_validators(self.kept.meta(address))
                    continue
                self.stats.not_modified += 1
                self.kept.confirm(self.kept.meta(address), now)
                return Answer(kept_body.status, dict(kept_body.headers), kept_body.body, url, from_kept=True)
            if counted:
                if verdict.resource == "graphql":
                    self.stats.points += cost
                else:
                    self.stats.counted += cost
            if method == "GET" and status == 200 and ("etag" in answer_headers or "last-modified" in answer_headers):
                self.kept.store_full(self.kept.meta(address), status, answer_headers, body, now)
            elif method == "GET":
                self.kept.confirm(self.kept.meta(address), now)
            return Answer(status, answer_headers, body, url, counted=counted)

    def _cost(self, status: int, verdict: rules.Verdict, body: bytes, path: str) -> tuple[bool, int]:
        """Whether GitHub counted the call, and what it cost (points for GraphQL)."""
        if status == 304 or verdict.kind == "throttle" or status >= 500 or path.endswith("/rate_limit"):
            return False, 0  # GitHub counts neither a 304 nor GET /rate_limit
        if verdict.resource == "graphql":
            try:
                cost = jsonlib.loads(body)["data"]["rateLimit"]["cost"]
                return True, int(cost)
            except (ValueError, KeyError, TypeError):
                return True, 1
        return True, 1

    def _record_graphql_rate(self, pool: str, body: bytes, path: str) -> None:
        """GraphQL's own ``rateLimit`` field is the truest word on the graphql budget."""
        if not path.endswith("/graphql"):
            return
        try:
            rate = jsonlib.loads(body)["data"]["rateLimit"]
            reset_at = rate.get("resetAt")
            reset = datetime.fromisoformat(str(reset_at).replace("Z", "+00:00")).timestamp() if reset_at else None
            headers = rules.RateHeaders(
                limit=_int(rate.get("limit")),
                remaining=_int(rate.get("remaining")),
                used=_int(rate.get("used")),
                reset=reset,
                resource="graphql",
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return
        self.store.record_rate(pool, "graphql", headers, counted=False, cost=0)


def _parses(body: bytes) -> bool:
    try:
        jsonlib.loads(body)
        return True
    except ValueError:
        return False


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _transport_reason(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "connection dropped"
    return type(exc).__name__
