"""``git sluice drive``: a driver holds the lease of each branch and takes it in on the discovery clock.

It runs on the injected clock, so tests run an hour of driving in a blink.
It survives the network and GitHub failing: a failed fetch or push keeps the
last view and tries again next tick; a spent allowance passes the forge's
part of a round by (said once) while the local work goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING

from ..errors import AllowanceSpent, CredentialsRefused, Interrupted, SluiceError, local_time
from ..forge.client import ForgeError, ForgeUnavailable
from ..intake.round import Intake, RoundReport
from ..records import record
from ..remote.git import RemoteRefused, RemoteUnreachable
from ..remote.lease_record import LeaseView, renewal_deferral
from ..remote.lease_keeper import LeaseKeeper
from ..remote.looks import SHARE_WINDOW
from ..runtime.refusal import Refusal
from ..runtime.rounds import branch_refspecs, intake_for
from ..runtime.session import Session, fetch_and_adopt, reread_credentials
from ..runtime.stopper import Stopper
from ..runtime.watching import next_wake, publish_surveys, tick_watch
from ._roles import Say, sleep_until
from .lease import lease_words
from .lease import lease_words

if TYPE_CHECKING:
    from ..intake.hostwatch import HostWatch

log = logging.getLogger("git_sluice")


@record
class DriverState:
    ticks: int = 0
    rounds: list[RoundReport] = field(default_factory=list)
    paused_said: set[tuple[str, str]] = field(default_factory=set)
    # the last failure said per branch (and for the lease): the same line is not said every tick
    failures_said: dict[str, str] = field(default_factory=dict)

    def say_once(self, key: str, text: str, say: Say, *, gist: str | None = None) -> None:
        """Say ``text`` unless the same failure (``gist``, default the text) was the last said for ``key``."""
        gist = text if gist is None else gist
        if self.failures_said.get(key) != gist:
            self.failures_said[key] = gist
            say(text)


def drive(
    session: Session,
    branches: Sequence[str] | None = None,
    *,
    stopper: Stopper | None = None,
    say: Say = lambda text: None,
    max_ticks: int | None = None,
    let_go: bool = True,
) -> DriverState:
    """Hold the lease of each branch and take it in on the discovery clock, until stopped.

    ``max_ticks`` ends after that many ticks (tests, the demo); ``let_go=False``
    then leaves the marks standing, as a driver that will tick again would.
    """
    chosen = list(branches or session.settings.branches)
    stopper = stopper or Stopper()
    intake, keeper = intake_for(session, role="driver")
    state = DriverState()
    tick = max(1.0, min(session.settings.discovery, session.settings.lease / 3))
    ticking = _Ticking(session, chosen, intake, keeper, state, say, tick)
    try:
        while not stopper.stopped:
            state.ticks += 1
            started = session.clock.time()
            if ticking.refusal.holding_off(started):  # refused credentials: no call, no lease, until the back-off ends
                if max_ticks is not None and state.ticks >= max_ticks:
                    break
                sleep_until(session, min(started + tick, ticking.refusal.until or started), stopper)
                continue
            watch = ticking.tick(started)
            if max_ticks is not None and state.ticks >= max_ticks:
                break
            sleep_until(session, next_wake(session, watch, started, tick), stopper)
    finally:
        if ticking.held and let_go:
            _let_go(keeper, ticking.held, say)
    return state


class _Ticking:
    """One driver's ticks: what it holds, the branches' last revisions, its refused-credentials back-off."""

    def __init__(self, session: Session, chosen: list[str], intake: Intake, keeper: LeaseKeeper, state: DriverState,
                 say: Say, tick: float) -> None:
        self.session, self.chosen, self.intake, self.keeper = session, chosen, intake, keeper
        self.state, self.say, self.tick_length = state, say, tick
        self.revs: dict[str, str | None] = {}
        self.held: set[str] = set()
        self.refusal = Refusal()

    def tick(self, started: float) -> HostWatch | None:
        """The look, the leases, the rounds, the fleet's survey and the renewals; the watch ticked, if any."""
        session, say = self.session, self.say
        if self.refusal.due(started):
            reread_credentials(session)
            self.refusal.retried()
            say("reading the credentials again and trying once")
        # a look of this host's within half a tick (the watch's, at its tick) is this tick's look
        fetch_and_adopt(session, *branch_refspecs(session, self.chosen), share=max(SHARE_WINDOW, self.tick_length / 2))
        self._held(_ensure_leases(self.keeper, self.chosen, self.tick_length, self.state, say))
        # the host watch watches every branch this driver follows: what this host holds it reads (and
        # surveys for the fleet), what another host holds it takes from that host's survey, no call
        watch = None
        try:
            watch = tick_watch(session, self.chosen)
            if watch is not None:
                self.intake.watch = watch  # (a driver whose first try met a 401 started without one)
            for branch in self.chosen:
                self._round(branch)
            # the heads these rounds queued as waiting: their baseline now; then what this host took
            # in, for the hosts that mirror it (one push, where it changed, carrying the renewals
            # the next tick would push)
            tick_watch(session, self.chosen)
            publish_surveys(session, self.chosen, keeper=self.keeper)
            _renew_due(self.keeper, self.held, self.state, say)
        except CredentialsRefused as exc:
            until = self.refusal.refused(session.clock.time())
            say(f"{exc}; asking GitHub nothing until {local_time(until)}, then reading the credentials again")
            if self.held:
                _let_go(self.keeper, self.held, say)
        return watch

    def _held(self, views: Mapping[str, LeaseView]) -> None:
        """Which branches this host now holds; say what changed (and everything on the first tick)."""
        for branch, view in views.items():
            was = branch in self.held
            if view.mine and view.live:
                self.held.add(branch)
                if not was:
                    self.say(f"{branch}: holding the lease ({view.note})")
            else:
                self.held.discard(branch)
                if was or self.state.ticks == 1:
                    self.say(lease_words(view))  # the branch once: the words name it (issue 31)

    def _round(self, branch: str) -> None:
        rev = self.session.repo.ref(f"refs/remotes/{self.session.settings.remote}/{branch}")
        moved = branch in self.revs and self.revs[branch] != rev
        self.revs[branch] = rev
        report = _driver_round(self.session, self.intake, branch, "moved" if moved else "discovery", self.state,
                               self.say)
        if report is None:
            return
        self.state.rounds.append(report)
        self.refusal.accepted()
        if report.outcome in ("taken-in", "deferred"):
            self.say(report.summary())
        elif report.outcome == "unleased":
            self.state.say_once(branch, report.summary(), self.say)


