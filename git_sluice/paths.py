"""Where host-wide state lives.

Pauses, epochs, permits and the budget ledger are shared by every process and
every repository on the host, so they live in the user's state directory rather
than in any one clone (docs/design.md#the-host-state-dir). ``platformdirs`` honours ``XDG_STATE_HOME``,
which is also how tests keep each run's state apart.
"""

from __future__ import annotations

import os
from pathlib import Path
TYPE_CHECKING = False  # typing's own flag, without importing typing (issue 15: ~2 ms of queue's start-up)

if TYPE_CHECKING:
    from typing import Any

    from .gitcli import Started

platformdirs: Any = None
"""The ``platformdirs`` module, imported on first use: ``queue`` and the hooks' light paths never need it."""

APP_NAME = "git-sluice"
HOST_STORE_NAME = "host.sqlite3"


def host_state_dir() -> Path:
    """The host state directory, created private (0700) if it does not exist yet.

    Private because it records which pools this user spends and when; nothing
    in it is a secret, but nothing in it is anyone else's business either.
    """
    global platformdirs
    if platformdirs is None:
        import platformdirs as found

        platformdirs = found
    path = Path(platformdirs.user_state_dir(APP_NAME))
    if not path.is_dir():
        try:
            if os.path.lexists(path):  # a file or a dangling link of that name: moved aside, never deleted
                from .statefile import set_aside

                set_aside(path)
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
            # mkdir's mode is filtered by the umask; say exactly what we mean
            os.chmod(path, 0o700)
        except OSError as exc:
            from .errors import HostStoreError

            raise HostStoreError(
                f"cannot create the host state directory {path} ({exc.strerror or exc}); make "
                "XDG_STATE_HOME (or ~/.local/state) a directory writable by you"
            ) from None
    return path


def private_dir(path: Path, what: str) -> Path:
    """``path`` as a directory of this user's (created 0700), or a clear error saying what is in the way.

    A file or a dangling link where the directory belongs is moved aside
    (``<name>.corrupt-<n>``, one warning: nothing is deleted) and the
    directory made afresh; git-sluice rebuilds what it keeps there. What
    cannot be moved, or stands higher up, is named, with what to do.
    """
    if path.is_dir():
        return path
    from .errors import StateError

    try:
        if os.path.lexists(path):
            from .statefile import set_aside

            set_aside(path)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(f"{what} {path} cannot be made ({exc.strerror or exc}); make its parent a directory "
                         "writable by you (git-sluice recreates it)") from None
    return path


def host_store_path() -> Path:
    """The one SQLite file every git-sluice process on this host shares."""
    return host_state_dir() / HOST_STORE_NAME


def sluice_dir_in(common_dir: Path) -> Path:
    """``<common dir>/sluice``, created private (0700) if it does not exist yet: every worktree's, the user's alone."""
    return private_dir(common_dir / "sluice", "the clone's sluice directory")


def clone_sluice_dir(path: "str | os.PathLike[str]" = ".") -> Path:
    """The clone's sluice dir (``<common dir>/sluice``) by one ``git rev-parse``, without pygit2.

    For the commands a dashboard polls (``queue``): loading libgit2 costs more
    than the whole command otherwise does.
    """
    return clone_sluice_dir_of(start_clone_sluice_dir(path), path)


def start_clone_sluice_dir(path: "str | os.PathLike[str]" = ".") -> "Started":
    """:func:`clone_sluice_dir`'s git, started: ``queue`` reads the config while it runs (issue 15)."""
    from .gitcli import start

    # no directories named: the user's own GIT_DIR, if any, is what says which clone is here
    return start(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=path)


def clone_sluice_dir_of(started: "Started", path: "str | os.PathLike[str]" = ".") -> Path:
    """The sluice dir a :func:`start_clone_sluice_dir` git found (waits for it)."""
    from .errors import NotARepository

    done = started.result()
    if done.returncode != 0:
        raise NotARepository(path, done.stderr.strip())
    return Path(done.stdout.strip()) / "sluice"
