"""``git sluice wait``: a wait follows one request to its outcome (merged, closed, ready or blocked).

It runs on the injected clock, so tests run an hour of waiting in a blink.
Where no driver lives it takes the branch's lease as a wait; where another
host takes the branch in, it follows the request on this host's watch and
asks GitHub only when the request moved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import field
from typing import Any

from ..errors import Interrupted, SluiceError, TimedOut
from ..intake import follow as fl
from ..intake import graphql as gq
from ..intake.followstore import Followed, FollowStore
from ..intake.hostwatch import BaseView, HostWatch
from ..intake.queue import derive_state
from ..intake.request import Request
from ..intake.round import Intake
from ..records import record
from ..remote.git import RemoteRefused, RemoteUnreachable
from ..remote.lease_record import LeaseView
from ..remote.lease_keeper import LeaseKeeper
from ..runtime.rounds import branch_refspecs, intake_for
from ..runtime.session import Session, fetch_and_adopt
from ..runtime.stopper import Stopper
from ..runtime.watching import follow_watch
from ._roles import Say, sleep_until

log = logging.getLogger("git_sluice")


OUTCOMES = {"merged": 0, "ready": 0, "closed": 1, "blocked": 1}


@record
class WaitResult:
    number: int
    outcome: str  # merged | ready | closed | blocked
    exit_code: int
    history: list[str] = field(default_factory=list)


def find_branch(session: Session, number: int, deadline: float | None = None) -> str:
    """The base branch of request ``number``: from the queue, else GitHub's word (conditional).

    A wait waits here too: a pause (this host's, or another host's note) is waited out within
    the wait's own timeout, not met with exit 3.
    """
    intake, _ = intake_for(session, role="wait")
    for branch in intake.queue.branches():
        if number in intake.queue.load(branch).entries:
            return branch
    remembered = FollowStore(session.repo.sluice_dir).get(number).branch
    if remembered is not None:
        return remembered  # a wait run before followed it there (a retargeting is found when it leaves the list)
    owner, name = session.owner_name
    answer = session.forge.get(f"repos/{owner}/{name}/pulls/{number}", wait=True, deadline=deadline).raise_for_status()
    return str(answer.json()["base"]["ref"])


def wait_for(
    session: Session,
    number: int,
    *,
    timeout: float | None = None,
    stopper: Stopper | None = None,
    say: Say = lambda text: None,
) -> WaitResult:
    """Follow request ``number`` to merged, closed, ready or blocked; raises TimedOut / AllowanceSpent."""
    stopper = stopper or Stopper()
    clock = session.clock
    deadline = clock.time() + timeout if timeout is not None else None
    # the pause notes first: another host's pause is waited out, not run into. A wait looks at the
    # remote as often as the host does, once a tick (a look this host took within it stands, issue 29):
    # before a call, the forge's own pause check looks again if the last look is older than 10 s
    look = float(session.settings.discovery)
    fetch_and_adopt(session, share=look)
    branch = find_branch(session, number, deadline)
    intake, keeper = intake_for(session, role="wait")
    following = _Following.load(session, number)
    if following.memory.branch != branch:
        following.memory = Followed(branch=branch)
        following.save(session)  # a wait run again (even one that timed out before its first look) asks it no more
    told = _Told(say)
    tell, history = told.tell, told.history
    took = False

    try:
        while True:
            if stopper.stopped:
                raise Interrupted(f"wait for #{number} stopped ({stopper.name}); nothing more is asked")
            now = clock.time()
            if deadline is not None and now >= deadline:
                raise TimedOut(f"#{number} reached no outcome within the timeout (last: {told.last or 'unknown'})")
            fetch_and_adopt(session, *branch_refspecs(session, [branch]), share=look)
            view, mine = _lease_of(keeper, branch, number)
            took = took or mine
            remaining = None if deadline is None else max(deadline - clock.time(), 0.0)
            wait_deadline = None if remaining is None else clock.time() + remaining
            if view.takes_in:
                state = _follow_by_round(session, intake, branch, number, wait_deadline)
                interval = min(session.settings.discovery, session.settings.lease / 3)
            else:
                state = _follow_alone(session, intake, branch, number, wait_deadline, following)
                interval = following.interval(session)
                if following.retarget is not None:
                    branch = _retarget(session, following, branch, number, tell)
            if state is not None:
                tell(f"#{number}: {state}")
                if state in OUTCOMES:
                    following.done(branch, session.clock.time())
                    return WaitResult(number, state, OUTCOMES[state], history)
            target = clock.time() + interval
            if deadline is not None:
                target = min(target, deadline)
            sleep_until(session, target, stopper)
    finally:
        if took:
            _let_go(keeper, branch, stopper, say)


class _Told:
    """What a wait said, each line once in a row: its history, and the last for a timeout's message."""

    def __init__(self, say: Say) -> None:
        self.say = say
        self.history: list[str] = []
        self.last: str | None = None

    def tell(self, text: str) -> None:
        if text != self.last:
            self.last = text
            self.history.append(text)
            self.say(text)


