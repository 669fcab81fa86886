"""``git sluice lease``: who holds each branch's lease, read from the marks as last fetched.

Local reading only: no token and no network (``git fetch`` brings the marks),
so it opens no session, only the clone, its config and a lease keeper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..clock import Clock, default_clock
from ..config import Settings, load_settings
from ..errors import UnknownBranch
from ..gitcli import run
from ..remote.lease import LEASE_PREFIX, LeaseView
from ..remote.fetched import FetchedLeases
from ..remote.leases import LeaseKeeper

if TYPE_CHECKING:
    from ..remote.git import RemoteGit
    from ..repo import Repo

# where the rounds' own fetch keeps a branch (remote/git.py's TRACKING_PREFIX; not imported: it loads libgit2)
TRACKING_PREFIX = "refs/sluice/tracking/"


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
    """Each branch's lease (default: the configured branches), in the order asked.

    A ``-b`` branch that is nowhere — not configured, not on the remote, no lease
    mark — is refused (exit 2), as ``intake`` and ``queue`` refuse it: "no lease"
    would read as "free to take" for a typo (issue 31).
    """
    _, settings, keeper = local_keeper(path)
    unknown = unknown_branches(path, settings.remote, settings.branches, branches)
    if unknown:
        raise UnknownBranch(unknown, settings.remote, looked="not in sluice.branch, not fetched, no lease mark")
    return list(keeper.read_all(list(branches) or list(settings.branches)).values())


def unknown_branches(path: str, remote: str, configured: Sequence[str], branches: Sequence[str]) -> list[str]:
    """Of ``branches``, those neither configured, nor a ref of ``remote`` here, nor with a lease mark (a typo)."""
    asked = [b for b in branches if b not in configured]
    if not asked:
        return []

    def refs(branch: str) -> list[str]:
        return [f"refs/remotes/{remote}/{branch}", f"{TRACKING_PREFIX}{remote}/{branch}", LEASE_PREFIX + branch]

    done = run(["for-each-ref", "--format=%(refname)", *[r for b in asked for r in refs(b)]], cwd=path)
    known = set(done.stdout.split()) if done.returncode == 0 else set()
    return [b for b in asked if not known.intersection(refs(b))]


def lease_json(view: LeaseView) -> dict[str, Any]:
    """One lease as ``git sluice lease --json`` prints it."""
    return {
        "branch": view.branch, "oid": view.oid, "holder": view.holder, "role": view.role, "age": view.age,
        "lease": view.lease, "garbage": view.garbage, "mine": view.mine, "live": view.live,
    }
