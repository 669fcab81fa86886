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
from ..durations import format_duration
from ..gitcli import run
from ..records import record
from ..remote.lease import LEASE_PREFIX, LeaseView
from ..remote.fetched import FetchedLeases
from ..remote.leases import LeaseKeeper

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


@record(frozen=True)
class RemoteLook:
    """What ``git ls-remote`` said of the lease refs just now: ``{ref: oid}``, or why it could not say."""

    refs: dict[str, str]
    error: str | None = None

    def oid(self, branch: str) -> str | None:
        return self.refs.get(LEASE_PREFIX + branch)


@record(frozen=True)
class Fetched:
    """When the mirror a lease view reads was last the remote's: seconds since the last fetch began
    (None: no fetch succeeded since this boot)."""

    since: float | None

    def ago(self) -> str:
        if self.since is None:
            return "before this boot"
        return "just now" if self.since < 1 else f"{format_duration(self.since)} ago"

    def words(self) -> str:
        """``as last fetched 5 min ago``."""
        return "as last fetched " + ("before this boot (none since)" if self.since is None else self.ago())


def lease_words(view: LeaseView, *, fetched: Fetched | None = None, look: RemoteLook | None = None) -> str:
    """One lease as a person reads it: the branch once, an age in words, never a stale "live" (issue 31).

    ``fetched`` says what the view is as of (None: a fetch just now, as a
    driver's tick; this host's own mark needs none either: its own clock ages
    it). ``look``, the remote's lease refs just now: where the remote no
    longer has the mark the view read, the line says what the remote has.
    """
    if view.blocked is not None:
        return f"{view.branch}: the lease cannot be written ({view.blocked}); not taking it in"
    if look is not None and look.error is None and look.oid(view.branch) != view.oid:
        return _moved_words(view, look.oid(view.branch), fetched)
    as_of = "" if fetched is None or (look is not None and look.error is None) else fetched.words()
    if view.oid is None:
        return f"{view.branch}: no lease (this host alone)" + (f", {as_of}" if as_of else "") + _unasked(look)
    who = "this host" if view.mine else (view.holder or "an unknown holder")
    kind = "garbage mark" if view.garbage else f"{view.role} lease"
    age = "age unknown (no fetch has seen it since this boot)" if view.age is None \
        else f"{format_duration(view.age)} old"
    state = "live" if view.live else "lapsed"
    text = f"{view.branch}: {kind} of {who}, {age}, {state}"
    if as_of and (not view.mine or look is not None):
        text += f" {as_of}"
    return text + _unasked(look)


def _unasked(look: RemoteLook | None) -> str:
    return "" if look is None or look.error is None else f"; the remote could not be asked ({look.error})"


def _moved_words(view: LeaseView, now_oid: str | None, fetched: Fetched | None) -> str:
    """The remote's lease ref is not what the mirror holds: say what each says, claim nothing live."""
    was = "no lease" if view.oid is None else \
        f"{'this host' if view.mine else (view.holder or 'an unknown holder')}'s {view.role or 'unreadable'} lease"
    last = "the last fetch" + (f" ({fetched.ago()})" if fetched is not None else "")
    if now_oid is None:
        return f"{view.branch}: no lease on the remote now ({last} had {was}: let go or taken back since)"
    return (f"{view.branch}: the lease moved on the remote since {last}, which had {was}; "
            "the next round's fetch reads whose it is now")


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
