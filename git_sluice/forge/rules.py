"""What an answer from GitHub means for the allowance, and until when to pause.

Pure: no I/O, no clock reads (``now`` is passed in), never raises on what
GitHub sends back. Everything here decides whether *every* process on the host
stops calling, so it is strict about what counts as a throttle (docs/design.md#the-throttle-rules):

- a 403 or 429 carrying ``x-ratelimit-remaining: 0``, a ``retry-after`` header,
  or a message saying a rate limit was exceeded (primary or secondary);
- a GraphQL answer (HTTP 200 or other) whose ``errors[].type`` is
  ``RATE_LIMITED`` / ``RATE_LIMIT`` (or ``code: graphql_rate_limit``);
- a success with ``x-ratelimit-remaining: 0`` is not a throttle but spends the
  resource: the answer is used and the resource pauses until its reset.

A 403 without any of these is a permission problem and never pauses anything:
pausing a whole pool because one token lacks a scope would be an outage of
every other tool on the account.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import urlsplit
from ..records import record

FALLBACK_BASE = 60.0
FALLBACK_CAP = 900.0
RESET_HORIZON = 3600 + 300
RETRY_AFTER_HORIZON = 3600
JITTER_SPAN = 10.0

# How much of an answer body is searched for rate-limit wording: error bodies
# are small; a huge body is not an error message.
_BODY_SCAN_LIMIT = 64 * 1024

VerdictKind = Literal["ok", "spent_ok", "throttle", "permission", "failure", "other"]
ThrottleClass = Literal["primary", "secondary", "unknown"]
PauseHow = Literal["retry-after", "reset", "fallback"]

# GitHub says "API rate limit exceeded for …" on a window's first refusal and
# "API rate limit already exceeded for …" on the ones after it.
_PRIMARY_WORDING = ("api rate limit exceeded", "api rate limit already exceeded")
_SECONDARY_WORDING = ("secondary rate limit", "abuse detection", "submitted too quickly")
# Generic wording that says a limit was hit without saying which.
_GENERIC_WORDING = ("rate limit exceeded", "rate limit already exceeded", "rate limited")
_GRAPHQL_LIMIT_TYPES = frozenset({"RATE_LIMITED", "RATE_LIMIT"})
_GRAPHQL_LIMIT_CODES = frozenset({"graphql_rate_limit"})


@record(frozen=True)
class RateHeaders:
    """The ``x-ratelimit-*`` headers of one answer; a field is None when absent or garbage."""

    limit: int | None
    remaining: int | None
    used: int | None
    reset: float | None
    resource: str | None


def _lower_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Header names lowercased; the first value wins for duplicates (GitHub sends none)."""
    out: dict[str, str] = {}
    try:
        items = list(headers.items())
    except Exception:  # a mapping that cannot even be listed carries nothing we can trust
        return out
    for name, value in items:
        if not isinstance(name, str):
            continue
        key = name.strip().lower()
        if key not in out:
            out[key] = value if isinstance(value, str) else str(value)
    return out


