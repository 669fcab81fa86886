"""How the host watch's GraphQL query pages through a base: a pure decision (issue 32).

``_gather`` adds one page's part to what the earlier pages said and names the
next page to ask, if any: a walked base follows its cursor to the end; a
recent listing follows while the page is newer than the last tick's mark,
then merges with the kept list, and walks after all when the count disagrees.
"""

from __future__ import annotations

from git_sluice.intake import watch as w
from git_sluice.intake.hostwatch import _gather, _Gathered
from git_sluice.intake.request import Request

MARK = "2027-01-01T00:00:00Z"
NEWER, OLDER = "2027-01-02T00:00:00Z", "2026-12-31T00:00:00Z"


def pr(number: int, updated_at: str = NEWER) -> Request:
    return Request(number, f"t{number}", "a", f"h{number}", f"{number:040x}", "main", False, updated_at)


def test_an_error_is_kept_and_nothing_more_is_asked() -> None:
    acc = _Gathered()
    assert _gather(acc, w.Target("o/r", "main"), w.TargetAnswer(error="boom"), MARK, {}) is None
    assert acc.error == "boom" and acc.final is None


def test_heads_riding_alone_give_their_rollups_and_no_list() -> None:
    acc = _Gathered()
    target = w.Target("o/r", "", heads=("a" * 40,), lists=False)
    assert _gather(acc, target, w.TargetAnswer(rollups={"a" * 40: "SUCCESS"}, total=3), MARK, {}) is None
    assert acc.rollups == {"a" * 40: "SUCCESS"} and acc.total is None and acc.final is None


def test_a_walk_follows_its_cursor_to_the_end_then_is_the_list() -> None:
    acc = _Gathered()
    first = _gather(acc, w.Target("o/r", "main", walk=True), w.TargetAnswer(items=[pr(1)], next_cursor="c1",
                                                                            total=2), "", {})
    assert first == w.Target("o/r", "main", "c1", walk=True) and acc.final is None
    assert _gather(acc, first, w.TargetAnswer(items=[pr(2)]), "", {}) is None
    assert acc.final is not None and sorted(acc.final) == [1, 2]
    assert [r.number for r in acc.listed] == [1, 2] and acc.total == 2


def test_a_recent_page_newer_than_the_mark_asks_the_next() -> None:
    acc = _Gathered()
    after = _gather(acc, w.Target("o/r", "main"), w.TargetAnswer(items=[pr(5)], next_cursor="c1", total=5),
                    MARK, {1: {}, 2: {}, 3: {}, 4: {}})
    assert after == w.Target("o/r", "main", "c1") and acc.final is None


def test_a_recent_page_reaching_the_mark_merges_with_the_kept_list() -> None:
    acc = _Gathered()
    kept = {1: {"number": 1}, 2: {"number": 2}, 3: {"number": 3}}
    answer = w.TargetAnswer(items=[pr(4), pr(1, OLDER)], next_cursor="c1", total=3, gone={2: NEWER})
    assert _gather(acc, w.Target("o/r", "main"), answer, MARK, kept) is None
    assert acc.final is not None and sorted(acc.final) == [1, 3, 4]
    assert acc.final[3] == {"number": 3}  # unmoved: the stored item as kept


def test_a_count_that_disagrees_walks_the_whole_list() -> None:
    acc = _Gathered()
    kept = {1: {"number": 1}, 2: {"number": 2}}  # one left the base unseen: GitHub counts one
    answer = w.TargetAnswer(items=[pr(1, OLDER)], total=1)
    assert _gather(acc, w.Target("o/r", "main"), answer, MARK, kept) == w.Target("o/r", "main", walk=True)
    assert acc.final is None
