"""Local refs read straight from git's files backend, without loading libgit2.

A quiet round reads a handful of refs (its lease mark, the tracking ref of
its branch, the pause notes) and writes none. Importing pygit2 to read them
cost more CPU than the rest of the round's own work (issue 15), while the
files backend is plain text git documents (gitrepository-layout(5),
git-pack-refs(1)): a loose ref is a file holding an object id or
``ref: <target>``; packed refs are ``<oid> <name>`` lines in ``packed-refs``
(``^<oid>`` lines peel the tag above them, ``#`` lines are its header).

git writes both by creating a ``.lock`` file and renaming it into place, so a
read sees either the old or the new content, never a half-written one. A
loose ref wins over a packed one (``git pack-refs`` packs before it deletes
the loose files, so both then say the same). Anything not understood — a
name git would refuse, content that is neither form, a symbolic ref that
loops — reads as absent, as libgit2's error did for :class:`~.repo.Repo`.
Reftable repositories are refused before this is ever used
(:class:`~.errors.ReftableUnsupported`). Writes still go through libgit2 or
the git CLI, under git's own locks.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_SYMREF_DEPTH = 5  # git's own limit on symbolic refs pointing at symbolic refs
_PER_WORKTREE = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
_PSEUDO = re.compile(r"[A-Z][A-Z_]*")  # HEAD, ORIG_HEAD, FETCH_HEAD: the only names outside refs/


def valid_name(name: str) -> bool:
    """git's check-ref-format rules for a full ref name (a pseudo ref such as ``HEAD`` included).

    String tests only: a listing checks every name it finds, 500 of them in a big clone.
    """
    if not name or name[0] == "/" or name[-1] in "/." or _BAD_CHARS.search(name) or name == "@":
        return False
    if ".." in name or "//" in name or "@{" in name:
        return False
    if "/" not in name:
        return _PSEUDO.fullmatch(name) is not None
    # no component may start with "." or end with ".lock" (empty ones are "//", a leading or trailing "/")
    return not (name[0] == "." or "/." in name or name.endswith(".lock") or ".lock/" in name)


def _per_worktree(name: str) -> bool:
    return "/" not in name or name.startswith(_PER_WORKTREE)


class RefFiles:
    """The refs of one repository (its git dir and common dir) as the files backend keeps them."""

    def __init__(self, git_dir: Path, common_dir: Path) -> None:
        self.git_dir = git_dir
        self.common_dir = common_dir
        self._packed_key: tuple[int, int, int] | None = None
        self._packed: dict[str, str] = {}

    def _dir_of(self, name: str) -> Path:
        return self.git_dir if _per_worktree(name) else self.common_dir

    def packed(self) -> dict[str, str]:
        """``packed-refs`` as ``{name: oid}``, parsed again only when the file changed."""
        path = self.common_dir / "packed-refs"
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                key = (st.st_ino, st.st_size, st.st_mtime_ns)
                if key == self._packed_key:
                    return self._packed
                data = f.read()
        except OSError:
            self._packed_key, self._packed = None, {}
            return self._packed
        found: dict[str, str] = {}
        for line in data.decode("utf-8", "replace").splitlines():
            if not line or line[0] in "#^":
                continue
            oid, _, name = line.partition(" ")
            found[name] = oid  # checked when read: a clone's 500 remote branches are parsed, few are asked
        self._packed_key, self._packed = key, found
        return found

    def _raw(self, name: str) -> str | None:
        """What ``name`` holds, loose first: an object id, ``ref: <target>``, or None."""
        try:
            text = (self._dir_of(name) / name).read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None if _per_worktree(name) else self.packed().get(name)  # git never packs those
        except OSError:
            return None
        return text.strip()

    def read(self, name: str) -> str | None:
        """The object id ``name`` resolves to (symbolic refs followed), or None."""
        for _ in range(_SYMREF_DEPTH + 1):
            if not valid_name(name):
                return None
            held = self._raw(name)
            if held is None:
                return None
            if held.startswith("ref:"):
                name = held[len("ref:") :].strip()
                continue
            return held if _OID.fullmatch(held) else None
        return None  # a loop, or a chain longer than git follows

    def target(self, name: str) -> str | None:
        """Where the symbolic ref ``name`` points (``refs/remotes/origin/HEAD``), or None if it is not one."""
        held = self._raw(name) if valid_name(name) else None
        if held is None or not held.startswith("ref:"):
            return None
        target = held[len("ref:") :].strip()
        return target if valid_name(target) else None

    def listing(self, prefix: str) -> list[tuple[str, str | None]]:
        """``(name, symbolic target or None)`` of every ref starting with ``prefix``, sorted as
        ``for-each-ref`` lists them. Only loose refs are read: git never packs a symbolic one."""
        found: dict[str, str | None] = {
            name: None for name in self.packed() if name.startswith(prefix) and valid_name(name)}
        folder = prefix.rpartition("/")[0] if prefix.startswith("refs/") else "refs"
        base = self._dir_of(folder + "/")
        top = base / folder
        for root, dirs, files in os.walk(top):
            rel = Path(root).relative_to(base).as_posix()
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for file in files:
                name = f"{rel}/{file}" if rel != "." else file
                if not (name.startswith(prefix) and "/" in name and valid_name(name)):
                    continue
                try:
                    held = (base / name).read_text(encoding="utf-8", errors="replace").strip()
                except OSError:
                    continue  # gone since the walk saw it (a packed value, if any, stands)
                target = held[len("ref:") :].strip() if held.startswith("ref:") else None
                found[name] = target if target is None or valid_name(target) else None
        return sorted(found.items())

    def under(self, prefix: str) -> dict[str, str]:
        """Every ref whose name starts with ``prefix`` (e.g. ``refs/sluice/pause/``), resolved."""
        found: dict[str, str] = {}
        for name, _ in self.listing(prefix):
            oid = self.read(name)
            if oid is not None:
                found[name] = oid
        return found
