"""A wait following its request on the host watch's answers: what each tick asks of it (pure)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from git_sluice.intake import follow as fl
from git_sluice.intake.request import Request

ITEM = Request(number=7, title="t", author="a", head_ref="h", head_sha="abc1234", base="main", draft=False,
               updated_at="2026-01-01T00:00:00Z")


def test_first_sight_reads_then_a_still_tick_asks_nothing() -> None:
    seen = fl.Seen()
    assert fl.step(seen, epoch="e", tick=1, item=ITEM, checks_moved=False) == "read"
    seen = fl.after(seen, "read", epoch="e", tick=1, item=ITEM, read=True)
    assert fl.step(seen, epoch="e", tick=1, item=ITEM, checks_moved=False) == "same"
    assert fl.step(seen, epoch="e", tick=2, item=ITEM, checks_moved=False) == "still"
    seen = fl.after(seen, "still", epoch="e", tick=2, item=ITEM, read=False)
    assert seen.tick == 2 and seen.snapshot == fl.snapshot_of(ITEM)


def test_a_move_of_head_update_or_checks_reads_again() -> None:
    seen = fl.after(fl.Seen(), "read", epoch="e", tick=1, item=ITEM, read=True)
    for moved in (replace(ITEM, head_sha="def5678"), replace(ITEM, updated_at="2026-01-02T00:00:00Z")):
        assert fl.step(seen, epoch="e", tick=2, item=moved, checks_moved=False) == "read"
    assert fl.step(seen, epoch="e", tick=2, item=ITEM, checks_moved=True) == "read"


def test_gone_from_the_list_and_draft_need_no_reading_and_a_failed_read_is_tried_again() -> None:
    seen = fl.after(fl.Seen(), "read", epoch="e", tick=1, item=ITEM, read=True)
    assert fl.step(seen, epoch="e", tick=2, item=None, checks_moved=False) == "gone"
    assert fl.step(seen, epoch="e", tick=2, item=replace(ITEM, draft=True), checks_moved=False) == "draft"
    drafted = fl.after(seen, "draft", epoch="e", tick=2, item=replace(ITEM, draft=True), read=False)
    assert fl.step(drafted, epoch="e", tick=3, item=ITEM, checks_moved=False) == "read"  # out of draft: read
    failed = fl.after(seen, "read", epoch="e", tick=2, item=replace(ITEM, head_sha="x" * 7), read=False)
    assert failed == seen  # the reading never came: the same tick asks it again
    assert fl.step(failed, epoch="e", tick=2, item=replace(ITEM, head_sha="x" * 7), checks_moved=False) == "read"


def test_new_answers_epoch_is_a_new_tick() -> None:
    seen = fl.after(fl.Seen(), "read", epoch="e", tick=9, item=ITEM, read=True)
    assert fl.step(seen, epoch="f", tick=1, item=ITEM, checks_moved=False) == "still"


@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()), max_size=30))
def test_a_tick_is_acted_on_at_most_once_and_a_move_is_never_missed(events) -> None:  # type: ignore[no-untyped-def]
    seen, tick, item = fl.Seen(), 0, ITEM
    for new_tick, moves, checks, reads in events:
        tick += int(new_tick)
        before = item
        if moves:
            item = replace(item, updated_at=f"{item.updated_at}+")
        what = fl.step(seen, epoch="e", tick=tick, item=item, checks_moved=checks)
        if seen.tick >= tick:
            assert what == "same"
        elif seen.snapshot is not None and (item != before or fl.snapshot_of(item) != seen.snapshot or checks):
            assert what == "read"
        seen = fl.after(seen, what, epoch="e", tick=tick, item=item, read=reads)
        if what == "read" and reads:
            assert seen.snapshot == fl.snapshot_of(item)


def test_a_standing_outcome_needs_the_same_request_a_quiet_repository_and_passed_checks() -> None:
    record = fl.outcome_record("ready", epoch="e", tick=5, item=ITEM, checks="SUCCESS")
    assert fl.outcome_record("waiting", epoch="e", tick=5, item=ITEM, checks=None) is None

    def standing(**over):  # type: ignore[no-untyped-def]
        args = {"epoch": "e", "item": ITEM, "active_tick": 3, "head_moved_after": None, **over}
        return fl.standing_outcome(over.pop("record", record), **{k: v for k, v in args.items() if k != "record"})

    assert standing() == "ready"
    assert standing(epoch="f") is None  # the answers were rebuilt: nothing is known of what happened
    assert standing(active_tick=6) is None  # the repository moved since (a push, a close, a review)
    assert standing(head_moved_after=7) is None  # its checks moved since
    assert standing(item=replace(ITEM, updated_at="later")) is None
    failed = fl.outcome_record("blocked", epoch="e", tick=5, item=ITEM, checks="FAILURE")
    assert standing(record=failed) is None  # a failed check may be re-run: it is read again
    conflict = fl.outcome_record("blocked", epoch="e", tick=5, item=ITEM, checks=None)
    assert standing(record=conflict) == "blocked"
    assert standing(record={"state": "ready", "epoch": "e", "tick": True}) is None  # garbage is no outcome
    assert standing(record="garbage") is None
