"""The host watch against the GitHub double and real git: clones of several repositories on one host
(one state dir), their drivers ticking together; what reached GitHub is read from the double's ledger.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_sluice.commands.drive import drive
from git_sluice.runtime.session import Session, open_session
from git_sluice.commands.intake import run_rounds
from git_sluice.runtime.rounds import intake_for
from git_sluice.runtime.watching import tick_watch
from git_sluice.double.testing import ServedDouble
from git_sluice.intake.queue import QueueStore
from git_sluice.paths import host_state_dir
from tests.gitutil import git, make_clone

@pytest.fixture(autouse=True)
def ticks_never_change_the_answers_they_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every tick of every test here checks it: the answers a tick reads are the peek's, shared, read only.

    A tick builds the next answers beside the last ones (copy on write); were it to change
    them in place, the next round's view would see a half-built tick (issue 15)."""
    import copy

    from git_sluice.intake.hostwatch import HostWatch

    changed: list[str] = []  # kept here, not raised: the watch's callers log what a tick raises, and go on
    for name in ("_tick", "_join"):
        real = getattr(HostWatch, name)

        def guarded(self, doc, *args, _real=real, _name=name, **kwargs):  # type: ignore[no-untyped-def]
            before = copy.deepcopy(doc)
            try:
                return _real(self, doc, *args, **kwargs)
            finally:
                if doc != before:
                    changed.append(_name)

        monkeypatch.setattr(HostWatch, name, guarded)
    yield changed
    assert changed == [], f"{changed} changed the answers they read"


TOKEN = "tok-alice"
REPOS = ("o/r1", "o/r2", "o/r3", "o/r4")


def ready_pr(gh, repo: str, head: str) -> int:
    n = gh.open_pr(repo, head_ref=head)
    sha = gh.pr(repo, n).head_sha
    gh.add_check_run(repo, sha, "ci", status="completed", conclusion="success")
    gh.review(repo, n, "bob", "APPROVED")
    gh.set_mergeable(repo, n, "MERGEABLE")
    return n


def pending_pr(gh, repo: str, head: str) -> int:
    n = gh.open_pr(repo, head_ref=head)
    gh.review(repo, n, "bob", "APPROVED")
    gh.set_mergeable(repo, n, "MERGEABLE")
    gh.add_check_run(repo, gh.pr(repo, n).head_sha, "ci", status="in_progress", conclusion=None)
    return n


def failing_pr(gh, repo: str, head: str, *, finished_ago: int = 0) -> int:
    n = gh.open_pr(repo, head_ref=head)
    gh.review(repo, n, "bob", "APPROVED")
    gh.set_mergeable(repo, n, "MERGEABLE")
    gh.add_check_run(repo, gh.pr(repo, n).head_sha, "ci", status="completed", conclusion="failure",
                     finished_ago=finished_ago)
    return n


class Host:
    """Clones of several repositories on one host: one state dir, one token, a driver each."""

    def __init__(self, tmp_path: Path, github: ServedDouble, repos: tuple[str, ...], light: bool) -> None:
        self.light = light
        self.github = github
        self.gh = github.gh
        self.sessions: dict[str, Session] = {}
        for i, repo in enumerate(repos):
            if repo not in self.gh.world.repos:
                self.gh.add_repo(repo)
            clone = make_clone(tmp_path / f"clone{i}", api=github.url, repository=repo)
            session = open_session(clone, clock=github.clock)
            assert session.forge.pool
            self.sessions[repo] = session

    def tick(self, only: tuple[str, ...] | None = None) -> None:
        """One driver tick of every clone, in turn (the first to come ticks the watch for all).

        A full ``drive`` tick (fetch, lease, watch, rounds) where the driver itself is under
        test (``light=False``); else only its GitHub part: the watch's tick, then the round.
        """
        for repo, session in self.sessions.items():
            if only is None or repo in only:
                if self.light:
                    intake, keeper = intake_for(session, role="driver")
                    keeper.ensure(["main"])  # a driver takes in only on its own mark (issue 14, point 5)
                    tick_watch(session, ["main"])
                    intake.round("main")
                    tick_watch(session, ["main"])  # as drive does after its rounds
                else:
                    drive(session, max_ticks=1, let_go=False)

    def next_tick(self) -> None:
        self.github.clock.advance(60)

    def entries(self, repo: str) -> dict:
        return QueueStore(self.sessions[repo].repo.sluice_dir).load("main").entries

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()


