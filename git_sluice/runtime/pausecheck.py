"""How often this host looks at the remote's pause notes between fetches (issue #14, point 14).

A pause published by one host used to reach the others only at their next
round's fetch (p50 28 s, p99 58 s), and never a tool calling through ``git
sluice api``, which does not fetch. Now each call may first ask the remote
for the pool's pause refs — one ``git ls-remote`` of ``refs/sluice/pause/<pool>/*``,
and a fetch only when they differ from the mirror — but at most once per
:data:`CHECK_INTERVAL` per host and remote, whichever process calls: the
claim is kept in one small file of the host state directory. A fleet of 24
hosts calling all the time then asks the remote 2.4 times a second, under
GitHub's advice (15 fetches a second); pushes are unchanged. A round's own
fetch brings the pool's notes too, so it counts as a look (:meth:`PauseChecks.looked`):
the call right after it sends no ``ls-remote`` (issue 15).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from ..statefile import JsonDocument

CHECK_INTERVAL = 10.0
"""A host calling often learns of a published pause within this long; a host calling rarely
looks at each call. Each other host so sends at most one call before it honours the pause:
one within the interval, which the spent pool refuses (its own refusal is the pause)."""

FILE_NAME = "pause-checks.json"


class PauseChecks:
    """When this host last looked at each remote's pause notes (wall time; shared by its processes)."""

    def __init__(self, state_dir: Path, *, interval: float = CHECK_INTERVAL) -> None:
        self._doc = JsonDocument(Path(state_dir) / FILE_NAME, what="pause checks")
        self.interval = interval
        self._known: dict[str, float] = {}  # the latest look this process read or wrote, per key

    def _recent(self, last: object, now: float) -> bool:
        return isinstance(last, (int, float)) and math.isfinite(last) and last <= now < last + self.interval

    @staticmethod
    def key(origin: str) -> str:
        return hashlib.sha256(origin.encode()).hexdigest()[:24]  # no URL (and no credential in it) kept

    def looked(self, origin: str, at: float) -> None:
        """A fetch that began at ``at`` brought the notes: a look as good as one that ``claim`` grants.

        Kept only if later than the look on record; a time that is not a finite
        number is ignored.
        """
        if not math.isfinite(at):
            return
        key = self.key(origin)
        known = self._known.get(key)
        if isinstance(known, float) and known >= at:
            return
        with self._doc.update() as data:
            last = data.get(key)
            if isinstance(last, (int, float)) and math.isfinite(last) and last >= at:
                self._known[key] = float(last)
                return
            data[key] = at
        self._known[key] = at

    def claim(self, origin: str, now: float) -> bool:
        """True if this process should look now (and the look is recorded as begun at ``now``).

        A time in the file ahead of ``now`` (a clock set back) or not a number is
        no claim: looking once too often costs one ``ls-remote``, never a call.
        """
        key = self.key(origin)
        if self._recent(self._known.get(key), now):
            return False  # a look this process knows of is recent still: no later one makes it less so
        last = self._doc.read().get(key)
        if isinstance(last, (int, float)) and self._recent(last, now):
            self._known[key] = float(last)
            return False  # the common case, a read and no lock
        with self._doc.update() as data:
            if self._recent(data.get(key), now):
                self._known[key] = float(data[key])
                return False
            data[key] = now
            self._known[key] = now
            if len(data) > 256:  # remotes come and go: keep the newest
                for old in sorted(data, key=lambda k: data[k] if isinstance(data[k], (int, float)) else 0)[:-256]:
                    data.pop(old, None)
        return True