def _parse_count(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    if not text.isascii() or not text.isdigit():
        return None
    return int(text)


def _parse_epoch(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return value


def parse_rate_headers(headers: Mapping[str, str]) -> RateHeaders:
    """Read the rate headers case-insensitively; anything unparsable becomes None."""
    h = _lower_headers(headers)
    resource = h.get("x-ratelimit-resource")
    resource = resource.strip().lower() if resource is not None else None
    return RateHeaders(
        limit=_parse_count(h.get("x-ratelimit-limit")),
        remaining=_parse_count(h.get("x-ratelimit-remaining")),
        used=_parse_count(h.get("x-ratelimit-used")),
        reset=_parse_epoch(h.get("x-ratelimit-reset")),
        resource=resource or None,
    )


def resource_for(method: str, path: str) -> str:
    """The resource a request will be counted against, before any answer says so.

    Accepts a path or a full URL, with or without a query, and GitHub
    Enterprise Server's ``/api/v3`` and ``/api/graphql`` prefixes. Code search
    is counted on its own ``code_search`` resource by GitHub, so it is named so
    here; every other ``/search/...`` is ``search``.
    """
    del method  # GitHub counts by endpoint, not by verb
    if "://" in path:
        path = urlsplit(path).path
    path = path.split("?", 1)[0].split("#", 1)[0]
    segments = [s for s in path.split("/") if s]
    if segments[:2] == ["api", "v3"]:
        segments = segments[2:]
    elif segments[:1] == ["api"] and segments[1:2] == ["graphql"]:
        segments = segments[1:]
    if segments == ["graphql"]:
        return "graphql"
    if segments[:1] == ["search"]:
        if segments[1:2] == ["code"]:
            return "code_search"
        return "search"
    return "core"


@record(frozen=True)
class Verdict:
    """What one answer means for the allowance of its (pool, resource).

    ``retry_after`` is absolute epoch seconds (already added to ``now``);
    ``reset`` is ``x-ratelimit-reset`` as given, credible or not — whether to
    believe it is :func:`pause_until`'s business.
    """

    kind: VerdictKind
    cls: ThrottleClass | None
    resource: str
    retry_after: float | None
    reset: float | None
    remaining: int | None
    reason: str
    # GraphQL's own RATE_LIMITED error: GitHub's word that the points are gone
    # for this window, even when ``remaining`` is above 0 (a query costing more
    # than is left), so its credible reset is believed.
    graphql_limited: bool = False


def parse_retry_after(value: str | None, now: float) -> float | None:
    """``retry-after`` as absolute epoch seconds: delta seconds or an HTTP date; else None."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        return now + int(text)
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        if math.isfinite(seconds) and seconds >= 0:
            return now + seconds
        return None
    try:
        import email.utils  # only for a Retry-After given as a date: rare, and email is a heavy import

        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        # RFC 9110 dates are GMT; a date without a zone is read as such
        when = when.replace(tzinfo=_dt.timezone.utc)
    try:
        return when.timestamp()
    except (OverflowError, OSError, ValueError):
        return None


def _decode_body(body: bytes | None) -> tuple[Any, str, bool]:
    """(parsed JSON or None, lowercased text for wording search, parsed-ok flag)."""
    if not body:
        return None, "", True
    try:
        raw = bytes(body)
    except Exception:
        return None, "", False
    text = raw[:_BODY_SCAN_LIMIT].decode("utf-8", errors="replace").lower()
    try:
        return json.loads(raw), text, True
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None, text, False


def _graphql_errors(doc: Any) -> list[dict[str, Any]]:
    if not isinstance(doc, dict):
        return []
    errors = doc.get("errors")
    if not isinstance(errors, list):
        return []
    return [e for e in errors if isinstance(e, dict)]


def _wording_class(text: str) -> ThrottleClass | None:
    """Which rate limit a message names: secondary wording wins over primary (more specific)."""
    if any(w in text for w in _SECONDARY_WORDING):
        return "secondary"
    if any(w in text for w in _PRIMARY_WORDING):
        return "primary"
    if any(w in text for w in _GENERIC_WORDING):
        return "unknown"
    return None


def _messages(doc: Any) -> str:
    """The human messages of an error body (REST ``message`` and GraphQL ``errors[].message``)."""
    parts: list[str] = []
    if isinstance(doc, dict):
        message = doc.get("message")
        if isinstance(message, str):
            parts.append(message)
        for err in _graphql_errors(doc):
            msg = err.get("message")
            if isinstance(msg, str):
                parts.append(msg)
    return "\n".join(parts).lower()


def _graphql_limit(doc: Any) -> ThrottleClass | None:
    """A GraphQL rate-limit error in the body, and which kind; None if there is none."""
    for err in _graphql_errors(doc):
        etype = err.get("type")
        code = err.get("code")
        limited = (isinstance(etype, str) and etype.upper() in _GRAPHQL_LIMIT_TYPES) or (
            isinstance(code, str) and code.lower() in _GRAPHQL_LIMIT_CODES
        )
        if limited:
            msg = err.get("message")
            wording = _wording_class(msg.lower()) if isinstance(msg, str) else None
            return "secondary" if wording == "secondary" else "primary"
    # a secondary limit on GraphQL may come back as an error with only wording
    for err in _graphql_errors(doc):
        msg = err.get("message")
        if isinstance(msg, str) and _wording_class(msg.lower()) == "secondary":
            return "secondary"
    return None


def _json_expected(headers: dict[str, str]) -> bool:
    ctype = headers.get("content-type")
    return ctype is None or "json" in ctype.lower()


def _in(seconds: float) -> str:
    return f"{max(0, round(seconds))} s"


def _throttle_reason(
    cls: ThrottleClass, status: int, retry_after: float | None, rh: RateHeaders, now: float
) -> str:
    name = {"primary": "primary rate limit", "secondary": "secondary rate limit"}.get(
        cls, f"rate limited ({status})"
    )
    if retry_after is not None:
        return f"{name} (retry-after {_in(retry_after - now)})"
    if rh.remaining == 0 and rh.reset is not None:
        return f"{name} (remaining 0, reset in {_in(rh.reset - now)})"
    if rh.remaining == 0:
        return f"{name} (remaining 0)"
    return name


def classify(
    status: int,
    headers: Mapping[str, str],
    body: bytes | None,
    *,
    method: str,
    path: str,
    now: float,
) -> Verdict:
    """Decide what an answer means; never raises, whatever the headers or body hold.

    GraphQL's own limit error first (it comes with a 200), then a 403 or 429
    (:func:`_refusal`), then every other status (:func:`_plain`).
    """
    h = _lower_headers(headers)
    rh = parse_rate_headers(h)
    retry_after = parse_retry_after(h.get("retry-after"), now)
    doc, text, parsed = _decode_body(body)
    graphql_cls = _graphql_limit(doc)
    meaning: _Meaning
    if graphql_cls is not None:
        meaning = ("throttle", graphql_cls, _graphql_reason(graphql_cls, rh, now))
    elif status in (403, 429):
        meaning = _refusal(status, h, rh, _messages(doc) if parsed and doc is not None else text)
    else:
        meaning = _plain(status, h, rh, parsed, now)
    kind, cls, reason = meaning
    if kind == "throttle" and cls is not None and not reason:
        reason = _throttle_reason(cls, status, retry_after, rh, now)
    return Verdict(
        kind=kind,
        cls=cls,
        resource=rh.resource or resource_for(method, path),
        retry_after=retry_after,
        reset=rh.reset,
        remaining=rh.remaining,
        reason=reason,
        graphql_limited=graphql_cls == "primary",
    )


_Meaning = tuple[VerdictKind, ThrottleClass | None, str]
"""(kind, throttle class, reason); a throttle's empty reason is :func:`_throttle_reason`'s to write."""


def _graphql_reason(cls: ThrottleClass, rh: RateHeaders, now: float) -> str:
    """GraphQL's primary limit with points still left: the query costs more than remains (else the usual words)."""
    if cls != "primary" or not rh.remaining:
        return ""
    reason = f"GraphQL rate limited: the query costs more than the {rh.remaining} points left"
    if rh.reset is not None:
        reason += f" (reset in {_in(rh.reset - now)})"
    return reason


def _refusal(status: int, h: dict[str, str], rh: RateHeaders, said: str) -> _Meaning:
    """A 403 or 429: a throttle when its words, its headers or its status say so; else a permission refusal."""
    wording = _wording_class(said)
    if wording == "primary" or wording == "secondary":
        return "throttle", wording, ""
    if rh.remaining == 0:
        return "throttle", "primary", ""
    if h.get("retry-after", "").strip():
        return "throttle", "secondary", ""
    if wording == "unknown" or status == 429:
        return "throttle", "unknown", ""
    return "permission", None, "permission denied (403 without any rate-limit sign)"


def _plain(status: int, h: dict[str, str], rh: RateHeaders, parsed: bool, now: float) -> _Meaning:
    """Any status but a 403 or 429: a success (perhaps the one that spent the allowance), a failure, a refusal."""
    if 200 <= status < 300 or status == 304:
        if status != 304 and not parsed and _json_expected(h):
            return "failure", None, f"unparsable answer body ({status})"
        if rh.remaining == 0:
            reset = f", reset in {_in(rh.reset - now)}" if rh.reset is not None else ""
            return "spent_ok", None, f"allowance spent by this answer (remaining 0{reset})"
        return "ok", None, f"ok ({status})"
    if 500 <= status < 600:
        return "failure", None, f"GitHub failed ({status})"
    if 400 <= status < 500:
        return "other", None, f"refused ({status})"
    return "other", None, f"unexpected status ({status})"


def credible_reset(reset: float | None, now: float) -> bool:
    """A reset is believed only if it lies ahead and within an hour and five minutes."""
    return reset is not None and now < reset <= now + RESET_HORIZON


def credible_retry_after(until: float | None, now: float) -> bool:
    """A retry-after is believed only if it is not past and within an hour."""
    return until is not None and now <= until <= now + RETRY_AFTER_HORIZON


def fallback_delay(streak: int) -> float:
    """60 s, doubling with each throttle in a row, at most 15 min."""
    steps = min(max(int(streak), 0), 16)  # 2**16 * 60 is far past the cap
    return min(FALLBACK_BASE * float(2**steps), FALLBACK_CAP)


def jitter(pool_id: str, epoch: int) -> float:
    """Seconds in [0, 10) every host computes alike for one pause, and that differ between pauses.

    Deterministic so that a pause is reproducible and testable; different per
    pool and epoch so that hosts sharing one pool after a fallback pause do not
    wake on the same second each time.
    """
    import hashlib  # here: status reads the rules and never jitters (issue 15)

    digest = hashlib.sha256(f"{pool_id}\x00{int(epoch)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 * JITTER_SPAN


def pause_until(
    verdict: Verdict, *, now: float, streak: int, pool_id: str, epoch: int
) -> tuple[float, PauseHow]:
    """Until when a throttle (or a spent success) pauses its resource, and on whose word.

    A credible ``retry-after`` first, then a credible reset when remaining is
    0 (or a GraphQL ``RATE_LIMITED``, whatever ``remaining`` says: the query
    cost more than was left, so nothing smaller is promised before the reset);
    both are used exactly as given (no jitter: it could only shorten or
    lengthen GitHub's own word, and the probe already keeps hosts from waking
    all at once). Anything else takes the fallback for this ``streak`` plus the
    deterministic jitter of (``pool_id``, ``epoch``).
    """
    if credible_retry_after(verdict.retry_after, now):
        assert verdict.retry_after is not None
        return verdict.retry_after, "retry-after"
    if (verdict.remaining == 0 or verdict.graphql_limited) and credible_reset(verdict.reset, now):
        assert verdict.reset is not None
        return verdict.reset, "reset"
    return now + fallback_delay(streak) + jitter(pool_id, epoch), "fallback"
