"""The host watch's pure decisions (intake/watch.py) and pace (intake/pace.py), without I/O."""

from __future__ import annotations

from typing import Any

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from git_sluice.double.graphql_api import price_only
from git_sluice.intake import pace as pacing
from git_sluice.intake import watch as w
from git_sluice.intake.graphql import query_cost
from tests.intake.test_graphql_query import assert_valid

# ------------------------------------------------------------------ the clock


@given(st.text(min_size=1, max_size=40), st.floats(min_value=10, max_value=3600))
def test_the_phase_is_stable_and_within_the_interval(host: str, interval: float) -> None:
    phase = w.phase_of(host, interval)
    assert 0 <= phase < interval
    assert w.phase_of(host, interval) == phase


def test_hosts_started_together_do_not_tick_in_the_same_second() -> None:
    phases = {round(w.phase_of(f"host-{i}", 60.0)) for i in range(24)}
    assert len(phases) >= 12  # spread over the minute, not all at once


@given(
    st.floats(min_value=1e9, max_value=2e9), st.floats(min_value=10, max_value=3600), st.floats(0, 1),
)
def test_the_next_tick_is_the_next_slot_of_the_host(now: float, interval: float, share: float) -> None:
    phase = share * interval * 0.999
    at = w.next_tick_at(now, interval, phase)
    assert now < at <= now + interval + 1e-6
    slots = (at - phase) / interval
    assert abs(slots - round(slots)) < 1e-6


def test_a_round_between_ticks_moves_no_tick() -> None:
    """The tick is a function of the clock and the host alone: what ran in between cannot move it."""
    phase = w.phase_of("h", 60)
    first = w.next_tick_at(1000.0, 60, phase)
    assert w.next_tick_at(1000.0 + 30, 60, phase) in (first, first + 60)
    assert w.next_tick_at(first - 0.5, 60, phase) == first


def test_due() -> None:
    assert w.due(None, 5.0)
    assert w.due(100.0, 99.0)  # within the slack
    assert not w.due(100.0, 90.0)
    assert w.due(1e12, 0.0)  # a next tick a day or more away is garbage: tick


# -------------------------------------------------------- a repository's mode


def test_churn_moves_to_graphql_and_a_still_fingerprint_brings_rest_back() -> None:
    mode = w.RepoMode()
    assert w.after_rest(mode, answered_200=False, moved=False).mode == "rest"
    assert w.after_rest(mode, answered_200=True, moved=True).mode == "rest"  # a real change
    churned = w.after_rest(mode, answered_200=True, moved=False)
    assert churned.mode == "graphql"
    fp = ("2027", 3)
    for _ in range(w.QUIET_TICKS + 1):  # the first sets the fingerprint, then QUIET_TICKS still ones
        assert churned.mode == "graphql"
        churned = w.after_graphql(churned, fp)
    assert churned.mode == "rest" and churned.rebasing
    # back on REST, the first 200 renews the ETag: it is not churn
    assert w.after_rest(churned, answered_200=True, moved=False).mode == "rest"


@given(st.lists(st.sampled_from([("a",), ("b",), None]), max_size=30))
def test_graphql_stays_until_quiet_ticks_in_a_row(fingerprints: list[Any]) -> None:
    mode = w.RepoMode(mode="graphql")
    run = 0
    last = None
    for fp in fingerprints:
        mode = w.after_graphql(mode, fp)
        run = run + 1 if fp is not None and fp == last else 0
        last = fp
        if mode.mode == "rest":
            assert run >= w.QUIET_TICKS
            break
        assert run < w.QUIET_TICKS


# ------------------------------------------------------------- waiting heads


@given(st.lists(st.booleans(), min_size=1, max_size=40), st.integers(min_value=10, max_value=600))
def test_a_failed_head_backs_off_doubling_to_15_minutes_and_a_move_asks_at_once(moves: list[bool], interval: int) -> None:
    rec = w.HeadRecord()
    now = 1e9
    for i, moved in enumerate(moves):
        before = rec
        rec = w.after_head(rec, state="FAILURE", moved=moved, tick=i + 1, now=now, interval=interval, updated_at="u")
        wait = rec.next_at - now if rec.next_at else 0.0
        assert wait <= w.FAILED_BACKOFF_MAX
        if moved or not before.seen:
            assert rec.streak == 0 and wait == 0
        else:
            assert rec.streak == before.streak + 1
            assert wait == min(w.FAILED_BACKOFF_MAX, interval * 2**rec.streak)
        now += max(wait, interval)
    assert w.head_due(rec, now=rec.next_at, updated_at="u")
    if rec.next_at:
        assert not w.head_due(rec, now=rec.next_at - 60, updated_at="u")
        assert w.head_due(rec, now=rec.next_at - 60, updated_at="moved")  # its request moved: at once


