"""One driver per clone: a second ``git sluice drive`` refuses at start, naming the first.

Two drivers in one clone share the host's name, so each would read the other's
lease mark as its own, renew it, and on stopping delete a mark the other still
holds. An advisory lock (``flock``) on ``<sluice dir>/drive.pid`` is held for
the driver's whole life; the kernel lets go of it when the process ends, so a
crashed driver never blocks the next one, and no stale pid file can lie.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from ..errors import AlreadyDriving as AlreadyDriving

LOCK_NAME = "drive.pid"


class DriverLock:
    """Held from ``__enter__`` to ``__exit__`` (or the process's end): this clone's one driver."""

    def __init__(self, sluice_dir: Path) -> None:
        self.path = Path(sluice_dir) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise AlreadyDriving(pid, self.path) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
        finally:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> "DriverLock":
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    """The holder's pid as it wrote it; None when unreadable (it may be writing it right now)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and 0 < int(text) < 2**31 else None
