"""Durations as people write them in git config, and as people read them back.

One small grammar (``90s``, ``5m``, ``1h``, ``1h30m``, or plain seconds) is used
for every duration setting and option, so a user learns it once; anything else
is refused with the accepted form rather than guessed at, because a misread
interval is exactly how a fleet overspends its allowance.
"""

from __future__ import annotations

import math
import re

ACCEPTED_FORM = "90s, 5m, 1h, 1h30m or plain seconds"

_NUMBER = r"\d+(?:\.\d+)?"
_UNITS = re.compile(
    rf"^(?:(?P<h>{_NUMBER})h)?(?:(?P<m>{_NUMBER})m)?(?:(?P<s>{_NUMBER})s)?$"
)
_PLAIN = re.compile(rf"^{_NUMBER}$")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; raises ValueError naming the accepted form.

    Units must come largest first (``1h30m``, not ``30m1h``) so that a typo
    such as ``5mm`` or ``1m1m`` is refused instead of silently summed.
    """
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a duration: expected {ACCEPTED_FORM}")
    cleaned = text.strip().lower()
    if _PLAIN.match(cleaned):
        return float(cleaned)
    match = _UNITS.match(cleaned)
    if not cleaned or match is None or not any(match.group(u) for u in "hms"):
        raise ValueError(f"{text!r} is not a duration: expected {ACCEPTED_FORM}")
    hours = float(match.group("h") or 0)
    minutes = float(match.group("m") or 0)
    seconds = float(match.group("s") or 0)
    return hours * 3600 + minutes * 60 + seconds


def format_duration(seconds: float) -> str:
    """A short human reading: ``45 s``, ``1 min 30 s``, ``2 h 5 min``, ``3 d 4 h``.

    Two units at most: the reader wants the size of a wait, not its precision.
    """
    if math.isnan(seconds) or math.isinf(seconds):
        return str(seconds)
    sign = "-" if seconds < 0 else ""
    value = abs(float(seconds))
    if value < 10 and value != int(value):
        return f"{sign}{value:.1f} s"
    whole = int(round(value))
    if whole < 60:
        return f"{sign}{whole} s"
    if whole < 3600:
        minutes, secs = divmod(whole, 60)
        return f"{sign}{minutes} min" + (f" {secs} s" if secs else "")
    if whole < 86400:
        hours, rest = divmod(whole, 3600)
        minutes = rest // 60
        return f"{sign}{hours} h" + (f" {minutes} min" if minutes else "")
    days, rest = divmod(whole, 86400)
    hours = rest // 3600
    return f"{sign}{days} d" + (f" {hours} h" if hours else "")