@given(
    st.lists(st.booleans(), min_size=1, max_size=30),
    st.integers(min_value=10, max_value=600),
    st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
)
def test_an_old_failure_starts_its_back_off_at_its_age(moves: list[bool], interval: int, age: float | None) -> None:
    """A first look waits the failure's age (bounded to [0, 15 min]: garbage ages — None, NaN, the
    future, infinity — included) and its doubling goes on from there; later looks double as before."""
    rec = w.HeadRecord()
    now = 1e9
    bounded = w.failure_age(age)
    assert 0.0 <= bounded <= w.FAILED_BACKOFF_MAX
    for i, moved in enumerate(moves):
        before = rec
        rec = w.after_head(rec, state="FAILURE", moved=moved, tick=i + 1, now=now, interval=interval,
                           updated_at="u", failed_for=age)
        wait = rec.next_at - now if rec.next_at else 0.0
        assert wait <= w.FAILED_BACKOFF_MAX
        if not before.seen:
            assert wait == (bounded if bounded >= interval else 0.0)
            assert interval * 2**rec.streak >= wait and (rec.streak == 0 or interval * 2 ** (rec.streak - 1) < wait)
        elif moved:
            assert rec.streak == 0 and wait == 0
        else:
            assert rec.streak == before.streak + 1
            assert wait == min(w.FAILED_BACKOFF_MAX, interval * 2**rec.streak)
        now += max(wait, interval)


def test_an_hour_old_failure_is_asked_every_15_minutes_from_the_first_look() -> None:
    rec = w.after_head(w.HeadRecord(), state="FAILURE", moved=True, tick=1, now=1e9, interval=60,
                       updated_at="u", failed_for=3600.0)
    assert rec.next_at == 1e9 + w.FAILED_BACKOFF_MAX
    assert not w.head_due(rec, now=1e9 + 600, updated_at="u")
    assert w.head_due(rec, now=1e9 + 600, updated_at="moved")  # its request moved: asked at once
    moved = w.after_head(rec, state="FAILURE", moved=False, tick=2, now=1e9 + 600, interval=60,
                         updated_at="moved", failed_for=4200.0)
    assert moved.streak == 0 and moved.next_at == 0.0  # … and its doubling starts again from a minute
    again = w.after_head(moved, state="FAILURE", moved=False, tick=3, now=1e9 + 660, interval=60,
                         updated_at="moved", failed_for=4260.0)
    assert again.next_at == 1e9 + 660 + 120
    # a failure seen as it happens starts at a minute, as before
    fresh = w.after_head(w.HeadRecord(), state="FAILURE", moved=True, tick=1, now=1e9, interval=60,
                         updated_at="u", failed_for=5.0)
    assert fresh.next_at == 0.0
    # passing checks are asked every tick, however old
    passed = w.after_head(w.HeadRecord(), state="SUCCESS", moved=True, tick=1, now=1e9, interval=60,
                          updated_at="u", failed_for=3600.0)
    assert passed.next_at == 0.0


def test_finished_at_reads_the_newest_completed_run_and_ignores_garbage() -> None:
    runs = {"check_runs": [
        {"status": "completed", "completed_at": "2026-12-01T10:00:00Z"},
        {"status": "completed", "completed_at": "2026-12-01T11:00:00Z"},
        {"status": "in_progress", "completed_at": None},
        {"completed_at": "not a time"}, {"completed_at": "2026-12-01T12:00:00"},  # no zone: skipped
        "garbage", {"completed_at": 17},
    ]}
    assert w.finished_at(runs) == 1796122800.0
    assert w.finished_at({"check_runs": []}) is None
    assert w.finished_at("garbage") is None and w.finished_at({"check_runs": "x"}) is None