def _let_go(keeper: LeaseKeeper, branch: str, stopper: Stopper, say: Say) -> None:
    try:
        keeper.release([branch])
        if stopper.stopped:
            say(f"let go of the lease of {branch}")
    except SluiceError as exc:
        log.warning("could not let go of the wait's lease: %s", exc)


def _lease_of(keeper: LeaseKeeper, branch: str, number: int) -> tuple[LeaseView, bool]:
    """The branch's lease as this wait finds it, taken, renewed or taken over where it is free or
    ours (a writer takes in only on its own push); and whether this wait now holds it."""
    view = keeper.read(branch)
    if not (view.absent or view.takes_in or view.mine or not view.live):
        return view, False
    try:
        view = keeper.ensure([branch], fetch=False)[branch]
    except (RemoteUnreachable, RemoteRefused) as exc:
        log.info("wait: could not take the lease (%s); following #%s alone", exc, number)
        return view, False
    return view, view.mine and view.role == "wait"


def _retarget(session: Session, following: _Following, branch: str, number: int,
              tell: Callable[[str], None]) -> str:
    """The request moved to another base: the wait follows it there, from a clean memory."""
    assert following.retarget is not None
    following.done(branch, session.clock.time())
    branch, following.retarget = following.retarget, None
    following.memory = Followed(branch=branch)
    tell(f"#{number}: retargeted to {branch}")
    return branch


def _follow_by_round(session: Session, intake: Intake, branch: str, number: int, deadline: float | None) -> str | None:
    """This host takes the branch in: a round (on the discovery clock), then the queue's word."""
    intake.round(branch, reason="wait", wait=True, deadline=deadline)
    entry = intake.queue.load(branch).entries.get(number)
    if entry is not None:
        return entry.state
    return _closed_state(session, number, deadline)


def _ended(pr: dict[str, Any] | None) -> str | None:
    """merged / closed by GitHub's word on the request (None: still open, or gone = closed)."""
    if pr is None:
        return "closed"
    if pr.get("merged_at") or pr.get("merged"):
        return "merged"
    if pr.get("state") == "closed":
        return "closed"
    return None


def _pull(session: Session, number: int, deadline: float | None) -> tuple[dict[str, Any] | None, bool]:
    """The request by a conditional GET: (its JSON or None when deleted, whether it was unchanged)."""
    owner, name = session.owner_name
    answer = session.forge.get(f"repos/{owner}/{name}/pulls/{number}", wait=True, deadline=deadline)
    if answer.status == 404:
        return None, False
    return answer.raise_for_status().json(), answer.from_kept


def _closed_state(session: Session, number: int, deadline: float | None) -> str | None:
    return _ended(_pull(session, number, deadline)[0])


@record
class _Following:
    """A wait's memory of its request while another host takes the branch in (docs/design.md#the-host-watch).

    ``memory`` is kept in the clone (:mod:`~git_sluice.intake.followstore`), so
    a wait run again (an agent's loop of ``wait --timeout``) asks nothing anew.
    """

    store: FollowStore
    number: int
    memory: Followed
    watch: HostWatch | None = None
    """The host watch whose answers the last step read; None: the wait asked for itself."""
    next_at: float | None = None
    retarget: str | None = None
    """The base the request moved to (the wait follows it there)."""

    @classmethod
    def load(cls, session: Session, number: int) -> _Following:
        store = FollowStore(session.repo.sluice_dir)
        return cls(store, number, store.get(number))

    def interval(self, session: Session) -> float:
        """Until the watch's next tick (its answers change no sooner); the old quarter interval without one."""
        if self.watch is None or self.next_at is None:
            return session.settings.discovery / 4
        return max(1.0, min(session.settings.discovery, self.next_at + 1.0 - session.clock.time()))

    def save(self, session: Session) -> None:
        try:
            self.store.put(self.number, self.memory, now=session.clock.time())
        except SluiceError as exc:  # a memory, not a result: the next look reads the request once more
            log.info("could not keep what the wait for #%s saw: %s", self.number, exc)

    def done(self, branch: str, now: float) -> None:
        """The request reached an outcome: the watch stops following it; the memory keeps only that
        outcome (ready or blocked, seen on the watch's answers), for a wait run again on it."""
        try:
            if self.memory.outcome is not None:
                self.memory = Followed(branch=branch, outcome=self.memory.outcome)
                self.store.put(self.number, self.memory, now=now)
            else:
                self.store.drop(self.number)
            if self.watch is not None:
                self.watch.unfollow(branch, self.number)
        except Exception as exc:  # the follow lapses by itself (watchstore.FOLLOW_FORGET)
            log.info("could not tell the host watch the wait for #%s is over: %s", self.number, exc)
        self.watch = None


