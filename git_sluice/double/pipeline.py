"""One request to one answer, the way GitHub's front door treats it.

The order is GitHub's as far as a client can tell: who is calling; too many
requests in flight (secondary); faults switched on by the test; bad
credentials; too many points this minute (secondary); too much content
made this minute or hour (secondary, content-creating writes only, with the
exact wait in ``retry-after``); a spent primary allowance; then the route,
with per-token ETags and free 304s (which, as GitHub's, carry no
Content-Type or Link); and the rate headers of the path's
resource on every answer — none at all when rate limiting is off, as on an
Enterprise Server by default. Every call ends in the ledger. No sockets here: ``server.py`` turns HTTP into a :class:`Request`
and a :class:`Response` back into bytes, so the pipeline is tested directly.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import parse_qsl

from . import graphql_api, rest, rest_app, rest_comments  # noqa: F401 - these register their routes
from .auth import ANONYMOUS, AuthFailure, Principal, authenticate
from .faults import ANSWER, DELAY, Fault
from .ledger import Call
from .limits import CONTENT_CREATING, READ_POINTS, WRITE_POINTS, secondary_points
from .timefmt import http_date, parse_http_date

if TYPE_CHECKING:
    from .core import GitHubDouble

RATE_DOCS = "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"
SECONDARY_DOCS = (
    "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api"
    "#about-secondary-rate-limits"
)
UNICORN = (
    b"<!DOCTYPE html>\n<html><head><title>Unicorn! &middot; GitHub</title></head>"
    b"<body><h1>No server is currently available to service your request.</h1></body></html>\n"
)
STATUS_MESSAGES = {
    400: "Bad Request",
    401: "Bad credentials",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    422: "Validation Failed",
    500: "Server Error",
    502: "Server Error",
    503: "Service Unavailable",
    504: "We couldn't respond to your request in time. Sorry about that. Please try resubmitting your "
    "request and contact us if the problem persists.",
}
CACHE_HEADERS = {
    "Cache-Control": "private, max-age=60, s-maxage=60",
    "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
}
_request_ids = itertools.count(1)


@dataclass
class Request:
    method: str
    path: str
    query: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""
    base_url: str = "http://127.0.0.1"
    outside_api: bool = False  # Enterprise Server: a path under neither /api/v3 nor /api/graphql

    @property
    def line(self) -> str:
        """What a fault's path regex is matched against: "METHOD /path?query"."""
        return f"{self.method} {self.target}"

    @property
    def target(self) -> str:
        return f"{self.path}?{self.query}" if self.query else self.path


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    drop: bool = False


def resource_for(path: str) -> str:
    if path == "/graphql":
        return "graphql"
    if path.startswith("/search/"):
        return "search"
    return "core"