def test_a_head_that_is_not_failed_is_asked_every_tick() -> None:
    rec = w.HeadRecord(seen=True, state="PENDING")
    rec = w.after_head(rec, state="PENDING", moved=False, tick=2, now=100.0, interval=60, updated_at="u")
    assert rec.next_at == 0 and w.head_due(rec, now=101.0, updated_at="u")


def test_rest_rollup_and_statuses() -> None:
    runs = {"check_runs": [{"status": "completed", "conclusion": "success"}]}
    assert w.rest_rollup(runs, None) == "SUCCESS"
    assert w.rest_rollup({"check_runs": [{"status": "in_progress"}]}, None) == "PENDING"
    assert w.rest_rollup({"check_runs": [{"status": "completed", "conclusion": "timed_out"}]}, None) == "FAILURE"
    assert w.rest_rollup({"check_runs": []}, {"total_count": 1, "state": "error"}) == "ERROR"
    assert w.rest_rollup({"check_runs": []}, {"total_count": 0, "state": "pending", "statuses": []}) is None
    assert w.rest_rollup("garbage", ["x"]) is None
    assert w.uses_statuses({"total_count": 2}) and not w.uses_statuses({"total_count": 0, "statuses": []})
    assert w.first_look_moved("PENDING", "SUCCESS") and not w.first_look_moved(None, None)


# ---------------------------------------------------------- the GraphQL query


@pytest.mark.slow(seconds=15)
@settings(deadline=None, max_examples=20)
@given(st.integers(min_value=1, max_value=20))
def test_the_watch_query_validates_against_githubs_schema(count: int) -> None:
    targets = [w.Target(f"org{i}/repo-{i}", "main", "Y3Vyc29yOjE=" if i % 3 == 0 else None) for i in range(count)]
    assert_valid(*w.build_watch_query(targets))


def test_thirteen_repositories_cost_one_point_by_githubs_formula_and_the_doubles() -> None:
    text, variables = w.build_watch_query([w.Target(f"o/r{i}", "main") for i in range(13)])
    assert query_cost(text, variables) == 1
    assert price_only(text, variables).cost == 1


@pytest.mark.slow(seconds=30)
@settings(deadline=None, max_examples=12)
@given(st.integers(min_value=1, max_value=40), st.integers(min_value=0, max_value=40))
def test_the_full_readings_of_the_recent_requests_never_cost_the_query_a_second_point(count: int, later: int) -> None:
    """However many bases (and later pages), the recent readings take only the room the point has."""
    targets = [w.Target(f"o/r{i}", "main") for i in range(count)]
    targets += [w.Target(f"o/r{i}", "main", "Y3Vyc29yOjE=") for i in range(min(later, count))]
    text, variables = w.build_watch_query(targets)
    size = w.recent_size(targets)
    assert_valid(text, variables)
    assert query_cost(text, variables) == price_only(text, variables).cost
    if count + min(later, count) <= 49:  # the watch alone fits one point: the readings must too
        assert price_only(text, variables).cost == 1
    if count <= 4 and later == 0:
        assert size >= 8
    assert (("recent:" in text) == (size > 0))


def test_the_recent_requests_are_read_in_full_from_the_watchs_own_answer() -> None:
    node = {"number": 7, "title": "t", "url": "u", "headRefName": "h", "headRefOid": "b" * 40, "baseRefName": "main",
            "isDraft": False, "state": "OPEN", "merged": False, "mergeable": "MERGEABLE", "updatedAt": "u2",
            "author": {"login": "al"}, "reviewDecision": "APPROVED", "labels": {"nodes": [{"name": "x"}]},
            "latestOpinionatedReviews": {"nodes": []},
            "commits": {"nodes": [{"commit": {"oid": "b" * 40, "statusCheckRollup": {"state": "FAILURE", "contexts": {
                "nodes": [{"__typename": "CheckRun", "name": "ci", "status": "COMPLETED", "conclusion": "FAILURE"}]}}}}]}}
    payload = {"data": {"r0": {
        "pushedAt": None, "updatedAt": "x", "stargazerCount": 0, "forkCount": 0, "diskUsage": 1,
        "openIssues": {"totalCount": 0},
        "pullRequests": {"totalCount": 1, "pageInfo": {"hasNextPage": False, "endCursor": None}, "nodes": []},
        "recent": {"nodes": [node, {"number": 8}, None, "garbage"]},
    }}}
    (answer,) = w.parse_watch_answer(payload, [w.Target("o/r", "main")])
    assert list(answer.readings) == [7]
    reading = answer.readings[7]
    assert (reading.checks_state, reading.failing, reading.labels) == ("FAILURE", ("ci",), ("x",))


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
))
def test_any_answer_is_read_without_raising(payload: Any) -> None:
    for answer in w.parse_watch_answer(payload, [w.Target("o/r", "main")]):
        assert answer.error is not None or isinstance(answer.items, list)