def _follow_alone(
    session: Session, intake: Intake, branch: str, number: int, deadline: float | None, following: _Following
) -> str | None:
    """Another host takes the branch in: follow our own request on the host watch's answers.

    The watch lists the branch for the host once a tick and watches the
    request's head; the wait asks GitHub only when its request moved (one
    GraphQL read) or left the open list (one conditional GET says merged,
    closed or retargeted). Without a fresh watch it asks for itself.
    """
    watch = follow_watch(session, branch, number, following.memory.head)
    view = watch.view(branch) if watch is not None else None
    following.watch = watch
    if view is None:
        following.next_at = None
        return _follow_by_request(session, intake, number, deadline)
    following.next_at = view.next_at
    memory = following.memory
    item = next((i for i in view.items if i.number == number), None)
    sha = memory.head.get("sha") if memory.head is not None else (item.head_sha if item is not None else None)
    moved = isinstance(sha, str) and view.checks_moved(sha, epoch=memory.seen.epoch, since=memory.seen.tick)
    what = fl.step(memory.seen, epoch=view.epoch, tick=view.tick, item=item, checks_moved=moved)
    if what == "same":
        return None
    state: str | None = None
    read = False
    if what == "draft":
        state = "draft"
    elif what == "gone":
        state = _gone(session, number, branch, deadline, following)
    elif what == "read":
        state, read = _read_state(session, view, item, number, moved, memory, deadline)
    memory.seen = fl.after(memory.seen, what, epoch=view.epoch, tick=view.tick, item=item, read=read)
    following.save(session)
    return state


def _gone(session: Session, number: int, branch: str, deadline: float | None, following: _Following) -> str | None:
    """The request left the open list: one conditional GET says merged, closed or retargeted."""
    pr, _unchanged = _pull(session, number, deadline)
    state = _ended(pr)
    base = pr.get("base") if pr is not None else None
    ref = base.get("ref") if isinstance(base, dict) else None
    if state is None and isinstance(ref, str) and ref and ref != branch:
        following.retarget = ref
    return state


def _read_state(
    session: Session, view: BaseView, item: Request | None, number: int, moved: bool, memory: Followed,
    deadline: float | None,
) -> tuple[str | None, bool]:
    """The request moved: its state, and whether it was read — from the last outcome, the watch's
    inputs, a reading the tick holds, or one GraphQL read of its own (in that order of cost)."""
    if item is not None and memory.seen.snapshot is None and (standing := fl.standing_outcome(
        memory.outcome, epoch=view.epoch, item=item, active_tick=view.active_tick,
        head_moved_after=view.heads.get(item.head_sha),
    )) is not None:
        # a wait run again on a request whose repository has not moved since the last wait's outcome
        return standing, True
    if item is not None and number in view.inputs:
        # the watch's query said what the state is derived from, for the whole host: no reading of its own
        review, checks, mergeable = view.inputs[number]
        memory.head = {"sha": item.head_sha, "updated_at": item.updated_at, "checks_state": checks, "draft": item.draft}
        state = derive_state(item.draft, review, checks, mergeable)
        memory.outcome = fl.outcome_record(state, epoch=view.epoch, tick=view.tick, item=item, checks=checks)
        return state, True
    reading = view.readings.get(number) if item is not None and not moved else None
    if reading is None or item is None or (reading.head_sha, reading.updated_at) != (item.head_sha, item.updated_at):
        # (a reading the tick holds of the request as listed — the holder's survey reads every request
        # it lists — says what moved for nothing; checks that moved since are asked, unless said above)
        reading = _read_one(session, number, deadline)
    if reading is None:
        return None, False
    memory.head = {"sha": reading.head_sha, "updated_at": reading.updated_at,
                   "checks_state": reading.checks_state, "draft": reading.draft}
    state = _state_of(reading)
    if item is not None and (reading.head_sha, reading.updated_at) == (item.head_sha, item.updated_at):
        memory.outcome = fl.outcome_record(state, epoch=view.epoch, tick=view.tick, item=item,
                                           checks=reading.checks_state)
    return state, True


def _read_one(session: Session, number: int, deadline: float | None) -> Request | None:
    owner, name = session.owner_name
    result = gq.read_all(
        lambda q, v: session.forge.graphql(q, v, wait=True, deadline=deadline), owner, name, [number]
    )
    return result.readings.get(number)


def _state_of(reading: Request) -> str:
    if reading.github_state == "MERGED":
        return "merged"
    if reading.github_state == "CLOSED":
        return "closed"
    return derive_state(reading.draft, reading.review_decision, reading.checks_state, reading.mergeable)


def _follow_by_request(session: Session, intake: Intake, number: int, deadline: float | None) -> str | None:
    """No host watch to follow on: follow our own request by GitHub's word, conditionally (the old way)."""
    pr, unchanged = _pull(session, number, deadline)
    ended = _ended(pr)
    if ended is not None or pr is None:
        return ended
    if pr.get("draft"):
        return "draft"
    checks_moved = intake.checks_moved(str(pr["head"]["sha"]), wait=True, deadline=deadline)
    if unchanged and not checks_moved:
        return None  # nothing moved: no GraphQL read
    reading = _read_one(session, number, deadline)
    return None if reading is None else _state_of(reading)
