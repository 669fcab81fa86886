"""``git sluice lease``: who holds each branch's lease, read from the marks as last fetched.

Local reading only: no token and no network (``git fetch`` brings the marks),
so it opens no session, only the clone, its config and a lease keeper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..clock import Clock, default_clock
from ..config import Settings, load_settings
from ..remote.lease import LeaseView
from ..remote.leases import LeaseKeeper
from ..repo import Repo


def local_keeper(path: str = ".", clock: Clock | None = None) -> tuple[Repo, Settings, LeaseKeeper]:
    """The clone at ``path``, its settings, and a keeper that reads leases as a step sees them."""
    clock = clock or default_clock()
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
