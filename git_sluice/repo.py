"""The local repository: where git-sluice keeps its state and reads its config.

pygit2 serves local objects, refs and config (fast, no process per read); the
git CLI serves everything that must behave exactly as the user's git does
(network operations never go through libgit2: docs/design.md#pitfalls-it-is-built-around). Both are reached
through one :class:`Repo`, so callers never guess which directory is which in
a linked worktree or a submodule.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pygit2

from . import gitcli
from .boot import boot_id as boot_id  # its old home
from .errors import GitFailed as GitFailed, NotARepository, ReftableUnsupported as ReftableUnsupported
from .paths import sluice_dir_in


def _read_gitfile(path: Path) -> Path | None:
    """The target of a ``.git`` file (linked worktrees and submodules use one)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    return (path.parent / target).resolve() if not target.is_absolute() else target


def _common_dir_of(git_dir: Path) -> Path:
    """A linked worktree's git dir names the shared one in its ``commondir`` file."""
    marker = git_dir / "commondir"
    try:
        text = marker.read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    common = Path(text)
    return (git_dir / common).resolve() if not common.is_absolute() else common


def _uses_reftable(git_dir: Path, common_dir: Path) -> bool:
    """Detect reftable from the files themselves: git 2.39 and libgit2 cannot even open it.

    The config key is the authority; the ``reftable`` directory catches a repository
    whose config we failed to parse.
    """
    if (common_dir / "reftable").is_dir() or (git_dir / "reftable").is_dir():
        return True
    config_file = common_dir / "config"
    if not config_file.is_file():
        return False
    try:
        config = pygit2.Config(str(config_file))
        value = config["extensions.refStorage"]
    except (KeyError, pygit2.GitError, ValueError):
        return False
    return str(value).strip().lower() == "reftable"


class Repo:
    """One local repository, opened from anywhere inside it (worktree, submodule, bare)."""

    def __init__(self, git_dir: Path, workdir: Path | None, common_dir: Path, raw: pygit2.Repository) -> None:
        self.git_dir = git_dir
        self.workdir = workdir
        self.common_dir = common_dir
        self.raw = raw
        # pygit2 objects are not safe to share between threads without a lock.
        self.lock = threading.RLock()

    @classmethod
    def discover(cls, path: Path | str = ".") -> Repo:
        """Open the repository containing ``path``.

        With the default path, an exported ``GIT_DIR`` (as git gives its hooks)
        is honoured, because a hook's cwd need not be inside the repository.
        """
        start = Path(path).absolute()
        env_dir = os.environ.get("GIT_DIR")
        if str(path) == "." and env_dir:
            candidate = Path(env_dir)
            git_dir_str: str | None = str(candidate if candidate.is_absolute() else start / candidate)
        else:
            try:
                git_dir_str = pygit2.discover_repository(str(start))
            except pygit2.GitError:
                git_dir_str = None
        if not git_dir_str:
            raise NotARepository(start)
        git_dir = Path(git_dir_str).resolve()
        if git_dir.is_file():  # a .git file given through GIT_DIR
            target = _read_gitfile(git_dir)
            if target is None:
                raise NotARepository(start)
            git_dir = target
        common_dir = _common_dir_of(git_dir)
        if _uses_reftable(git_dir, common_dir):
            raise ReftableUnsupported(git_dir)
        try:
            raw = pygit2.Repository(str(git_dir))
        except pygit2.GitError as exc:
            if "refstorage" in str(exc).lower() or "reftable" in str(exc).lower():
                raise ReftableUnsupported(git_dir) from exc
            raise NotARepository(start) from exc
        workdir = Path(raw.workdir).resolve() if raw.workdir else None
        return cls(git_dir, workdir, common_dir, raw)

    @property
    def sluice_dir(self) -> Path:
        """``<common dir>/sluice``: shared by every worktree, private to the user."""
        return sluice_dir_in(self.common_dir)

    # --- config ---------------------------------------------------------------

    def config_get(self, key: str) -> str | None:
        """The effective value (last one wins, as git's own ``config --get``)."""
        with self.lock:
            try:
                return str(self.raw.config[key])
            except KeyError:
                return None
            except pygit2.GitError:
                values = self.config_get_all(key)
                return values[-1] if values else None

    def config_get_all(self, key: str) -> list[str]:
        with self.lock:
            try:
                return [str(v) for v in self.raw.config.get_multivar(key)]
            except (KeyError, pygit2.GitError):
                return []

    # --- git CLI --------------------------------------------------------------

    def git(
        self,
        *args: str,
        check: bool = True,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the user's git on this repository; ``check`` raises :class:`GitFailed`."""
        return gitcli.run(
            args,
            cwd=self.workdir if self.workdir is not None else self.git_dir,
            git_dir=self.git_dir,
            workdir=self.workdir,
            env=env,
            input=input,
            timeout=timeout,
            check=check,
        )

    # --- refs and objects -----------------------------------------------------

    def ref(self, name: str) -> str | None:
        """The object id a local ref points at (symbolic refs resolved), or None."""
        with self.lock:
            try:
                reference = self.raw.references.get(name)
                if reference is None:
                    return None
                return str(reference.resolve().target)
            except (pygit2.GitError, KeyError, ValueError):
                return None

    def rev(self, name: str) -> str | None:
        """Any revision expression, as ``git rev-parse --verify`` would, or None."""
        with self.lock:
            try:
                return str(self.raw.revparse_single(name).id)
            except (KeyError, pygit2.GitError, ValueError):
                return None

    def refs_under(self, prefix: str) -> dict[str, str]:
        """Every local ref under ``prefix`` (e.g. ``refs/sluice/``) with its object id."""
        found: dict[str, str] = {}
        with self.lock:
            for name in self.raw.references:
                if not name.startswith(prefix):
                    continue
                oid = self.ref(name)
                if oid is not None:
                    found[name] = oid
        return found

    def set_ref(self, name: str, oid: str | None) -> None:
        """Write (or delete, with None) a local ref without running any hook."""
        with self.lock:
            if oid is None:
                try:
                    self.raw.references.delete(name)
                except (KeyError, pygit2.GitError):
                    pass
                return
            self.raw.references.create(name, pygit2.Oid(hex=oid), force=True)
