"""What ``serve`` answers, decided without I/O: where a request goes, whose token it carries, and the
shape of every answer git-sluice gives in GitHub's place.

A refusal is answered the way GitHub answers one, so the tools' own
machinery does the right thing with it: octokit's throttling plugin reads
``x-ratelimit-remaining: 0`` with ``x-ratelimit-reset`` (a spent allowance)
and ``retry-after`` with "secondary rate limit" in the message (a write
deferred), and waits instead of retrying into the limit; gh prints the
message and exits. Every refusal also says, in its message and in
``x-sluice-*`` headers, that git-sluice answered and nothing reached GitHub.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from urllib.parse import unquote

from ..clock import rfc3339
from ..records import record

RATE_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
AUTH_DOCS = "https://docs.github.com/rest/authentication/authenticating-to-the-rest-api"
SERVE_DOCS = "docs/serve.md"
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "content-length", "content-encoding", "set-cookie",
})
"""Headers of GitHub's answer that are not passed on: the relay sends its own length, decoded body."""
FORWARDED_REQUEST_HEADERS = ("accept", "x-github-api-version", "content-type")
MAX_BODY = 64 * 1024 * 1024
"""The largest request body ``serve`` reads (GitHub's own limit for most endpoints is far below)."""
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


@record(frozen=True)
class Route:
    """Where a request goes: ``rest`` (``path`` under ``sluice.api``, query included), ``graphql``,
    ``metrics``, or ``bad`` (``path`` says why)."""

    kind: str
    path: str = ""


@record(frozen=True)
class Reply:
    """One answer: status, headers (lower-case names), body."""

    status: int
    headers: dict[str, str]
    body: bytes


def route(method: str, target: str) -> Route:
    """Map a request target as gh, octokit and PyGithub send it to where it goes.

    ``/repos/o/r`` (github.com's shape) and ``/api/v3/repos/o/r`` (Enterprise's)
    are the same REST path; ``/graphql`` and ``/api/graphql`` the GraphQL
    endpoint. A path that could step outside the API (``..`` once decoded,
    ``//``, a full URL, control characters) is refused: the relay must never
    send a token anywhere but under ``sluice.api``.
    """
    if not target.startswith("/") or target.startswith("//") or _CONTROL.search(target):
        return Route("bad", "a path under the API (/repos/OWNER/REPO, /graphql)")
    path, _, query = target.partition("?")
    decoded = unquote(unquote(path))
    if any(part in {".", ".."} for part in decoded.split("/")) or "\\" in decoded or "//" in decoded:
        return Route("bad", "a path without . or .. segments")
    if path.startswith("/api/v3/") or path == "/api/v3":
        path = path[len("/api/v3"):] or "/"
    if path.rstrip("/") in {"/graphql", "/api/graphql"}:
        if method.upper() != "POST":
            return Route("bad", "POST for /graphql")
        return Route("graphql")
    if path == "/metrics" and method.upper() == "GET":
        return Route("metrics")
    if path in {"", "/"}:
        return Route("rest", "/" + (f"?{query}" if query else ""))
    return Route("rest", path + (f"?{query}" if query else ""))


def token_of(authorization: str | None) -> str | None:
    """The token an ``Authorization`` header carries: ``token T``, ``Bearer T`` or Basic ``user:T``."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if not value or _CONTROL.search(value):
        return None
    if scheme.lower() in {"token", "bearer"}:
        return value
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        _, _, password = decoded.partition(":")
        return password or None
    return None


def _json(status: int, message: str, docs: str, headers: dict[str, str] | None = None) -> Reply:
    body = json.dumps({"message": message, "documentation_url": docs}).encode()
    return Reply(status, {"content-type": "application/json; charset=utf-8", "x-sluice": "refused",
                          **(headers or {})}, body)


def _seconds(until: float, now: float) -> int:
    """Whole seconds from ``now`` to ``until``, at least 1 (a bounded, finite number: never "inf")."""
    left = until - now
    if not math.isfinite(left):
        return 3600
    return max(1, min(int(math.ceil(left)), 86_400))


def spent(*, resource: str, pool: str, until: float, now: float, limit: int | None) -> Reply:
    """The allowance of (pool, resource) is spent (a pause of the host or the fleet): GitHub's 403."""
    wait = _seconds(until, now)
    reset = int(now) + wait
    return _json(403, (
        f"API rate limit exceeded for this token's pool ({pool}, {resource}). git-sluice answered in "
        f"GitHub's place: the allowance is spent, nothing was sent to GitHub; ask again after "
        f"{rfc3339(reset)} (in {wait} s)."
    ), RATE_DOCS, {
        "x-ratelimit-limit": str(limit if limit is not None and limit > 0 else 5000),
        "x-ratelimit-remaining": "0",
        "x-ratelimit-used": str(limit if limit is not None and limit > 0 else 5000),
        "x-ratelimit-reset": str(reset),
        "x-ratelimit-resource": resource,
        "retry-after": str(wait),
        "x-sluice-paused-until": rfc3339(reset),
    })


def deferred(*, pool: str, until: float, now: float) -> Reply:
    """A write past its patience: GitHub's secondary-limit refusal, with when to come back."""
    wait = _seconds(until, now)
    return _json(403, (
        f"You have exceeded a secondary rate limit: git-sluice paces this host's writes for pool {pool} "
        f"(1 s apart, 80 content-creating a minute, 500 an hour, and the pool's own admission). "
        f"Nothing was sent to GitHub; retry after {wait} s."
    ), RATE_DOCS, {"retry-after": str(wait), "x-sluice-deferred-until": rfc3339(now + wait)})


def unauthenticated(why: str) -> Reply:
    return _json(401, f"Requires authentication: {why}", AUTH_DOCS)


def bad_request(why: str) -> Reply:
    return _json(400, f"git-sluice serve: not relayed, it needs {why}", SERVE_DOCS)


def unavailable(message: str, *, retry: float | None, now: float, status: int = 502) -> Reply:
    headers = {"retry-after": str(_seconds(retry, now))} if retry is not None else {}
    return _json(status, f"git-sluice serve: {message}", SERVE_DOCS, headers)


def passed_on(headers: dict[str, str]) -> dict[str, str]:
    """GitHub's answer headers as the relay passes them on."""
    return {k.lower(): v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}


def not_modified_for(if_none_match: str | None, etag: str | None) -> bool:
    """The caller's own conditional GET names the answer's current ETag: a 304 to it, no body."""
    if not if_none_match or not etag:
        return False
    wanted = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in wanted or etag.strip().removeprefix("W/") in wanted
