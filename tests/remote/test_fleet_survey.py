"""The fleet's survey across hosts (issue 29): the lease holder's watch reads a base for the fleet and
publishes what it found as ``refs/sluice/survey/<group>/<base>``; every other host shows the same
queue from it, asking GitHub nothing. Three clones, three host state dirs, one bare remote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from git_sluice.commands.queue import read_queues
from git_sluice.commands.drive import drive
from git_sluice.intake.queue import QueueStore, to_document

from tests.remote.test_fleet_roles import REPO, Fleet, fleet_factory, git, ready_pr  # noqa: F401 (the fixture)

HOSTS = ("host-a", "host-b", "host-c")


def waiting_pr(fleet: Fleet, head: str) -> int:
    n = fleet.gh.open_pr(REPO, head_ref=head)
    fleet.gh.add_check_run(REPO, fleet.gh.pr(REPO, n).head_sha, "ci", status="in_progress")
    return n


def queue_of(fleet: Fleet, name: str) -> dict[str, Any]:
    """``git sluice queue --json``'s document of the host's clone, without the times a host reads at."""
    doc = to_document(read_queues(str(fleet.hosts[name].path), ["main"])[0])
    for entry in doc["entries"]:
        for key in [k for k in entry if k.endswith("_at") and k != "updated_at"]:
            del entry[key]
    return {k: v for k, v in doc.items() if not k.endswith("_at")}


def ticks(fleet: Fleet, sessions: dict[str, Any], count: int, activity: bool = True) -> None:
    """``count`` discovery intervals: unrelated activity on the repository, then each host's driver."""
    for _ in range(count):
        if activity:
            fleet.gh.star(REPO)  # every list page's ETag moves: the list answers 200, counted
            fleet.gh.push_branch(REPO, "docs")
        for name in HOSTS:
            drive(sessions[name], max_ticks=1, let_go=False)
        fleet.clock.advance(60)  # type: ignore[attr-defined]


def test_three_hosts_under_unrelated_activity_pay_one_unit_a_tick_and_show_one_queue(fleet_factory) -> None:
    fleet = fleet_factory(HOSTS)
    ready = [ready_pr(fleet.gh, f"r{i}") for i in range(3)]
    waiting = [waiting_pr(fleet, f"w{i}") for i in range(2)]
    sessions = {name: fleet.session(name) for name in HOSTS}
    for session in sessions.values():
        assert session.forge.pool  # learn the pool (GET /user) first
    ticks(fleet, sessions, 3)  # the holder takes the lease, reads every request once, churn moves it to GraphQL
    holder = fleet.holder().holder
    mark = fleet.gh.mark()
    ticks(fleet, sessions, 6)
    # the fleet pays its holder's watch: one unit a tick (the GraphQL query), however many hosts follow
    assert fleet.gh.counted(since=mark) <= 6, fleet.gh.ledger[mark:]
    for name in HOSTS:
        if name != holder:
            assert fleet.calls_by(name, since=mark) == [], f"{name} called GitHub while {holder} held the lease"
    queues = {name: queue_of(fleet, name) for name in HOSTS}
    assert sorted(e["number"] for e in queues[holder]["entries"]) == sorted(ready + waiting)
    for name in HOSTS:
        assert queues[name] == queues[holder], name
        assert queues[name]["holder"] == holder
    # a review on the holder's base reaches every host's queue within a tick, still without their calls
    fleet.gh.review(REPO, waiting[0], "carol", "CHANGES_REQUESTED")
    mark = fleet.gh.mark()
    ticks(fleet, sessions, 1, activity=False)
    for name in HOSTS:
        entry = next(e for e in queue_of(fleet, name)["entries"] if e["number"] == waiting[0])
        assert entry["review_decision"] == "CHANGES_REQUESTED" and entry["state"] == "blocked", name
        if name != holder:
            assert fleet.calls_by(name, since=mark) == []


def test_a_survey_in_the_holders_name_forged_by_another_is_not_taken_past_the_holders_next_tick(
    fleet_factory,
) -> None:
    """Anyone who can push can write a survey: a mirror shows it only while it names the holder, and
    the holder writes its own again at its next tick whatever stands there."""
    fleet = fleet_factory(HOSTS[:2], lease="5m")
    n = ready_pr(fleet.gh, "r0")
    sessions = {name: fleet.session(name) for name in HOSTS[:2]}
    for session in sessions.values():
        assert session.forge.pool
    for _ in range(2):
        for name in HOSTS[:2]:
            drive(sessions[name], max_ticks=1, let_go=False)
        fleet.clock.advance(60)  # type: ignore[attr-defined]
    holder = fleet.holder().holder
    mirror = next(name for name in HOSTS[:2] if name != holder)
    path = fleet.hosts[mirror].path
    ref = f"refs/sluice/survey/{sessions[holder].forge.pool}/main"
    oid = git("rev-parse", ref, cwd=path)
    survey = json.loads(git("cat-file", "-p", f"{oid}:survey.json", cwd=path))
    survey["items"], survey["readings"] = [], {}  # "nothing is open"
    blob = subprocess.run(["git", "-C", str(path), "hash-object", "-w", "--stdin"], input=json.dumps(survey),
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "-C", str(path), "mktree"], input=f"100644 blob {blob}\tsurvey.json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    forged = git("commit-tree", tree, "-m", "forged", cwd=path)
    git("push", "-q", "--no-verify", "origin", f"+{forged}:{ref}", cwd=path)
    # the mirror alone ticks: it takes the forgery (it names the holder) — the one interval it may cost
    fleet.gh.push_branch(REPO, "docs")
    fleet.clock.advance(60)  # type: ignore[attr-defined]
    state = drive(sessions[mirror], max_ticks=1, let_go=False)
    assert queue_of(fleet, mirror)["entries"] == [], state.rounds
    # the holder's next tick writes its own back (the remote holds something else), the mirror's shows it
    fleet.clock.advance(60)  # type: ignore[attr-defined]
    for name in (holder, mirror):
        drive(sessions[name], max_ticks=1, let_go=False)
    assert [e["number"] for e in queue_of(fleet, mirror)["entries"]] == [n]
    assert queue_of(fleet, mirror) == queue_of(fleet, holder)