def _ensure_leases(
    keeper: LeaseKeeper, chosen: list[str], tick: float, state: DriverState, say: Say,
) -> dict[str, LeaseView]:
    """The tick's lease views: take, take over, or renew what is a tick past due (the rest renews at
    the tick's end, in the survey's push when one goes); on a failed push, the views as last read."""
    defer = renewal_deferral(lease=keeper.lease, tick=tick, margin=keeper.margin)
    try:
        views = keeper.ensure(chosen, fetch=False, defer=defer)
        state.failures_said.pop("", None)
        return views
    except (RemoteUnreachable, RemoteRefused) as exc:
        if isinstance(exc, RemoteRefused):
            log.warning("the remote refused the lease: %s", exc)
        state.say_once("", f"could not write the lease ({exc}); taking nothing in without it", say)
        # a refused branch comes back marked blocked: it is not taken in (issue #14, point 4)
        refused = exc.views if isinstance(exc, RemoteRefused) else None
        return refused if isinstance(refused, dict) and refused else keeper.read_all(chosen)


def _renew_due(keeper: LeaseKeeper, held: set[str], state: DriverState, say: Say) -> None:
    """The tick's last push: the renewals no survey carried (one push, or none)."""
    if not held:
        return
    try:
        keeper.renew_due(sorted(held))
    except (SluiceError, OSError) as exc:  # a push that fails, a record or an observation not written
        # the tick's start renews what is then overdue; nothing here may end the driver
        state.say_once("", f"could not renew the lease ({exc}); the next tick tries again", say)


def _let_go(keeper: LeaseKeeper, held: set[str], say: Say) -> None:
    """Delete this driver's own marks (never another's: the keeper deletes only what it wrote)."""
    try:
        keeper.release(sorted(held))
        say("let go of the lease of " + ", ".join(sorted(held)))
        held.clear()
    except SluiceError as exc:
        log.warning("could not let go of the lease: %s", exc)


def _driver_round(session: Session, intake: Intake, branch: str, reason: str, state: DriverState, say: Say) -> RoundReport | None:
    try:
        report: RoundReport = intake.round(branch, reason=reason)
        state.paused_said.clear()
        if report.outcome != "unleased":  # said once by the caller, until the branch is held again
            state.failures_said.pop(branch, None)
        return report
    except CredentialsRefused:
        raise  # the driver's business: let go of the lease, back off, read the credentials again
    except Interrupted:
        return None  # stopped mid-round: the loop sees the stop and lets go
    except AllowanceSpent as exc:
        key = (exc.pool, exc.resource)
        if key not in state.paused_said:
            state.paused_said.add(key)
            say(f"{branch}: {exc}; the forge's part of rounds waits, local work goes on")
    except ForgeUnavailable as exc:
        # the same address failing the same way each tick is one line, not one a tick (its
        # "not asked again before" time moves on every time)
        state.say_once(branch, f"{branch}: {exc}", say, gist=f"unavailable {exc.address} {exc.reason}")
    except ForgeError as exc:
        state.say_once(branch, f"{branch}: {exc}", say)
    except SluiceError as exc:
        state.say_once(branch, f"{branch}: round failed: {exc}", say)
    return None
