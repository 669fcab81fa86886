"""The local repository: where git-sluice keeps its state and reads its config.

The git CLI finds the repository (``git rev-parse``: exactly the user's git's
discovery, ``GIT_DIR`` and safe.directory included) and serves everything that
must behave as the user's git does (network operations never go through
libgit2: docs/design.md#pitfalls-it-is-built-around). Ref reads come from the
files backend directly (:mod:`.reffiles`); pygit2 serves objects, ref writes
and config, and is loaded only when one of those is first asked for: a quiet
round asks for none, and importing libgit2 cost more CPU than its own work
(issue 15). All of it is reached through one :class:`Repo`, so callers never
guess which directory is which in a linked worktree or a submodule.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from . import gitcli
from .boot import boot_id as boot_id  # its old home
from .errors import GitFailed as GitFailed, NotARepository, ReftableUnsupported as ReftableUnsupported
from .paths import sluice_dir_in
from .reffiles import RefFiles

if TYPE_CHECKING:
    import pygit2


def clone_dirs(path: str | os.PathLike[str] = ".", *, honour_env: bool = True) -> tuple[Path, Path, Path | None]:
    """(git dir, common dir, work tree or None) of the clone at ``path``, by one ``git rev-parse``.

    ``honour_env``: ``GIT_DIR`` and its kin, as the user (or the hook) set
    them, steer the discovery, as they steer git's; otherwise only ``path`` does.
    """
    here = not honour_env
    done = gitcli.run(["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--show-toplevel"],
                      cwd=path, here=here)
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) < 2:
        # a bare clone has no top level: rev-parse says so and fails that one question (so does a
        # working clone asked from inside its .git folder)
        bare = gitcli.run(["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir",
                           "--is-bare-repository"], cwd=path, here=here)
        lines = bare.stdout.splitlines()
        if bare.returncode != 0 or len(lines) < 3:
            said = (done.stderr or bare.stderr).strip()
            if "refstorage" in said.lower() or "reftable" in said.lower():
                raise ReftableUnsupported(Path(path).absolute())
            raise NotARepository(path, said)
        if lines[2].strip() == "false" and Path(lines[0]).name == ".git":
            top = gitcli.run(["rev-parse", "--path-format=absolute", "--show-toplevel"],
                             cwd=Path(lines[0]).parent, here=True)
            if top.returncode == 0 and top.stdout.strip():
                return Path(lines[0]), Path(lines[1]), Path(top.stdout.strip())
        return Path(lines[0]), Path(lines[1]), None
    workdir = Path(lines[2]) if len(lines) > 2 and lines[2] else None
    return Path(lines[0]), Path(lines[1]), workdir


def _uses_reftable(git_dir: Path, common_dir: Path) -> bool:
    """Detect reftable from the files themselves: git 2.39 and libgit2 cannot even open it.

    The config key is the authority (git 2.39 ignores it in a version-0
    repository, so ``rev-parse`` alone would not tell); the ``reftable``
    directory catches a config we cannot read. The key is asked of git only
    when the file mentions it at all, so an ordinary clone costs no process.
    """
    if (common_dir / "reftable").is_dir() or (git_dir / "reftable").is_dir():
        return True
    config_file = common_dir / "config"
    try:
        mentioned = b"refstorage" in config_file.read_bytes().lower()
    except OSError:
        return False
    if not mentioned:
        return False
    said = gitcli.run(["config", "--file", str(config_file), "--get", "extensions.refStorage"], cwd=common_dir)
    return said.returncode == 0 and said.stdout.strip().lower() == "reftable"


class Repo:
    """One local repository, opened from anywhere inside it (worktree, submodule, bare)."""

    def __init__(self, git_dir: Path, workdir: Path | None, common_dir: Path,
                 raw: pygit2.Repository | None = None) -> None:
        self.git_dir = git_dir
        self.workdir = workdir
        self.common_dir = common_dir
        self._raw = raw
        self.refs = RefFiles(git_dir, common_dir)
        # pygit2 objects are not safe to share between threads without a lock.
        self.lock = threading.RLock()

    @classmethod
    def discover(cls, path: Path | str = ".") -> Repo:
        """Find the repository containing ``path``, as the user's git finds it (libgit2 not loaded).

        With the default path, an exported ``GIT_DIR`` (as git gives its hooks)
        is honoured, because a hook's cwd need not be inside the repository.
        """
        start = Path(path).absolute()
        if start.is_file():
            start = start.parent
        if not start.is_dir():
            raise NotARepository(start)
        try:
            git_dir, common_dir, workdir = clone_dirs(start, honour_env=str(path) == ".")
        except FileNotFoundError:  # no git at all
            raise NotARepository(start, "git is not installed or not on PATH") from None
        git_dir, common_dir = git_dir.resolve(), common_dir.resolve()
        if _uses_reftable(git_dir, common_dir):
            raise ReftableUnsupported(git_dir)
        return cls(git_dir, workdir.resolve() if workdir is not None else None, common_dir)

    @property
    def raw(self) -> pygit2.Repository:
        """libgit2's handle, opened (and pygit2 imported) the first time objects, writes or config need it."""
        with self.lock:
            if self._raw is None:
                import pygit2

                try:
                    self._raw = pygit2.Repository(str(self.git_dir))
                except pygit2.GitError as exc:
                    if "refstorage" in str(exc).lower() or "reftable" in str(exc).lower():
                        raise ReftableUnsupported(self.git_dir) from exc
                    raise NotARepository(self.git_dir, str(exc)) from exc
            return self._raw

    @property
    def sluice_dir(self) -> Path:
        """``<common dir>/sluice``: shared by every worktree, private to the user."""
        return sluice_dir_in(self.common_dir)

    # --- config ---------------------------------------------------------------

    def config_get(self, key: str) -> str | None:
        """The effective value (last one wins, as git's own ``config --get``)."""
        import pygit2

        with self.lock:
            try:
                return str(self.raw.config[key])
            except KeyError:
                return None
            except pygit2.GitError:
                values = self.config_get_all(key)
                return values[-1] if values else None

    def config_get_all(self, key: str) -> list[str]:
        import pygit2

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
        return self.refs.read(name)

    def rev(self, name: str) -> str | None:
        """Any revision expression, as ``git rev-parse --verify`` would, or None."""
        import pygit2

        with self.lock:
            try:
                return str(self.raw.revparse_single(name).id)
            except (KeyError, pygit2.GitError, ValueError):
                return None

    def refs_under(self, prefix: str) -> dict[str, str]:
        """Every local ref under ``prefix`` (e.g. ``refs/sluice/``) with its object id."""
        return self.refs.under(prefix)

    def set_ref(self, name: str, oid: str | None) -> None:
        """Write (or delete, with None) a local ref without running any hook."""
        import pygit2

        with self.lock:
            if oid is None:
                try:
                    self.raw.references.delete(name)
                except (KeyError, pygit2.GitError):
                    pass
                return
            self.raw.references.create(name, pygit2.Oid(hex=oid), force=True)
