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
from ..forge import origins
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
_HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$")
"""A Host header ``serve`` will write into the links it hands back (a name or an address, a port)."""
REBASED_HEADERS = ("link", "location")
"""Answer headers that carry an API address: GitHub's next page, a moved repository's new home."""


@record(frozen=True)
class Route:
    """Where a request goes: ``rest`` (``path`` under ``sluice.api``, query included), ``graphql``,
    ``metrics``, or ``bad`` (``path`` says why)."""

    kind: str
    path: str = ""
    prefix: str = ""
    """``/api/v3`` when the caller addressed Enterprise's shape: the links it is handed keep that shape."""


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
    if origins.unsafe_path(path) or "\\" in decoded or "//" in decoded:  # the forge's own test, and more
        return Route("bad", "a path without . or .. segments")
    prefix = ""
    if path.startswith("/api/v3/") or path == "/api/v3":
        path, prefix = path[len("/api/v3"):] or "/", "/api/v3"
    if path.rstrip("/") in {"/graphql", "/api/graphql"}:
        if method.upper() != "POST":
            return Route("bad", "POST for /graphql")
        return Route("graphql")
    if path == "/metrics" and method.upper() == "GET":
        return Route("metrics")
    if path in {"", "/"}:
        return Route("rest", "/" + (f"?{query}" if query else ""), prefix)
    return Route("rest", path + (f"?{query}" if query else ""), prefix)


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


def caller_base(host: str | None, *, tcp: bool, upstream: str, prefix: str) -> str | None:
    """The API base the caller addressed, for the addresses in its answer; None: leave them as GitHub wrote them.

    GitHub writes its own API base into every answer (``Link``'s next page,
    each item's ``url``), and clients follow them as they are: octokit's
    paginate would go past ``serve`` straight to GitHub with the token,
    PyGithub refuses an address off its base URL's host and port, and gh
    sends no token to a host it does not know. So an answer names ``serve``
    as the caller reached it: on the port, ``http://`` and the caller's
    ``Host``; on the socket, the upstream's scheme and the caller's ``Host``
    (gh says ``api.github.com`` there and speaks plain HTTP on the socket
    whatever the scheme; with ``sluice.api`` on GitHub this is GitHub's own
    base, unchanged). ``prefix`` is the caller's ``/api/v3`` when it used one.
    """
    if not host or not _HOST.match(host.strip()):
        return None
    scheme = "http" if tcp else (upstream.partition("://")[0] or "https")
    return f"{scheme}://{host.strip()}{prefix}"


def rebased(reply: Reply, upstream: str, caller: str | None) -> Reply:
    """``reply`` with GitHub's API base (``upstream``, no trailing slash) replaced by the caller's, in the
    :data:`REBASED_HEADERS` and in a JSON body; the same reply when there is nothing to replace.

    Only the base followed by ``/``, ``?``, ``{`` or a closing quote or bracket
    is replaced (``https://api.github.com.evil`` is not GitHub's base), and only
    the API's: ``html_url`` on github.com and ``upload_url`` stay as written.
    """
    upstream = upstream.rstrip("/")
    if caller is None or caller.rstrip("/") == upstream:
        return reply
    base = re.compile(re.escape(upstream) + r'(?=[/?{">]|$)')
    headers = {name: base.sub(lambda _: caller.rstrip("/"), value) if name in REBASED_HEADERS else value
               for name, value in reply.headers.items()}
    body = reply.body
    if body and "json" in reply.headers.get("content-type", "").lower() and upstream.encode() in body:
        body = re.compile(re.escape(upstream.encode()) + rb'(?=[/?{"])').sub(
            lambda _: caller.rstrip("/").encode(), body)
    return Reply(reply.status, headers, body)
