"""Readings: what a round asks about each open request (pure decisions)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_sluice.intake.queue import Entry
from git_sluice.intake.request import Request
from git_sluice.intake.readings import (
    ReadingPlan,
    draft_entry,
    list_item,
    needs_recheck,
    plan_readings,
)

NOW = 1_800_000_000.0
EARLIER = NOW - 600


def item(number: int, *, sha: str | None = None, updated: str = "2026-11-29T18:00:00Z", draft: bool = False,
         title: str | None = None, labels: tuple[str, ...] = ("bug",)) -> dict[str, Any]:
    """A list item as GET /repos/{o}/{r}/pulls returns it (the fields git-sluice reads, and some it ignores)."""
    return {
        "url": f"https://api.github.com/repos/o/r/pulls/{number}",
        "id": 1000 + number,
        "number": number,
        "state": "open",
        "title": title or f"Request {number}",
        "user": {"login": "mona", "id": 1, "type": "User"},
        "labels": [{"id": i, "name": name, "color": "fff"} for i, name in enumerate(labels)],
        "draft": draft,
        "head": {"ref": f"topic/{number}", "sha": sha or f"{number:040x}", "repo": {"full_name": "o/r"}},
        "base": {"ref": "main", "sha": "b" * 40},
        "updated_at": updated,
        "created_at": "2026-11-01T00:00:00Z",
    }


def entry(number: int, **over: Any) -> Entry:
    values: dict[str, Any] = dict(
        number=number, title=f"Request {number}", author="mona", head_ref=f"topic/{number}",
        head_sha=f"{number:040x}", base="main", draft=False, updated_at="2026-11-29T18:00:00Z",
        review_decision="APPROVED", checks_state="SUCCESS", failing=(), mergeable="MERGEABLE",
        labels=("bug",), state="ready", taken_in_at=EARLIER, read_at=EARLIER,
    )
    values.update(over)
    return Entry(**values)


def plan(items: list[dict[str, Any]], previous: list[Entry], *, discovery: bool = True, **kw: Any) -> ReadingPlan:
    return plan_readings(items, {e.number: e for e in previous}, discovery=discovery, now=NOW, **kw)


def partition(p: ReadingPlan) -> list[int]:
    return sorted([*p.to_read, *p.to_check, *p.drafts, *p.unchanged])


# ------------------------------------------------------------------ list items


def test_list_item_reads_githubs_shape() -> None:
    parsed = list_item(item(7, labels=("bug", "ui", "bug")))
    assert parsed == Request(
        number=7, title="Request 7", author="mona", head_ref="topic/7", head_sha=f"{7:040x}", base="main",
        draft=False, updated_at="2026-11-29T18:00:00Z", labels=("bug", "ui"),
    )


def test_list_item_tolerates_missing_parts() -> None:
    assert list_item({"title": "no number"}) is None
    assert list_item({"number": True}) is None
    sparse = list_item({"number": 3, "user": None, "head": None, "labels": None})
    assert sparse is not None and sparse.author is None and sparse.head_sha == "" and sparse.labels == ()


# --------------------------------------------------------------- the decisions


def test_first_round_reads_every_open_non_draft() -> None:
    p = plan([item(1), item(2), item(3, draft=True)], [])
    assert p.to_read == [1, 2]
    assert p.reasons == {1: "new", 2: "new"}
    assert list(p.drafts) == [3]
    assert p.left == [] and p.unchanged == [] and p.to_check == []
    assert p.open_count == 3


def test_nothing_moved_reads_nothing() -> None:
    p = plan([item(1), item(2)], [entry(1), entry(2)])
    assert p.to_read == [] and p.to_check == [] and p.unchanged == [1, 2]
    assert p.query_numbers() == []


def test_head_moved() -> None:
    p = plan([item(1, sha="c" * 40), item(2)], [entry(1), entry(2)])
    assert p.to_read == [1] and p.reasons[1] == "head moved"
    assert p.unchanged == [2]


def test_updated_at_moved() -> None:
    # a review, a label, a title: GitHub moves updated_at
    p = plan([item(1, updated="2026-11-29T18:09:00Z")], [entry(1)])
    assert p.to_read == [1] and p.reasons[1] == "updated"


def test_a_draft_is_never_read() -> None:
    p = plan([item(5, draft=True, sha="d" * 40, updated="2026-11-29T19:00:00Z")], [entry(5, draft=True, state="draft")])
    assert p.to_read == [] and p.query_numbers([5]) == []
    built = p.drafts[5]
    assert (built.state, built.draft, built.head_sha, built.review_decision, built.checks_state, built.mergeable) == (
        "draft", True, "d" * 40, None, None, None,
    )
    assert (built.taken_in_at, built.read_at) == (EARLIER, NOW)


def test_ready_request_turned_draft() -> None:
    p = plan([item(5, draft=True, updated="2026-11-29T19:00:00Z")], [entry(5)])
    assert p.to_read == [] and p.drafts[5].state == "draft"


def test_out_of_draft_is_read() -> None:
    p = plan([item(5)], [entry(5, draft=True, state="draft", review_decision=None, checks_state=None, mergeable=None)])
    assert p.to_read == [5] and p.reasons[5] == "out of draft"


def test_unchanged_draft_keeps_its_entry() -> None:
    previous = draft_entry(list_item(item(5, draft=True)), None, EARLIER)  # type: ignore[arg-type]
    p = plan([item(5, draft=True)], [previous])
    assert p.drafts[5] is previous


def test_draft_entry_rebuilt_when_its_list_fields_move() -> None:
    previous = draft_entry(list_item(item(5, draft=True)), None, EARLIER)  # type: ignore[arg-type]
    moved = draft_entry(list_item(item(5, draft=True, title="New title")), previous, NOW)  # type: ignore[arg-type]
    assert moved is not previous and moved.title == "New title"
    assert (moved.taken_in_at, moved.read_at) == (EARLIER, NOW)


def test_closed_or_merged_requests_leave() -> None:
    p = plan([item(2)], [entry(1), entry(2), entry(3, draft=True, state="draft")])
    assert p.left == [1, 3]
    assert p.unchanged == [2]


def test_waiting_on_checks_is_checked_at_discovery_only() -> None:
    waiting = [
        entry(1, checks_state="PENDING", state="waiting"),
        entry(2, checks_state=None, state="waiting"),  # CI not started yet
        entry(3, checks_state="EXPECTED", state="waiting"),
    ]
    items = [item(1), item(2), item(3)]
    at_discovery = plan(items, waiting, discovery=True)
    assert at_discovery.to_check == [1, 2, 3] and at_discovery.to_read == []
    assert at_discovery.reasons[2] == "checks may still change"
    # only the requests whose checks answered 200 join the query
    assert at_discovery.query_numbers(checked=[3, 99]) == [3]
    local_movement = plan(items, waiting, discovery=False)
    assert local_movement.to_check == [] and local_movement.unchanged == [1, 2, 3]


def test_waiting_on_review_alone_is_not_rechecked() -> None:
    # a new review moves updated_at; checks already passed
    p = plan([item(1)], [entry(1, review_decision="REVIEW_REQUIRED", state="waiting")])
    assert p.to_check == [] and p.unchanged == [1]


def test_settled_entries_are_not_rechecked_but_unsettled_checks_are_even_when_blocked() -> None:
    p = plan(
        [item(1), item(2), item(3)],
        [
            entry(1, checks_state="PENDING", review_decision="CHANGES_REQUESTED", state="blocked"),
            entry(2),
            entry(3, checks_state="SUCCESS", review_decision="CHANGES_REQUESTED", state="blocked"),
        ],
    )
    assert p.to_check == [1] and p.unchanged == [2, 3]


def test_a_moved_waiting_request_is_read_not_checked() -> None:
    p = plan([item(1, sha="e" * 40)], [entry(1, checks_state="PENDING", state="waiting")])
    assert p.to_read == [1] and p.to_check == []


def test_unknown_mergeability_is_read_again_at_discovery() -> None:
    previous = [entry(1, mergeable="UNKNOWN", state="waiting"), entry(2, mergeable=None, state="waiting")]
    p = plan([item(1), item(2)], previous, discovery=True)
    assert p.to_read == [1, 2] and p.reasons[1] == "mergeability unknown"
    assert plan([item(1), item(2)], previous, discovery=False).to_read == []


def test_base_moved_rereads_every_non_draft() -> None:
    p = plan([item(1), item(2), item(3, draft=True)], [entry(1), entry(2)], base_moved=True)
    assert p.to_read == [1, 2] and p.reasons[1] == "base moved"
    assert list(p.drafts) == [3]


def test_list_items_may_be_parsed_already() -> None:
    parsed = [list_item(item(1))]
    p = plan_readings(parsed, {}, discovery=False, now=NOW)  # type: ignore[arg-type]
    assert p.to_read == [1] and p.items[1].head_ref == "topic/1"


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({"checks_state": "PENDING", "state": "waiting"}, True),
        ({"checks_state": "EXPECTED", "state": "waiting"}, True),
        ({"checks_state": None, "state": "waiting"}, True),
        ({"checks_state": "SUCCESS", "state": "waiting", "review_decision": "REVIEW_REQUIRED"}, False),
        ({"checks_state": "SUCCESS", "state": "ready"}, False),
        ({"checks_state": None, "state": "ready"}, False),
        ({"checks_state": "FAILURE", "state": "blocked"}, True),  # a re-run may turn it green
        ({"checks_state": "ERROR", "state": "blocked"}, True),
        ({"checks_state": "PENDING", "state": "blocked"}, True),
        ({"checks_state": None, "state": "blocked", "mergeable": "CONFLICTING"}, False),
        ({"checks_state": None, "state": "draft", "draft": True}, False),
    ],
)
def test_needs_recheck(over: dict[str, Any], expected: bool) -> None:
    assert needs_recheck(entry(1, **over)) is expected


# --------------------------------------------------------------- the partition

STATES = st.sampled_from(["draft", "waiting", "blocked", "ready"])
CHECKS = st.sampled_from([None, "SUCCESS", "FAILURE", "PENDING", "EXPECTED", "ERROR"])


@st.composite
def rounds(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[Entry], bool]:
    open_numbers = draw(st.sets(st.integers(1, 40), max_size=25))
    queued_numbers = draw(st.sets(st.integers(1, 40), max_size=25))
    items = [
        item(n, sha=draw(st.sampled_from([None, "f" * 40])), draft=draw(st.booleans()),
             updated=draw(st.sampled_from(["2026-11-29T18:00:00Z", "2026-11-29T18:30:00Z"])))
        for n in sorted(open_numbers)
    ]
    previous = []
    for n in sorted(queued_numbers):
        state = draw(STATES)
        previous.append(entry(n, state=state, draft=state == "draft", checks_state=draw(CHECKS),
                              mergeable=draw(st.sampled_from(["MERGEABLE", "UNKNOWN", "CONFLICTING"]))))
    return items, previous, draw(st.booleans())


@settings(max_examples=150, deadline=None)
@given(rounds())
def test_every_open_request_has_exactly_one_fate(case: tuple[list[dict[str, Any]], list[Entry], bool]) -> None:
    items, previous, discovery = case
    p = plan(items, previous, discovery=discovery)
    open_numbers = sorted(i["number"] for i in items)
    assert partition(p) == open_numbers  # each exactly once
    drafts = {i["number"] for i in items if i["draft"]}
    assert set(p.drafts) == drafts
    assert not drafts & set(p.query_numbers(p.to_check))
    assert set(p.left) == {e.number for e in previous} - set(open_numbers)
    if not discovery:
        assert p.to_check == []
    queued = {e.number for e in previous}
    assert {n for n in open_numbers if n not in queued and n not in drafts} <= set(p.to_read)
