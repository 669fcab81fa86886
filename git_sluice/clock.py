"""One notion of time, injected everywhere.

Every part of git-sluice that waits, expires or timestamps asks a :class:`Clock`
rather than :mod:`time`, so tests move time instead of sleeping through it and
the GitHub double and git-sluice can share one clock in-process.

Subprocess tests cannot share an object, so they share a file: when the
environment variable ``GIT_SLUICE_TEST_CLOCK`` names a file, :func:`default_clock`
returns a :class:`FileClock` over it (test-only; documented in
``docs/reference.md``). The file holds one float, seconds since the epoch.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
TYPE_CHECKING = False  # typing's own flag, without importing typing (issue 15: ~2 ms of queue's start-up)
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # at run time Clock is a plain base: nothing checks it with isinstance

from .statefile import file_lock, held, write_atomic

TEST_CLOCK_ENV = "GIT_SLUICE_TEST_CLOCK"


class Clock(Protocol):
    def time(self) -> float:
        """Wall-clock seconds since the epoch (what GitHub's reset times use)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back within one boot."""

    def sleep(self, seconds: float) -> None:
        """Wait; a fake clock advances instead of blocking."""


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to (or when someone sleeps on it).

    ``sleep`` advances the clock rather than blocking, so a thread waiting out a
    one-hour pause returns at once with the clock an hour later. Thread-safe.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def time(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        return self.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.advance(seconds)
        else:
            # let other threads run, as a real sleep(0) would
            time.sleep(0)

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._now += float(seconds)
            return self._now

    def set(self, when: float) -> None:
        with self._lock:
            self._now = float(when)


class FileClock:
    """A clock shared by processes through a file (test-only).

    ``time`` reads the file; ``sleep`` moves the file forward to at least
    ``now + seconds`` (never back), so a subprocess waiting out a pause advances
    the shared time for everyone, exactly as a :class:`FakeClock` does in-process.
    """

    KIND = "FileClock"
    """Every clock reading the same file is one kind (:func:`clock_kind`), a subclass too."""

    def __init__(self, path: str | os.PathLike[str], start: float | None = None) -> None:
        self.path = Path(path)
        if start is not None:
            self.set(start)

    def time(self) -> float:
        path = str(self.path)
        for _ in range(50):
            try:
                # os-level open and read: a round asks the time some thousand times, and
                # pathlib's read_text cost a benchmarked round tens of milliseconds
                fd = os.open(path, os.O_RDONLY)
                try:
                    text = os.read(fd, 64).strip()
                finally:
                    os.close(fd)
                if text:
                    return float(text)
            except (OSError, ValueError):
                pass
            time.sleep(0.001)
        raise RuntimeError(f"{TEST_CLOCK_ENV} file {self.path} is unreadable")

    def monotonic(self) -> float:
        return self.time()

    def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            time.sleep(0)
            return
        target = self.time() + seconds
        self._advance_to(target)
        # yield the processor a little so other processes observe the move
        time.sleep(0.001)

    def advance(self, seconds: float) -> float:
        target = self.time() + seconds
        self._advance_to(target)
        return target

    def set(self, when: float) -> None:
        self._write(when)

    def _advance_to(self, target: float) -> None:
        # read-compare-write under the lock: two sleepers never move the shared time back
        with held(file_lock(self.path.with_name(self.path.name + ".lock")), busy="the test clock's lock"):
            if self.time() < target:
                write_atomic(self.path, repr(float(target)))

    def _write(self, when: float) -> None:
        write_atomic(self.path, repr(float(when)))


def rfc3339(epoch: float) -> str:
    """``2026-11-29T18:00:00Z``: UTC, whole seconds (truncated), as GitHub and the public JSON write it."""
    return _rfc3339(int(epoch))


@functools.lru_cache(maxsize=4096)
def _rfc3339(seconds: int) -> str:
    # a queue of 500 entries writes a thousand times, most of them the same few seconds (issue 15)
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=4096)
def parse_rfc3339(text: str) -> float:
    """Epoch seconds of an RFC 3339 time (``Z`` or an offset); no zone is a ValueError."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return value.timestamp()


def clock_kind(clock: Clock) -> str:
    """Which readings can be compared with ``clock``'s: kept beside a monotonic time in a shared file.

    Its class's name, unless the class says which time it keeps (``KIND``): a
    benchmark's in-process clock over the shared file reads the same time as
    the subprocesses' :class:`FileClock`, so what one saw the other may use.
    """
    kind = getattr(type(clock), "KIND", None)
    return kind if isinstance(kind, str) else type(clock).__qualname__


def default_clock() -> Clock:
    """The system clock, or the shared test clock when the test setting is on."""
    path = os.environ.get(TEST_CLOCK_ENV)
    if path:
        return FileClock(path)
    return SystemClock()
