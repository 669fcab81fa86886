"""The pause machine: examples of each transition, then every interleaving hypothesis finds.

The invariants are the ones the incident in seeds/000 needed and lacked: after
a throttle no sibling that had not started reaches GitHub; one probe per
epoch; cohorts of 1, 2, 4, 8 that never refill; nothing wedges the pool.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from git_sluice.forge import rules
from git_sluice.forge.gate_machine import (
    COHORT_SIZES,
    FAILURE,
    NOT_ATTEMPTED,
    OK,
    POLL,
    RAMP_WINDOW,
    GateState,
    Grant,
    Deferred,
    acquire,
    adopt,
    expire,
    finish,
    pause_until_for,
    spent,
    start,
    throttled,
)

T0 = 1_800_000_000.0
POOL = "pool-a1"


def fresh() -> GateState:
    return GateState(pool_id=POOL)


def grant(state: GateState, now: float, pid: str, deadline: float = 60.0) -> Grant:
    d = acquire(state, now, pid, now + deadline)
    assert isinstance(d, Grant), d
    return d


def pause(state: GateState, now: float, until: float, pid: str = "opener") -> None:
    grant(state, now, pid)
    assert start(state, pid, now)
    assert finish(state, pid, now, throttled(until, "primary", "reset")) == "paused"


def probe_ok(state: GateState, now: float) -> None:
    assert grant(state, now, "probe").kind == "probe"
    assert start(state, "probe", now)
    assert finish(state, "probe", now, OK) == "ramp"


# --- examples --------------------------------------------------------------------------


def test_open_grants_normal_permits() -> None:
    s = fresh()
    assert grant(s, T0, "a") == Grant("normal", 0)
    assert start(s, "a", T0)
    assert finish(s, "a", T0 + 1, OK) == "none"
    assert s.permits == {} and s.phase == "open"


def test_throttle_fences_unstarted_siblings_but_not_calls_on_the_wire() -> None:
    s = fresh()
    for pid in "abcdefgh":
        grant(s, T0, pid)
    for pid in "abc":
        assert start(s, pid, T0)
    assert finish(s, "a", T0 + 1, throttled(T0 + 600, "primary", "reset")) == "paused"
    assert (s.phase, s.epoch, s.streak, s.until) == ("paused", 1, 1, T0 + 600)
    assert [start(s, pid, T0 + 1) for pid in "defgh"] == [False] * 5
    assert set(s.permits) == {"b", "c"}  # the two on the wire may still come back
    # they come back throttled too: same window, the later end wins, no escalation
    assert finish(s, "b", T0 + 2, throttled(T0 + 700, "primary", "reset")) == "extended"
    assert finish(s, "c", T0 + 2, throttled(T0 + 650, "primary", "reset")) == "none"
    assert (s.epoch, s.streak, s.until) == (1, 1, T0 + 700)


def test_paused_caller_waits_until_the_end() -> None:
    s = fresh()
    pause(s, T0, T0 + 60)
    assert acquire(s, T0 + 59.9, "x", T0 + 120) == Deferred(T0 + 60, "paused")
    assert s.held == 1
    assert "x" not in s.permits


def test_exactly_one_probe_then_cohorts_1_2_4_8_then_open() -> None:
    s = fresh()
    pause(s, T0, T0 + 60)
    now = T0 + 60
    assert grant(s, now, "p").kind == "probe"
    w = acquire(s, now, "q", now + 60)
    assert w == Deferred(now + POLL, "probe")
    assert start(s, "p", now)
    assert finish(s, "p", now + 0.2, OK) == "ramp"
    for size in COHORT_SIZES:
        ids = [f"c{size}-{i}" for i in range(size)]
        for pid in ids:
            assert grant(s, now, pid).kind == "cohort"
        assert isinstance(acquire(s, now, f"extra{size}", now + 60), Deferred)
        for pid in ids:
            assert start(s, pid, now)
        effects = [finish(s, pid, now + 0.1, OK) for pid in ids]
        assert effects[:-1] == ["none"] * (size - 1)
        assert effects[-1] == ("closed" if size == 8 else "advanced")
    assert (s.phase, s.streak) == ("open", 0)
    assert grant(s, now, "free").kind == "normal"


def test_cohort_is_never_refilled() -> None:
    s = fresh()
    pause(s, T0, T0 + 60)
    now = T0 + 60
    probe_ok(s, now)
    grant(s, now, "one")
    finish(s, "one", now, OK)  # cohort of 1 full and clean -> cohort of 2
    assert s.cohort_size == 2
    grant(s, now, "a")
    grant(s, now, "b")
    finish(s, "a", now, OK)  # a slot frees but the cohort does not refill
    assert acquire(s, now, "c", now + 60) == Deferred(now + POLL, "ramp")
    assert s.cohort_admitted == ["a", "b"]


def test_partial_cohort_advances_only_after_the_window() -> None:
    s = fresh()
    pause(s, T0, T0 + 60)
    now = T0 + 60
    probe_ok(s, now)
    grant(s, now, "one")
    assert finish(s, "one", now, OK) == "advanced"
    grant(s, now, "a")  # the cohort of 2 admits only one caller
    assert finish(s, "a", now + 0.5, OK) == "none"
    assert s.cohort == 1
    # no refill, but the cohort is not full: a second caller is still admitted
    assert grant(s, now + 0.6, "b").kind == "cohort"
    finish(s, "b", now + 0.7, OK)
    assert s.cohort == 2  # full and clean
    grant(s, now + 0.7, "x")
    finish(s, "x", now + 0.8, OK)
    assert s.cohort == 2  # 1 of 4, window not over
    assert grant(s, now + 1.6, "y").kind == "cohort"  # still inside the window: joins the 4
    assert s.cohort_admitted == ["x", "y"]
    finish(s, "y", now + 1.65, OK)
    assert s.cohort == 2  # 2 of 4, both clean, window (opened at +0.7) not over
    assert grant(s, now + 0.7 + RAMP_WINDOW, "z").kind == "cohort"
    assert (s.cohort, s.cohort_admitted) == (3, ["z"])  # the window ended: the next cohort took z


def test_failed_probe_lets_the_next_caller_probe_under_a_new_epoch() -> None:
    s = fresh()
    pause(s, T0, T0 + 60)
    now = T0 + 60
    first = grant(s, now, "p1")
    start(s, "p1", now)
    assert finish(s, "p1", now + 1, FAILURE) == "released"
    assert (s.phase, s.until) == ("paused", now + 1)
    second = grant(s, now + 1, "p2")
    assert second.kind == "probe" and second.epoch == first.epoch + 1
    assert finish(s, "p2", now + 1, NOT_ATTEMPTED) == "released"
    assert grant(s, now + 1, "p3").kind == "probe"


def test_throttled_probe_pauses_with_the_next_fallback_step() -> None:
    s = fresh()
    v = rules.Verdict("throttle", "secondary", "core", None, None, None, "x")
    until, how = pause_until_for(s, v, now=T0, permit_epoch=0)
    assert (until, how) == (T0 + 60 + rules.jitter(POOL, 1), "fallback")
    grant(s, T0, "a")
    finish(s, "a", T0, throttled(until, "secondary", how))
    now = until
    grant(s, now, "p")
    until2, _ = pause_until_for(s, v, now=now, permit_epoch=s.permits["p"].epoch)
    assert until2 == now + 120 + rules.jitter(POOL, 2)
    assert finish(s, "p", now, throttled(until2, "secondary", "fallback")) == "paused"
    assert (s.streak, s.epoch) == (2, 2)


def test_stale_throttle_takes_the_same_fallback_step() -> None:
    s = fresh()
    v = rules.Verdict("throttle", "unknown", "core", None, None, None, "x")
    grant(s, T0, "a")
    grant(s, T0, "b")
    start(s, "a", T0)
    start(s, "b", T0)
    first, _ = pause_until_for(s, v, now=T0, permit_epoch=0)
    finish(s, "a", T0, throttled(first, "unknown", "fallback"))
    later, _ = pause_until_for(s, v, now=T0 + 3, permit_epoch=0)
    assert later == first + 3  # same step (60 s), same jitter; not 120 s
    assert finish(s, "b", T0 + 3, throttled(later, "unknown", "fallback")) == "extended"
    assert (s.streak, s.epoch, s.until) == (1, 1, later)


def test_stale_success_never_closes_a_pause() -> None:
    s = fresh()
    grant(s, T0, "old")
    start(s, "old", T0)
    pause(s, T0, T0 + 60)
    assert finish(s, "old", T0 + 61, OK) == "none"
    assert s.phase == "paused"


def test_stale_authoritative_throttle_after_the_window_pauses_again_without_escalating() -> None:
    s = fresh()
    grant(s, T0, "slow", deadline=600)
    start(s, "slow", T0)
    pause(s, T0, T0 + 60)
    probe_ok(s, T0 + 60)
    # the slow call comes back saying the allowance is spent until later
    assert finish(s, "slow", T0 + 61, throttled(T0 + 900, "primary", "reset")) == "paused"
    assert (s.phase, s.until, s.streak, s.epoch) == ("paused", T0 + 900, 1, 2)


def test_stale_fallback_throttle_after_the_window_is_ignored() -> None:
    s = fresh()
    grant(s, T0, "slow", deadline=600)
    start(s, "slow", T0)
    pause(s, T0, T0 + 60)
    probe_ok(s, T0 + 60)
    assert finish(s, "slow", T0 + 61, throttled(T0 + 130, "unknown", "fallback")) == "none"
    assert s.phase == "ramp"


def test_cohort_throttle_pauses_again() -> None:
    s = fresh()
    pause(s, T0, T0 + 60)
    probe_ok(s, T0 + 60)
    grant(s, T0 + 60, "c")
    start(s, "c", T0 + 60)
    assert finish(s, "c", T0 + 61, throttled(T0 + 200, "secondary", "retry-after")) == "paused"
    assert (s.phase, s.streak, s.cohort, s.cohort_admitted) == ("paused", 2, 0, [])


def test_spent_success_pauses_until_reset_without_escalating() -> None:
    s = fresh()
    grant(s, T0, "a")
    grant(s, T0, "b")
    start(s, "a", T0)
    assert finish(s, "a", T0, spent(T0 + 1200)) == "paused"
    assert (s.phase, s.until, s.streak, s.epoch, s.cls) == ("paused", T0 + 1200, 0, 1, "primary")
    assert not start(s, "b", T0)


def test_expired_probe_frees_the_probe() -> None:
    s = fresh()
    pause(s, T0, T0 + 60)
    grant(s, T0 + 60, "p", deadline=30)
    start(s, "p", T0 + 60)
    assert acquire(s, T0 + 89, "q", T0 + 150) == Deferred(T0 + 89 + POLL, "probe")
    assert acquire(s, T0 + 89.9, "q", T0 + 150) == Deferred(T0 + 90, "probe")  # never past the deadline
    assert grant(s, T0 + 90, "q").kind == "probe"
    assert finish(s, "p", T0 + 91, OK) == "none"  # the dead probe's late answer is not the new one's


def test_expired_cohort_call_pauses_again() -> None:
    s = fresh()
    pause(s, T0, T0 + 60)
    probe_ok(s, T0 + 60)
    grant(s, T0 + 60, "c", deadline=10)
    start(s, "c", T0 + 60)
    streak = s.streak
    assert expire(s, T0 + 70) == ["c"]
    assert (s.phase, s.cls, s.how, s.streak) == ("paused", "unknown", "fallback", streak + 1)
    assert s.until == T0 + 70 + rules.fallback_delay(streak) + rules.jitter(POOL, s.epoch)


def test_expired_normal_permit_is_just_dropped() -> None:
    s = fresh()
    grant(s, T0, "a", deadline=5)
    assert expire(s, T0 + 4) == []
    assert expire(s, T0 + 5) == ["a"]
    assert s.phase == "open" and not start(s, "a", T0 + 5)
    # its throttle still counts when it does come back, given its epoch
    assert finish(s, "a", T0 + 6, throttled(T0 + 100, "primary", "reset"), epoch=0) == "paused"


def test_all_unsent_cohort_starts_over() -> None:
    s = fresh()
    pause(s, T0, T0 + 60)
    probe_ok(s, T0 + 60)
    grant(s, T0 + 60, "c")
    finish(s, "c", T0 + 60, NOT_ATTEMPTED)
    assert (s.cohort, s.cohort_admitted) == (0, [])
    assert grant(s, T0 + 60, "d").kind == "cohort"


def test_adopt() -> None:
    s = fresh()
    assert not adopt(s, T0 - 1, "primary", T0)
    assert adopt(s, T0 + 300, "primary", T0, source="host-b")
    assert (s.phase, s.until, s.epoch, s.source, s.how, s.streak) == ("paused", T0 + 300, 1, "host-b", "remote", 0)
    assert not adopt(s, T0 + 200, "primary", T0)  # ends sooner than ours
    assert adopt(s, T0 + 400, "secondary", T0)
    assert (s.until, s.epoch) == (T0 + 400, 2)


def test_adopt_fences_permits() -> None:
    s = fresh()
    grant(s, T0, "a")
    adopt(s, T0 + 60, "primary", T0)
    assert not start(s, "a", T0)


def test_started_permit_start_again_is_idempotent_and_unknown_is_fenced() -> None:
    s = fresh()
    grant(s, T0, "a")
    assert start(s, "a", T0) and start(s, "a", T0)
    assert not start(s, "nope", T0)


def test_duplicate_permit_id_is_a_programming_error() -> None:
    s = fresh()
    grant(s, T0, "a")
    with pytest.raises(ValueError):
        acquire(s, T0, "a", T0 + 1)


def test_state_round_trips_through_json() -> None:
    s = fresh()
    grant(s, T0, "old")
    start(s, "old", T0)
    pause(s, T0, T0 + 60)
    probe_ok(s, T0 + 60)
    grant(s, T0 + 60, "c")
    data = json.loads(json.dumps(s.to_dict()))
    assert GateState.from_dict(data) == s


@pytest.mark.parametrize(
    "data",
    [None, [], {}, {"epoch": "x", "phase": "open", "until": 0}, {"epoch": 1, "phase": "shut", "until": 0},
     {"epoch": 1, "phase": "open", "until": 0, "permits": {"a": [1, "weird", False, 1.0, None]}},
     {"epoch": 1, "phase": "ramp", "until": 0, "cohort": 9}],
)
def test_malformed_state_is_refused(data: object) -> None:
    with pytest.raises(ValueError):
        GateState.from_dict(data)


# --- every interleaving ------------------------------------------------------------------


class GateMachine(RuleBasedStateMachine):
    """Many callers against one gate, in any order hypothesis likes."""

    @initialize(ramp_at=st.sampled_from([None, None, 1, 2, 3]))
    def setup(self, ramp_at: int | None) -> None:
        """Start open, or (through the same operations) part-way up the ramp, where bugs hide deepest."""
        self.state = fresh()
        self.now = T0
        self.serial = 0
        # what each caller holds: id -> [epoch at grant, kind, started]
        self.held: dict[str, list] = {}
        self.probe_epochs: set[int] = set()
        self.cohort_grants: dict[int, int] = {}
        if ramp_at is not None:
            pause(self.state, T0, T0 + 60)
            self.now = T0 + 60
            probe_ok(self.state, self.now)
            self.probe_epochs.add(self.state.epoch)
            for size in COHORT_SIZES[:ramp_at]:
                for i in range(size):
                    grant(self.state, self.now, f"ramp{size}-{i}")
                for i in range(size):
                    finish(self.state, f"ramp{size}-{i}", self.now, OK)
            assert (self.state.phase, self.state.cohort) == ("ramp", ramp_at)

    # -- callers

    @rule(deadline=st.sampled_from([0.5, 3.0, 600.0]))
    def acquire(self, deadline: float) -> None:
        self.serial += 1
        pid = f"p{self.serial}"
        s = self.state
        d = acquire(s, self.now, pid, self.now + deadline)
        if isinstance(d, Deferred):
            assert d.until >= self.now or d.reason != "paused"
            return
        assert d.epoch == s.epoch
        if d.kind == "probe":
            assert d.epoch not in self.probe_epochs, "two probes in one epoch"
            self.probe_epochs.add(d.epoch)
        if d.kind == "cohort":
            n = self.cohort_grants.get(s.cohort_serial, 0) + 1
            assert n <= s.cohort_size, "cohort admitted more than its size"
            self.cohort_grants[s.cohort_serial] = n
        self.held[pid] = [d.epoch, d.kind, False]

    @rule()
    def acquire_and_start(self) -> None:
        """The usual caller: a permit, then straight to the wire."""
        self.acquire(deadline=600.0)
        pid = f"p{self.serial}"
        if pid in self.held:
            self.start_one(pid)

    @precondition(lambda self: any(not h[2] for h in self.held.values()))
    @rule(data=st.data())
    def start(self, data: st.DataObject) -> None:
        self.start_one(data.draw(st.sampled_from(sorted(p for p, h in self.held.items() if not h[2]))))

    def start_one(self, pid: str) -> None:
        if start(self.state, pid, self.now):
            assert self.held[pid][0] == self.state.epoch, "a permit of an older epoch started"
            self.held[pid][2] = True
        else:
            del self.held[pid]  # fenced: the caller does not send and forgets it

    @precondition(lambda self: any(h[2] for h in self.held.values()))
    @rule(
        data=st.data(),
        kind=st.sampled_from(["ok", "ok", "throttle", "spent", "failure", "not_attempted"]),
        how=st.sampled_from(["retry-after", "reset", "fallback"]),
        delay=st.sampled_from([0.0, 5.0, 60.0]),
    )
    def finish(self, data: st.DataObject, kind: str, how: str, delay: float) -> None:
        pid = data.draw(st.sampled_from(sorted(p for p, h in self.held.items() if h[2])))
        epoch = self.held.pop(pid)[0]
        until = self.now + delay
        outcome = {
            "ok": OK,
            "failure": FAILURE,
            "not_attempted": NOT_ATTEMPTED,
            "throttle": throttled(until, "primary", how),
            "spent": spent(until, how),
        }[kind]
        before = self.state.epoch
        finish(self.state, pid, self.now, outcome, epoch=epoch)
        if kind == "throttle" and epoch == before:
            assert self.state.phase == "paused" and self.state.epoch == before + 1

    @rule()
    def expire(self) -> None:
        expire(self.state, self.now)

    @rule(dt=st.sampled_from([0.1, 0.5, 1.0, 3.0, 30.0, 61.0, 1000.0]))
    def advance(self, dt: float) -> None:
        self.now += dt

    @rule()
    def jump_to_pause_end(self) -> None:
        self.now = max(self.now, self.state.until)

    @precondition(lambda self: self.state.phase == "paused")
    @rule()
    def probe_succeeds(self) -> None:
        """One caller waits the pause out and its probe succeeds (reaches the ramp often)."""
        self.jump_to_pause_end()
        self.acquire(deadline=600.0)
        pid = f"p{self.serial}"
        if pid in self.held:
            assert self.held[pid][1] == "probe"
            assert start(self.state, pid, self.now)
            del self.held[pid]
            finish(self.state, pid, self.now, OK)
            assert self.state.phase == "ramp"

    @precondition(lambda self: any(h[2] for h in self.held.values()))
    @rule(data=st.data())
    def finish_ok(self, data: st.DataObject) -> None:
        pid = data.draw(st.sampled_from(sorted(p for p, h in self.held.items() if h[2])))
        finish(self.state, pid, self.now, OK, epoch=self.held.pop(pid)[0])

    @rule(ahead=st.sampled_from([-1.0, 10.0, 100.0]))
    def adopt(self, ahead: float) -> None:
        adopt(self.state, self.now + ahead, "primary", self.now, source="host-b")

    # -- invariants

    @invariant()
    def cohort_bounded(self) -> None:
        s = self.state
        assert len(s.cohort_admitted) <= s.cohort_size
        if s.phase == "ramp":
            in_flight = [p for p in s.permits.values() if p.epoch == s.epoch]
            assert len(in_flight) <= s.cohort_size, "ramp concurrency above the cohort size"
            assert all(p.kind == "cohort" for p in in_flight)
            started = [pid for pid, h in self.held.items() if h[2] and h[0] == s.epoch and pid in s.permits]
            assert len(started) <= s.cohort_size

    @invariant()
    def probe_consistent(self) -> None:
        s = self.state
        if s.phase == "probing":
            assert s.probe in s.permits and s.permits[s.probe].kind == "probe"
            assert [p for p in s.permits.values() if p.epoch == s.epoch] == [s.permits[s.probe]]
        else:
            assert s.probe is None
        if s.phase == "paused":
            assert all(p.epoch < s.epoch for p in s.permits.values())

    @invariant()
    def epochs_never_ahead(self) -> None:
        assert all(p.epoch <= self.state.epoch for p in self.state.permits.values())
        assert 0 <= self.state.streak

    @invariant()
    def round_trips(self) -> None:
        assert GateState.from_dict(json.loads(json.dumps(self.state.to_dict()))) == self.state

    @invariant()
    def never_wedges(self) -> None:
        s = copy.deepcopy(self.state)
        t = max([self.now, s.until, *(p.deadline for p in s.permits.values())]) + 1
        expire(s, t)
        assert s.permits == {}
        t = max(t, s.until) + 1
        assert isinstance(acquire(s, t, "wedge-check", t + 60), Grant), (s.phase, s.until, t)


GateMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestGateMachine = GateMachine.TestCase