def _json(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass
class _Outcome:
    """What the answer step decided, before headers are written."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    counted: bool = False
    cost: int = 0
    spent: bool = False  # headers say remaining 0 (a spent allowance, real or a fault)
    drop: bool = False
    mutation: bool = False  # a GraphQL mutation (the ledger prices it 5 secondary points)
    content: bool = False  # a content-creating GraphQL request (REST: known from the endpoint)
    created: bool = False  # it made content (the lock held around the answer makes this exact)


def handle(gh: "GitHubDouble", req: Request, sleep: Callable[[float, threading.Event], None]) -> Response:
    """Answer one request.

    ``sleep(seconds, released)`` is the server's real-time wait for a hang
    fault, cut short when the fault is cleared or the server stops.
    """
    resource = resource_for(req.path)
    is_graphql = req.path == "/graphql"
    line = req.line
    with gh.lock:
        arrived = gh.clock.time()
        who = authenticate(gh, req.headers.get("authorization"), req.path, arrived)
        principal = who if isinstance(who, Principal) else ANONYMOUS
        pool_key = principal.pool_key
        in_flight = gh.secondary.enter(pool_key)
        limited = gh.rate_limits
    pool = principal.pool if isinstance(who, Principal) else None
    where = rest.endpoint(req.method, req.path)
    ticket = gh.arrive(pool, resource, req.method, req.target)
    out = _Outcome(500, b"")  # what the ledger says should the double itself fail
    headers: dict[str, str] = {}
    try:
        if limited and in_flight > gh.secondary_concurrency:
            with gh.lock:
                out = _secondary(gh, gh.secondary_status, gh.secondary_retry_after)
        else:
            delay = gh.faults.take(DELAY, line, is_graphql)
            if delay is not None:
                sleep(float(delay.params["seconds"]), delay.released)
            with gh.lock:
                made = gh.content.total
                out = _answer(gh, req, who, principal, resource, line, is_graphql)
                out.created = gh.content.total > made
        if not out.drop and limited:
            # Enterprise Server with rate limiting off sends no x-ratelimit-* header at all.
            with gh.lock:
                headers = _rate_headers(gh, principal, resource, gh.clock.time(), out.spent, line, is_graphql)
    finally:
        with gh.lock:
            gh.secondary.leave(pool_key)
        gh.record(
            Call(
                time=arrived,
                pool=pool,
                resource=resource,
                method=req.method,
                path=req.target,
                status=0 if out.drop else out.status,
                counted=out.counted,
                cost=out.cost if out.counted else 0,
                token_sha=who.token_sha,
                endpoint=where,
                mutation=out.mutation,
                content=out.content or where in CONTENT_CREATING,
                created=out.created,
            ),
            ticket,
        )
    if out.drop:
        return Response(status=0, drop=True)
    headers.update(out.headers)
    if out.status == 304:
        # GitHub's 304 carries no Content-Type, X-GitHub-Media-Type or Link: a
        # client pages through a confirmed list with the Link of its kept answer.
        headers.pop("Link", None)
    else:
        headers.setdefault("Content-Type", "application/json; charset=utf-8")
        headers["X-GitHub-Media-Type"] = "github.v3; format=json"
    headers["X-GitHub-Request-Id"] = f"D0B1:{next(_request_ids):08X}"
    return Response(status=out.status, headers=list(headers.items()), body=out.body)


def _answer(
    gh: "GitHubDouble",
    req: Request,
    who: Principal | AuthFailure,
    principal: Principal,
    resource: str,
    line: str,
    is_graphql: bool,
) -> _Outcome:
    now = gh.clock.time()
    fault = gh.faults.take(ANSWER, line, is_graphql)
    if fault is not None:
        return _fault_answer(gh, fault, principal)
    if req.outside_api:
        return _Outcome(404, _json({"message": "Not Found", "documentation_url": rest.DOCS}))
    if isinstance(who, AuthFailure):
        return _Outcome(401, _json({"message": who.message, "documentation_url": rest.DOCS}))
    per_minute = gh.secondary_points_per_minute.get(resource) if gh.rate_limits else None
    price = secondary_points(req.method, resource)
    if per_minute is not None:
        # GitHub's budget is per endpoint: 900 points a minute on each REST one.
        where = f"{resource} {rest.endpoint(req.method, req.path)}"
        if gh.secondary.points_last_minute(principal.pool_key, where, now) + price > per_minute:
            return _secondary(gh, gh.secondary_status, gh.secondary_retry_after)
        gh.secondary.spend(principal.pool_key, where, now, price)
    if gh.rate_limits and req.method == "POST" and rest.endpoint(req.method, req.path) in CONTENT_CREATING:
        refused = _content_refusal(gh, principal, now)
        if refused is not None:
            return refused
    if req.path == "/rate_limit" and req.method in ("GET", "HEAD"):
        if not gh.rate_limits:
            return _Outcome(404, _json({"message": "Rate limiting is not enabled.", "documentation_url": rest.DOCS}))
        return _Outcome(200, _json(_rate_limit_body(gh, principal, now)))
    if is_graphql:
        if req.method != "POST":
            return _Outcome(404, _json({"message": "Not Found", "documentation_url": graphql_api.GRAPHQL_DOCS}))
        return _graphql(gh, req, principal, line, now)
    return _rest(gh, req, principal, resource, line, now)


def _graphql(gh: "GitHubDouble", req: Request, principal: Principal, line: str, now: float) -> _Outcome:
    partial = gh.faults.take(("graphql_partial",), line, True) is not None
    timeout = gh.faults.take(("graphql_timeout",), line, True) is not None
    prepared = graphql_api.prepare(principal, req.body)
    mutation = content = False
    if isinstance(prepared, graphql_api.GraphQLOutcome):
        outcome = prepared
    else:
        mutation, content = prepared.mutation, prepared.content
        refused = _admit_mutation(gh, req, principal, prepared, now) if mutation and gh.rate_limits else None
        if refused is not None:
            refused.mutation, refused.content = mutation, content
            return refused
        outcome = graphql_api.execute(gh, principal, prepared, now, partial=partial, timeout=timeout)
    body = _json(outcome.body)
    if outcome.status == 200 and gh.faults.take(("truncate",), line, True) is not None:
        body = body[: len(body) // 2]
    rate_limited = any(e.get("type") in ("RATE_LIMITED", "RATE_LIMIT") for e in outcome.body.get("errors", []))
    bucket = gh.limits.bucket(principal.pool_key, "graphql", now)
    return _Outcome(outcome.status, body, counted=outcome.counted, cost=outcome.cost,
                    spent=rate_limited and bucket.remaining == 0, mutation=mutation, content=content)


def _admit_mutation(
    gh: "GitHubDouble", req: Request, principal: Principal, prepared: graphql_api.Prepared, now: float
) -> _Outcome | None:
    """A mutation's secondary price and content limits, weighed before it runs; None: it may run.

    The front door took 1 point, as for any GraphQL request (it cannot tell a
    mutation before parsing); a mutation is 5, so the other 4 are weighed here.
    """
    per_minute = gh.secondary_points_per_minute.get("graphql")
    if per_minute is not None:
        where = f"graphql {rest.endpoint(req.method, req.path)}"
        extra = WRITE_POINTS - READ_POINTS
        if gh.secondary.points_last_minute(principal.pool_key, where, now) + extra > per_minute:
            return _secondary(gh, gh.secondary_status, gh.secondary_retry_after)
        gh.secondary.spend(principal.pool_key, where, now, extra)
    return _content_refusal(gh, principal, now) if prepared.content else None


def _content_refusal(gh: "GitHubDouble", principal: Principal, now: float) -> _Outcome | None:
    """GitHub's content-creation limit (80 a minute, 500 an hour per pool); None: the pool may create.

    Its ``retry-after`` is the exact wait until the pool's oldest creation in
    the full window leaves it, so a proxy that obeys it is never refused twice.
    """
    wait = gh.content.wait(principal.pool_key, now)
    if wait is None:
        return None
    return _secondary(gh, gh.secondary_status, max(1, math.ceil(wait)))


def _rest(gh: "GitHubDouble", req: Request, principal: Principal, resource: str, line: str, now: float) -> _Outcome:
    bucket = gh.limits.bucket(principal.pool_key, resource, now)
    if gh.rate_limits and bucket.remaining <= 0:
        return _primary(gh.primary_status, principal, _already(gh, principal, resource, bucket.reset_at(now)))
    truncate = gh.faults.take(("truncate",), line, False) is not None
    ctx = rest.RestContext(
        gh=gh,
        principal=principal,
        now=now,
        method=req.method,
        path=req.path,
        query=req.query,
        base_url=req.base_url,
        body=req.body,
        params=dict(parse_qsl(req.query, keep_blank_values=True)),
    )
    ans = rest.answer(ctx)
    body = _json(ans.body)
    headers: dict[str, str] = dict(ans.headers)
    if ans.link:
        headers["Link"] = ans.link
    counted = ans.counted and gh.rate_limits
    status = ans.status
    if ans.cacheable and ans.status == 200 and req.method in ("GET", "HEAD"):
        digest = hashlib.sha256(body + b"\n" + (principal.token_sha or "").encode()).hexdigest()
        modified = int(ans.modified if ans.modified is not None else now)
        headers.update(CACHE_HEADERS)
        headers["ETag"] = f'W/"{digest}"'
        if ans.single:
            headers["Last-Modified"] = http_date(modified)
        if not truncate and _not_modified(req.headers, digest, modified if ans.single else None):
            status, body, counted = 304, b"", False
            if gh.etag_304_strong:
                headers["ETag"] = f'"{digest}"'
    if truncate:
        body = body[: len(body) // 2]
    if counted:
        bucket.charge(now, 1)
    return _Outcome(status, body, headers, counted=counted, cost=1 if counted else 0)


def _not_modified(headers: dict[str, str], digest: str, modified: int | None) -> bool:
    """If-None-Match wins when present (RFC 9110); If-Modified-Since alone: nothing newer.

    ``modified`` is None for an answer without Last-Modified (a list): there
    If-Modified-Since alone is no question GitHub answers, so it gets a 200.
    """
    inm = headers.get("if-none-match")
    if inm is not None:
        tags = [t.strip() for t in inm.split(",")]
        return any(t == "*" or t.removeprefix("W/").strip('"') == digest for t in tags)
    ims = headers.get("if-modified-since")
    if ims is not None and modified is not None:
        since = parse_http_date(ims)
        return since is not None and modified <= since
    return False


def _rate_limit_body(gh: "GitHubDouble", principal: Principal, now: float) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    for name in ("core", "graphql", "search"):
        b = gh.limits.bucket(principal.pool_key, name, now)
        entry = {"limit": b.limit, "used": b.used, "remaining": b.remaining, "reset": b.reset_at(now)}
        if name == "graphql" and gh.rate_limit_misreports_graphql:
            entry.update(used=0, remaining=b.limit)
        resources[name] = entry
    return {"resources": resources, "rate": resources["core"]}


PRIMARY_MESSAGES = ("rotate", "exceeded", "already")


def _already(gh: "GitHubDouble", principal: Principal, resource: str, reset: int) -> bool:
    """Whether this refusal says "already exceeded" (knob ``primary_message``).

    GitHub has been seen to use both words; "rotate" says "exceeded" on a
    window's first refusal and "already exceeded" on the ones after it.
    """
    if gh.primary_message == "exceeded":
        return False
    if gh.primary_message == "already":
        return True
    key = (principal.pool_key, resource, reset)
    if key in gh.refused_windows:
        return True
    gh.refused_windows.add(key)
    return False


def _primary(status: int, principal: Principal, already: bool = False) -> _Outcome:
    subject = principal.limit_subject()
    message = f"API rate limit {'already ' if already else ''}exceeded for {subject}."
    if principal.kind == "anon":
        message += (
            " (But here's the good news: Authenticated requests get a higher rate limit. "
            "Check out the documentation for more details.)"
        )
    return _Outcome(status, _json({"message": message, "documentation_url": RATE_DOCS}), spent=True)


def _secondary(gh: "GitHubDouble", status: int, retry_after: int | str | None) -> _Outcome:
    body = {
        "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
        "If you reach out to GitHub Support for help, please include the request ID of this answer.",
        "documentation_url": SECONDARY_DOCS,
    }
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return _Outcome(int(status), _json(body), headers)


def _fault_answer(gh: "GitHubDouble", fault: Fault, principal: Principal) -> _Outcome:
    p = fault.params
    if fault.kind == "status":
        code = int(p["code"])
        message = p.get("message") or STATUS_MESSAGES.get(code, "Error")
        return _Outcome(code, _json({"message": message, "documentation_url": rest.DOCS}))
    if fault.kind == "drop":
        return _Outcome(0, b"", drop=True)
    if fault.kind == "not_json":
        return _Outcome(200, UNICORN, {"Content-Type": "text/html; charset=utf-8"})
    if fault.kind == "primary":
        return _primary(int(p["status"]), principal, gh.primary_message == "already")
    if fault.kind == "secondary":
        return _secondary(gh, int(p["status"]), p.get("retry_after"))
    # graphql_rate_limited
    return _Outcome(200, _json(graphql_api.rate_limited(principal, p["type"])), spent=True)


def _rate_headers(
    gh: "GitHubDouble", principal: Principal, resource: str, now: float, spent: bool, line: str, is_graphql: bool
) -> dict[str, str]:
    b = gh.limits.bucket(principal.pool_key, resource, now)
    used, remaining = (max(b.used, b.limit), 0) if spent else (b.used, b.remaining)
    reset: str = str(b.reset_at(now))
    override = gh.faults.take(("reset",), line, is_graphql)
    if override is not None:
        reset = _reset_override(override.params["value"], now)
    return {
        "X-RateLimit-Limit": str(b.limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Used": str(used),
        "X-RateLimit-Reset": reset,
        "X-RateLimit-Resource": resource,
    }


def _reset_override(value: Any, now: float) -> str:
    if value == "past":
        return str(int(now) - 3600)
    if value == "absurd":
        return str(int(now) + 10 * 365 * 86400)
    if value == "garbage":
        return "soon"
    number = float(value)
    return str(int(number)) if number.is_integer() else str(number)
