"""Whether a clone's queue still stands on the host watch's newest tick, decided without reading it.

A round on the host watch's answers compares the watch's list with the
queue and reads what moved. When nothing moved since the tick the queue was
last taken in from, that comparison reads 500 queued entries, the watch's 500
listed requests, and writes the 500 entries back, only to find what the
watch's own record already says: this base's list is the same (its
``changed_tick``), no waiting head's checks moved (the heads' ticks), and the
take-in left nothing it would read again (:class:`Standing`, kept by the
clone's watch cursor). Issue 15: two thirds of a quiet fresh round's own work,
and all of it grows with the queue.

Pure: the caller gathers the facts (the cursor, a header of the watch's
answers, a fingerprint of the queue file, the registry) and does the I/O.
"""

from __future__ import annotations

from ..records import record


@record
class Standing:
    """What a watched take-in left, when the same list with nothing moved would read nothing again.

    ``fingerprint`` is of the queue file the take-in wrote (any other writer —
    a withdrawal, a round that listed for itself, an older version — changes
    it, and the mark no longer applies); ``holder`` the lease holder it wrote;
    ``open`` the requests it listed, for the round's report.
    """

    fingerprint: str
    holder: str | None
    open: int


@record
class WatchedBase:
    """One base's part of the watch's newest tick, without its requests (nothing here grows with them)."""

    epoch: str
    tick: int
    next_at: float
    changed_tick: int
    """The last tick in which the base's list (heads, update times, drafts) changed."""
    heads_tick: int
    """The last tick in which any watched head of the repository saw its checks move (0: none)."""


def unseen(base: WatchedBase, *, epoch: str | None, seen: int, base_moved: bool) -> bool:
    """Whether the watch has ticked since the clone last took this base in (else there is nothing to read)."""
    return epoch != base.epoch or seen < base.tick or base_moved


def stands(
    base: WatchedBase,
    standing: Standing | None,
    *,
    epoch: str | None,
    seen: int,
    fingerprint: str | None,
    holder: str | None,
    base_moved: bool,
    heads_noted: bool,
) -> str | None:
    """None when the queue stands as taken in at tick ``seen``; else why it must be compared again.

    ``heads_noted``: the watch's registry still holds the heads this clone
    waits on — were they forgotten, no tick would watch them, no head would
    ever move, and the queue would stand forever on checks nobody asks.
    """
    if standing is None:
        return "the last take-in left something to read again"
    if epoch != base.epoch:
        return "the watch's answers were started anew"
    if seen > base.tick:
        return "the clone's cursor is ahead of the watch"
    if base.changed_tick > seen:
        return f"the base's list changed in tick {base.changed_tick}"
    if base.heads_tick > seen:
        return f"a watched head's checks moved in tick {base.heads_tick}"
    if base_moved:
        return "the base branch moved"
    if fingerprint is None or fingerprint != standing.fingerprint:
        return "the queue file changed since the take-in"
    if holder != standing.holder:
        return "the lease holder changed"
    if not heads_noted:
        return "the watch no longer holds the heads this clone waits on"
    return None
