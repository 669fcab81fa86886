"""A step: one round per configured branch, then exit (``git sluice intake``; the hooks'
rounds go through :func:`git_sluice.commands.hook_round.hook_step`, which fetches less).

A step reads the lease and the pause notes in the fetch it makes anyway
(``refs/sluice/*`` plus the branch), never pushes a mark, and takes a branch in
only where no other host holds a live lease.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..errors import CredentialsRefused, SluiceError
from ..remote.git import tracking_ref, tracking_refspecs
from ..remote.leases import LeaseKeeper
from ..runtime.session import Session, fetch_and_adopt
from ..runtime.watching import publish_surveys, tick_watch, watch_for
from ..intake.hostwatch import HostWatch
from ..intake.round import Intake, RoundReport

log = logging.getLogger("git_sluice")


def intake_for(session: Session, *, role: str = "step") -> tuple[Intake, LeaseKeeper]:
    """The rounds of this clone, reading leases as ``role`` sees them."""
    settings = session.settings
    session.role = role
    keeper = LeaseKeeper.configured(
        session.repo, settings, role=role, clock=session.clock, remote=session.remote,
        call_deadline=session.forge.timeout,
    )

    def branch_rev(branch: str) -> str | None:
        """The branch as the rounds' own fetch last saw it; the user's tracking ref until then."""
        seen = session.repo.ref(tracking_ref(settings.remote, branch))
        return seen if seen is not None else session.repo.ref(f"refs/remotes/{settings.remote}/{branch}")

    try:
        watch = watch_for(session, ticking=role == "driver")
    except CredentialsRefused:
        watch = None  # the driver backs off at its first tick; it hands its rounds the watch once it ticks
    intake = Intake(
        sluice_dir=session.repo.sluice_dir,
        repository=settings.repository,
        host=settings.host,
        discovery=settings.discovery,
        forge=session.forge,
        clock=session.clock,
        lease_reader=keeper.read,
        branch_rev=branch_rev,
        watch=watch,
        head_rev=lambda head: session.repo.ref(f"refs/remotes/{settings.remote}/{head}"),
        ticker=_intake_ticker(session) if role == "step" else None,
    )
    return intake, keeper


def _intake_ticker(session: Session) -> Callable[[str], HostWatch | None]:
    """What a one-shot intake's round calls to tick the host watch: it registers the branches this
    clone follows, naming those another host holds (as a driver does), then ticks if due."""

    def tick(branch: str) -> HostWatch | None:
        # every branch the clone follows, as a driver registers them; those another host holds are
        # taken from that host's survey, never asked
        return tick_watch(session, list(dict.fromkeys([*session.settings.branches, branch])))

    return tick


def unknown_branches(session: Session, branches: Sequence[str]) -> list[str]:
    """Of the branches asked for, those neither configured nor known on the remote (a typo, most likely)."""
    settings = session.settings
    return [
        b for b in branches
        if b not in settings.branches and session.repo.ref(f"refs/remotes/{settings.remote}/{b}") is None
    ]


def branch_refspecs(session: Session, branches: Sequence[str]) -> list[str]:
    """The branches into git-sluice's own namespace, never ``refs/remotes/*`` (the user's)."""
    return tracking_refspecs(session.settings.remote, branches)


def run_rounds(
    session: Session,
    branches: Sequence[str] | None = None,
    *,
    reason: str = "discovery",
    wait: bool = False,
    deadline: float | None = None,
    fetch: bool = True,
    pushed: frozenset[str] = frozenset(),
    share: float | None = None,
) -> list[RoundReport]:
    """One round per branch; the fetch of ``refs/sluice/*`` and the branches comes first.

    ``pushed``: request head branches a push from this clone just moved (a hook's word).
    ``share``: a look of this host's at the remote within that many seconds stands for the fetch."""
    chosen = list(branches or session.settings.branches)
    if fetch:
        fetch_and_adopt(session, *branch_refspecs(session, chosen), share=share)
    intake, _ = intake_for(session)
    reports = []
    offered = False
    for branch in chosen:
        report = intake.round(branch, reason=reason, wait=wait, deadline=deadline, pushed=pushed)
        reports.append(report)
        offer_again = reason == "intake" and report.outcome == "taken-in"
        if offer_again and intake.ticker is not None and intake.watch is not None:
            # as a driver offers again after its rounds: the heads this round queued as waiting get their
            # checks' baseline in the step that queued them, not as a 200 at the next one
            try:
                intake.ticker(branch)
                offered = True
            except SluiceError as exc:
                log.warning("the host watch could not take the new heads' baselines (%s)", exc)
    if offered:  # as a driver does after its rounds: what this host took in, for the hosts that mirror it
        publish_surveys(session, list(dict.fromkeys([*session.settings.branches, *chosen])))
    return reports
