"""One look at a remote per host per tick: when this host last fetched each clone's ``refs/sluice/*``.

Each driver fetched its clone's leases and notes at every tick, each wait
and each step its own, and the host watch now needs every repository's
survey at its tick too: at 12 hosts that was 18,000 git requests an hour to
the shared remote (issue 29), all of which reach GitHub when GitHub is the
remote. A fetch that began a moment ago — by the host watch, or by another
process of the clone — already brought what the next one would, so within
:data:`SHARE_WINDOW` a process takes it as its own look (its observers are
told the look's start, exactly as after a fetch of their own) instead of
asking the remote again.

A look brings what every process of the host asked of that clone lately,
not only what the one that took it needs: a wait's base branch rides the
host watch's look, and the driver's branches ride a wait's
(:data:`WANT_HORIZON`). Otherwise each process whose needs the last look did
not cover sends a fetch of its own in the same tick, and the next one,
needing the first one's refs, another.

Kept per clone and remote in the host state dir (``remote-looks.json``),
by the monotonic clock with the boot id beside it: a look from another boot
or another kind of clock is no look, which costs one fetch, never a stale
view. A refspec read back from that file is fetched only if it writes under
``refs/sluice/`` (a damaged file can never make a look write the user's refs).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from pathlib import Path

from collections.abc import Callable

from ..boot import boot_id as system_boot_id
from ..clock import Clock, clock_kind
from ..errors import StateError
from ..statefile import JsonDocument, file_lock, held

FILE_NAME = "remote-looks.json"
SHARE_WINDOW = 10.0
"""A fetch that began this recently stands for the next one (a tick's work on one host takes less)."""
LOOK_WAIT = 150.0
"""How long a process waits for another's look at the same remote (a fetch's own limit is 120 s)."""
MAX_KEYS = 512
MAX_REFSPECS = 256
WANT_HORIZON = 300.0
"""A refspec a process of this host asked for within this long rides every look at that clone's remote."""
WANT_REFRESH = 30.0
"""A want is written again at most this often (a shared look writes nothing more often)."""
MAX_RIDERS = 64
"""The most refspecs other processes' wants add to one look."""
_RIDER = re.compile(r"\+?refs/[^\s:]+:refs/sluice/[^\s:]+")


def look_key(common_dir: Path | str, remote: str) -> str:
    """One clone's remote (no URL is kept: a URL may carry a credential)."""
    return hashlib.sha256(f"{Path(common_dir).resolve()}\n{remote}".encode()).hexdigest()[:24]


class RemoteLooks:
    """When this host's processes last fetched each clone's remote (shared by them)."""

    def __init__(self, state_dir: Path, clock: Clock, *, boot: str | None = None) -> None:
        self.dir = Path(state_dir)
        self._doc = JsonDocument(self.dir / FILE_NAME, what="remote looks")
        self.clock = clock
        self.boot = boot if boot is not None else system_boot_id()
        self.kind = clock_kind(clock)

    def noted(self, key: str, started: float, refspecs: Sequence[str]) -> None:
        """A fetch of ``key`` that began at ``started`` (monotonic) brought ``refspecs``."""
        if not math.isfinite(started):
            return
        try:
            with self._doc.update() as data:
                old = data.get(key)
                if self._valid(old) and float(old["at"]) >= started:  # type: ignore[index]
                    return
                entry: dict[str, object] = {"at": started, "boot": self.boot, "clock": self.kind,
                                            "refspecs": sorted(set(refspecs))[:MAX_REFSPECS]}
                if isinstance(old, dict) and self._same_boot(old) and isinstance(old.get("wanted"), dict):
                    entry["wanted"] = old["wanted"]
                data[key] = entry
                if len(data) > MAX_KEYS:
                    for stale in sorted(data, key=lambda k: self._at(data[k]))[: len(data) - MAX_KEYS]:
                        data.pop(stale, None)
        except Exception:  # a look not shared costs one fetch, never a round
            return

    def recent(self, key: str, needs: Sequence[str], window: float = SHARE_WINDOW) -> float | None:
        """The start of a fetch of ``key`` within ``window`` seconds (this boot, this clock) that brought
        at least ``needs``; else None."""
        try:
            found = self._doc.read().get(key)
        except Exception:
            return None
        if not self._valid(found):
            return None
        brought = found.get("refspecs")  # type: ignore[union-attr]
        if not isinstance(brought, list) or not set(needs) <= set(brought):
            return None
        at = float(found["at"])  # type: ignore[index]
        now = self.clock.monotonic()
        return at if at <= now < at + window else None

    def _valid(self, value: object) -> bool:
        return (
            isinstance(value, dict) and value.get("boot") == self.boot and value.get("clock") == self.kind
            and isinstance(value.get("at"), (int, float)) and not isinstance(value.get("at"), bool)
            and math.isfinite(value["at"])
        )

    @staticmethod
    def _at(value: object) -> float:
        at = value.get("at") if isinstance(value, dict) else None
        return float(at) if isinstance(at, (int, float)) and math.isfinite(at) else 0.0

    def share_or_fetch(self, key: str, needs: Sequence[str], window: float,
                       fetch: Callable[[Sequence[str]], None]) -> float | None:
        """A look at ``key`` begun within ``window`` (its start), or ``fetch(riders)`` now (None).

        One look at a time per clone and remote on the host: a process that
        finds another's fetch of the same refs in flight waits for it and
        takes it, instead of sending a second one beside it (single flight, as
        the forge's calls have). ``riders`` are what other processes of the
        host asked of this remote lately beyond ``needs``: the fetch brings them
        too, so their next look is this one. ``fetch`` raises what it raises; a
        lock that cannot be had costs a fetch of one's own, never a failure.
        """
        try:
            lock = file_lock(self.dir / "looks" / f"{key}.lock", timeout=LOOK_WAIT)
            with held(lock, busy="the look at the remote"):
                return self._share_or_fetch(key, needs, window, fetch)
        except (StateError, OSError):
            return self._share_or_fetch(key, needs, window, fetch)

    def _share_or_fetch(self, key: str, needs: Sequence[str], window: float,
                        fetch: Callable[[Sequence[str]], None]) -> float | None:
        self.wanted(key, needs)
        shared = self.recent(key, needs, window)
        if shared is not None:
            return shared
        fetch(self.riders(key, needs))
        return None

    def wanted(self, key: str, needs: Sequence[str]) -> None:
        """A process of this host needs ``needs`` of ``key``'s remote (kept :data:`WANT_HORIZON`)."""
        now = self.clock.monotonic()
        if not math.isfinite(now):
            return
        try:
            if all(now - at < WANT_REFRESH for at in self._wants(self._doc.read().get(key), needs)):
                return
            with self._doc.update() as data:
                old = data.get(key)
                entry = dict(old) if isinstance(old, dict) and self._same_boot(old) else {
                    "boot": self.boot, "clock": self.kind}
                wants = {spec: at for spec, at in self._live_wants(entry, now).items()}
                wants.update({spec: now for spec in needs if isinstance(spec, str)})
                entry["wanted"] = dict(sorted(wants.items(), key=lambda kv: -kv[1])[:MAX_REFSPECS])
                data[key] = entry
        except Exception:  # a want not kept costs another process a fetch, never a round
            return

    def riders(self, key: str, needs: Sequence[str]) -> list[str]:
        """What other processes of this host asked of ``key``'s remote within :data:`WANT_HORIZON`,
        beyond ``needs``: only refspecs that write under ``refs/sluice/``, at most :data:`MAX_RIDERS`."""
        try:
            entry = self._doc.read().get(key)
        except Exception:
            return []
        if not isinstance(entry, dict) or not self._same_boot(entry):
            return []
        have = set(needs)
        live = self._live_wants(entry, self.clock.monotonic())
        return [spec for spec in sorted(live, key=lambda s: -live[s])
                if spec not in have and len(spec) <= 1024 and _RIDER.fullmatch(spec)][:MAX_RIDERS]

    def _live_wants(self, entry: dict[str, object], now: float) -> dict[str, float]:
        found = entry.get("wanted")
        if not isinstance(found, dict):
            return {}
        return {spec: float(at) for spec, at in found.items()
                if isinstance(spec, str) and isinstance(at, (int, float)) and not isinstance(at, bool)
                and math.isfinite(at) and 0 <= now - at < WANT_HORIZON}

    def _wants(self, entry: object, needs: Sequence[str]) -> list[float]:
        """When each of ``needs`` was last wanted (-inf when never, or the entry is of another boot)."""
        if not isinstance(entry, dict) or not self._same_boot(entry):
            return [-math.inf]
        live = self._live_wants(entry, self.clock.monotonic())
        return [live.get(spec, -math.inf) for spec in needs]

    def _same_boot(self, entry: dict[str, object]) -> bool:
        return entry.get("boot") == self.boot and entry.get("clock") == self.kind
