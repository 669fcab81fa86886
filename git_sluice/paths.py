"""Where host-wide state lives.

Pauses, epochs, permits and the budget ledger are shared by every process and
every repository on the host, so they live in the user's state directory rather
than in any one clone (docs/design.md#the-host-state-dir). ``platformdirs`` honours ``XDG_STATE_HOME``,
which is also how tests keep each run's state apart.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "git-sluice"
HOST_STORE_NAME = "host.sqlite3"


def host_state_dir() -> Path:
    """The host state directory, created private (0700) if it does not exist yet.

    Private because it records which pools this user spends and when; nothing
    in it is a secret, but nothing in it is anyone else's business either.
    """
    path = Path(platformdirs.user_state_dir(APP_NAME))
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        # mkdir's mode is filtered by the umask; say exactly what we mean
        os.chmod(path, 0o700)
    return path


def host_store_path() -> Path:
    """The one SQLite file every git-sluice process on this host shares."""
    return host_state_dir() / HOST_STORE_NAME


def sluice_dir_in(common_dir: Path) -> Path:
    """``<common dir>/sluice``, created private (0700) if it does not exist yet: every worktree's, the user's alone."""
    path = common_dir / "sluice"
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def clone_sluice_dir(path: "str | os.PathLike[str]" = ".") -> Path:
    """The clone's sluice dir (``<common dir>/sluice``) by one ``git rev-parse``, without pygit2.

    For the commands a dashboard polls (``queue``): loading libgit2 costs more
    than the whole command otherwise does.
    """
    from .errors import NotARepository
    from .gitcli import run

    # no directories named: the user's own GIT_DIR, if any, is what says which clone is here
    done = run(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=path)
    if done.returncode != 0:
        raise NotARepository(path, done.stderr.strip())
    return Path(done.stdout.strip()) / "sluice"
