"""Whether a process on this host has ended: the hook runner waits for git's own exit.

Standard library only, so :mod:`.entry` can ask before any heavy import.
"""

from __future__ import annotations

import os


def gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie has: git's work is done); pids 0 and 1 count as gone."""
    if pid <= 1:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return False


class PidLock:
    """Held for a process's life: an advisory lock (``flock``) on a file that holds its pid.

    The kernel lets go when the process ends, so a crashed holder never blocks
    the next one and no stale pid file can lie; a second process finds the
    lock held and reads whose it is (one driver per clone, one ``serve`` per
    socket).
    """

    def __init__(self, path: str | os.PathLike[str], *, own: bool = True) -> None:
        self.path = os.fspath(path)
        self.own = own
        """The path is git-sluice's own (a directory or a link in its place is moved aside), not a person's choice."""
        self._fd: int | None = None
        self.holder: int | None = None
        """After a failed :meth:`try_hold`: the holder's pid as it wrote it (None when unreadable)."""

    def try_hold(self) -> bool:
        import fcntl

        if self.own:
            from .statefile import open_lock  # a folder made, a directory or a link in its place moved aside

            fd = open_lock(self.path)
        else:  # beside a socket a person named: nothing of theirs is moved
            os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.holder = _read_pid(fd)
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
        finally:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def held_by(path: str | os.PathLike[str]) -> int | None:
    """The pid holding the :class:`PidLock` at ``path``, or None when no process holds it."""
    lock = PidLock(path)
    try:
        if lock.try_hold():
            lock.release()
            return None
    except OSError:
        return None
    return lock.holder if lock.holder is not None else -1


def _read_pid(fd: int) -> int | None:
    """The holder's pid as it wrote it; None when unreadable (it may be writing it right now)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and 0 < int(text) < 2**31 else None
