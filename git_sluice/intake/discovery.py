"""The discovery clock of a clone: when each branch's list was last asked, and at what revision.

Kept in the clone's sluice dir so every process of the clone (drivers, waits,
hook steps, a supervisor's restart loop) shares one clock: nothing asks a list
that any of them asked within the interval, unless something moved locally.
The decision itself (:func:`due`) is pure.
"""

from __future__ import annotations

from pathlib import Path

from ..records import record
from ..statefile import JsonDocument

LOCAL_MOVEMENT_REASONS = frozenset({"push", "opened", "moved"})
SLACK = 2.0
"""A tick woken a little before the interval's end still asks: else the list is asked every other tick
(measured at defaults: every 120 s, not 60, as the driver's sleep starts before its round records the asking)."""


@record(frozen=True)
class LastAsked:
    asked_at: float
    rev: str | None


@record(frozen=True)
class Due:
    ask: bool
    why: str
    next_at: float | None = None


def due(last: LastAsked | None, *, now: float, interval: float, rev: str | None, reason: str) -> Due:
    """Whether this round asks GitHub, and why (pure).

    Local movement asks at once: the branch's revision moved since the last
    asking, or the caller says this host pushed to a request's head or opened
    one. Otherwise the list is asked once per interval for the whole clone.
    """
    if reason in LOCAL_MOVEMENT_REASONS:
        return Due(True, f"local movement ({reason})")
    if last is None:
        return Due(True, "never asked on this clone")
    if rev is not None and last.rev is not None and rev != last.rev:
        return Due(True, "the branch moved")
    if last.asked_at > now:
        # a clock that went back (or a record from the future): do not trust it to hold us off
        return Due(True, "last asking is in the future; asking again")
    next_at = last.asked_at + interval
    if now >= next_at - SLACK:
        return Due(True, "discovery interval passed")
    return Due(False, "asked within the discovery interval", next_at)


class DiscoveryLog:
    """Last asking per branch, in ``<sluice_dir>/discovery.json`` (atomic writes)."""

    def __init__(self, sluice_dir: Path) -> None:
        self.path = Path(sluice_dir) / "discovery.json"
        self._doc = JsonDocument(self.path, what="discovery log")

    def last(self, branch: str) -> LastAsked | None:
        entry = self._doc.read().get(branch)
        if not isinstance(entry, dict):
            return None
        asked_at = entry.get("asked_at")
        rev = entry.get("rev")
        if not isinstance(asked_at, (int, float)):
            return None
        return LastAsked(float(asked_at), rev if isinstance(rev, str) else None)

    def record(self, branch: str, *, asked_at: float, rev: str | None) -> None:
        with self._doc.update() as data:
            data[branch] = {"asked_at": asked_at, "rev": rev}
