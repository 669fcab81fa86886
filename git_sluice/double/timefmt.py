"""The two ways GitHub writes a time, from the double's clock.

GitHub's JSON carries RFC 3339 UTC seconds ("2026-01-01T00:00:00Z") and its
HTTP headers carry HTTP dates; the double writes both from one injected clock
so a test that moves a FakeClock sees every timestamp move with it.
"""

from __future__ import annotations

import datetime as _dt
import email.utils


def rfc3339(epoch: float) -> str:
    """GitHub's JSON time: whole seconds, UTC, a literal Z."""
    when = _dt.datetime.fromtimestamp(int(epoch), tz=_dt.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def http_date(epoch: float) -> str:
    """An IMF-fixdate, as in Last-Modified, Date and an HTTP-date retry-after."""
    return email.utils.formatdate(int(epoch), usegmt=True)


def parse_http_date(text: str) -> float | None:
    """The epoch of an HTTP date, or None when it is not one (then it is ignored, as HTTP says)."""
    try:
        when = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.timestamp()