def test_an_answer_is_read() -> None:
    payload = {"data": {"r0": {
        "pushedAt": "2027-01-01T00:00:00Z", "updatedAt": "x", "stargazerCount": 3, "forkCount": 0, "diskUsage": 1,
        "openIssues": {"totalCount": 2},
        "pullRequests": {"totalCount": 2, "pageInfo": {"hasNextPage": True, "endCursor": "c"}, "nodes": [
            {"number": 4, "title": "t", "headRefName": "h", "headRefOid": "a" * 40, "baseRefName": "main",
             "isDraft": False, "updatedAt": "u", "author": {"login": "al"}, "statusCheckRollup": {"state": "PENDING"}},
            {"number": "x"},
        ]},
    }, "r1": None}, "errors": [{"path": ["r1"], "message": "Could not resolve to a Repository"}]}
    first, second = w.parse_watch_answer(payload, [w.Target("o/r", "main"), w.Target("o/gone", "main")])
    assert [i.number for i in first.items] == [4] and first.rollups == {"a" * 40: "PENDING"}
    assert first.next_cursor == "c" and first.fingerprint == ("2027-01-01T00:00:00Z", "x", 3, 0, 1, 2)
    assert second.error == "Could not resolve to a Repository"


# ------------------------------------------------- what moved, by recency


def _req(number: int, updated: str, head: str = "a") -> Any:
    from git_sluice.intake.request import Request

    return Request(number=number, title="t", author=None, head_ref="h", head_sha=head * 40, base="main",
                   draft=False, updated_at=updated)


@pytest.mark.slow(seconds=25)
# 12 examples, not 25: each validates a document of up to 200 heads against GitHub's whole schema
# (~1 s); the shapes' corners (one target, walks, 0 and 100 heads) come early either way (issue 31)
@settings(deadline=None, max_examples=12)
@given(st.integers(min_value=1, max_value=12), st.booleans(), st.integers(min_value=0, max_value=100),
       st.integers(min_value=0, max_value=100))
def test_every_shape_of_the_watch_query_validates_and_the_point_is_kept(
    count: int, walking: bool, heads: int, refresh: int
) -> None:
    """Incremental pages, walks, later pages, heads by oid and requests by number, heads-only targets:
    GitHub's schema takes them all, every ``first:`` is at most 100, and our price is the double's."""
    targets = []
    for i in range(count):
        targets.append(w.Target(f"o/r{i}", "main", walk=walking and i % 2 == 0,
                                heads=tuple(f"{k:040x}" for k in range(heads)) if i == 0 else (),
                                refresh=tuple(range(1, refresh + 1)) if i == 0 else ()))
        if i % 3 == 1:
            targets.append(w.Target(f"o/r{i}", "main", "Y3Vyc29yOjE=", walk=walking))
    targets.append(w.Target("o/rest", "", heads=("b" * 40, "not-an-oid"), lists=False))
    text, variables = w.build_watch_query(targets)
    assert_valid(text, variables)
    assert all(int(n) <= 100 for n in __import__("re").findall(r"first: (\d+)", text))
    price = price_only(text, variables)
    assert query_cost(text, variables) == price.cost
    if sum(w.target_requests(t) for t in targets) <= 100:  # a dozen bases, heads and refreshes aside: a point
        assert price.cost == 1
    assert "not-an-oid" not in text  # only 40-hex oids are written into the document


