"""The host's pace for writes (forge/pacing.py): whatever arrives when, the slots given keep GitHub's
rules and the pool's admission, go in order, and never go early."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from git_sluice.forge.pacing import (
    Admission,
    WriteRules,
    Written,
    creates_content,
    is_mutation,
    is_write,
    next_slot,
)

arrivals = st.lists(st.tuples(st.floats(min_value=0, max_value=30, allow_nan=False), st.booleans()),
                    min_size=1, max_size=120)


def give(steps: list[tuple[float, bool]], rules: WriteRules) -> list[tuple[float, Written]]:
    """Each write arrives ``delay`` after the one before, and takes the slot it is given."""
    now, history, out = 0.0, [], []
    for delay, creating in steps:
        now += delay
        slot = next_slot(history, now, creating, rules)
        written = Written(slot, creating)
        history.append(written)
        out.append((now, written))
    return out


def most_in_any(times: list[float], span: float) -> int:
    times = sorted(times)
    return max((sum(1 for u in times if t <= u < t + span) for t in times), default=0)


@settings(max_examples=200, deadline=None)
@given(arrivals, st.sampled_from([None, Admission(300, 30), Admission(60, 2), Admission(3600, 100)]))
def test_every_slot_keeps_every_rule(steps: list[tuple[float, bool]], admission: Admission | None) -> None:
    rules = WriteRules(per_minute=8, per_hour=50, admission=admission)  # GitHub's shape, small enough to reach
    given_ = give(steps, rules)
    slots = [w.at for _, w in given_]
    assert all(w.at >= arrived for arrived, w in given_)  # never early
    assert slots == sorted(slots)  # in order
    assert all(b - a >= rules.min_gap - 1e-9 for a, b in zip(slots, slots[1:]))
    creators = [w.at for _, w in given_ if w.creating]
    assert most_in_any(creators, 60.0) <= rules.per_minute
    assert most_in_any(creators, 3600.0) <= rules.per_hour
    if admission is not None:
        assert most_in_any(creators, admission.span) <= admission.burst


def test_a_burst_goes_at_githubs_pace_and_the_one_past_it_waits_for_the_span() -> None:
    rules = WriteRules(admission=Admission(300, 30))  # ClawSweeper's: 300 an hour, burst 30
    slots = [w.at for _, w in give([(0.0, True)] * 31, rules)]
    assert slots[:30] == [float(i) for i in range(30)]  # one a second
    assert slots[30] == 361.0  # 30 in 6 minutes: the 31st waits for the first to leave the span (and a second)


def test_edits_pace_by_the_gap_only() -> None:
    rules = WriteRules(per_minute=1)
    slots = [w.at for _, w in give([(0.0, False)] * 5, rules)]
    assert slots == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_what_is_a_write_and_what_creates_content() -> None:
    assert is_write("post") and is_write("DELETE") and not is_write("GET") and not is_write("HEAD")
    assert creates_content("POST", "/repos/o/r/issues/1/comments")
    assert creates_content("PUT", "/repos/o/r/pulls/1/merge") and not creates_content("PATCH", "/repos/o/r/issues/1")
    assert not is_mutation("query { viewer { login } }") and not is_mutation("{ viewer { login } }")
    assert is_mutation("mutation { addStar(input: {starrableId: \"x\"}) { clientMutationId } }")
    assert not is_mutation("query A { a } mutation B { b }", "A") and is_mutation("query A { a } mutation B { b }", "B")
    assert is_mutation("query A { a } mutation B { b }")  # two operations, none named: the safe side
    assert is_mutation("not graphql {") and is_mutation(None) and is_mutation("[" * 10_000)


def test_a_write_goes_a_gap_after_the_answer_before_it_and_never_beside_one_in_flight() -> None:
    from git_sluice.forge.pacing import IN_FLIGHT_LIMIT, clear_from

    rules = WriteRules()
    assert clear_from([], 10.0, rules) == 10.0
    assert clear_from([Written(5.0, True, ended=9.5)], 10.0, rules) == 10.5  # a slow answer moves the gap
    assert clear_from([Written(9.0, True)], 10.0, rules) is None  # still in flight: wait for it
    assert clear_from([Written(10.0 - IN_FLIGHT_LIMIT, True)], 10.0, rules) == 10.0  # a writer that died


def test_the_hosts_processes_share_one_pace(tmp_path) -> None:
    """Two processes' stores on one file: their writes take turns a second apart; a deferred write keeps
    no slot, so it costs the writes after it nothing."""
    from git_sluice.clock import FakeClock
    from git_sluice.forge.hoststore import HostStore

    clock = FakeClock(1000.0)
    path = tmp_path / "host.sqlite3"
    a, b = HostStore(path, clock=clock), HostStore(path, clock=clock)
    rules = WriteRules(admission=Admission(3600, 3))  # 3 content-creating writes in any 3 s
    try:
        slots = [s.reserve_write("p", creating=True, rules=rules, patience=60).at for s in (a, b, a)]
        assert slots == [1000.0, 1001.0, 1002.0]
        refused = b.reserve_write("p", creating=True, rules=rules, patience=0.5)
        assert not refused.granted and refused.at == 1004.0  # the span and a second past it
        edit = a.reserve_write("p", creating=False, rules=rules, patience=60)
        assert edit.granted and edit.at == 1003.0  # the refused one kept no slot
        assert a.reserve_write("q", creating=True, rules=rules, patience=0).at == 1000.0  # another pool
        assert b.counters()[("p", "writes")] == {"written": 1, "paced": 3, "deferred": 1}
    finally:
        a.close()
        b.close()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=0, max_value=5, allow_nan=False),
                          st.floats(min_value=0, max_value=3, allow_nan=False), st.booleans()),
                min_size=1, max_size=60))
def test_what_actually_goes_keeps_the_rules_however_late_answers_come(steps) -> None:
    """Each write is slotted, then goes when clear_from says (after the earlier ones answered, and past
    every window counted on when they actually went), then takes ``took`` seconds to answer."""
    from git_sluice.forge.pacing import clear_from

    rules = WriteRules(per_minute=6, per_hour=40, admission=Admission(600, 4))
    now, rows = 0.0, []
    for delay, took, creating in steps:
        now += delay
        slot = next_slot(rows, now, creating, rules)
        went = clear_from(rows, slot, rules, creating)
        assert went is not None  # every earlier write has answered by now (one at a time, in order)
        rows.append(Written(slot, creating, sent=went, ended=went + took))
    sent = [w.sent for w in rows]
    assert all(b - a.ended >= rules.min_gap - 1e-9 for a, b in zip(rows, sent[1:]))  # a second after each answer
    creators = [w.sent for w in rows if w.creating]
    assert most_in_any(creators, 60.0) <= rules.per_minute
    assert most_in_any(creators, 3600.0) <= rules.per_hour
    assert most_in_any(creators, rules.admission.span) <= rules.admission.burst
