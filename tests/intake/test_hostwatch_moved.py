"""Which requests of a base the host watch reads in a tick: a pure decision (issue 32)."""

from __future__ import annotations

from git_sluice.intake.hostwatch import _moved_numbers

A, B, C = "a" * 40, "b" * 40, "c" * 40


def test_an_incremental_listing_reads_what_it_says_moved_and_heads_whose_checks_moved_never_drafts() -> None:
    part = {"moved": [1, 2], "items": [
        {"number": 1, "head_sha": A}, {"number": 2, "head_sha": B, "draft": True}, {"number": 3, "head_sha": C},
        {"number": 4, "head_sha": "d" * 40}, "garbage", {"number": "5", "head_sha": C},
    ]}
    assert _moved_numbers(part, {}, {}) == [1]
    assert _moved_numbers(part, {}, {C: "FAILURE"}) == [1, 3]
    # a rollup that passed settles the state alone only where the state's inputs are known: not here
    assert _moved_numbers(part, {}, {C: "SUCCESS"}) == [1, 3]


def test_without_a_listing_of_what_moved_it_compares_with_the_last_ticks_list() -> None:
    old = {"items": [{"number": 1, "head_sha": A, "updated_at": "2027-01-01T00:00:00Z", "title": "t",
                      "base": "main", "draft": False}]}
    same = {"items": [dict(old["items"][0])]}
    assert _moved_numbers(same, old, {}) == []
    assert _moved_numbers(same, old, {A: "FAILURE"}) == [1]
    pushed = {"items": [dict(old["items"][0], head_sha=B)]}
    assert _moved_numbers(pushed, old, {}) == [1]
