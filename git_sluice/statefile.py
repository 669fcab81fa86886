"""State files: the one way git-sluice writes a file, and the one way it keeps a shared JSON document.

Every process of a clone (drivers, hook runners, waits, a supervisor's
restarts) reads and writes the same few files in the sluice dir, so the two
hazards are a reader seeing half a file and two writers losing each other's
update. One write and one document answer both, with one policy each:

- :func:`write_atomic` writes a temporary file beside the target (same
  directory, so the rename cannot cross a file system), with mode ``0o600``
  unless the caller names another (a hook script must be executable), then
  ``os.replace``; a failure removes the temporary file and raises. It does
  **not** fsync: every state file is a cache or a record that GitHub, the
  remote or the next round rebuilds, so a power cut may lose the last write
  (as if it had not happened) or leave an empty file, which the readers below
  discard like any corrupt one. A fsync per write would cost every hook run
  and every round for a guarantee nothing here needs.
- :class:`JsonDocument` is a JSON object under a lock beside it. Readers do
  not take the lock (the write is atomic); read-modify-write does. The lock
  is held for milliseconds, so there is one timeout, :data:`LOCK_TIMEOUT`;
  a lock held longer than that means a stuck process, and
  :class:`StateFileBusy` says which lock. A document that is not a JSON
  object is discarded with a warning and rebuilt (a corrupt cache file is
  discarded and re-read, never trusted).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
TYPE_CHECKING = False  # typing's own flag, without importing typing (issue 15: ~2 ms of queue's start-up)
if TYPE_CHECKING:
    from typing import Any, TypeVar

from .errors import LockTimeout as LockTimeout
from .errors import StateFileBusy as StateFileBusy



def _warn(message: str, *args: object) -> None:
    """A warning on git-sluice's logger; logging is imported only when there is one (queue never warns)."""
    import logging

    logging.getLogger("git_sluice").warning(message, *args)

LOCK_TIMEOUT = 30.0
"""Seconds a writer waits for a document's lock (a save holds it for milliseconds)."""

STATE_MODE = 0o600

if TYPE_CHECKING:
    T = TypeVar("T")