def test_garbage_where_a_survey_goes_is_reported_and_the_mirror_withdraws_as_before(fleet_factory, caplog) -> None:
    fleet = fleet_factory(HOSTS[:2])
    ready_pr(fleet.gh, "r0")
    sessions = {name: fleet.session(name) for name in HOSTS[:2]}
    for session in sessions.values():
        assert session.forge.pool
    drive(sessions["host-a"], max_ticks=1, let_go=False)
    assert fleet.holder().holder == "host-a"
    ref = f"refs/sluice/survey/{sessions['host-a'].forge.pool}/main"
    path = fleet.hosts["host-a"].path
    garbage = git("commit-tree", git("write-tree", cwd=path), "-m", "not a survey", cwd=path)
    git("push", "-q", "--no-verify", "origin", f"+{garbage}:{ref}", cwd=path)
    mark = fleet.gh.mark()
    drive(sessions["host-b"], max_ticks=1, let_go=False)
    assert fleet.calls_by("host-b", since=mark) == []
    doc = QueueStore(fleet.hosts["host-b"].repo.sluice_dir).load("main")
    assert doc.entries == {} and doc.withdrawn_by == "host-a"
    assert "is not a survey" in caplog.text


def test_the_holders_renewal_rides_its_survey_push_so_the_fleet_pushes_once_a_tick(fleet_factory, monkeypatch) -> None:
    """Issue 29: at most about one push a minute per repository for the whole fleet. The lease holder
    renews a third of its lease after its last write; when its survey goes at the end of a tick, the
    renewal coming due before the next tick rides in it, and that tick pushes nothing of its own."""
    from git_sluice.remote.git import RemoteGit

    fleet = fleet_factory(HOSTS, lease="180s")  # the driver ticks every 60 s, a third of the lease
    waiting = [waiting_pr(fleet, f"w{i}") for i in range(2)]
    sessions = {name: fleet.session(name) for name in HOSTS}
    for session in sessions.values():
        assert session.forge.pool
    ticks(fleet, sessions, 3)
    pushes: list[tuple[str, ...]] = []
    real = RemoteGit.push_cas

    def counted(self: RemoteGit, updates: Any) -> Any:
        pushes.append(tuple(u.ref for u in updates))
        return real(self, updates)

    monkeypatch.setattr(RemoteGit, "push_cas", counted)
    for k in range(6):
        fleet.gh.review(REPO, waiting[k % 2], "carol", "COMMENTED")  # the survey moves every tick
        ticks(fleet, sessions, 1)
    # every tick's survey went, and every push of the fleet was the holder's one push of that tick
    assert len(pushes) == 6, pushes
    assert all(any(r.startswith("refs/sluice/survey/") for r in refs) for refs in pushes), pushes
    assert sum(any(r.startswith("refs/sluice/intake/") for r in refs) for refs in pushes) >= 2, pushes
    record = fleet.holder()
    assert record.holder in HOSTS and record.renewal >= 3  # renewed every tick or every other: never lapsed


def test_a_hook_round_for_a_pushed_request_head_takes_the_hosts_look_of_this_tick(fleet_factory, monkeypatch) -> None:
    """Issue 29: one look at the remote per host and tick. A round for a push to a request's head needs
    the leases and notes its host's driver looked at this tick; a round without ``share`` fetches."""
    from git_sluice.commands.hook_round import shares_look
    from git_sluice.commands.intake import run_rounds
    from git_sluice.remote.git import RemoteGit

    fleet = fleet_factory(("host-a",), lease="180s")
    ready_pr(fleet.gh, "r0")
    session = fleet.session("host-a")
    drive(session, max_ticks=1, let_go=False)
    fetches: list[str] = []
    real = RemoteGit.fetch

    def counted(self: RemoteGit, *extra: str) -> None:
        fetches.append(" ".join(extra))
        real(self, *extra)

    monkeypatch.setattr(RemoteGit, "fetch", counted)
    fleet.clock.advance(20)  # type: ignore[attr-defined]
    run_rounds(session, reason="push", fetch=True, pushed=frozenset({"r0"}), share=60.0)
    assert fetches == []
    run_rounds(session, reason="push", fetch=True, pushed=frozenset({"r0"}))
    assert len(fetches) == 1
    assert shares_look(["push request head refs/heads/r0 to origin"], "origin")
    assert not shares_look(["push request head refs/heads/r0 to origin", "push refs/heads/main to /srv/r.git"],
                           "origin")
    assert not shares_look([], "origin")
