"""One driver per clone: a second ``git sluice drive`` refuses at start, naming the first.

Two drivers in one clone share the host's name, so each would read the other's
lease mark as its own, renew it, and on stopping delete a mark the other still
holds. An advisory lock (``flock``) on ``<sluice dir>/drive.pid`` is held for
the driver's whole life; the kernel lets go of it when the process ends, so a
crashed driver never blocks the next one, and no stale pid file can lie.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from ..errors import AlreadyDriving as AlreadyDriving
from ..procs import PidLock

LOCK_NAME = "drive.pid"


class DriverLock:
    """Held from ``__enter__`` to ``__exit__`` (or the process's end): this clone's one driver."""

    def __init__(self, sluice_dir: Path) -> None:
        self.path = Path(sluice_dir) / LOCK_NAME
        self._lock = PidLock(self.path)

    def acquire(self) -> None:
        if not self._lock.try_hold():
            raise AlreadyDriving(self._lock.holder, self.path)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> "DriverLock":
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
