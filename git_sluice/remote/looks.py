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

Kept per clone and remote in the host state dir (``remote-looks.json``),
by the monotonic clock with the boot id beside it: a look from another boot
or another kind of clock is no look, which costs one fetch, never a stale
view.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path

from collections.abc import Callable

from ..boot import boot_id as system_boot_id
from ..clock import Clock
from ..errors import StateError
from ..statefile import JsonDocument, file_lock, held

FILE_NAME = "remote-looks.json"
SHARE_WINDOW = 10.0
"""A fetch that began this recently stands for the next one (a tick's work on one host takes less)."""
LOOK_WAIT = 150.0
"""How long a process waits for another's look at the same remote (a fetch's own limit is 120 s)."""
MAX_KEYS = 512
MAX_REFSPECS = 256


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
        self.kind = type(clock).__qualname__

    def noted(self, key: str, started: float, refspecs: Sequence[str]) -> None:
        """A fetch of ``key`` that began at ``started`` (monotonic) brought ``refspecs``."""
        if not math.isfinite(started):
            return
        try:
            with self._doc.update() as data:
                old = data.get(key)
                if self._valid(old) and float(old["at"]) >= started:  # type: ignore[index]
                    return
                data[key] = {"at": started, "boot": self.boot, "clock": self.kind,
                             "refspecs": sorted(set(refspecs))[:MAX_REFSPECS]}
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

    def share_or_fetch(self, key: str, needs: Sequence[str], window: float, fetch: Callable[[], None]) -> float | None:
        """A look at ``key`` begun within ``window`` (its start), or ``fetch()`` now (None).

        One look at a time per clone and remote on the host: a process that
        finds another's fetch of the same refs in flight waits for it and
        takes it, instead of sending a second one beside it (single flight, as
        the forge's calls have). ``fetch`` raises what it raises; a lock that
        cannot be had costs a fetch of one's own, never a failure.
        """
        try:
            lock = file_lock(self.dir / "looks" / f"{key}.lock", timeout=LOOK_WAIT)
            with held(lock, busy="the look at the remote"):
                shared = self.recent(key, needs, window)
                if shared is not None:
                    return shared
                fetch()
                return None
        except (StateError, OSError):
            shared = self.recent(key, needs, window)
            if shared is not None:
                return shared
            fetch()
            return None
