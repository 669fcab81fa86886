"""The one way git-sluice runs the git CLI, with the one environment it runs it in.

pygit2 serves local reads; the CLI serves whatever must behave exactly as the
user's git does (network, config as git reads it, hooks). Every such call
goes through :func:`run`, so three things hold everywhere at once:

- a repository named by its directories is named absolutely (``GIT_DIR``,
  ``GIT_WORK_TREE``) and every variable that selects another repository is
  scrubbed first: git gives its hooks a *relative* ``GIT_DIR`` that means
  nothing once we run elsewhere (:data:`REPO_SELECTING_ENV`, the one list);
- git never prompts (``GIT_TERMINAL_PROMPT=0`` unless the user set it):
  git-sluice runs in the background, where a prompt is a hang;
- stdin is ``/dev/null`` unless input is given, and output is captured.

Discovery (which repository is *here*) is the exception that proves the rule:
there the user's own ``GIT_DIR`` is what answers, so :func:`run` without
directories leaves the selecting variables alone.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from .errors import GitFailed as GitFailed

INTERNAL_ENV = "GIT_SLUICE_INTERNAL"
"""Set to "1" for our own fetch/push, so our hooks can tell their own echo apart."""

REPO_SELECTING_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)
"""Variables that select a repository: they must not leak into the git we run on a named one."""

_CREDENTIALS_IN_URL = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/@\s]+@")
_TOKEN_LIKE = re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{10,}|github_pat_[A-Za-z0-9_]{10,}|v1\.[0-9a-f]{40})\b")


def scrub(text: str) -> str:
    """Remove credentials git might echo (URLs with user:token@, token-shaped words)."""
    text = _CREDENTIALS_IN_URL.sub(r"\1***@", text)
    return _TOKEN_LIKE.sub("***", text)


def scrub_environ() -> None:
    """Drop the repository-selecting variables from this process (a hook runner, before anything runs)."""
    for name in REPO_SELECTING_ENV:
        os.environ.pop(name, None)


def environment(
    *,
    git_dir: Path | None = None,
    workdir: Path | None = None,
    extra: Mapping[str, str] | None = None,
    here: bool = False,
    drop: Collection[str] = (),
) -> dict[str, str]:
    """The environment of every git we run (see the module); ``git_dir`` names the repository.

    ``here``: no repository named, none selected by the environment either: git
    finds the one at its working directory (an explicit path's discovery).
    ``drop``: more variables the git must not see (a prompt helper, a token a
    long-lived daemon would keep), removed before ``extra`` is added.
    """
    if git_dir is None and not here:
        env = {k: v for k, v in os.environ.items() if k not in drop}
    elif git_dir is None:
        env = {k: v for k, v in os.environ.items() if k not in REPO_SELECTING_ENV and k not in drop}
    else:
        env = {k: v for k, v in os.environ.items() if k not in REPO_SELECTING_ENV and k not in drop}
        env["GIT_DIR"] = str(git_dir)
        if workdir is not None:
            env["GIT_WORK_TREE"] = str(workdir)
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    if extra:
        env.update(extra)
    return env


def run(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    git_dir: Path | None = None,
    workdir: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
    check: bool = False,
    here: bool = False,
    drop: Collection[str] = (),
    quiet: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``git [-C cwd] args`` in :func:`environment`; ``check`` raises :class:`GitFailed`.

    A missing git raises FileNotFoundError and a timeout TimeoutExpired, as
    subprocess does: each caller knows what they mean for it. ``quiet`` sends
    stderr to ``/dev/null`` instead of a pipe (``stderr`` is then empty): a git
    that spawns a daemon (``credential-cache``) would leave it holding our
    pipe open for the daemon's whole life.
    """
    command = ["git", *(("-C", str(cwd)) if cwd is not None else ()), *args]
    proc = subprocess.run(
        command,
        input=input,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",  # git echoes paths and ref names in any bytes: never a decoding traceback
        env=environment(git_dir=git_dir, workdir=workdir, extra=env, here=here, drop=drop),
        stdin=None if input is not None else subprocess.DEVNULL,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise GitFailed(tuple(args), proc.returncode, proc.stderr or "")
    return proc


class Started:
    """A git started by :func:`start`; :meth:`result` waits for it, as :func:`run` would have."""

    def __init__(self, args: Sequence[str], proc: subprocess.Popen[str]) -> None:
        self.args = tuple(args)
        self._proc = proc
        self._done: subprocess.CompletedProcess[str] | None = None

    def result(self, *, check: bool = False) -> subprocess.CompletedProcess[str]:
        if self._done is None:
            stdout, stderr = self._proc.communicate()
            self._done = subprocess.CompletedProcess(self._proc.args, self._proc.returncode, stdout, stderr)
        if check and self._done.returncode != 0:
            raise GitFailed(self.args, self._done.returncode, self._done.stderr)
        return self._done


def start(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    git_dir: Path | None = None,
    workdir: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Started:
    """:func:`run` without waiting: local reads that do not depend on each other run side by side.

    A command that needs the config, the remote-tracking refs and the common
    dir waits for the slowest of three gits instead of their sum (issue 15).
    A missing git raises FileNotFoundError here, as :func:`run` does.
    """
    command = ["git", *(("-C", str(cwd)) if cwd is not None else ()), *args]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=environment(git_dir=git_dir, workdir=workdir, extra=env),
    )
    return Started(args, proc)


def parse_version(text: str) -> tuple[int, ...]:
    """``git version 2.39.5`` (or ``2.54.0.windows.1``, ``2.54.0-rc1``) -> (2, 39, 5); (0,) when unreadable."""
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        return (0,)
    return tuple(int(part) for part in match.groups() if part is not None)


def version_text(timeout: float = 30.0) -> str | None:
    """What ``git version`` says, or None when git is missing, hangs or fails."""
    try:
        proc = run(["version"], timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None
