"""``git sluice lease``: who holds each branch's lease, read from the marks as last fetched.

Local reading only: no token and no network (``git fetch`` brings the marks),
so it opens no session, only the clone, its config and a lease keeper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..clock import Clock, default_clock
from ..config import Settings, load_settings
from ..remote.lease import LeaseView
from ..remote.fetched import FetchedLeases
from ..remote.leases import LeaseKeeper

if TYPE_CHECKING:
    from ..remote.git import RemoteGit
    from ..repo import Repo


def local_keeper(path: str = ".", clock: Clock | None = None) -> tuple[Repo | FetchedLeases, Settings, LeaseKeeper]:
    """The clone at ``path``, its settings, and a keeper that reads leases as a step sees them.

    The marks are read by git alone when they can be (:mod:`..remote.fetched`:
    libgit2 costs more than the rest of ``status``); else the clone is opened.
    """
    clock = clock or default_clock()
    fetched = FetchedLeases.read(path)
    if fetched is not None:
        settings = load_settings(fetched.workdir or fetched.git_dir)
        reader = cast("Repo", fetched)
        keeper = LeaseKeeper(reader, cast("RemoteGit", fetched), host=settings.host, role="step",
                             lease=settings.lease, clock=clock)
        return fetched, settings, keeper
    from ..repo import Repo

    repo = Repo.discover(path)
    settings = load_settings(repo.workdir or repo.git_dir)
    return repo, settings, LeaseKeeper.configured(repo, settings, role="step", clock=clock)


def read_leases(path: str = ".", branches: Sequence[str] = ()) -> list[LeaseView]:
    """Each branch's lease (default: the configured branches), in the order asked."""
    _, settings, keeper = local_keeper(path)
    return list(keeper.read_all(list(branches) or list(settings.branches)).values())


def lease_json(view: LeaseView) -> dict[str, Any]:
    """One lease as ``git sluice lease --json`` prints it."""
    return {
        "branch": view.branch, "oid": view.oid, "holder": view.holder, "role": view.role, "age": view.age,
        "lease": view.lease, "garbage": view.garbage, "mine": view.mine, "live": view.live,
    }
