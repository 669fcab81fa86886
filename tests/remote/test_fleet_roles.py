"""The roles across hosts: separate clones, each with its own sluice.host and host state, one bare remote.

What reached GitHub is read from the double's ledger; who held a lease is read from the remote.
Each host has its own token (all alice's, so one pool) so the ledger says which host called.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from git_sluice.clock import FakeClock, FileClock
from git_sluice.double import GitHubDouble, serve
from git_sluice.errors import AllowanceSpent
from git_sluice.forge.hoststore import HostStore
from git_sluice.intake.queue import QueueStore
from git_sluice.commands.intake import run_rounds
from git_sluice.remote.lease_record import LeaseRecord
from git_sluice.commands.drive import drive
from git_sluice.commands.wait import wait_for
from git_sluice.runtime.stopper import Stopper
from git_sluice.runtime.session import Session, fetch_and_adopt, open_session

from tests.remote.conftest import Host, SkewedClock
from tests.remote.conftest import git as _git


def git(*args: str, cwd: Path | None = None) -> str:
    return _git(*args, cwd=cwd).strip()

REPO = "o/r"


def token_of(name: str) -> str:
    return f"tok-{name}"


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class Fleet:
    gh: GitHubDouble
    url: str
    clock: object
    hosts: dict[str, Host]
    sessions: list[Session]

    def session(self, name: str, clock: object | None = None) -> Session:
        host = self.hosts[name]
        os.environ["GH_TOKEN"] = token_of(name)
        clock = clock or self.clock
        store = HostStore(host.path.parent.parent / "state" / name / "host.sqlite3", clock=clock)  # type: ignore[arg-type]
        session = open_session(host.path, clock=clock, store=store)  # type: ignore[arg-type]
        session.closers.append(store.close)
        self.sessions.append(session)
        return session

    def calls_by(self, name: str, since: int = 0) -> list:
        digest = sha(token_of(name))
        return [c for c in self.gh.ledger[since:] if c.token_sha == digest]

    def holder(self, branch: str = "main") -> LeaseRecord | None:
        host = next(iter(self.hosts.values()))
        out = subprocess.run(["git", "-C", str(host.path), "ls-remote", "origin", f"refs/sluice/intake/{branch}"],
                             capture_output=True, text=True, check=True).stdout.split()
        if not out:
            return None
        # into a namespace of the test's own: the host's driver updates refs/sluice/* in this clone at the
        # same moment, and two fetches of one ref race for its lock ("cannot lock ref")
        git("fetch", "-q", "origin", "+refs/sluice/*:refs/observer/sluice/*", cwd=host.path)
        message = git("log", "-1", "--format=%B", out[0], cwd=host.path)
        return LeaseRecord.parse(message)


@pytest.fixture
def fleet_factory(make_host: Callable[..., Host], monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Fleet]]:
    fleets: list[Fleet] = []
    stack: list = []

    def make(names: tuple[str, ...], *, url: str | None = None, clock: object | None = None,
             lease: str = "60s", discovery: str = "60s") -> Fleet:
        clock = clock or FakeClock()
        gh = GitHubDouble(clock=clock)  # type: ignore[arg-type]
        gh.add_user("alice")
        for name in names:
            gh.add_token(token_of(name), user="alice")
        gh.add_repo(REPO)
        server_cm = serve(gh)
        server = server_cm.__enter__()
        stack.append(server_cm)
        hosts = {}
        for name in names:
            host = make_host(name, url)
            for key, value in (("sluice.api", server.url), ("sluice.repository", REPO),
                               ("sluice.lease", lease), ("sluice.discovery", discovery)):
                git("config", key, value, cwd=host.path)
            hosts[name] = host
        fleet = Fleet(gh, server.url, clock, hosts, [])
        fleets.append(fleet)
        return fleet

    monkeypatch.setenv("GH_TOKEN", "unset")
    yield make
    for fleet in fleets:
        for session in fleet.sessions:
            session.close()
    for cm in stack:
        cm.__exit__(None, None, None)


def ready_pr(gh: GitHubDouble, head: str) -> int:
    n = gh.open_pr(REPO, head_ref=head)
    sha_ = gh.pr(REPO, n).head_sha
    gh.add_check_run(REPO, sha_, "ci", status="completed", conclusion="success")
    gh.review(REPO, n, "bob", "APPROVED")
    gh.set_mergeable(REPO, n, "MERGEABLE")
    return n


def test_three_drivers_started_at_once_exactly_one_holds(fleet_factory, url_for: str) -> None:
    fleet = fleet_factory(("host-a", "host-b", "host-c"), url=url_for)
    for i in range(3):
        ready_pr(fleet.gh, f"f{i}")
    sessions = {name: fleet.session(name) for name in fleet.hosts}
    for session in sessions.values():
        assert session.forge.pool  # learn the pool (GET /user) before the race
    mark = fleet.gh.mark()
    barrier = threading.Barrier(3)
    states: dict[str, object] = {}
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            barrier.wait()
            states[name] = drive(sessions[name], max_ticks=1, let_go=False)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    record = fleet.holder()
    assert record is not None and record.role == "driver"
    winner = record.holder
    for name in sessions:
        called = fleet.calls_by(name, since=mark)
        doc = QueueStore(fleet.hosts[name].repo.sluice_dir).load("main")
        if name == winner:
            assert called and sorted(doc.entries) == [1, 2, 3]
        else:
            assert called == [], f"{name} called GitHub while {winner} held the lease"
            # A loser whose round came before the winner's answers withdrew its entries in the
            # winner's name; one that came after mirrors the fleet's reading (issue 29), no call.
            if doc.entries:
                assert set(doc.entries) <= {1, 2, 3} and doc.holder == winner and doc.withdrawn_by is None
            else:
                assert doc.withdrawn_by == winner


def test_kill_9_of_the_holder_is_taken_over_after_one_lease_by_observation_even_with_a_wrong_clock(
    fleet_factory, tmp_path: Path
) -> None:
    clock_file = tmp_path / "clock"
    clock = FileClock(clock_file, start=1_800_000_000.0)
    fleet = fleet_factory(("host-a", "host-b"), clock=clock, lease="60s", discovery="60s")
    a = fleet.hosts["host-a"]
    env = dict(a.env, GH_TOKEN=token_of("host-a"), GIT_SLUICE_TEST_CLOCK=str(clock_file))
    proc = subprocess.Popen([sys.executable, "-m", "git_sluice", "drive"], cwd=a.path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            record = fleet.holder()
            if record is not None:
                break
            time.sleep(0.1)
        assert record is not None and record.holder == "host-a", proc.stderr
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # host-b's clock is an hour wrong: it must still wait a whole lease of its OWN observation
    b_clock = SkewedClock(clock, offset=3600.0)  # type: ignore[arg-type]
    b = fleet.session("host-b", clock=b_clock)
    drive(b, max_ticks=1, let_go=False)
    assert fleet.holder().holder == "host-a"  # just seen: deferred
    clock.advance(40)
    drive(b, max_ticks=1, let_go=False)
    assert fleet.holder().holder == "host-a"  # 40 s of 60 observed: still deferred
    clock.advance(25)
    drive(b, max_ticks=1, let_go=False)
    record = fleet.holder()
    assert record is not None and record.holder == "host-b" and record.role == "driver"


def test_a_throttle_on_a_pauses_b_through_the_note_and_one_probe_goes_at_until(fleet_factory) -> None:
    fleet = fleet_factory(("host-a", "host-b"))
    gh = fleet.gh
    ready_pr(gh, "x")
    a, b = fleet.session("host-a"), fleet.session("host-b")
    assert a.forge.pool == b.forge.pool
    gh.fault("secondary", path="pulls", times=1, retry_after=300)
    with pytest.raises(AllowanceSpent) as caught:
        run_rounds(a)
    until = caught.value.until
    fetch_and_adopt(b)
    mark = gh.mark()
    for path in ("repos/o/r/pulls", "repos/o/r", "user"):
        with pytest.raises(AllowanceSpent):
            b.forge.get(path)
    assert gh.requests(since=mark) == 0
    fleet.clock.set(until + 1)  # type: ignore[attr-defined]
    mark = gh.mark()
    gh.fault("hang", path=r"/repos/o/r$", times=1, seconds=60.0)
    probe_errors: list[BaseException] = []

    def probe_call() -> None:
        try:
            a.forge.get("repos/o/r")
        except BaseException as exc:  # noqa: BLE001
            probe_errors.append(exc)

    probe = threading.Thread(target=probe_call)
    probe.start()
    deadline = time.monotonic() + 30
    while not any(gh.secondary.in_flight.values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(AllowanceSpent):
        b.forge.get("repos/o/r")  # host-a's claim is on the note: host-b holds its call
    gh.clear_faults()
    probe.join(timeout=30)
    assert not probe_errors, probe_errors
    assert gh.requests(since=mark) == 1, gh.ledger[mark:]
    assert fleet.calls_by("host-a", since=mark), (gh.ledger[mark:], sha(token_of("host-a")))
    assert not fleet.calls_by("host-b", since=mark)
    fetch_and_adopt(b)
    assert git("for-each-ref", "refs/sluice/pause", cwd=fleet.hosts["host-b"].path) == ""


class SteppedClock:
    """A clock whose sleeps wait for the test's word, so a role's loop runs one step at a time."""

    def __init__(self, base: FakeClock) -> None:
        self.base = base
        self.go = threading.Semaphore(0)
        self.sleeping = threading.Event()

    def time(self) -> float:
        return self.base.time()

    def monotonic(self) -> float:
        return self.base.monotonic()

    def sleep(self, seconds: float) -> None:
        self.sleeping.set()
        self.go.acquire()
        self.sleeping.clear()
        self.base.sleep(seconds)

    def step(self) -> None:
        assert self.sleeping.wait(30), "the role never slept"
        self.sleeping.clear()
        self.go.release()


def test_a_wait_takes_the_mark_where_no_driver_lives_and_a_driver_takes_it_at_once(fleet_factory) -> None:
    fleet = fleet_factory(("host-a", "host-b"))
    gh = fleet.gh
    n = gh.open_pr(REPO, head_ref="slow")  # review required: waiting
    clock = fleet.clock
    stepped = SteppedClock(clock)  # type: ignore[arg-type]
    b = fleet.session("host-b", clock=stepped)
    result: dict[str, object] = {}

    def run() -> None:
        try:
            result["wait"] = wait_for(b, n, timeout=3600)
        except BaseException as exc:  # noqa: BLE001
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    assert stepped.sleeping.wait(60)
    record = fleet.holder()
    assert record is not None and record.holder == "host-b" and record.role == "wait"
    # a driver arrives on host-a: it takes the wait's mark at once
    a = fleet.session("host-a")
    drive(a, max_ticks=1, let_go=False)
    record = fleet.holder()
    assert record.holder == "host-a" and record.role == "driver"
    gh.review(REPO, n, "carol", "APPROVED")
    gh.set_mergeable(REPO, n, "MERGEABLE")
    deadline = time.monotonic() + 60
    while thread.is_alive() and time.monotonic() < deadline:
        if stepped.sleeping.wait(0.2):
            stepped.step()  # one sleep of the wait's loop (at most a second of its clock)
    thread.join(timeout=30)
    assert "error" not in result, result
    outcome = result["wait"]
    assert outcome.outcome == "ready" and outcome.exit_code == 0  # type: ignore[attr-defined]
    assert fleet.holder().holder == "host-a"  # the wait let go of nothing that was not its own


def test_a_wait_lets_go_of_its_mark_when_it_ends(fleet_factory) -> None:
    fleet = fleet_factory(("host-b",))
    n = ready_pr(fleet.gh, "done")
    b = fleet.session("host-b")
    result = wait_for(b, n, timeout=600)
    assert result.outcome == "ready"
    assert fleet.holder() is None


def test_garbage_on_the_lease_ref_is_reported_and_taken_over_after_one_lease(fleet_factory) -> None:
    fleet = fleet_factory(("host-a",), lease="60s")
    host = fleet.hosts["host-a"]
    tree = git("hash-object", "-t", "tree", "-w", "/dev/null", cwd=host.path)
    garbage = git("commit-tree", tree, "-m", "not a lease record at all", cwd=host.path)
    git("push", "-q", "origin", f"{garbage}:refs/sluice/intake/main", cwd=host.path)
    git("fetch", "-q", "origin", "+refs/sluice/intake/*:refs/sluice/intake/*", cwd=host.path)  # as a round does
    env = dict(host.env, GH_TOKEN=token_of("host-a"))
    for args in (["lease"], ["lease", "--json"], ["status"], ["status", "--json"]):
        done = subprocess.run([sys.executable, "-m", "git_sluice", *args], cwd=host.path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "garbage" in done.stdout
    a = fleet.session("host-a")
    drive(a, max_ticks=1, let_go=False)
    assert fleet.holder() is None  # still the garbage mark (not a record)
    fleet.clock.advance(61)  # type: ignore[attr-defined]
    drive(a, max_ticks=1, let_go=False)
    record = fleet.holder()
    assert record is not None and record.holder == "host-a"


def test_a_driver_lets_go_on_sigterm(fleet_factory, tmp_path: Path) -> None:
    clock_file = tmp_path / "clock"
    clock = FileClock(clock_file, start=1_800_000_000.0)
    fleet = fleet_factory(("host-a",), clock=clock)
    a = fleet.hosts["host-a"]
    env = dict(a.env, GH_TOKEN=token_of("host-a"), GIT_SLUICE_TEST_CLOCK=str(clock_file))
    proc = subprocess.Popen([sys.executable, "-m", "git_sluice", "drive"], cwd=a.path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while fleet.holder() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fleet.holder() is not None
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert fleet.holder() is None


class ScriptedClock(FakeClock):
    """A fake clock whose sleeps run what the script says happens on GitHub meanwhile."""

    def __init__(self, script: Callable[[float], None]) -> None:
        super().__init__()
        self.script = script
        self.started = self.time()

    def sleep(self, seconds: float) -> None:
        end = self.time() + max(seconds, 0.0)
        while self.time() < end:
            self.advance(min(1.0, end - self.time()))
            self.script(self.time() - self.started)


def test_a_wait_following_another_hosts_branch_reads_its_request_from_the_host_watch(
    fleet_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12: a wait on host-b, host-a taking the branch in, unrelated activity every 30 s: the wait
    asks nothing of its own request while nothing moved (the old way: a conditional GET of it every 15 s,
    a 200 after every push or star), and sees the approval at the next tick of its host's watch."""
    done: dict[str, float] = {}

    def script(t: float) -> None:
        step = int(t // 30)
        if step > done.get("activity", 0) and t < 900:
            done["activity"] = step
            gh.star(REPO, login=f"fan-{step}")
            gh.push_branch(REPO, f"unrelated-{step}")
        if t >= 600 and "approved" not in done:
            done["approved"] = t
            gh.review(REPO, n, "carol", "APPROVED")

    clock = ScriptedClock(script)
    fleet = fleet_factory(("host-a", "host-b"), clock=clock, lease="3600s", discovery="60s")
    gh = fleet.gh
    n = gh.open_pr(REPO, head_ref="slow")
    head = gh.pr(REPO, n).head_sha
    gh.add_check_run(REPO, head, "ci", status="completed", conclusion="success")
    gh.set_mergeable(REPO, n, "MERGEABLE")  # review required: waiting
    a = fleet.session("host-a")
    drive(a, max_ticks=1, let_go=False)
    assert fleet.holder().holder == "host-a"
    b = fleet.session("host-b")
    assert b.forge.pool
    from git_sluice.intake import graphql as gq

    readings: list[list[int]] = []
    read_all = gq.read_all

    def counted_read_all(send, owner, name, numbers, **kw):  # type: ignore[no-untyped-def]
        readings.append(list(numbers))
        return read_all(send, owner, name, numbers, **kw)

    monkeypatch.setattr(gq, "read_all", counted_read_all)
    mark = gh.mark()
    result = wait_for(b, n, timeout=3000)
    assert result.outcome == "ready", result.history
    # one reading of its own (its first look); the approval's state came with the watch's query,
    # which says the review decision, checks and mergeability of every request on the branch
    assert readings == [[n]], readings
    calls = fleet.calls_by("host-b", since=mark)
    own = [c for c in calls if c.path.split("?")[0].endswith(f"/pulls/{n}")]
    # once, to learn its base (host-b queues nothing of a branch it does not take in); then never again:
    # its request comes from the watch's list of the branch
    assert len(own) == 1 and own[0] == calls[0], own
    ended = calls[-1].time - clock.started
    assert ended <= done["approved"] + 62, (ended, done["approved"])  # seen at the next tick (+ its slack)
    minutes = (calls[-1].time - calls[0].time) / 60
    counted = sum(c.cost if c.resource == "graphql" else int(c.counted) for c in calls)
    assert len(calls) <= minutes + 6, [(c.method, c.path, c.status) for c in calls]  # about one call a tick
    assert counted <= minutes + 6


def test_a_wait_run_again_on_an_unmoved_request_answers_without_a_call(fleet_factory) -> None:
    """An agent's loop runs ``wait`` again and again; on a request nothing has moved in since the last
    wait's outcome (no list 200 in its repository), the outcome stands and nothing is asked."""
    fleet = fleet_factory(("host-a", "host-b"), lease="3600s", discovery="60s")
    gh = fleet.gh
    n = ready_pr(gh, "done")
    a = fleet.session("host-a")
    drive(a, max_ticks=1, let_go=False)
    b = fleet.session("host-b")
    assert b.forge.pool
    assert wait_for(b, n, timeout=600).outcome == "ready"
    fleet.clock.advance(61)  # type: ignore[attr-defined]
    mark = gh.mark()
    assert wait_for(b, n, timeout=600).outcome == "ready"
    graphql = [c for c in fleet.calls_by("host-b", since=mark) if c.resource == "graphql"]
    assert graphql == [] and gh.counted(since=mark) == 0, gh.ledger[mark:]
    gh.star(REPO, login="fan")  # activity in the repository: the outcome no longer stands on its own
    fleet.clock.advance(61)  # type: ignore[attr-defined]
    mark = gh.mark()
    assert wait_for(b, n, timeout=600).outcome == "ready"
    assert [c for c in fleet.calls_by("host-b", since=mark) if c.resource == "graphql"]
