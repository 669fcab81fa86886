"""The forge client: the only way anything in git-sluice reaches GitHub.

Every call goes the same road, a stack of httpx transports, outermost first,
so no caller can skip a rule (docs/design.md, "One call's road"):

1. single flight (flight.py) — one caller per address on the clone; a caller
   that waited for another's call to the same address shares its answer;
2. failure memory (failure_memory.py) — an address that failed recently is not asked;
3. revalidation (revalidate.py) — every GET is conditional on the kept
   answer, and a 304 is answered from the kept body;
4. the write pace (writepace.py) — a mutating call waits for its slot in the
   host's pace for writes (1 s apart, GitHub's per-minute and per-hour limits
   of content-creating calls, the pool's admission), or is deferred unsent;
5. the host's gate (host_gate.py) — a started permit for (pool, resource): no
   call while paused, one probe at the pause's end, then cohorts; a throttle
   pauses the host and, through ``on_pause``, the fleet;
6. the ledger (ledger.py) — every answer classified, its rate headers and
   cost to the budget ledger;
7. the wire (wire.py) — the token, only for the configured origins, and the
   call's whole deadline.

Single flight sits outside failure memory so that a failure is remembered
before the next waiter takes its turn (else it would ask again at once).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import httpx

from .. import __version__
from ..clock import Clock
from ..errors import CredentialsRefused, ForeignURL, ForgeAnswered, ForgeError, ForgeUnavailable, PathOutsideAPI
from ..records import record
from ..statefile import parse_json
from . import origins, pacing, rules, tally
from .auth import Credentials, api_host, known_pool
from .flight import SingleFlight
from .hoststore import HostStore
from .kept_answers import KeptAnswers, address_of
from .ledger import Ledger
from .failure_memory import FailureMemory
from .poolguard import PoolHosts, choose
from .host_gate import Permits, HostGate, PauseListener, ProbeClaim, ProbeListener, WaitListener
from .revalidate import Revalidate
from .layers import CALL, COST, COUNTED, FROM_CACHE, SHARED, VERDICT, Call, Stats, Waits
from .wire import Authorize, Deadline, transport_for
from .writepace import WritePace

__all__ = [
    "Answer", "Forge", "ForgeAnswered", "ForgeError", "ForgeUnavailable", "Stats",
    "PauseListener", "ProbeClaim", "ProbeListener", "WaitListener",
]

USER_AGENT = f"git-sluice/{__version__}"
HEADERS = {
    "Accept": "application/vnd.github+json",
    "Accept-Encoding": "gzip, deflate",
    "Connection": "keep-alive",
    "User-Agent": USER_AGENT,
}

log = logging.getLogger("git_sluice")


def _short(url: str, api: str) -> str:
    """A call's URL as -v shows it: the path under sluice.api (never a token: none is in a URL)."""
    return url[len(api):] or "/" if url.startswith(api) else url


def _told(status: int, marks: Mapping[str, Any], counted: bool) -> str:
    """What one call cost, for -v: shared, kept (304), or counted."""
    if marks.get(SHARED):
        return f"{status}, shared from another caller's call (no call)"
    if marks.get(FROM_CACHE):
        return "304, the kept answer (free)"
    cost = int(marks.get(COST) or 0)
    return f"{status}, {'counted' + (f' ({cost})' if cost > 1 else '') if counted else 'not counted'}"


@record
class Answer:
    """What a call produced. ``from_kept``: the body is the kept one (GitHub said 304, or a shared flight)."""

    status: int
    headers: dict[str, str]
    body: bytes
    url: str
    from_kept: bool = False
    shared: bool = False
    counted: bool = False
    source: str | None = None  # where the credentials came from: named when GitHub refuses them (401)
    observed: str | None = None  # observe-only: what enforcement would have done with this throttle

    def json(self) -> Any:  # Any: GitHub's JSON, whatever the endpoint returns
        return parse_json(self.body) if self.body else None  # ValueError for anything but JSON, even [[[[…

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
            if self.status == 401:
                raise CredentialsRefused(self.status, self.url, message or "error", source=self.source)
            if self.observed:
                message = f"{message or 'error'}; {self.observed}"
            raise ForgeAnswered(self.status, self.url, message or "error")
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


_CALLER_HEADERS = {"accept": "Accept", "x-github-api-version": "X-GitHub-Api-Version", "content-type": "Content-Type"}
_JSON_ACCEPTS = frozenset({"", "*/*", "application/json", "application/vnd.github+json",
                           "application/vnd.github.v3+json"})


