"""``git sluice lease``: who holds each branch's lease, read from the marks as last fetched.

Local reading only: no token and no network (``git fetch`` brings the marks),
so it opens no session, only the clone, its config and a lease keeper.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..clock import Clock, default_clock
from ..config import Settings, load_settings
from ..errors import UnknownBranch
from ..gitcli import run
from ..records import record
from ..remote.lease_record import LEASE_PREFIX, LeaseView
from ..remote.words import Fetched as Fetched, RemoteLook as RemoteLook, lease_words as lease_words
from ..remote.fetched import FetchedLeases
from ..remote.lease_keeper import LeaseKeeper

if TYPE_CHECKING:
    from ..remote.git import RemoteGit
    from ..repo import Repo

log = logging.getLogger(__name__)

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
    return read_leases_looked(path, branches, look=False).views


@record
class LeasesRead:
    """Each branch's lease as last fetched, what the remote has now (None: not asked), and as of when."""

    views: list[LeaseView]
    look: RemoteLook | None
    fetched: Fetched


def read_leases_looked(path: str = ".", branches: Sequence[str] = (), *, look: bool = True) -> LeasesRead:
    """:func:`read_leases`, with one ``ls-remote`` of the lease refs beside it (``look``).

    The mirror is the remote as of the last fetch, which may be long ago on a
    host that runs no driver: ``git sluice lease`` after another host let go
    would still say "live" (issue 31). A look costs one git request to the
    remote (never GitHub) and tells what the remote has now.
    """
    _, settings, keeper = local_keeper(path)
    unknown = unknown_branches(path, settings.remote, settings.branches, branches)
    if unknown:
        raise UnknownBranch(unknown, settings.remote, looked="not in sluice.branch, not fetched, no lease mark")
    names = list(branches) or list(settings.branches)
    views = list(keeper.read_all(names).values())
    fetched = Fetched(since_fetch(keeper))
    if not look:
        return LeasesRead(views, None, fetched)
    from ..errors import SluiceError
    from ..remote.git import RemoteGit
    from ..repo import Repo

    repo = Repo.discover(path)
    remote = RemoteGit(repo, settings.remote, clock=keeper.clock)
    found = look_at_remote(remote)
    if found.error is None and any(found.oid(view.branch) != view.oid for view in views):
        # the remote moved since the last fetch (a renewal, a let-go, a take-over): fetch the marks,
        # as doctor does (no GitHub call), and read them as they are now, aged by this host's observation
        fresh = LeaseKeeper.configured(repo, settings, role="step", clock=keeper.clock, remote=remote)
        try:
            remote.fetch()
        except SluiceError as exc:
            log.info("could not fetch the leases after a look: %s", exc)
        else:
            views = list(fresh.read_all(names).values())
    return LeasesRead(views, found, fetched)


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


def look_at_remote(remote: RemoteGit) -> RemoteLook:
    """One ``git ls-remote`` of the lease refs (the cheap look pause notes take; no fetch, no GitHub)."""
    from ..errors import SluiceError

    try:
        return RemoteLook(remote.list_remote(LEASE_PREFIX + "*"))
    except SluiceError as exc:
        return RemoteLook({}, str(exc))


def since_fetch(keeper: LeaseKeeper) -> float | None:
    """Seconds since the clone's last successful fetch of the leases began, this boot (None: none)."""
    store = keeper.observations
    now = store.clock.monotonic()
    at = store._confirmed(store._load(), now)  # the store's own reading of its "fetched" record
    return None if at is None else now - at


def lease_json(view: LeaseView, look: RemoteLook | None = None) -> dict[str, Any]:
    """One lease as ``git sluice lease --json`` prints it (``live`` only where the remote still has the mark)."""
    data: dict[str, Any] = {
        "branch": view.branch, "oid": view.oid, "holder": view.holder, "role": view.role, "age": view.age,
        "lease": view.lease, "garbage": view.garbage, "mine": view.mine, "live": view.live,
    }
    if look is not None:
        data["remote"] = {"oid": look.oid(view.branch), "error": look.error}
        if look.error is None and look.oid(view.branch) != view.oid:
            data["live"] = False
            data["stale"] = True
    data["text"] = lease_words(view, look=look)
    return data