def test_heads_and_requests_asked_by_number_cost_nothing_a_base_three_requests() -> None:
    one = [w.Target("o/r", "main")]
    busy = [w.Target("o/r", "main", heads=tuple(f"{k:040x}" for k in range(100)), refresh=tuple(range(1, 101)))]
    assert price_only(*w.build_watch_query(one, recent=0)).requests == 3  # open-issues count, the list, gone
    assert price_only(*w.build_watch_query(busy, recent=0)).requests == 3
    assert price_only(*w.build_watch_query([w.Target("o/r", "", heads=("a" * 40,), lists=False)])).cost == 1


def test_the_new_fields_are_read_from_an_answer() -> None:
    targets = [w.Target("o/r", "main", heads=("c" * 40,), refresh=(9,)), w.Target("o/s", "", heads=("d" * 40,),
                                                                              lists=False)]
    node = {"number": 4, "title": "t", "headRefName": "h", "headRefOid": "a" * 40, "baseRefName": "main",
            "isDraft": False, "updatedAt": "u4", "author": None, "state": "OPEN", "mergeable": "UNKNOWN",
            "statusCheckRollup": {"state": "PENDING"}}
    payload = {"data": {
        "r0": {"pushedAt": "p", "updatedAt": "x", "stargazerCount": 1, "forkCount": 0, "diskUsage": 1,
               "openIssues": {"totalCount": 0}, "baseRef": {"target": {"oid": "e" * 40}},
               "pullRequests": {"totalCount": 7, "pageInfo": {"hasNextPage": False}, "nodes": [node]},
               "gone": {"nodes": [{"number": 3, "updatedAt": "u3"}, {"number": "x"}]},
               "h0": {"oid": "c" * 40, "statusCheckRollup": None},
               "n9": {**node, "number": 9, "headRefOid": "f" * 40, "mergeable": "MERGEABLE",
                      "statusCheckRollup": {"state": "SUCCESS"}}},
        "r1": {"h0": {"oid": "d" * 40, "statusCheckRollup": {"state": "FAILURE"}}, "h1": None},
    }}
    first, second = w.parse_watch_answer(payload, targets)
    assert first.total == 7 and first.gone == {3: "u3"} and first.base_oid == "e" * 40
    assert [i.number for i in first.items] == [4] and [i.mergeable for i in first.refreshed] == ["MERGEABLE"]
    assert first.rollups == {"a" * 40: "PENDING", "c" * 40: None, "f" * 40: "SUCCESS"}
    assert second.error is None and second.rollups == {"d" * 40: "FAILURE"} and second.items == []
    closed = {**payload["data"]["r0"], "n9": {**node, "number": 9, "state": "CLOSED"}}
    (only,) = w.parse_watch_answer({"data": {"r0": closed}}, targets[:1])
    assert only.refreshed == []  # asked by number, but no longer open: the count and gone list decide


def test_the_listing_stops_at_the_last_ticks_newest() -> None:
    page = [_req(1, "2027-01-01T00:00:09Z"), _req(2, "2027-01-01T00:00:05Z")]
    assert w.more_recent("2027-01-01T00:00:04Z", page, True)  # everything here moved: the next page may too
    assert not w.more_recent("2027-01-01T00:00:05Z", page, True)  # reached what the last tick knew
    assert not w.more_recent("2027-01-01T00:00:04Z", page, False)  # no next page
    assert w.more_recent("", page, True)  # nothing known: every page
    assert not w.more_recent("x", [], True)
    assert w.newest(page) == "2027-01-01T00:00:09Z" and w.newest([]) == ""


@settings(deadline=None, max_examples=200)
@given(
    st.sets(st.integers(1, 60), max_size=40),
    st.sets(st.integers(1, 60), max_size=10),
    st.sets(st.integers(1, 60), max_size=10),
    st.sets(st.integers(1, 60), max_size=5),
    st.integers(0, 20),
)
def test_a_listing_that_agrees_with_the_count_is_the_open_list(
    known: set[int], closed: set[int], opened: set[int], unseen: set[int], gone_page: int
) -> None:
    """Whatever opened, closed, moved or left unseen: when the merged list agrees with GitHub's count it is
    exactly the open list; when something left unseen (retargeted, deleted, a close past the gone page)
    the count says so, and the caller walks."""
    truth = (known - closed - unseen) | opened
    gone_listed = sorted(closed - opened)[:gone_page]
    moved = [_req(n, "u") for n in sorted(opened)]
    merged, agrees = w.merge_listing({n: n for n in known}, moved, gone_listed, len(truth))
    if agrees:
        assert set(merged) == truth
    if set(merged) != truth:
        assert not agrees
    full = w.merge_listing({n: n for n in known}, moved, sorted(closed - opened), len(truth))
    if not (unseen & known - opened):
        assert full[1] and set(full[0]) == truth