def with_caller_headers(headers: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
    """The headers a call goes with, and what tells its answer apart from the plain JSON one ("" if nothing)."""
    sent = dict(HEADERS)
    if not headers:
        return sent, ""
    variant = []
    for name, value in headers.items():
        canonical = _CALLER_HEADERS.get(name.lower())
        if canonical is None or not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            continue
        sent[canonical] = value
        if canonical == "Accept" and value.strip().lower() not in _JSON_ACCEPTS:
            variant.append(f"accept={value.strip()}")
        elif canonical == "X-GitHub-Api-Version":
            variant.append(f"version={value.strip()}")
    return sent, " ".join(variant)


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
        before_call: Callable[[str], None] | None = None,
        on_probed: ProbeListener | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        permit_deadline: float = 60.0,
        cancel: threading.Event | None = None,
        pool_hosts: PoolHosts | None = None,
        write_rules: pacing.WriteRules | None = None,
        write_patience: float = 30.0,
    ) -> None:
        self.api = api.rstrip("/")
        self.write_rules = write_rules or pacing.WriteRules()
        self.write_patience = write_patience
        self.pool_hosts = pool_hosts
        self.graphql_url = graphql_url
        self.credentials = credentials
        self.store = store
        self.kept = kept
        self.clock = clock
        self.enforce = enforce
        self.timeout = timeout
        self.stats = Stats()
        self.waits = Waits(clock, cancel)
        self.permits = Permits(
            store, clock, self.waits, self.stats, enforce=enforce, permit_deadline=permit_deadline,
            on_wait=on_wait, probe_claim=probe_claim, before_call=before_call,
        )
        # the road is called directly, not through an httpx.Client: the client's own work
        # per request (URL merging, cookies, its event machinery) was a fifth of a quiet
        # round's CPU, and the road does everything it would (issue 15)
        self._http = self._road(
            transport or transport_for((self.api, self.graphql_url)), self.permits, on_pause=on_pause,
            on_probed=on_probed,
        )

    def _road(
        self, wire: httpx.BaseTransport, permits: Permits, *,
        on_pause: PauseListener | None, on_probed: ProbeListener | None,
    ) -> httpx.BaseTransport:
        """The layers, innermost first (the module docstring reads them outermost first)."""
        road: httpx.BaseTransport = Deadline(wire, self.clock, self.waits, timeout=self.timeout)
        road = Authorize(road, lambda: self.credentials.token(), (self.api, self.graphql_url))
        road = Ledger(road, self.store, self.clock, self.stats)
        road = HostGate(road, permits, self.pool_for, self.stats, on_pause=on_pause, on_probed=on_probed)
        road = WritePace(road, self.store, self.waits, self.stats, self.write_rules, self.write_patience,
                         self.graphql_url, self.pool_for)
        road = Revalidate(road, self.kept, self.clock, self.stats)
        road = FailureMemory(road, self.kept, self.clock, self.stats)
        return SingleFlight(road, self.kept, self.clock, self.stats, self.waits)

    def settle(self) -> None:
        """Hand back the permits kept for the next calls and write the noted ledger (a round's end).

        Calls reuse one permit per (pool, resource) and note their rate headers
        in memory (issue 15: a handful of write transactions a round, not four
        per call); this writes what waits, in one go.
        """
        self.permits.settle()

    def close(self) -> None:
        try:
            self.settle()
        finally:
            self._http.close()

    def __enter__(self) -> "Forge":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public ------------------------------------------------------------
    def set_credentials(self, credentials: Credentials) -> None:
        """Use these credentials from the next call on (read again after a 401)."""
        self.credentials = credentials

    @property
    def pool(self) -> str:
        return self.pool_for("core")

    def pool_for(self, resource: str) -> str:
        """The pool a call of ``resource`` spends; never asks GitHub while a pause stands (forge/poolguard.py)."""
        host = api_host(self.api)
        known = known_pool(self.credentials)
        provisional = getattr(self.credentials, "provisional_pool_id", None)
        if known is None and callable(provisional):
            standing = self.store.pauses()
            hosts = self.pool_hosts
            choice = choose(None, standing, resource, api_host=host,
                            host_of=hosts.host_of if hosts is not None else (lambda _pool: None),
                            provisional=str(provisional()))
            if choice.pool is not None:
                log.debug("this token's pool is not known yet and a pause stands on %s: %s", host,
                         f"the call goes under pool {choice.pool}'s pause" if choice.how == "paused"
                         else "GET /user is not asked; the call goes under a provisional pool")
                return choice.pool
        asked = tally.count("GET user")
        pool = self.credentials.pool_id()
        if known is None and tally.count("GET user") > asked:
            # GitHub counted the GET /user that named the pool: the host's ledger (status's
            # "counted here last hour") has it too, beside the road's own calls (issue 31)
            self.store.record_rate(pool, "core", rules.RateHeaders(None, None, None, None, "core"), counted=True, cost=1)
        if self.pool_hosts is not None and known_pool(self.credentials) == pool:
            self.pool_hosts.remember(pool, host)
        return pool

    def url_for(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        """The full URL of a path; a full URL only at sluice.api's or sluice.graphql's exact origin."""
        full = path.startswith(("http://", "https://"))
        url = path if full else f"{self.api}/{path.lstrip('/')}"
        where = origins.split(url)
        if where is not None and origins.unsafe_path(where[1]):  # %2e%2e: refused before anything is asked
            raise PathOutsideAPI(path, self.api)
        if full and not origins.under(url, self.api) and not origins.under(url, self.graphql_url, exact=True):
            raise ForeignURL(path, self.api)
        if params:
            url += ("&" if "?" in url else "?") + urlencode({k: v for k, v in params.items() if v is not None})
        return url

    def has_validator(self, path: str) -> bool:
        """Has a GET of this path a kept answer with a validator (an ETag or a Last-Modified)?

        A caller that only needs to know whether a conditional GET would be
        free asks this, rather than reading the kept answers' keys itself.
        """
        meta = self.kept.meta(address_of("GET", self.url_for(path)))
        return bool(meta.etag or meta.last_modified)

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
            raise ForgeAnswered(answer.status, answer.url, "GraphQL answer is not an object")
        return data

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,  # Any: a JSON document
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        wait: bool = False,
        deadline: float | None = None,
    ) -> Answer:
        """One call down the road; raises a ForgeError (AllowanceSpent, ForgeUnavailable, …) or answers.

        ``content``: a body as the caller sent it (``serve``), instead of ``json_body``. ``headers``:
        only ``Accept``, ``X-GitHub-Api-Version`` and ``Content-Type`` are taken; another media type
        is another kept answer (a diff is not the JSON of the same path).
        """
        method = method.upper()
        url = self.url_for(path, params)
        sent, variant = with_caller_headers(headers)
        address = address_of(method, url) + (f" [{variant}]" if variant else "")
        call = Call(address, wait=wait, deadline=deadline)
        if content is not None:
            request = httpx.Request(method, url, headers=sent, content=content, extensions={CALL: call})
        else:
            request = httpx.Request(method, url, headers=sent, json=json_body, extensions={CALL: call})
        response = self._http.handle_request(request)
        response.request = request
        response.read()
        marks = response.extensions
        counted, verdict = bool(marks.get(COUNTED)), marks.get(VERDICT)
        if counted and isinstance(verdict, rules.Verdict):
            if verdict.resource == "graphql":
                self.stats.points += int(marks.get(COST) or 0)
            else:
                self.stats.counted += int(marks.get(COST) or 0)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s: %s", method, _short(url, self.api), _told(response.status_code, marks, counted))
        observed = None
        if not self.enforce and isinstance(verdict, rules.Verdict) and verdict.kind == "throttle":
            observed = self._observed(verdict)
        if response.status_code == 401:
            refused = getattr(self.credentials, "refused", None)
            if callable(refused):
                refused()  # an App forgets its token (here and on the host); the next call mints anew
        return Answer(
            response.status_code,
            {k.lower(): v for k, v in response.headers.items()},
            response.content,
            url,
            from_kept=bool(marks.get(FROM_CACHE)),
            shared=bool(marks.get(SHARED)),
            counted=counted,
            source=getattr(self.credentials, "source", None),
            observed=observed,
        )

    def _observed(self, verdict: rules.Verdict) -> str:
        """An observe-only throttle in words: what would have been paused, never "rate-limited"."""
        from ..errors import local_time

        try:
            pause = self.store.pause_for(self.pool_for(verdict.resource), verdict.resource)
        except Exception:
            pause = None
        until = f" until {local_time(pause.until)}" if pause is not None else ""
        return (f"observe-only (sluice.enforce=false): git-sluice would have paused {verdict.resource}{until} "
                "and held this call; it went out")
