"""The host watch against the GitHub double and real git: clones of several repositories on one host
(one state dir), their drivers ticking together; what reached GitHub is read from the double's ledger.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_sluice.commands.roles import drive
from git_sluice.commands.session import Session, open_session
from git_sluice.commands.step import run_rounds
from git_sluice.double.testing import ServedDouble
from git_sluice.intake.queue import QueueStore
from git_sluice.paths import host_state_dir
from tests.gitutil import git, make_clone

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


def failing_pr(gh, repo: str, head: str) -> int:
    n = gh.open_pr(repo, head_ref=head)
    gh.review(repo, n, "bob", "APPROVED")
    gh.set_mergeable(repo, n, "MERGEABLE")
    gh.add_check_run(repo, gh.pr(repo, n).head_sha, "ci", status="completed", conclusion="failure")
    return n


class Host:
    """Clones of several repositories on one host: one state dir, one token, a driver each."""

    def __init__(self, tmp_path: Path, github: ServedDouble, repos: tuple[str, ...]) -> None:
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
        """One driver tick of every clone, in turn (the first to come ticks the watch for all)."""
        for repo, session in self.sessions.items():
            if only is None or repo in only:
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

    def make(repos: tuple[str, ...] = REPOS) -> Host:
        host = Host(tmp_path, github, repos)
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
    host = host_factory()
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
    for t in range(3):
        host.tick()
        unrelated_activity(gh, ("o/r1",), t)
        host.next_tick()
    host.tick()
    assert answers(host)["repos"]["o/r1"]["mode"] == "graphql"
    gh.add_check_run("o/r1", gh.pr("o/r1", n).head_sha, "ci", status="completed", conclusion="success")
    unrelated_activity(gh, ("o/r1",), 50)
    host.next_tick()
    mark = gh.mark()
    host.tick()
    assert host.entries("o/r1")[n].state == "ready"
    assert gh.counted(since=mark, resource="core") == 0
    assert len(gh.calls(since=mark, resource="graphql")) == 2  # the watch's query, the clone's reading


def test_a_churning_repository_goes_back_to_rest_once_it_is_quiet(host_factory, github) -> None:
    gh = github.gh
    ready_pr(gh, "o/r1", "feat")
    host = host_factory(("o/r1",))
    for t in range(3):
        host.tick()
        unrelated_activity(gh, ("o/r1",), t)
        host.next_tick()
    host.tick()
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
    host = host_factory(("o/r1",))
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