def test_a_repository_on_rest_asks_its_heads_by_rollup_past_a_handful() -> None:
    assert not w.rollup_heads(0, threshold=4) and not w.rollup_heads(4, threshold=4)
    assert w.rollup_heads(5, threshold=4) and w.rollup_heads(150, threshold=4)


# ------------------------------------------------------------------ pace


def test_pace_projects_the_spend_to_the_reset_and_stretches_above_80_percent() -> None:
    now = 10_000.0
    reset = now + 1800  # half the window left
    calm = pacing.project(pool="p", resource="core", limit=5000, used=1000, reset=reset, observed_at=now, now=now)
    assert calm is not None and calm.projected == 2000 and calm.stretch == 1.0 and not calm.stretched
    hot = pacing.project(pool="p", resource="core", limit=5000, used=2250, reset=reset, observed_at=now, now=now)
    assert hot is not None and hot.projected == 4500 and hot.share == 0.9
    assert hot.stretch == 2.5 and "×2.5" in hot.describe()
    spent = pacing.project(pool="p", resource="core", limit=5000, used=4000, reset=reset, observed_at=now, now=now)
    assert spent is not None and spent.stretch == pacing.MAX_STRETCH


@given(st.floats(min_value=-10, max_value=10, allow_nan=False))
def test_the_stretch_is_1_to_4_and_grows_with_the_share(share: float) -> None:
    s = pacing.stretch_for(share)
    assert 1.0 <= s <= pacing.MAX_STRETCH
    assert pacing.stretch_for(share + 0.01) >= s
    if share <= pacing.STRETCH_FROM:
        assert s == 1.0


@given(
    st.one_of(st.none(), st.integers(-5, 10**6), st.floats(allow_nan=True), st.text(max_size=3)),
    st.one_of(st.none(), st.integers(-5, 10**7)),
    st.one_of(st.none(), st.floats(min_value=-1e10, max_value=1e10)),
)
def test_pace_never_trusts_headers_that_say_too_little(limit: Any, used: Any, reset: Any) -> None:
    found = pacing.project(pool="p", resource="core", limit=limit, used=used, reset=reset, observed_at=0.0, now=0.0)
    if found is not None:
        assert 0 < found.limit and 0 <= found.used <= 10 * found.limit and 0 < found.reset <= pacing.WINDOW + 300
        assert 1.0 <= found.stretch <= pacing.MAX_STRETCH


# ------------------------------------------------------------ the registry


def test_the_registry_keeps_what_each_clone_takes_in_and_forgets_a_silent_clone(tmp_path) -> None:
    from git_sluice.intake.watchstore import REGISTRY_FORGET, Registry

    registry = Registry(tmp_path)
    now = 1_800_000_000.0
    registry.note("/c1", repository="o/r", group="g", discovery=60, now=now, bases=["main", "next"], exact=True)
    head = {"number": 3, "sha": "a" * 40, "updated_at": "u", "checks_state": "PENDING"}
    registry.note("/c1", repository="o/r", group="g", discovery=60, now=now, heads={"main": [head, {"sha": 1}]})
    registry.note("/c2", repository="o/s", group="other", discovery=30, now=now, bases=["main"])
    interests, interval = registry.interests("g", now)
    assert sorted(interests) == ["o/r"] and interests["o/r"].bases == {"main", "next"}
    assert [h.number for h in interests["o/r"].heads.values()] == [3]  # the garbage head is ignored
    assert interval == 60
    # a driver's word is exact: a branch another host now holds is no longer watched
    registry.note("/c1", repository="o/r", group="g", discovery=60, now=now, bases=["main"], exact=True)
    assert registry.interests("g", now)[0]["o/r"].bases == {"main"}
    assert registry.interests("g", now + REGISTRY_FORGET + 1) == ({}, None)
    registry.doc.path.write_text("[1, 2]")  # corrupt: discarded, nothing watched, nothing raised
    assert registry.interests("g", now) == ({}, None)