def write_atomic(path: Path | str, data: bytes | str, *, mode: int = STATE_MODE) -> None:
    """Replace ``path`` with ``data`` so no reader ever sees a partial file (no fsync: see the module)."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    # pid, thread and a random part: no two writers (processes, threads, worktrees) share a temp name
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
            if mode != STATE_MODE:
                os.fchmod(fd, mode)  # os.open's mode passes through the umask; the caller's is meant
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def dump_json(data: object) -> str:
    """The one layout of git-sluice's own JSON state files (the queue's public JSON has its own).

    One line, no indent: ``json`` encodes an indented document in pure Python,
    ten times slower than its C encoder (a 500-request queue took 40 ms).
    """
    return json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"


def read_bytes(path: Path | str) -> bytes | None:
    """The file's bytes, or None when it cannot be read (absent, a folder, no permission)."""
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def load_json(path: Path | str, parse: Callable[[Any], T], default: Callable[[], T], *, what: str) -> T:
    """``parse`` of the file's JSON; ``default()`` when it is absent or corrupt.

    Absent is normal (nothing written yet). Unreadable or corrupt — not JSON,
    or refused by ``parse`` with ValueError, KeyError, TypeError or
    AttributeError — is logged as a warning naming ``what`` and the file, then
    treated as absent, so the next write rebuilds it.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return default()
    except (OSError, UnicodeDecodeError) as exc:  # a directory where the file goes; bytes that are not UTF-8
        _warn("%s %s unreadable (%s): discarded, it will be rebuilt", what, path, exc)
        return default()
    try:
        return parse(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:  # RecursionError: [[[[…
        _warn("%s %s is corrupt (%s): discarded, it will be rebuilt", what, path, exc)
        return default()


def _object(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"holds {type(data).__name__}, not an object")
    return data


class FileLock:
    """An exclusive lock on a file beside the state it guards: ``flock(2)``, as filelock takes it on POSIX.

    The processes of a clone take these locks hundreds of times a round; the
    ``filelock`` package cost ~15 ms to import and ~0.1 ms a take, ten times
    the system calls themselves (issue 15). The lock is the same kernel lock
    filelock's Unix lock takes (``flock`` on the same file, left in place), so
    a process of an older git-sluice and this one still exclude each other.
    As filelock's, it is reentrant per thread and per object: a nested take by
    the same thread counts, while two objects (or threads) on one file
    conflict, like two processes. A file replaced or removed while it was
    being taken is taken again, so two holders never hold different files.
    """

    POLL = 0.05
    """Seconds between tries while it waits (filelock's own interval)."""

    def __init__(self, path: str, timeout: float) -> None:
        self.lock_file = path
        self.timeout = timeout
        self._local = threading.local()

    @property
    def is_locked(self) -> bool:
        return bool(getattr(self._local, "count", 0))

    def acquire(self, *, blocking: bool = True) -> None:
        """Take the lock, waiting up to ``timeout`` seconds (real time), or not at all; else :class:`LockTimeout`."""
        state = self._local
        if getattr(state, "count", 0):
            state.count += 1
            return
        deadline = time.monotonic() + max(self.timeout, 0.0)
        while True:
            fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise
                left = deadline - time.monotonic()
                if not blocking or left <= 0:
                    raise LockTimeout(self.lock_file) from None
                time.sleep(min(self.POLL, left))
                continue
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.fstat(fd).st_ino == os.stat(self.lock_file).st_ino
            except OSError:
                same = False
            if not same:  # removed or replaced while taken: take the file that is there now
                os.close(fd)
                continue
            state.fd, state.count = fd, 1
            return

    def release(self) -> None:
        """Give one take back; the last one unlocks (a release without a take does nothing)."""
        state = self._local
        count = getattr(state, "count", 0)
        if not count:
            return
        state.count = count - 1
        if state.count == 0:
            fd, state.fd = state.fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def held(lock: FileLock, *, busy: str) -> Iterator[None]:
    """Hold ``lock``; its timeout running out raises :class:`StateFileBusy` with ``busy`` as the subject."""
    try:
        lock.acquire()
    except LockTimeout:
        raise StateFileBusy(
            f"{busy} {lock.lock_file} stayed busy for {lock.timeout:.0f} s; "
            "is a git-sluice process stuck? (the lock is released when it exits)"
        ) from None
    try:
        yield
    finally:
        lock.release()


def try_acquire(lock: FileLock) -> bool:
    """Take ``lock`` if it is free, without waiting (a runner that finds it held leaves its work to the holder)."""
    try:
        lock.acquire(blocking=False)
    except LockTimeout:
        return False
    return True


def file_lock(path: Path | str, *, timeout: float = LOCK_TIMEOUT) -> FileLock:
    """A lock file beside the state it guards (its folder is made, private, if missing)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    return FileLock(str(path), timeout=timeout)


class JsonDocument:
    """A JSON object in one file, shared by every process of the clone.

    :meth:`read` takes no lock (writes are atomic); :meth:`update` holds the
    lock across read, change and write so concurrent updates never lose
    each other. One instance holds one lock object, so an update nested in
    another update of the same instance (same thread) does not deadlock.
    """

    def __init__(self, path: Path | str, *, what: str) -> None:
        self.path = Path(path)
        self.what = what
        self._lock: FileLock | None = None  # made by the first writer

    def read(self) -> dict[str, Any]:
        """The document; empty when absent, and when corrupt (with a warning)."""
        return load_json(self.path, _object, dict, what=self.what)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the document's lock (for a read that must see no update half-way)."""
        if self._lock is None:
            self._lock = file_lock(str(self.path) + ".lock")
        with held(self._lock, busy=f"the lock of the {self.what}"):
            yield

    @contextlib.contextmanager
    def update(self) -> Iterator[dict[str, Any]]:
        """Yield the document under the lock; write it back if the block ends without raising."""
        with self.locked():
            data = self.read()
            yield data
            self.write(data)

    def write(self, data: dict[str, Any]) -> str:
        """Replace the whole document (callers that decide whether to write hold :meth:`locked`); the text written."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = dump_json(data)
        write_atomic(self.path, text)
        return text
