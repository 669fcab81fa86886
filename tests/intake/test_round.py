"""Intake rounds against the GitHub double and real git: every saving is asserted from the double's ledger."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_sluice.double.testing import ServedDouble
from git_sluice.errors import AllowanceSpent
from git_sluice.intake.queue import QueueStore
from git_sluice.commands.intake import run_rounds
from git_sluice.remote.git import CasUpdate
from git_sluice.remote.lease_record import LeaseRecord, lease_ref
from git_sluice.runtime.session import Session, open_session
from tests.gitutil import git, make_clone

REPO = "o/r"
TOKEN = "tok-alice"


@pytest.fixture
def clone(tmp_path: Path, github: ServedDouble, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    return make_clone(tmp_path, api=github.url)


@pytest.fixture
def session(clone: Path, github: ServedDouble) -> Iterator[Session]:
    with open_session(clone, clock=github.clock) as s:
        assert s.forge.pool  # learn the pool first: the counts below are the rounds' own
        yield s


def one_round(session: Session, reason: str = "discovery"):
    (report,) = run_rounds(session, reason=reason)
    return report


def past_interval(github: ServedDouble, session: Session) -> None:
    github.clock.advance(session.settings.discovery + 1)


def graphql_calls(gh, mark: int) -> list:
    return gh.calls(since=mark, resource="graphql")


def ready_pr(gh, head: str, **kw) -> int:
    """A request that is ready (approved, checks green, mergeable): nothing for it to wait on."""
    n = gh.open_pr(REPO, head_ref=head, **kw)
    sha = gh.pr(REPO, n).head_sha
    gh.add_check_run(REPO, sha, "ci", status="completed", conclusion="success")
    gh.review(REPO, n, "bob", "APPROVED")
    gh.set_mergeable(REPO, n, "MERGEABLE")
    return n


def entries(session: Session) -> dict:
    return QueueStore(session.repo.sluice_dir).load("main").entries


def test_second_round_past_the_interval_costs_nothing_and_within_it_asks_nothing(
    session: Session, github: ServedDouble
) -> None:
    gh = github.gh
    for i in range(3):
        ready_pr(gh, f"feat-{i}")
    waiting = gh.open_pr(REPO, head_ref="slow")  # review required, no checks yet: waits
    first = one_round(session)
    assert first.outcome == "taken-in" and sorted(first.added) == [1, 2, 3, waiting]
    assert entries(session)[waiting].state == "waiting"

    mark = gh.mark()
    within = one_round(session)
    assert within.outcome == "within-interval"
    assert gh.requests(since=mark) == 0

    past_interval(github, session)
    mark = gh.mark()
    second = one_round(session)
    assert second.outcome == "taken-in"
    assert gh.counted(since=mark) == 0  # the list and the waiting request's checks: all 304
    assert gh.requests(since=mark) == 3  # list + check-runs + status of the waiting request
    assert graphql_calls(gh, mark) == []


@pytest.mark.parametrize("change", ["push", "review", "label", "title", "new"])
def test_a_change_costs_the_list_and_one_query(session: Session, github: ServedDouble, change: str) -> None:
    gh = github.gh
    for i in range(3):
        ready_pr(gh, f"feat-{i}")
    one_round(session)
    past_interval(github, session)
    if change == "push":
        gh.push_pr(REPO, 2)
    elif change == "review":
        gh.review(REPO, 2, "carol", "CHANGES_REQUESTED")
    elif change == "label":
        gh.add_label(REPO, 2, "urgent")
    elif change == "title":
        gh.edit_title(REPO, 2, "a better title")
    else:
        ready_pr(gh, "feat-new")
    mark = gh.mark()
    report = one_round(session)
    queries = graphql_calls(gh, mark)
    assert len(queries) == 1
    rest = [c for c in gh.calls(since=mark) if c.resource == "core"]
    assert report.read == ([4] if change == "new" else [2])
    entry = entries(session)[report.read[0]]
    list_calls = [c for c in rest if "/pulls?" in c.path]
    assert [c.counted for c in list_calls] == [True]  # the one list page that changed
    baseline = [c for c in rest if c not in list_calls]
    if change == "push":
        # the new head has no checks yet: it waits on them, and their baseline is taken now
        # (check-runs + status), so the next discovery asks them for free
        assert entry.state == "waiting" and len(baseline) == 2
    else:
        assert baseline == []
    if change == "review":
        assert entry.state == "blocked" and entry.review_decision == "CHANGES_REQUESTED"
    elif change == "label":
        assert entry.labels == ("urgent",)
    elif change == "title":
        assert entry.title == "a better title"
    elif change == "push":
        assert entry.head_sha == gh.pr(REPO, 2).head_sha


def test_a_check_finishing_without_moving_updated_at_is_seen_at_the_next_discovery(
    session: Session, github: ServedDouble
) -> None:
    gh = github.gh
    n = gh.open_pr(REPO, head_ref="ci-running")
    gh.review(REPO, n, "bob", "APPROVED")
    gh.set_mergeable(REPO, n, "MERGEABLE")
    sha = gh.pr(REPO, n).head_sha
    gh.add_check_run(REPO, sha, "ci", status="in_progress", conclusion=None)
    one_round(session)
    assert entries(session)[n].state == "waiting"
    updated = gh.pr(REPO, n).updated_at
    gh.add_check_run(REPO, sha, "ci", status="completed", conclusion="success")
    assert gh.pr(REPO, n).updated_at == updated
    past_interval(github, session)
    mark = gh.mark()
    report = one_round(session)
    assert report.read == [n]
    assert len(graphql_calls(gh, mark)) == 1
    assert entries(session)[n].state == "ready"


def test_300_requests_over_3_pages_one_change_costs_the_changed_page_and_one_query(
    session: Session, github: ServedDouble
) -> None:
    gh = github.gh
    for i in range(300):
        n = gh.open_pr(REPO, head_ref=f"f{i}")
        gh.review(REPO, n, "bob", "APPROVED")
        gh.set_mergeable(REPO, n, "MERGEABLE")
    first = one_round(session)
    assert first.open == 300 and len(entries(session)) == 300
    past_interval(github, session)
    gh.add_label(REPO, 150, "hot")
    mark = gh.mark()
    report = one_round(session)
    list_calls = gh.calls(since=mark, path=r"/pulls\?")
    assert len(list_calls) == 3
    assert sum(c.counted for c in list_calls) <= 3
    assert len(graphql_calls(gh, mark)) == 1
    assert report.read == [150]
    assert entries(session)[150].labels == ("hot",)


def test_a_draft_is_never_read_by_graphql_and_closed_or_merged_leave(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    draft = gh.open_pr(REPO, head_ref="wip", draft=True)
    keep = ready_pr(gh, "keep")
    merged = ready_pr(gh, "merged")
    closed = ready_pr(gh, "closed")
    mark = gh.mark()
    one_round(session)
    assert entries(session)[draft].state == "draft"
    (query,) = graphql_calls(gh, mark)
    assert draft not in one_round_read(session)
    gh.merge_pr(REPO, merged)
    gh.close_pr(REPO, closed)
    gh.push_pr(REPO, draft)  # a draft that moves is still not read
    past_interval(github, session)
    mark = gh.mark()
    report = one_round(session)
    assert sorted(report.left) == [merged, closed]
    assert sorted(entries(session)) == [draft, keep]
    assert graphql_calls(gh, mark) == []


def one_round_read(session: Session) -> list[int]:
    from git_sluice.intake.round import RoundsLog

    return RoundsLog(session.repo.sluice_dir).load()["main"]["read"]


@pytest.mark.slow
def test_ten_processes_starting_intake_at_once_make_one_list_call_and_one_query(
    clone: Path, github: ServedDouble, session: Session
) -> None:
    gh = github.gh
    for i in range(5):
        ready_pr(gh, f"f{i}")
    clock_file = clone.parent / "clock"
    clock_file.write_text(repr(github.clock.time()))
    env = dict(os.environ, GIT_SLUICE_TEST_CLOCK=str(clock_file))
    gh.fault("hang", path=r"/pulls\?", times=1, seconds=2.0)
    mark = gh.mark()
    exe = shutil.which("git-sluice")
    cmd = [exe, "intake", "--json"] if exe else [sys.executable, "-m", "git_sluice", "intake", "--json"]
    procs = [subprocess.Popen(cmd, cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(10)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 10, outs
    assert len(gh.calls(since=mark, path=r"/pulls\?")) == 1
    assert len(graphql_calls(gh, mark)) == 1
    outcomes = sorted(json.loads(out)["rounds"][0]["outcome"] for out, _ in outs)
    assert outcomes.count("taken-in") == 1 and outcomes.count("within-interval") == 9


def test_partial_errors_and_deleted_requests_finish_with_what_they_have(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    a = ready_pr(gh, "a")
    b = ready_pr(gh, "b")
    c = ready_pr(gh, "c")
    gh.fault("graphql_partial", times=1)
    report = one_round(session)
    assert report.outcome == "taken-in"
    assert report.skipped, "a partial error must be reported as skipped"
    kept = set(entries(session))
    assert kept | set(report.skipped) == {a, b, c}
    # skipped requests are read again next round
    past_interval(github, session)
    report = one_round(session)
    assert set(entries(session)) == {a, b, c}


def test_a_request_deleted_between_the_list_and_the_query_is_skipped(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    a = ready_pr(gh, "a")
    b = ready_pr(gh, "b")
    # b vanishes after the list was read and before the query asks for it
    from git_sluice.intake import round as round_module

    real_list = round_module.Intake._list

    def list_then_delete(self, branch, **kw):
        items = real_list(self, branch, **kw)
        gh.delete_pr(REPO, b)
        return items

    round_module.Intake._list = list_then_delete  # type: ignore[method-assign]
    try:
        report = one_round(session)
    finally:
        round_module.Intake._list = real_list  # type: ignore[method-assign]
    assert b in report.skipped and a in entries(session) and b not in entries(session)


def test_another_hosts_live_lease_means_no_call_and_withdrawn_entries(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    ready_pr(gh, "a")
    one_round(session)
    assert entries(session)
    record = LeaseRecord("host-b", "driver", 300.0, 0, "0.1.0")
    oid = session.remote.write_record(record.to_message("main"))
    (outcome,) = session.remote.push_cas([CasUpdate(lease_ref("main"), oid, None)])
    assert outcome.won
    past_interval(github, session)
    mark = gh.mark()
    report = one_round(session)
    assert report.outcome == "deferred" and "host-b" in report.why
    assert gh.requests(since=mark) == 0
    doc = QueueStore(session.repo.sluice_dir).load("main")
    assert doc.entries == {} and doc.withdrawn_by == "host-b"


def test_paused_intake_exits_3_naming_the_end_and_wait_waits_it_out(clone: Path, github: ServedDouble) -> None:
    gh = github.gh
    ready_pr(gh, "a")
    with open_session(clone, clock=github.clock) as s:
        assert s.forge.pool
        gh.fault("secondary", path="pulls", times=1, retry_after=120)
        with pytest.raises(AllowanceSpent):
            run_rounds(s)
    clock_file = clone.parent / "clock"
    clock_file.write_text(repr(github.clock.time()))
    env = dict(os.environ, GIT_SLUICE_TEST_CLOCK=str(clock_file))
    mark = gh.mark()
    done = subprocess.run([sys.executable, "-m", "git_sluice", "intake"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "no call until" in done.stderr
    assert gh.requests(since=mark) == 0
    # --wait: the subprocess sleeps on the shared file clock; move the double's clock with it
    github.clock.set(github.clock.time())
    done = subprocess.run([sys.executable, "-m", "git_sluice", "intake", "--wait", "--timeout", "10m", "--json"],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=60)
    assert "waiting until" in done.stderr
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rounds"][0]["outcome"] == "taken-in"


def test_queue_json_is_the_documented_shape(session: Session, github: ServedDouble, clone: Path) -> None:
    gh = github.gh
    n = ready_pr(gh, "a", title="Add a thing")
    gh.add_label(REPO, n, "x")
    one_round(session)
    done = subprocess.run([sys.executable, "-m", "git_sluice", "queue", "--json"], cwd=clone,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["schema"] == 1 and doc["repository"] == REPO and doc["branch"] == "main"
    (entry,) = doc["entries"]
    assert set(entry) == {
        "number", "title", "author", "head_ref", "head_sha", "base", "draft", "updated_at", "review_decision",
        "checks", "mergeable", "labels", "state", "taken_in_at", "read_at",
    }
    assert entry["state"] == "ready" and entry["labels"] == ["x"] and entry["checks"]["state"] == "SUCCESS"
    assert entry["read_at"].endswith("Z")
    table = subprocess.run([sys.executable, "-m", "git_sluice", "queue"], cwd=clone, capture_output=True, text=True)
    assert "#1" in table.stdout and "ready" in table.stdout


def test_bad_configuration_is_refused_before_any_call(clone: Path, github: ServedDouble) -> None:
    gh = github.gh
    mark = gh.mark()
    git(clone, "config", "sluice.discovery", "5s")
    done = subprocess.run([sys.executable, "-m", "git_sluice", "intake"], cwd=clone, capture_output=True, text=True)
    assert done.returncode == 2 and "sluice.discovery" in done.stderr and "10s" in done.stderr
    git(clone, "config", "sluice.discovery", "1m")
    git(clone, "config", "sluice.branch", "no-such-branch")
    done = subprocess.run([sys.executable, "-m", "git_sluice", "intake"], cwd=clone, capture_output=True, text=True)
    assert done.returncode == 2 and "sluice.branch" in done.stderr
    assert gh.requests(since=mark) == 0


def test_status_shows_counts_last_round_and_a_rate_limited_forge_with_its_end(
    session: Session, github: ServedDouble, clone: Path
) -> None:
    gh = github.gh
    ready_pr(gh, "a")
    gh.open_pr(REPO, head_ref="wip", draft=True)
    one_round(session)
    past_interval(github, session)
    gh.fault("secondary", path="pulls", times=1, retry_after=600)
    with pytest.raises(AllowanceSpent):
        one_round(session)
    clock_file = clone.parent / "clock"
    clock_file.write_text(repr(github.clock.time()))
    env = dict(os.environ, GIT_SLUICE_TEST_CLOCK=str(clock_file))
    done = subprocess.run([sys.executable, "-m", "git_sluice", "status", "--json"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    (branch,) = data["branches"]
    assert branch["counts"]["ready"] == 1 and branch["counts"]["draft"] == 1
    assert branch["last_round"]["outcome"] == "paused"
    core = next(p for p in data["pools"] if p["resource"] == "core")
    assert core["forge"] == "rate-limited" and core["pause"]["until"] == pytest.approx(github.clock.time() + 600, abs=2)
    assert core["limit"] == 5000 and core["counted_last_hour"] >= 1
    text = subprocess.run([sys.executable, "-m", "git_sluice", "status"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=60).stdout
    assert "rate-limited until" in text and "(in 10 min" in text


def test_a_host_that_cannot_reach_the_remote_keeps_its_pause_and_works_locally(
    session: Session, github: ServedDouble, clone: Path
) -> None:
    gh = github.gh
    ready_pr(gh, "a")
    one_round(session)
    git(clone, "remote", "set-url", "origin", str(clone.parent / "gone.git"))
    past_interval(github, session)
    gh.fault("secondary", path="pulls", times=1, retry_after=300)
    with pytest.raises(AllowanceSpent):
        one_round(session)  # the fetch fails, the pause is published nowhere: still kept here
    mark = gh.mark()
    with pytest.raises(AllowanceSpent):
        session.forge.get("repos/o/r")
    assert gh.requests(since=mark) == 0
    assert entries(session)  # the queue stays readable


def test_failing_checks_re_run_green_are_seen_at_the_next_discovery(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    n = gh.open_pr(REPO, head_ref="flaky")
    gh.review(REPO, n, "bob", "APPROVED")
    gh.set_mergeable(REPO, n, "MERGEABLE")
    sha = gh.pr(REPO, n).head_sha
    gh.add_check_run(REPO, sha, "ci", status="completed", conclusion="failure")
    one_round(session)
    assert entries(session)[n].state == "blocked"
    past_interval(github, session)
    mark = gh.mark()
    one_round(session)  # quiet: the failing checks are asked conditionally, for free
    assert gh.counted(since=mark) == 0
    gh.add_check_run(REPO, sha, "ci", status="completed", conclusion="success")  # a re-run, no updated_at move
    past_interval(github, session)
    report = one_round(session)
    assert report.read == [n] and entries(session)[n].state == "ready"
