"""A session's rounds: the intake of a clone wired to its session, reading leases as a role sees them.

Every role takes branches in through :func:`intake_for`: the step
(:func:`git_sluice.commands.intake.run_rounds`, the ``intake`` command and the
hooks), the driver and the wait (``commands/drive.py``, ``commands/wait.py``)
and the demo.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import CredentialsRefused
from ..intake.hostwatch import HostWatch
from ..intake.round import Intake
from ..remote.git import tracking_ref, tracking_refspecs
from ..remote.lease_keeper import LeaseKeeper
from .session import Session
from .watching import tick_watch, watch_for


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


def branch_refspecs(session: Session, branches: Sequence[str]) -> list[str]:
    """The branches into git-sluice's own namespace, never ``refs/remotes/*`` (the user's)."""
    return tracking_refspecs(session.settings.remote, branches)
