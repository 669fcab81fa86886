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
- Every read is total (issue 33): :func:`parse_json` turns anything a file
  may hold — bytes that are not UTF-8, ``[`` nested a hundred thousand deep,
  random bytes — into one ValueError, and :func:`load_json` reads a
  directory, a dangling symbolic link or an unreadable file as a corrupt
  one. A write finds its place free: :func:`set_aside` renames what is in
  the way (a directory where a file goes, a file where a directory goes) to
  ``<name>.corrupt-<n>`` beside it, with one warning, and :func:`ensure_dir`,
  :func:`write_atomic` and the lock files all use it. Nothing is deleted:
  what was in the way stays for a person to look at, or to remove.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
TYPE_CHECKING = False  # typing's own flag, without importing typing (issue 15: ~2 ms of queue's start-up)
if TYPE_CHECKING:
    from typing import Any, TypeVar

from .errors import LockTimeout as LockTimeout
from .errors import StateInTheWay
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
    """Replace ``path`` with ``data`` so no reader ever sees a partial file (no fsync: see the module).

    A folder missing on the way is made; a directory where the file goes, or
    a file where a folder on the way goes, is moved aside (:func:`set_aside`).
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        _write_replace(path, payload, mode)
    except (FileNotFoundError, NotADirectoryError):  # a folder on the way is missing, or is not one
        ensure_dir(path.parent)
        _write_replace(path, payload, mode)
    except OSError as exc:
        if not (exc.errno in _IN_THE_WAY and _is_dir(path)):
            raise
        set_aside(path)  # a directory where the file goes: os.replace cannot put a file over it
        _write_replace(path, payload, mode)


_IN_THE_WAY = (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST)


def _is_dir(path: Path) -> bool:
    """A real directory (not a link to one) stands at ``path``."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _write_replace(path: Path, payload: bytes, mode: int) -> None:
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


SET_ASIDE_LIMIT = 100
"""How many ``.corrupt-<n>`` names one path may have before git-sluice asks a person to clear them."""


def set_aside(path: Path | str, *, what: str = "") -> Path:
    """Move whatever is at ``path`` to ``<name>.corrupt-<n>`` beside it, with one warning; the new name.

    For a state file or folder of the wrong kind (a directory where a file
    goes, a file or a dangling link where a folder goes): git-sluice rebuilds
    what belongs there, and never deletes what a person may want to look at.
    ``what`` names it in the warning. When even the rename fails,
    :class:`StateInTheWay` (an OSError too) says what to remove.
    """
    path = Path(path)
    kind = _kind(path)
    for n in range(1, SET_ASIDE_LIMIT + 1):
        aside = path.with_name(f"{path.name}.corrupt-{n}")
        if os.path.lexists(aside):
            continue
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return aside  # gone meanwhile (another process set it aside): the place is free
        except OSError as exc:
            raise StateInTheWay(
                f"{path} ({kind}) is in git-sluice's way and cannot be moved aside ({exc.strerror or exc}): "
                f"remove it (rm -r {path}); git-sluice rebuilds it"
            ) from None
        _warn("%s%s was %s, in the way: moved to %s; git-sluice rebuilds it",
              f"{what} " if what else "", path, kind, aside.name)
        return aside
    raise StateInTheWay(f"{path} ({kind}) is in git-sluice's way and {SET_ASIDE_LIMIT} copies are already set aside "
                     f"beside it: remove {path} and its {path.name}.corrupt-* copies; git-sluice rebuilds it")


def _kind(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "gone"
    if stat.S_ISLNK(mode):
        return "a symbolic link" + ("" if os.path.exists(path) else " to nothing")
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a file"
    return "not a file"


OWN_LEVELS = 3
"""How far up from a folder :func:`ensure_dir` moves things aside: ``watch/<group>/kept`` is three deep."""


def ensure_dir(path: Path | str) -> Path:
    """``path`` as a private folder (0700 when made), with anything in the way on it moved aside.

    For folders inside the sluice dir or the host state dir, whose roots
    :func:`paths.private_dir` made: a file or a dangling link where one of
    these folders goes — ``path`` or one of its :data:`OWN_LEVELS` - 1 nearest
    parents — is set aside and the folder made. Anything higher up is not
    git-sluice's to move: :class:`StateInTheWay` names it.
    """
    path = Path(path)
    own = [path, *path.parents][:OWN_LEVELS]
    for _ in range(OWN_LEVELS + 1):
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
            return path
        except (FileExistsError, NotADirectoryError):
            blocker = _blocker(path)
            if blocker is None:
                continue  # made or freed meanwhile: try again
            if blocker not in own:
                raise StateInTheWay(f"{blocker} is {_kind(blocker)} where a folder goes: move it aside or remove "
                                    f"it (git-sluice keeps its state in {path})") from None
            set_aside(blocker)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def _blocker(path: Path) -> Path | None:
    """The first part of ``path`` from the top that stands but is not a folder (a link to one counts as one)."""
    for part in [*reversed(path.parents), path]:
        if os.path.lexists(part) and not part.is_dir():
            return part
    return None


def dump_json(data: object) -> str:
    """The one layout of git-sluice's own JSON state files (the queue's public JSON has its own).

    One line, no indent: ``json`` encodes an indented document in pure Python,
    ten times slower than its C encoder (a 500-request queue took 40 ms).
    """
    return json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"


def read_bytes(path: Path | str) -> bytes | None:
    """The file's bytes, or None when it cannot be read (absent, a folder, a dangling link, no permission)."""
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def parse_json(raw: bytes | str) -> Any:
    """The JSON document in ``raw``; ValueError for anything else a file may hold.

    Not UTF-8 (UnicodeDecodeError is a ValueError), not JSON, or nested deeper
    than the interpreter's stack (``[`` a hundred thousand times raises
    RecursionError in ``json``'s C decoder): all one ValueError, so every
    reader of a local file or a fetched blob has one exception to catch.
    """
    try:
        # bytes decoded as UTF-8 and nothing else (a BOM skipped, as json.loads skips it): json.loads
        # would guess UTF-16 from a \xff\xfe
        return json.loads(raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw)
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.object[exc.start]:#04x} at {exc.start})") from None
    except RecursionError:
        raise ValueError("nested too deep to be a state file") from None


def load_json(path: Path | str, parse: Callable[[Any], T], default: Callable[[], T], *, what: str) -> T:
    """``parse`` of the file's JSON; ``default()`` when it is absent or corrupt.

    Absent is normal (nothing written yet). Unreadable or corrupt — a folder
    or a dangling link where the file goes, not UTF-8, not JSON, nested too
    deep, or refused by ``parse`` with ValueError, KeyError, TypeError or
    AttributeError — is one warning naming ``what`` and the file (once per
    process while the file stays as it is: a command reads some files ten
    times), then treated as absent, so the next write rebuilds it. A folder
    is moved aside at once (no writer makes one there, so no write is lost).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if os.path.islink(path):
            _warn_once(path, "%s %s is a symbolic link to nothing: discarded, it will be rebuilt", what, path)
        return default()
    except OSError as exc:  # a directory where the file goes; no permission
        if exc.errno == errno.EISDIR and _is_dir(path):
            try:
                set_aside(path, what=what)
                return default()
            except OSError:
                pass
        _warn_once(path, "%s %s unreadable (%s): discarded, it will be rebuilt", what, path, exc.strerror or exc)
        return default()
    try:
        return parse(parse_json(raw))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:  # RecursionError: parse's own
        _warn_once(path, "%s %s is corrupt (%s): discarded, it will be rebuilt", what, path, _short(exc))
        return default()


_WARNED: dict[str, tuple[int, int, int] | None] = {}
"""Per file: the one that was last found corrupt (inode, size, mtime), so its warning is said once."""


def _warn_once(path: Path, message: str, *args: object) -> None:
    """:func:`_warn`, unless this very file (same inode, size and time) was already warned about here."""
    try:
        st = os.lstat(path)
        seen: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        seen = None
    key = str(path)
    if key in _WARNED and _WARNED[key] == seen:
        return
    if len(_WARNED) >= 256:
        _WARNED.clear()
    _WARNED[key] = seen
    _warn(message, *args)


def _short(exc: BaseException) -> str:
    """An exception's text, cut to one short line (a corrupt file's bytes may be quoted in it)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


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
            fd = open_lock(self.lock_file, 0o644)
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
    ensure_dir(path.parent)
    return FileLock(str(path), timeout=timeout)


_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_NOT_A_LOCK_FILE = (errno.EISDIR, errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP)


def open_lock(path: Path | str, mode: int = STATE_MODE) -> int:
    """A descriptor of the lock file at ``path`` (made if missing), for ``flock``.

    Every lock of git-sluice's (a state document's, a round's, a flight's,
    the driver's pid file) is opened here, so none raises on what it finds:
    a missing folder is made, and a directory, a symbolic link (never
    followed: a lock is git-sluice's own file) or a socket in the lock's
    place is moved aside (:func:`set_aside`) and the lock file made afresh.
    """
    try:
        return os.open(path, _LOCK_FLAGS, mode)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):  # its folder is missing, or a file stands on the way
            ensure_dir(Path(path).parent)
        elif exc.errno in _NOT_A_LOCK_FILE and os.path.lexists(path):
            set_aside(path)
        else:
            raise
    return os.open(path, _LOCK_FLAGS, mode)


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
        ensure_dir(self.path.parent)
        text = dump_json(data)
        write_atomic(self.path, text)
        return text