@given(st.floats(min_value=1e9, max_value=2e9), st.floats(min_value=10, max_value=3600), st.floats(0, 1))
def test_the_slot_after_a_tick_is_never_due_at_once(now: float, interval: float, share: float) -> None:
    """A tick run just before its slot boundary (woken a little early, or the very first tick) must not
    leave a next tick due at once: the driver's second offer after its rounds would tick again."""
    phase = share * interval * 0.999
    at = w.slot_after_tick(now, interval, phase)
    assert not w.due(at, now)
    assert now + w.SLACK < at <= now + interval + w.SLACK + 1e-6


def test_a_quiet_repository_rides_the_query_while_it_goes_anyway_and_all_go_back_to_rest_together() -> None:
    """Issue 29: going back to REST costs a 200 (and another at the next push); riding along costs nothing."""
    from git_sluice.intake.watch import QUIET_TICKS, GraphqlTick, RepoMode, after_graphql_tick

    fp, busy = ("a", 1), ("b", 2)
    quiet = RepoMode(mode="graphql", still=QUIET_TICKS - 1, fingerprint=fp)
    moving = RepoMode(mode="graphql", still=0, fingerprint=("b", 1))
    out = after_graphql_tick({"o/quiet": GraphqlTick(quiet, fp), "o/busy": GraphqlTick(moving, busy)},
                             query_goes_anyway=False)
    assert out["o/quiet"].mode == "graphql" and out["o/quiet"].still == QUIET_TICKS - 1
    assert out["o/busy"] == RepoMode(mode="graphql", still=0, fingerprint=busy)
    # waiting heads ride in the query: it goes anyway
    alone = after_graphql_tick({"o/quiet": GraphqlTick(quiet, fp)}, query_goes_anyway=True)
    assert alone["o/quiet"].mode == "graphql"
    # every repository stood still and nothing rides: back to REST, together
    both = after_graphql_tick({"o/a": GraphqlTick(quiet, fp),
                               "o/b": GraphqlTick(RepoMode(mode="graphql", still=QUIET_TICKS - 1, fingerprint=busy),
                                                  busy)}, query_goes_anyway=False)
    assert all(m.mode == "rest" and m.rebasing for m in both.values())


def test_a_list_whose_requests_move_or_that_is_long_stays_on_the_query() -> None:
    """Issue 29: at 5,000 requests, going back to REST walks 50 pages (50 counted calls) to renew the
    first page's ETag; a list whose requests keep moving (reviews move no fingerprint) came back to the
    query at the next move, so the walk repeated every few ticks — about 430 counted calls an hour."""
    fp = ("a", 1)
    mode = w.RepoMode(mode="graphql", still=0, fingerprint=fp)
    for _ in range(3 * w.QUIET_TICKS):  # its requests move every tick: never still
        mode = w.after_graphql(mode, fp, moved=True)
        assert mode.mode == "graphql" and mode.still == 0
    for tick in range(1, 60):  # 5,000 requests: 50 pages; REST again only after 50 still ticks
        mode = w.after_graphql(mode, fp, pages=50)
        assert (mode.mode == "rest") == (tick == 50)
        if mode.mode == "rest":
            break
    assert w.quiet_ticks(1) == w.QUIET_TICKS and w.quiet_ticks(50) == 50
    held = w.after_graphql_tick({"o/long": w.GraphqlTick(w.RepoMode(mode="graphql", still=49, fingerprint=fp), fp,
                                                         pages=50)}, query_goes_anyway=True)
    assert held["o/long"] == w.RepoMode(mode="graphql", still=49, fingerprint=fp)


def test_a_burst_long_past_stops_stretching_the_tick() -> None:
    """A fresh host's first look spends in a burst; with no call since, the rate runs to now, not to the burst."""
    start = 10_000.0
    reset = start + pacing.WINDOW
    burst = pacing.project(pool="p", resource="core", limit=5000, used=800, reset=reset, observed_at=start + 60,
                           now=start + 60)
    assert burst is not None and burst.stretched  # 800 in the first minute: ~9,600 at that rate
    later = pacing.project(pool="p", resource="core", limit=5000, used=800, reset=reset, observed_at=start + 60,
                           now=start + 1200)
    assert later is not None and later.projected == 2400 and not later.stretched
