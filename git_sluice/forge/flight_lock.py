"""The single-flight lock of one kept address: a ``flock`` on ``<key>.lock``, and the mark its holder leaves in it.

Why a file lock with a mark inside rather than statefile's lock: a caller that
waited for the lock must learn whether the holder's call was *answered* (then
it shares that answer) or not (then it asks itself). The holder writes a fresh
mark into the lock file with ``pwrite`` when GitHub answers; a waiter compares
the mark it saw before waiting with the one after. A pwrite into an open file,
not a rename: a quiet round of 150 conditional GETs used to rewrite and rename
150 meta files (issue 15).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import threading
import time
from pathlib import Path
from typing import Protocol

from ..statefile import open_lock

MARK_SIZE = 40
_marks = itertools.count(1)


class Holders(Protocol):
    """Who keeps the locks of a directory of kept answers: makes the folder, knows which are held (to stamp them)."""

    def ensure_dir(self) -> None: ...

    def holding(self, lock: FlightLock) -> None: ...

    def released(self, lock: FlightLock) -> None: ...


class FlightLock:
    """The per-address lock (``flock`` on ``<key>.lock``), and the mark its holder leaves in it.

    ``mark()`` reads the mark (no lock needed); the holder's ``stamp()``
    writes a fresh one when the call is answered. Not re-entrant; one
    holder at a time per open lock, in any thread or process.
    """

    def __init__(self, address: str, path: Path, holders: Holders) -> None:
        self.address, self.path, self.holders = address, path, holders
        self._fd: int | None = None
        self.held = False

    def _open(self) -> int:
        if self._fd is None:
            self.holders.ensure_dir()
            self._fd = open_lock(self.path)  # a folder or a link in its place is moved aside
        return self._fd

    def mark(self) -> bytes:
        try:
            return os.pread(self._open(), MARK_SIZE, 0)
        except OSError:
            return b""

    def acquire(self, timeout: float | None = None, poll: float = 0.05) -> bool:
        """Take the lock; False when ``timeout`` seconds (real time) pass first (None: wait as long as it takes)."""
        fd = self._open()
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if end is not None and time.monotonic() >= end:
                    return False
                time.sleep(poll if end is None else max(min(poll, end - time.monotonic()), 0.0))
        self.held = True
        self.holders.holding(self)
        return True

    def stamp(self) -> None:
        """A fresh mark: the call under this lock was answered (waiters may share it)."""
        mark = f"{os.getpid()}.{threading.get_ident()}.{next(_marks)}.{time.monotonic_ns()}"
        os.pwrite(self._open(), mark.encode()[:MARK_SIZE].ljust(MARK_SIZE), 0)

    def release(self) -> None:
        if self.held:
            self.held = False
            self.holders.released(self)
            with contextlib.suppress(OSError):
                fcntl.flock(self._open(), fcntl.LOCK_UN)
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FlightLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