@pytest.fixture
def host_factory(tmp_path: Path, github: ServedDouble, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    for repo in REPOS:
        github.gh.add_repo(repo)
    made: list[Host] = []

    def make(repos: tuple[str, ...] = REPOS, *, light: bool = True) -> Host:
        host = Host(tmp_path, github, repos, light)
        made.append(host)
        return host

    yield make
    for host in made:
        host.close()


def unrelated_activity(gh, repos, t: int) -> None:
    """What changes every list page's body though no request moves (GitHub embeds the repository)."""
    for repo in repos:
        gh.star(repo, login=f"fan-{t}")
        gh.push_branch(repo, f"unrelated-{t}")
        gh.open_issue(repo, title=f"issue {t}")


def churn_into_graphql(host: Host, gh, repos: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    """Three ticks of unrelated activity: the repositories' lists churn, and the watch asks them by GraphQL."""
    for t in range(3):
        host.tick()
        unrelated_activity(gh, repos, t)
        host.next_tick()
    host.tick()


def answers(host: Host) -> dict:
    (path,) = (host_state_dir() / "watch").glob("*/answers.json")
    return json.loads(path.read_text())


def test_four_repositories_under_unrelated_activity_cost_at_most_one_unit_a_tick_and_a_review_two(
    host_factory, github: ServedDouble
) -> None:
    gh = github.gh
    for repo in REPOS:
        for i in range(3):
            ready_pr(gh, repo, f"feat-{i}")
    waiting = pending_pr(gh, "o/r1", "slow-ci")
    host = host_factory(light=False)  # four drivers, each its whole tick: fetch, lease, watch, rounds
    host.tick()
    assert host.entries("o/r1")[waiting].state == "waiting"
    assert all(len(host.entries(repo)) == (4 if repo == "o/r1" else 3) for repo in REPOS)
    for t in range(1, 8):
        unrelated_activity(gh, REPOS, t)
        host.next_tick()
        mark = gh.mark()
        host.tick()
        if t >= 2:  # after the first two ticks
            assert gh.counted(since=mark) <= 1, [(c.time, c.method, c.path, c.status, c.cost) for c in gh.calls(since=mark)]
    assert {r["mode"] for r in answers(host)["repos"].values()} == {"graphql"}

    # a review on one of them shows in that clone's queue at the next tick, for at most 2 units
    n = 2
    gh.review("o/r2", n, "carol", "CHANGES_REQUESTED")
    unrelated_activity(gh, REPOS, 99)
    host.next_tick()
    mark = gh.mark()
    host.tick()
    assert host.entries("o/r2")[n].state == "blocked"
    assert gh.counted(since=mark) <= 2
    # the clone's own list was never asked: every list call came from the watch, never per clone
    assert gh.calls(since=mark, path=r"/pulls\?") == []


def test_a_quiet_host_costs_nothing_and_the_clones_ask_no_list_of_their_own(host_factory, github) -> None:
    gh = github.gh
    for repo in REPOS:
        ready_pr(gh, repo, "feat")
    waiting = pending_pr(gh, "o/r3", "slow")
    host = host_factory()
    host.tick()
    host.next_tick()
    host.tick()  # the waiting head's baseline is taken here
    for _ in range(5):
        host.next_tick()
        mark = gh.mark()
        host.tick()
        assert gh.counted(since=mark) == 0
        # one conditional list per repository and the waiting head's check runs: 304s, the host's, once
        lists = gh.calls(since=mark, path=r"/pulls\?")
        assert len(lists) == len(REPOS) and all(c.status == 304 for c in lists)
    assert host.entries("o/r3")[waiting].state == "waiting"


def test_ticks_follow_the_hosts_clock_with_a_stable_jitter_and_the_driver_sleeps_until_the_next(
    host_factory, github
) -> None:
    from git_sluice.runtime.watching import next_wake
    from git_sluice.intake.watch import phase_of

    ready_pr(github.gh, "o/r1", "feat")
    host = host_factory(("o/r1",))
    host.tick()
    doc = answers(host)
    phase = phase_of("host-a", 60.0)
    slots = (doc["next_at"] - phase) / 60.0
    assert abs(slots - round(slots)) < 1e-6 and doc["ticked_at"] < doc["next_at"] <= doc["ticked_at"] + 60
    assert phase_of("host-b", 60.0) != phase  # another host ticks in another second
    session = host.sessions["o/r1"]
    now = github.clock.time()
    assert next_wake(session, session.watch, now, 60.0) == doc["next_at"]  # not now + 60
    github.clock.advance(25)  # a round in between (a hook's) moves nothing: the same next tick
    run_rounds(session, reason="push")
    assert next_wake(session, session.watch, github.clock.time(), 60.0) == doc["next_at"]


def test_a_check_finishing_is_seen_by_the_watch_and_read_by_its_clone(host_factory, github) -> None:
    gh = github.gh
    n = pending_pr(gh, "o/r1", "slow")
    host = host_factory(("o/r1", "o/r2"))
    host.tick()
    host.next_tick()
    host.tick()
    gh.add_check_run("o/r1", gh.pr("o/r1", n).head_sha, "ci", status="completed", conclusion="success")
    host.next_tick()
    mark = gh.mark()
    host.tick()
    assert host.entries("o/r1")[n].state == "ready"
    assert len(gh.calls(since=mark, resource="graphql")) == 1  # the clone's reading; the watch asked REST


def test_a_check_finishing_in_a_churning_repository_is_seen_through_the_rollup(host_factory, github) -> None:
    gh = github.gh
    n = pending_pr(gh, "o/r1", "slow")
    host = host_factory(("o/r1",))
    churn_into_graphql(host, gh, ("o/r1",))
    assert answers(host)["repos"]["o/r1"]["mode"] == "graphql"
    gh.add_check_run("o/r1", gh.pr("o/r1", n).head_sha, "ci", status="completed", conclusion="success")
    unrelated_activity(gh, ("o/r1",), 50)
    host.next_tick()
    mark = gh.mark()
    host.tick()
    assert host.entries("o/r1")[n].state == "ready"
    assert gh.counted(since=mark, resource="core") == 0
    # the watch's query alone: its rollup said SUCCESS, which leaves no check to name, so no reading
    assert len(gh.calls(since=mark, resource="graphql")) == 1
    # a check failing is read: the queue names the failing check
    gh.push_pr("o/r1", n, "f" * 40)
    gh.add_check_run("o/r1", "f" * 40, "lint", status="in_progress", conclusion=None)
    for t in (60, 61):
        unrelated_activity(gh, ("o/r1",), t)
        host.next_tick()
        host.tick()
    assert host.entries("o/r1")[n].checks_state == "PENDING"
    gh.add_check_run("o/r1", "f" * 40, "lint", status="completed", conclusion="failure")
    unrelated_activity(gh, ("o/r1",), 70)
    host.next_tick()
    mark = gh.mark()
    host.tick()
    entry = host.entries("o/r1")[n]
    assert entry.state == "blocked" and entry.failing == ("lint",)
    # the watch's query alone: it read its base's most recent requests in full, the failing one among them
    assert len(gh.calls(since=mark, resource="graphql")) == 1


def test_a_churning_repository_goes_back_to_rest_once_it_is_quiet(host_factory, github) -> None:
    gh = github.gh
    ready_pr(gh, "o/r1", "feat")
    host = host_factory(("o/r1",))
    churn_into_graphql(host, gh, ("o/r1",))
    assert answers(host)["repos"]["o/r1"]["mode"] == "graphql"
    for _ in range(8):
        host.next_tick()
        host.tick()
    assert answers(host)["repos"]["o/r1"]["mode"] == "rest"
    for _ in range(3):
        host.next_tick()
        mark = gh.mark()
        host.tick()
        assert gh.counted(since=mark) == 0
        assert [c.status for c in gh.calls(since=mark, path=r"/pulls\?")] == [304]


def test_a_hooks_round_between_ticks_does_not_push_the_drivers_next_tick_back(host_factory, github) -> None:
    gh = github.gh
    ready_pr(gh, "o/r1", "feat")
    host = host_factory(("o/r1",), light=False)
    session = host.sessions["o/r1"]
    host.tick()
    github.clock.advance(30)
    (report,) = run_rounds(session, reason="push")  # a pre-push hook's round: local movement asks at once
    assert report.outcome == "taken-in"
    github.clock.advance(31)
    n = ready_pr(gh, "o/r1", "new")
    mark = gh.mark()
    state = drive(session, max_ticks=1, let_go=False)
    assert [r.outcome for r in state.rounds] == ["taken-in"]
    assert n in host.entries("o/r1")
    assert len(gh.calls(since=mark, path=r"/pulls\?")) == 1  # the watch's list, at the driver's own tick


def test_without_the_watch_a_push_round_does_not_wind_the_discovery_clock(tmp_path, github, monkeypatch) -> None:
    """The old way too: a hook's round between ticks leaves the driver's tick its list."""
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    clone = make_clone(tmp_path, api=github.url)
    with open_session(clone, clock=github.clock) as session:
        assert session.forge.pool
        (first,) = run_rounds(session)
        github.clock.advance(30)
        (pushed,) = run_rounds(session, reason="push")
        github.clock.advance(29)  # the interval, less a second: a tick woken a little early still asks
        (tick,) = run_rounds(session)
        assert (first.outcome, pushed.outcome, tick.outcome) == ("taken-in", "taken-in", "taken-in")


def check_runs_asked(gh, mark: int, repo: str = "o/r1") -> int:
    return len(gh.calls(since=mark, path=rf"^/repos/{repo}/commits/[0-9a-f]+/check-runs"))


def status_asked(gh, mark: int, repo: str) -> int:
    return len(gh.calls(since=mark, path=rf"^/repos/{repo}/commits/[0-9a-f]+/status$"))


def test_a_failed_head_that_stays_failed_is_asked_less_and_less_often_and_at_once_when_it_moves(
    host_factory, github
) -> None:
    gh = github.gh
    n = failing_pr(gh, "o/r1", "red")
    host = host_factory(("o/r1",))
    mark = gh.mark()
    host.tick()
    assert host.entries("o/r1")[n].state == "blocked"
    assert check_runs_asked(gh, mark) == 1  # its baseline, as soon as the round queued it
    asked_at = [github.clock.time()]
    for _ in range(50):
        host.next_tick()
        mark = gh.mark()
        host.tick()
        if check_runs_asked(gh, mark):
            asked_at.append(github.clock.time())
    gaps = [b - a for a, b in zip(asked_at, asked_at[1:])]
    assert gaps[:5] == [60, 120, 240, 480, 900]
    assert set(gaps[5:]) == {900}  # doubling, up to 15 min
    # the request moves (a comment): its head is asked again at that very tick
    gh.comment("o/r1", n, body="rerun please")
    host.next_tick()
    mark = gh.mark()
    host.tick()
    assert check_runs_asked(gh, mark) == 1
    mark = gh.mark()
    for _ in range(4):
        host.next_tick()
        host.tick()
    assert check_runs_asked(gh, mark) == 2  # and doubles again from the start: the next tick, two later


def test_a_failure_already_an_hour_old_is_asked_every_15_minutes_from_the_start(host_factory, github) -> None:
    """A host that starts beside an old failure does not walk the doubling from a minute again."""
    gh = github.gh
    failing_pr(gh, "o/r1", "red-for-long", finished_ago=3_600)
    host = host_factory(("o/r1",))
    host.tick()  # the round queues it and the watch takes its baseline
    start, mark = github.clock.time(), gh.mark()
    asked_at = []
    for _ in range(46):
        host.next_tick()
        tick_mark = gh.mark()
        host.tick()
        if check_runs_asked(gh, tick_mark):
            asked_at.append(github.clock.time() - start)
    assert check_runs_asked(gh, mark) == len(asked_at) <= 4  # 46 minutes: at most one ask in 15
    gaps = [b - a for a, b in zip(asked_at, asked_at[1:])]
    assert gaps and set(gaps) == {900}


def test_the_combined_status_is_asked_only_where_the_repository_uses_statuses(host_factory, github) -> None:
    gh = github.gh
    pending_pr(gh, "o/r1", "runs-only")
    n = gh.open_pr("o/r2", head_ref="statuses")
    gh.review("o/r2", n, "bob", "APPROVED")
    gh.set_mergeable("o/r2", n, "MERGEABLE")
    gh.set_status("o/r2", gh.pr("o/r2", n).head_sha, "lint", "pending")
    host = host_factory(("o/r1", "o/r2"))
    mark = gh.mark()
    host.tick()
    for _ in range(6):
        host.next_tick()
        host.tick()
    assert check_runs_asked(gh, mark, "o/r1") == check_runs_asked(gh, mark, "o/r2") == 7  # every tick
    assert status_asked(gh, mark, "o/r1") == 1  # once, to learn the repository uses none
    assert status_asked(gh, mark, "o/r2") == 7
    # the baselines only: both lists, both heads' check runs, both statuses; the two clones' readings
    assert gh.counted(since=mark, resource="core") == 6


def test_pace_stretches_the_tick_above_80_percent_and_status_and_doctor_say_so(
    host_factory, github, monkeypatch: pytest.MonkeyPatch
) -> None:
    from git_sluice.commands import status as status_module
    from git_sluice.commands.doctor import diagnose

    gh = github.gh
    ready_pr(gh, "o/r1", "feat")
    gh.set_limit("user:alice", "core", 12)
    host = host_factory(("o/r1",))
    host.tick()
    doc = answers(host)
    assert doc["stretch"] > 1
    assert doc["next_at"] - doc["ticked_at"] > 60
    assert "stretches its tick" in doc["pace"]
    host.next_tick()
    mark = gh.mark()
    host.tick()
    assert gh.requests(since=mark, path=r"/pulls\?") == 0  # the stretched tick is not due yet
    session = host.sessions["o/r1"]
    monkeypatch.chdir(session.repo.workdir)
    monkeypatch.setattr(status_module, "default_clock", lambda: github.clock)
    core = next(p for p in status_module.collect_status()["pools"] if p["resource"] == "core")
    assert core["pace"]["stretch"] > 1 and core["pace"]["projected"] > 0.8 * 12
    checks = diagnose(session.repo.workdir, clock=github.clock).checks
    pace = [c for c in checks if c.name.startswith("pace ")]
    assert pace and pace[0].status == "warn" and "projected" in pace[0].found


def test_an_unreadable_watch_leaves_every_clone_its_own_round(host_factory, github) -> None:
    gh = github.gh
    ready_pr(gh, "o/r1", "feat")
    host = host_factory(("o/r1",))
    watch_dir = host_state_dir() / "watch"
    watch_dir.parent.mkdir(parents=True, exist_ok=True)
    watch_dir.write_text("not a directory\n")  # the watch's files cannot be had at all
    state = drive(host.sessions["o/r1"], max_ticks=1, let_go=False)
    (report,) = state.rounds
    assert report.outcome == "taken-in" and report.requests >= 1  # the clone asked for itself
    assert sorted(host.entries("o/r1")) == [1]


def test_corrupt_answers_are_discarded_and_rounds_go_on(host_factory, github) -> None:
    gh = github.gh
    ready_pr(gh, "o/r1", "feat")
    host = host_factory(("o/r1",))
    host.tick()
    (path,) = (host_state_dir() / "watch").glob("*/answers.json")
    path.write_text("{garbage")
    n = ready_pr(gh, "o/r1", "new")
    host.next_tick()
    (report,) = run_rounds(host.sessions["o/r1"])  # a step (no driver ticks): no answer, its own round
    assert report.outcome == "taken-in" and n in host.entries("o/r1")
    host.next_tick()
    host.tick()  # the next tick rebuilds the answers
    assert answers(host)["tick"] == 1


def test_a_stuck_watch_leaves_every_clone_its_own_round(host_factory, github) -> None:
    from git_sluice.statefile import file_lock

    gh = github.gh
    ready_pr(gh, "o/r1", "feat")
    host = host_factory(("o/r1",))
    host.tick()
    (group_dir,) = (p.parent for p in (host_state_dir() / "watch").glob("*/answers.json"))
    stuck = file_lock(group_dir / "tick.lock")
    stuck.acquire()  # another process holds the tick and makes no progress
    try:
        n = ready_pr(gh, "o/r1", "new")
        host.next_tick()
        state = drive(host.sessions["o/r1"], max_ticks=1, let_go=False)
        (report,) = state.rounds
        assert report.outcome == "taken-in" and report.requests >= 1
        assert n in host.entries("o/r1")
    finally:
        stuck.release()


def test_the_process_running_the_watch_dying_mid_tick_leaves_the_tick_to_whoever_comes_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from git_sluice.clock import FileClock
    from git_sluice.double.testing import running_double

    clock_file = tmp_path / "clock"
    clock = FileClock(clock_file, start=1_800_000_000.0)
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    with running_double(clock=clock, repos=("o/r1", "o/r2")) as (gh, server):
        ours = ready_pr(gh, "o/r1", "feat")
        theirs = ready_pr(gh, "o/r2", "feat")
        driven = make_clone(tmp_path / "c1", api=server.url, repository="o/r1")
        other = make_clone(tmp_path / "c2", api=server.url, repository="o/r2")
        with open_session(driven, clock=clock) as s:
            assert s.forge.pool  # learnt once for the host: the subprocess's first call is the watch's
        with open_session(other, clock=clock) as s:
            run_rounds(s)  # o/r2's clone takes its base in: the watch knows of it from now on
        gh.fault("hang", path=r"^GET /repos/o/r2/pulls\?", seconds=60)
        env = dict(os.environ, GIT_SLUICE_TEST_CLOCK=str(clock_file))
        start = gh.mark()
        proc = subprocess.Popen([sys.executable, "-m", "git_sluice", "drive"], cwd=driven, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while gh.requests(since=start, path=r"^/repos/o/r2/pulls\?") == 0 and time.monotonic() < deadline:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.05)
            assert gh.requests(since=start, path=r"^/repos/o/r2/pulls\?") == 1  # mid-tick: o/r1 asked, o/r2 on the wire
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            gh.clear_faults()
        assert not list((host_state_dir() / "watch").glob("*/answers.json"))  # nothing half-written
        mark = gh.mark()
        with open_session(driven, clock=clock) as session:
            state = drive(session, max_ticks=1, let_go=False)  # whoever comes next: the lock is free
        assert [r.outcome for r in state.rounds] == ["taken-in"]
        lists = {c.path.split("/pulls")[0]: c.status for c in gh.calls(since=mark, path=r"/pulls\?")}
        assert lists == {"/repos/o/r1": 304, "/repos/o/r2": 200}  # the dead tick's answer is kept: a 304
        assert ours in QueueStore(Path(driven) / ".git" / "sluice").load("main").entries
        doc = json.loads(next((host_state_dir() / "watch").glob("*/answers.json")).read_text())
        assert doc["tick"] == 1 and sorted(doc["repos"]) == ["o/r1", "o/r2"]
        assert [i["number"] for i in doc["repos"]["o/r2"]["bases"]["main"]["items"]] == [theirs]


def test_mergeability_is_taken_from_the_watchs_query_not_read_again(host_factory, github) -> None:
    """Mergeability moves no ``updated_at``: a round used to read an UNKNOWN request again at every
    tick. Where the watch asks by GraphQL its query says the mergeability with the review decision
    and checks, for free: the round takes it from there (issue 12, readings batched per tick)."""
    gh = github.gh
    n = ready_pr(gh, "o/r1", "feat")
    gh.set_mergeable("o/r1", n, "UNKNOWN")
    host = host_factory(("o/r1",))
    churn_into_graphql(host, gh, ("o/r1",))
    assert answers(host)["repos"]["o/r1"]["mode"] == "graphql"
    assert host.entries("o/r1")[n].state == "waiting"
    for t in range(3):  # still UNKNOWN: GitHub is computing it; no reading would help
        unrelated_activity(gh, ("o/r1",), 10 + t)
        host.next_tick()
        mark = gh.mark()
        host.tick()
        assert len(gh.calls(since=mark, resource="graphql")) == 1  # the watch's query alone
        assert gh.counted(since=mark) == 1
    gh.set_mergeable("o/r1", n, "MERGEABLE")
    unrelated_activity(gh, ("o/r1",), 50)
    host.next_tick()
    mark = gh.mark()
    host.tick()
    entry = host.entries("o/r1")[n]
    assert entry.mergeable == "MERGEABLE" and entry.state == "ready"
    assert len(gh.calls(since=mark, resource="graphql")) == 1 and gh.counted(since=mark) == 1


def two_ready_requests_each_on_graphql(host_factory, gh) -> Host:  # type: ignore[no-untyped-def]
    """Every repository with two ready requests, its list churned into the watch's GraphQL query."""
    for repo in REPOS:
        for i in range(2):
            ready_pr(gh, repo, f"feat-{i}")
    host = host_factory(light=False)
    churn_into_graphql(host, gh, REPOS)
    return host


def test_what_moved_in_several_repositories_is_read_in_one_query_for_the_host(host_factory, github) -> None:
    """Readings batched per tick: each clone used to read its own moved requests, a query (at least a
    point) per clone; the watch reads what moved across every repository in one."""
    gh = github.gh
    host = two_ready_requests_each_on_graphql(host_factory, gh)
    gh.review("o/r1", 1, "carol", "CHANGES_REQUESTED")
    gh.review("o/r3", 2, "carol", "CHANGES_REQUESTED")
    gh.review("o/r4", 1, "dave", "COMMENTED")
    unrelated_activity(gh, REPOS, 9)
    host.next_tick()
    mark = gh.mark()
    host.tick()
    assert host.entries("o/r1")[1].state == "blocked" and host.entries("o/r3")[2].state == "blocked"
    assert host.entries("o/r4")[1].state == "ready"
    graphql = gh.calls(since=mark, resource="graphql")
    # the watch's query alone: each base's most recently updated requests come read in full with it
    assert len(graphql) == 1 and gh.counted(since=mark) == 1


def test_what_moved_beyond_the_querys_room_for_full_readings_is_read_in_one_batch(
    host_factory, github, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a base has more moved requests than the watch's point has room to read in full (here 1),
    the rest are read in one batched query for the whole host, as before."""
    from git_sluice.intake import watch as w

    monkeypatch.setattr(w, "RECENT_MAX", 1)
    gh = github.gh
    host = two_ready_requests_each_on_graphql(host_factory, gh)
    gh.review("o/r1", 1, "carol", "CHANGES_REQUESTED")
    gh.review("o/r1", 2, "carol", "CHANGES_REQUESTED")
    gh.review("o/r3", 2, "carol", "CHANGES_REQUESTED")
    unrelated_activity(gh, REPOS, 9)
    host.next_tick()
    mark = gh.mark()
    host.tick()
    assert [host.entries("o/r1")[n].state for n in (1, 2)] == ["blocked", "blocked"]
    assert host.entries("o/r3")[2].state == "blocked"
    assert len(gh.calls(since=mark, resource="graphql")) == 2 and gh.counted(since=mark) == 2


def test_a_push_round_leaves_the_new_heads_checks_baseline_to_the_watch(host_factory, github) -> None:
    """A hook's round after a push asks its own list (the watch's last tick cannot have seen the push),
    but no longer probes the read requests' check runs and combined status itself: under a ticking
    watch the watch takes that baseline, and asks the status only where the repository uses statuses
    (a status answer embeds the repository: a 200, counted, after any push or star)."""
    gh = github.gh
    n = pending_pr(gh, "o/r1", "slow")
    host = host_factory(("o/r1",))
    host.tick()
    host.next_tick()
    host.tick()
    gh.push_pr("o/r1", n, "e" * 40)
    gh.add_check_run("o/r1", "e" * 40, "ci", status="in_progress", conclusion=None)
    github.clock.advance(20)
    session = host.sessions["o/r1"]
    intake, _ = intake_for(session, role="driver")
    mark = gh.mark()
    report = intake.round("main", reason="push")
    assert report.outcome == "taken-in" and host.entries("o/r1")[n].head_sha == "e" * 40
    assert gh.calls(since=mark, path="check-runs") == [] and gh.calls(since=mark, path="/status") == []
    mark = gh.mark()
    tick_watch(session, ["main"])  # a driver's next offer: the new head joins at once
    probes = gh.calls(since=mark, path="check-runs")
    assert len(probes) == 1 and gh.calls(since=mark, path="/status") == []  # the repository uses no statuses


def test_a_push_of_a_request_head_reads_that_request_and_asks_no_list(host_factory, github) -> None:
    """The hook names the request heads it pushed: the round reads those requests at once and stands on
    the watch's list for the rest — no list of its own (a 200, counted, under any activity)."""
    gh = github.gh
    n = pending_pr(gh, "o/r1", "slow")
    other = ready_pr(gh, "o/r1", "done")
    host = host_factory(("o/r1",))
    host.tick()
    host.next_tick()
    host.tick()
    gh.push_pr("o/r1", n, "e" * 40)
    github.clock.advance(20)
    session = host.sessions["o/r1"]
    mark = gh.mark()
    (report,) = run_rounds(session, reason="push", fetch=False, pushed=frozenset({"slow"}))
    assert report.outcome == "taken-in" and report.read == [n]
    assert host.entries("o/r1")[n].head_sha == "e" * 40 and host.entries("o/r1")[other].state == "ready"
    assert gh.calls(since=mark, path=r"/pulls\?") == []
    assert len(gh.calls(since=mark, resource="graphql")) == 1 and gh.requests(since=mark) == 1
    # a push naming no request the watch lists (a request just opened from here) asks its own list
    mark = gh.mark()
    run_rounds(session, reason="push", fetch=False, pushed=frozenset({"brand-new"}))
    assert len(gh.calls(since=mark, path=r"/pulls\?")) == 1


def real_push(clone: Path, branch: str) -> str:
    """A real commit pushed from the clone to its bare remote (no hooks: the test runs the round);
    the push moves the clone's remote-tracking ref, as any push does."""
    git(clone, "checkout", "-q", "-B", branch)
    git(clone, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", branch)
    git(clone, "-c", "core.hooksPath=/dev/null", "push", "-q", "origin", branch)
    return git(clone, "rev-parse", f"refs/remotes/origin/{branch}")


def test_a_pushed_head_shows_at_once_as_waiting_and_the_next_tick_reads_it_with_the_hosts_batch(
    host_factory, github
) -> None:
    """A push of a request's head from this clone: the queue shows the new head at once (waiting: its
    checks have not run, its mergeability is not computed) with no call at all, and the watch's next
    tick reads it with what else moved — in its own query, which reads each base's most recently
    updated requests in full: one point for both, where the push's own reading cost a point of its own."""
    gh = github.gh
    n = ready_pr(gh, "o/r1", "slow")
    other = pending_pr(gh, "o/r1", "other")
    host = host_factory(("o/r1",))
    churn_into_graphql(host, gh, ("o/r1",))
    session = host.sessions["o/r1"]
    assert host.entries("o/r1")[n].state == "ready"
    sha = real_push(session.repo.workdir, "slow")
    gh.push_pr("o/r1", n, sha)
    mark = gh.mark()
    (report,) = run_rounds(session, reason="push", fetch=False, pushed=frozenset({"slow"}))
    entry = host.entries("o/r1")[n]
    assert report.outcome == "taken-in" and report.read == [] and gh.requests(since=mark) == 0
    assert (entry.head_sha, entry.state, entry.checks_state, entry.mergeable) == (sha, "waiting", None, "UNKNOWN")
    assert entry.review_decision == "APPROVED"  # as last read: the watch's tick says whether it stands
    # meanwhile GitHub: the new head's CI starts, and another request is reviewed
    gh.add_check_run("o/r1", sha, "ci", status="in_progress", conclusion=None)
    gh.review("o/r1", other, "carol", "CHANGES_REQUESTED")
    unrelated_activity(gh, ("o/r1",), 9)
    host.next_tick()
    mark = gh.mark()
    host.tick()
    entries = host.entries("o/r1")
    assert entries[n].head_sha == sha and entries[n].checks_state == "PENDING" and entries[n].pending == ()
    assert entries[other].state == "blocked"
    graphql = gh.calls(since=mark, resource="graphql")
    assert len(graphql) == 1 and gh.counted(since=mark) == 1  # the watch's query, which read both in full
    # a push the remote refused moves no remote-tracking ref: the head the watch shows stands, no call
    mark = gh.mark()
    git(session.repo.workdir, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty",
        "-m", "not pushed")
    (report,) = run_rounds(session, reason="push", fetch=False, pushed=frozenset({"slow"}))
    assert report.read == [] and gh.requests(since=mark) == 0 and host.entries("o/r1")[n].head_sha == sha
    # a head whose remote-tracking ref is gone (pruned): the round cannot tell, and reads it as before
    git(session.repo.workdir, "update-ref", "-d", "refs/remotes/origin/slow")
    mark = gh.mark()
    (report,) = run_rounds(session, reason="push", fetch=False, pushed=frozenset({"slow"}))
    assert report.read == [n] and len(gh.calls(since=mark, resource="graphql")) == 1


def test_a_long_quiet_list_costs_its_first_page_only_and_any_move_is_still_seen(host_factory, github) -> None:
    """Sorted by ``updated`` descending, the list's first page changes whenever anything on any page
    moves (the moved request comes to the top; a close changes the repository every item embeds), so
    its 304 stands for every page: a quiet base of 250 requests costs one call a tick, not three."""
    gh = github.gh
    numbers = [gh.open_pr("o/r1", head_ref=f"feat-{i}") for i in range(250)]
    host = host_factory(("o/r1",))
    host.tick()
    host.next_tick()
    host.tick()
    for _ in range(2):
        host.next_tick()
        mark = gh.mark()
        host.tick()
        lists = gh.calls(since=mark, path=r"/pulls\?")
        assert [c.status for c in lists] == [304], [(c.path, c.status) for c in lists]
    assert len(host.entries("o/r1")) == 250
    oldest = numbers[0]
    gh.add_label("o/r1", oldest, "urgent")  # the oldest request, on the last page until it moved
    host.next_tick()
    mark = gh.mark()
    host.tick()
    # its first page's 200 is not walked (3 pages): the watch's one query asks what moved, most recently
    # updated first, and reads it in full in the same query
    assert [c.status for c in gh.calls(since=mark, path=r"/pulls\?")] == [200]
    assert len(gh.calls(since=mark, path="/graphql")) == 1 and gh.counted(since=mark) == 2
    assert host.entries("o/r1")[oldest].labels == ("urgent",)
    gh.close_pr("o/r1", numbers[1])  # closed, not moved to the top: the embedded repository changed
    host.next_tick()
    mark = gh.mark()
    host.tick()
    assert numbers[1] not in host.entries("o/r1") and len(host.entries("o/r1")) == 249
    assert gh.counted(since=mark) == 1  # the query's list of recently closed requests says it left


def test_a_quiet_list_keeps_its_stored_part_whole_and_a_graphql_part_is_rebuilt() -> None:
    """A 304 on the first page stands for the stored part as the last REST list wrote it — not decoded,
    not re-parsed; a part the GraphQL query wrote (its inputs: mergeability moves no ETag) is not."""
    from git_sluice.intake.hostwatch import _from_rest, _listed_times

    rest = {"items": [{"number": 1, "updated_at": "u1", "labels": ["x"], "inputs": None},
                      {"number": 2, "updated_at": "u2", "labels": [], "inputs": None}]}
    assert _from_rest(rest) and list(_listed_times(rest)) == [(1, "u1"), (2, "u2")]
    graphql = {"items": [{"number": 1, "updated_at": "u1", "labels": None, "inputs": ["APPROVED", None, "MERGEABLE"]}]}
    assert not _from_rest(graphql)
    assert not _from_rest({"items": "garbage"}) and list(_listed_times({"items": [{"number": True}, "x"]})) == []


def test_quiet_ticks_leave_the_stored_list_as_it_was(host_factory, github) -> None:
    gh = github.gh
    for i in range(3):
        ready_pr(gh, "o/r1", f"feat-{i}")
    gh.add_label("o/r1", 1, "urgent")
    host = host_factory(("o/r1",))
    host.tick()
    host.next_tick()
    host.tick()
    before = answers(host)["repos"]["o/r1"]["bases"]["main"]
    host.next_tick()
    mark = gh.mark()
    host.tick()
    after = answers(host)["repos"]["o/r1"]["bases"]["main"]
    assert [c.status for c in gh.calls(since=mark, path=r"/pulls\?")] == [304]
    assert after["items"] == before["items"] and after["changed_tick"] == before["changed_tick"]
    assert after["asked_tick"] == before["asked_tick"] + 1
    assert host.entries("o/r1")[1].labels == ("urgent",)


def test_a_one_shot_intake_ticks_the_host_watch_and_its_quiet_rounds_ask_one_list(host_factory, github) -> None:
    """A host that runs no driver (a cron job's `git sluice intake`): its round ticks the watch when it
    would ask GitHub, and reads the watch's answers — one conditional list and the waiting heads on
    their back-off, not its own list and two probes per waiting head."""
    gh = github.gh
    ready_pr(gh, "o/r1", "done")
    pending = pending_pr(gh, "o/r1", "slow")
    failing_pr(gh, "o/r1", "red", finished_ago=3_600)
    host = host_factory(("o/r1",))
    session = host.sessions["o/r1"]
    (first,) = run_rounds(session, reason="intake", fetch=False)
    assert first.outcome == "taken-in" and len(host.entries("o/r1")) == 3
    assert answers(host)["repos"]["o/r1"]["bases"]["main"]["items"]  # the watch ticked for the host
    for _ in range(3):
        host.next_tick()
        mark = gh.mark()
        (report,) = run_rounds(session, reason="intake", fetch=False)
        calls = gh.calls(since=mark)
        assert gh.counted(since=mark) == 0, [(c.path, c.status, c.counted) for c in calls]
        assert len(gh.calls(since=mark, path=r"/pulls\?")) == 1  # the watch's list, a 304
        assert len(gh.calls(since=mark, path="check-runs")) <= 1  # the pending head; the old failure rests
        assert len(calls) <= 2, [(c.path, c.status) for c in calls]
    assert host.entries("o/r1")[pending].state == "waiting"
    # ten minutes within the interval: the clone's own discovery clock, no tick, no call
    mark = gh.mark()
    (again,) = run_rounds(session, reason="intake", fetch=False)
    assert again.outcome == "within-interval" and gh.requests(since=mark) == 0


def test_the_answers_are_parsed_again_only_when_the_file_changed(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A round peeks at the answers three times (due? joining? its view): one parse while they stand (issue 15)."""
    from git_sluice.intake.watchstore import Answers
    from git_sluice.statefile import JsonDocument

    answers = Answers(tmp_path)
    assert answers.peek() == {}  # absent: empty, and nothing kept
    answers.write({"tick": 1, "repos": {"o/r": {"mode": "rest"}}})
    parses: list[int] = []
    real = JsonDocument.read

    def counted(doc: JsonDocument) -> dict[str, object]:
        parses.append(1)
        return real(doc)

    monkeypatch.setattr(JsonDocument, "read", counted)
    assert [answers.peek()["tick"] for _ in range(3)] == [1, 1, 1] and parses == []  # what it wrote: no parse
    fresh = answers.read()  # the tick's own read: a copy it may change, never the peeked one
    fresh["tick"] = 99
    assert answers.peek()["tick"] == 1 and len(parses) == 1
    other = Answers(tmp_path)  # another process of the host: one parse, then none while the file stands
    assert [other.peek()["tick"] for _ in range(3)] == [1, 1, 1] and len(parses) == 2
    answers.write({"tick": 2})
    assert answers.peek() == {"tick": 2} and other.peek() == {"tick": 2} and len(parses) == 3
    (tmp_path / "answers.json").write_text("{not json")
    assert answers.peek() == {}  # corrupt: discarded, as every state file is


def _quiet_host(host_factory, github):  # type: ignore[no-untyped-def]
    """Three ready requests and one waiting on its checks, taken in and baselined: the next ticks move nothing."""
    gh = github.gh
    for i in range(3):
        ready_pr(gh, "o/r1", f"feat-{i}")
    waiting = pending_pr(gh, "o/r1", "slow")
    host = host_factory(("o/r1",))
    for _ in range(3):
        host.tick()
        host.next_tick()
    return host, waiting


def _last_round(host: Host) -> dict:
    return json.loads((host.sessions["o/r1"].repo.sluice_dir / "rounds.json").read_text())["main"]


def test_ticks_that_move_nothing_leave_the_queue_file_as_it_was_and_say_it_was_read(
    host_factory, github, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15: a quiet round parses, compares and writes no entry (its cost does not grow with the
    queue); the queue reads as read now all the same, and what reached GitHub is the tick's 304s."""
    from git_sluice.intake import queue as queue_module
    from git_sluice.intake import watchstore

    host, waiting = _quiet_host(host_factory, github)
    store = QueueStore(host.sessions["o/r1"].repo.sluice_dir)
    path = store.path_for("main")
    parsed: list[int] = []
    for module, name in ((queue_module.Entry, "from_json"), (watchstore, "item_of")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, **k: parsed.append(1) or _real(*a, **k))
    for _ in range(3):
        before, stat = path.read_bytes(), path.stat()
        mark = github.gh.mark()
        parsed.clear()
        host.tick()
        assert parsed == [], "a quiet round parsed entries or listed requests"
        assert path.read_bytes() == before and (path.stat().st_ino, path.stat().st_mtime_ns) == (
            stat.st_ino, stat.st_mtime_ns)
        report = _last_round(host)
        assert report["outcome"] == "taken-in" and "nothing moved" in report["why"] and report["open"] == 4
        calls = github.gh.calls(since=mark)
        assert all(c.status == 304 for c in calls) and github.gh.counted(since=mark) == 0, [
            (c.path, c.status) for c in calls]
        assert store.load("main").read_at == int(github.clock.time())
        host.next_tick()
    assert host.entries("o/r1")[waiting].state == "waiting"
    # its checks finish: the tick sees the head move, the round compares and reads it, then stands again
    gh = github.gh
    gh.add_check_run("o/r1", gh.pr("o/r1", waiting).head_sha, "ci", status="completed", conclusion="success")
    host.tick()
    assert host.entries("o/r1")[waiting].state == "ready" and "nothing moved" not in _last_round(host)["why"]
    host.next_tick()
    host.tick()
    assert "nothing moved" in _last_round(host)["why"]


def test_a_queue_written_by_anyone_else_since_is_compared_again(host_factory, github) -> None:
    """A withdrawal, a round that listed for itself, an older version: the file is no longer the one the
    standing names, and the next quiet tick compares in full, putting back what the watch's list says."""
    from git_sluice.intake.queue import QueueDoc

    host, _waiting = _quiet_host(host_factory, github)
    store = QueueStore(host.sessions["o/r1"].repo.sluice_dir)
    doc = store.load("main")
    store.save(QueueDoc(repository=doc.repository, branch="main", holder=doc.holder, read_at=doc.read_at,
                        entries={}, withdrawn_by="host-b"))
    host.tick()
    assert len(host.entries("o/r1")) == 4 and store.load("main").withdrawn_by is None
    assert "nothing moved" not in _last_round(host)["why"]


def test_heads_the_registry_forgot_are_noted_again_before_the_queue_may_stand(host_factory, github) -> None:
    """Were the clone's waiting heads gone from the registry, no tick would watch them and a standing
    queue would wait on checks nobody asks: the round compares, which notes them again."""
    host, waiting = _quiet_host(host_factory, github)
    (registry,) = (host_state_dir() / "watch").glob("registry.json")
    data = json.loads(registry.read_text())
    for entry in data["clones"].values():
        entry["heads"] = {}
    registry.write_text(json.dumps(data))
    host.tick()
    assert "nothing moved" not in _last_round(host)["why"]
    heads = [h for e in json.loads(registry.read_text())["clones"].values() for h in e["heads"].get("main", [])]
    assert [h["number"] for h in heads] == [waiting]
    host.next_tick()
    host.tick()
    assert "nothing moved" in _last_round(host)["why"]


def test_a_mergeability_still_unknown_keeps_the_queue_from_standing(host_factory, github) -> None:
    """A request GitHub has not computed the mergeability of is read again each tick, as before the
    standing: the take-in that saw it unknown leaves nothing for a quiet round to stand on."""
    gh = github.gh
    ready_pr(gh, "o/r1", "feat")
    n = gh.open_pr("o/r1", head_ref="fresh")
    gh.add_check_run("o/r1", gh.pr("o/r1", n).head_sha, "ci", status="completed", conclusion="success")
    gh.set_mergeable("o/r1", n, "UNKNOWN")
    host = host_factory(("o/r1",))
    for _ in range(3):
        host.tick()
        host.next_tick()
    mark = gh.mark()
    host.tick()
    assert "nothing moved" not in _last_round(host)["why"]
    assert len(gh.calls(since=mark, resource="graphql")) == 1  # read again, for its mergeability


def test_a_quiet_repository_asks_a_handful_of_waiting_heads_by_rest_and_more_by_one_rollup_query(
    host_factory, github
) -> None:
    """On REST (its list answers 304), up to four due heads cost a free conditional GET each; past that,
    their rollups ride in one GraphQL query (one point, one call), not one call a head: 12 heads, 2 calls."""
    gh = github.gh
    few = [pending_pr(gh, "o/r1", f"slow-{i}") for i in range(3)]
    many = [pending_pr(gh, "o/r2", f"slow-{i}") for i in range(12)]
    host = host_factory(("o/r1", "o/r2"))
    host.tick()
    host.next_tick()
    host.tick()
    for _ in range(3):
        host.next_tick()
        mark = gh.mark()
        host.tick()
        r1 = gh.calls(since=mark, path="/repos/o/r1/")
        assert len(r1) == 1 + len(few) and all(c.status == 304 for c in r1)  # the list, a check-runs GET each
        assert gh.calls(since=mark, path="/repos/o/r2/commits") == []
        assert len(gh.calls(since=mark)) == 2 + 1 + len(few)  # two lists, one rollup query, r1's heads
        assert gh.counted(since=mark) == 1
    n = many[5]
    gh.add_check_run("o/r2", gh.pr("o/r2", n).head_sha, "ci", status="completed", conclusion="failure")
    host.next_tick()
    host.tick()
    assert host.entries("o/r2")[n].state == "blocked" and host.entries("o/r2")[many[0]].state == "waiting"


@pytest.mark.slow(seconds=25)
def test_a_busy_repository_of_300_requests_half_waiting_costs_a_point_and_a_call_a_tick(host_factory, github) -> None:
    """A push and a review every tick, 150 heads waiting on checks: what moved is found by one query,
    most recently updated first, and the heads' rollups ride in it (issue 29: 6 units and 155 calls)."""
    gh = github.gh
    waiting = [pending_pr(gh, "o/r1", f"slow-{i}") for i in range(150)]
    ready = [ready_pr(gh, "o/r1", f"feat-{i}") for i in range(150)]
    host = host_factory(("o/r1",))
    host.tick()
    for t in range(12):
        unrelated_activity(gh, ("o/r1",), t)
        pushed = ready[t]
        gh.push_pr("o/r1", pushed)
        gh.review("o/r1", waiting[t], "carol", "CHANGES_REQUESTED")
        if t == 8:
            gh.add_check_run("o/r1", gh.pr("o/r1", waiting[100]).head_sha, "ci", status="completed",
                             conclusion="success")
            gh.merge_pr("o/r1", ready[100])
        host.next_tick()
        mark = gh.mark()
        host.tick()
        if t >= 3:
            assert gh.counted(since=mark) <= 1 and len(gh.calls(since=mark)) <= 1, [
                (c.method, c.path, c.status, c.cost) for c in gh.calls(since=mark)]
        entries = host.entries("o/r1")
        assert entries[waiting[t]].state == "blocked" and entries[pushed].head_sha == gh.pr("o/r1", pushed).head_sha
    entries = host.entries("o/r1")
    assert ready[100] not in entries and len(entries) == 299
    assert entries[waiting[100]].checks_state == "SUCCESS"
    assert answers(host)["repos"]["o/r1"]["mode"] == "graphql"
