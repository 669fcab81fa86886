"""Where the token may go: exactly the configured endpoints' scheme, host and port.

Pure. A string prefix is not an origin: with ``sluice.graphql =
https://ghe.corp``, ``https://ghe.corp.evil/…`` starts with it and would
have carried the token to another host. So a URL is taken apart and its
scheme, host and port compared with the configured ones exactly, and its
path must lie under the configured path at a ``/`` boundary. Plain
``http://`` is accepted only on loopback *literals* — ``127.0.0.0/8``,
``::1`` and the name ``localhost`` itself — never a name that merely ends in
``.localhost`` (it is resolved like any other, maybe by someone else's DNS).

A path is compared as a server would read it: ``/api/v3/%2e%2e/%2e%2e/x``
starts with ``/api/v3/`` but a server that decodes it before resolving the
dot segments serves ``/x``. So a path with a ``.`` or ``..`` segment — as
written, or once decoded, however many times, with ``/`` or ``\\`` (also
``%2f``, ``%5c``) between segments — is under no endpoint (:func:`unsafe_path`).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from urllib.parse import unquote, urlsplit
from ..records import record

DEFAULT_PORTS = {"https": 443, "http": 80}


@record(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 or exactly ``localhost``: a host no DNS answer can move elsewhere."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=4096)
def split(url: str) -> tuple[Origin, str] | None:
    """(origin, path) of an http(s) URL without credentials in it, else None.

    Pure, so remembered: every call checks its URL against the same two
    configured endpoints, and a drive asks the same addresses every round.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in DEFAULT_PORTS or not host or "@" in parts.netloc:
        return None
    if scheme == "http" and not is_loopback_host(host):
        return None  # a token never travels in clear text beyond this machine
    return Origin(scheme, host, port if port is not None else DEFAULT_PORTS[scheme]), parts.path


_SEGMENTS = re.compile(r"[/\\]")
_DECODINGS = 4
"""How many rounds of percent-decoding a path is read through (no API path is encoded three times over)."""


@functools.lru_cache(maxsize=4096)
def unsafe_path(path: str) -> bool:
    """Could ``path`` (without its query) step out of where it stands, as any server reads it?

    True when a segment is ``.`` or ``..`` as written or after any number of
    percent-decodings (``%2e%2e``, ``%252e%252e``, ``..%2f``), with ``\\`` read
    as ``/`` as some servers do; and when the path is still encoded after
    :data:`_DECODINGS` rounds. No GitHub API path has such a segment, so such
    a path is refused rather than resolved.
    """
    seen = path
    for _ in range(_DECODINGS):
        if any(part in (".", "..") for part in _SEGMENTS.split(seen)):
            return True
        decoded = unquote(seen)
        if decoded == seen:
            return False
        seen = decoded
    return True


def under(url: str, base: str, *, exact: bool = False) -> bool:
    """Is ``url`` at ``base``'s origin and under its path (or at it exactly, with ``exact``)?

    A path with dot segments, even percent-encoded ones, is under nothing (:func:`unsafe_path`).
    """
    got, want = split(url), split(base)
    if got is None or want is None or got[0] != want[0] or unsafe_path(got[1]):
        return False
    path, root = got[1] or "/", want[1].rstrip("/")
    if exact:
        return path.rstrip("/") == root
    return root == "" or path == root or path.startswith(root + "/")
