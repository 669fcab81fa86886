"""One empty file per queued request's head, so pre-push's lookup does not grow with the queue.

The pre-push hook is a shell script that runs on every push of the user's.
Reading the ``heads`` list costs a ``read(2)`` per byte in ``sh`` (60 ms at
2,000 queued heads); testing whether ``<sluice dir>/heads.d/<head>~`` exists
costs one ``stat`` per pushed ref, whatever the queue's size.

The ``~`` suffix cannot occur in a git ref name, so a mark (``a~``) never
collides with the folder of a longer head (``a/b~`` lives in ``a/``). Only
names git would accept as a branch get a mark: nothing read from GitHub can
reach outside ``heads.d`` (no ``..``, no leading ``/`` or ``.``). A name git
refuses cannot be pushed, so it needs no mark.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable
from pathlib import Path

from ..statefile import ensure_dir

MARKS_DIR = "heads.d"
SUFFIX = "~"
_FORBIDDEN = frozenset(" ~^:?*[\\")


@functools.lru_cache(maxsize=8192)
def valid_branch(name: str) -> bool:
    """Whether git would take ``name`` as a branch (``git check-ref-format --branch``'s rules).

    Kept per name: a drive checks its queue's same heads at every save (issue 15).
    """
    if not name or name == "@" or len(name.encode("utf-8", "surrogatepass")) > 1024:
        return False
    if name.startswith("/") or name.endswith("/") or name.endswith(".") or "//" in name:
        return False
    if ".." in name or "@{" in name or name.startswith("-"):
        return False
    if any(ord(c) < 0x20 or ord(c) == 0x7F or c in _FORBIDDEN for c in name):
        return False
    for part in name.split("/"):
        if part.startswith(".") or part.endswith(".lock") or len(part.encode("utf-8", "surrogatepass")) > 250:
            return False
    return True


def mark_of(head_ref: str) -> str | None:
    """The mark's path under ``heads.d`` for a head branch, or None when git would refuse the name."""
    return head_ref + SUFFIX if valid_branch(head_ref) else None


def wanted_marks(head_refs: Iterable[str]) -> set[str]:
    """Every mark the queued heads call for."""
    return {mark for mark in map(mark_of, head_refs) if mark is not None}


def present_marks(folder: Path) -> set[str]:
    """The marks on disk (relative paths), whatever else is there."""
    found: set[str] = set()
    for parent, _dirs, files in os.walk(folder):
        rel = os.path.relpath(parent, folder)
        for name in files:
            if name.endswith(SUFFIX):
                found.add(name if rel == "." else f"{rel}/{name}")
    return found


def sync_marks(sluice_dir: Path, head_refs: Iterable[str]) -> None:
    """Make ``heads.d`` hold exactly the marks of ``head_refs`` (the caller holds the queue lock).

    Only the difference is written, so a save that changes no head touches
    nothing. A mark that cannot be made (a name too long for the file system)
    is skipped: the hook then misses that head, the round still sees it.
    """
    folder = Path(sluice_dir) / MARKS_DIR
    wanted = wanted_marks(head_refs)
    present = present_marks(folder) if folder.is_dir() else set()
    for mark in sorted(present - wanted):
        with contextlib.suppress(OSError):
            os.unlink(folder / mark)
        _prune(folder, (folder / mark).parent)
    ensure_dir(folder)  # a file where the folder goes is moved aside
    for mark in sorted(wanted - present):
        path = folder / mark
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


def _prune(folder: Path, parent: Path) -> None:
    """Remove folders a removed mark left empty, up to (not including) ``heads.d``."""
    while parent != folder and folder in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent
