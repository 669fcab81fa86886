"""The remote protocol under hostility, outages and time (issue #14).

Everything under ``refs/sluice/*`` may be written by anyone with push access.
Each test pushes what a hostile or broken writer would to a bare remote served
by a loopback ``git daemon``, runs two or more hosts (separate clones, host
stores and sessions; ``git sluice`` subprocesses where a traceback could reach
a person) against it, and reads what reached GitHub from the double's ledger.
"""

from __future__ import annotations

import json
import math
import sqlite3
import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_sluice.clock import FileClock
from git_sluice.commands.drive import drive
from git_sluice.runtime.session import fetch_and_adopt
from git_sluice.forge.hoststore import ADOPT_HORIZON, HostStore

from tests.remote.conftest import git as _git
from tests.remote.test_fleet_roles import Fleet, fleet_factory, ready_pr, token_of  # noqa: F401

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def git(*args: str, cwd: Path | None = None) -> str:
    return _git(*args, cwd=cwd).strip()


def push_record(fleet: Fleet, ref: str, message: str | bytes, *, kind: str = "commit") -> str:
    """Write ``message`` as a parentless commit on the empty tree (or a blob) and force it to ``ref``."""
    host = next(iter(fleet.hosts.values()))
    data = message.encode() if isinstance(message, str) else message
    if kind == "blob":
        args = ["git", "hash-object", "-w", "--stdin"]
    else:
        args = ["git", "-c", "user.name=evil", "-c", "user.email=evil@example", "commit-tree", EMPTY_TREE]
    oid = subprocess.run(args, cwd=host.path, input=data, capture_output=True, check=True).stdout.decode().strip()
    git("push", "-q", "--force", host.url, f"{oid}:{ref}", cwd=host.path)
    return oid


def delete_ref(fleet: Fleet, ref: str) -> None:
    host = next(iter(fleet.hosts.values()))
    git("push", "-q", host.url, f":{ref}", cwd=host.path)


def note_message(until: str, *, host: str = "evil-host", cls: str = "secondary") -> str:
    return (
        "git-sluice pause of core for pool x\n\n"
        f"Until: {until}\nClass: {cls}\nEpoch: 1\nHost: {host}\nSluice-Version: 0.1.0\n"
    )


def lease_message(holder: str, lease: str = "60", role: str = "driver") -> str:
    return (
        "git-sluice lease for main\n\n"
        f"Holder: {holder}\nRole: {role}\nLease: {lease}\nRenewal: 0\nSluice-Version: 0.1.0\n"
    )


def run_cli(fleet: Fleet, name: str, clock_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    host = fleet.hosts[name]
    env = dict(host.env, GH_TOKEN=token_of(name), GIT_SLUICE_TEST_CLOCK=str(clock_file))
    return subprocess.run(
        [sys.executable, "-m", "git_sluice", *args], cwd=host.path, env=env, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=120,
    )


def store_path(fleet: Fleet, name: str) -> Path:
    return Path(fleet.hosts[name].env["XDG_STATE_HOME"]) / "git-sluice" / "host.sqlite3"


def list_calls(fleet: Fleet, name: str, since: int) -> list:
    return [c for c in fleet.calls_by(name, since=since) if "/pulls" in c.path or "graphql" in c.path]


@pytest.fixture
def file_clock(tmp_path: Path) -> tuple[FileClock, Path]:
    path = tmp_path / "clock"
    return FileClock(path, start=1_800_000_000.0), path


# --------------------------------------------------------------------- point 1


@pytest.mark.parametrize("until", ["1e300", "253402300800", "253402300799", "nan", "inf", "-5", "9" * 5000])
def test_a_hostile_until_crashes_no_command_and_nothing_poisonous_stays(
    fleet_factory, git_daemon: str, file_clock, until: str
) -> None:
    clock, clock_file = file_clock
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, clock=clock)
    pool = fleet.session("host-a").forge.pool
    ref = f"refs/sluice/pause/{pool}/core"
    push_record(fleet, ref, note_message(until))
    for name in fleet.hosts:
        for args in (("intake",), ("status",), ("api", "user"), ("status", "--json")):
            done = run_cli(fleet, name, clock_file, *args)
            assert "Traceback" not in done.stderr, (args, done.stderr)
            assert done.returncode in (0, 3), (args, done.returncode, done.stderr)
        with HostStore(store_path(fleet, name), clock=clock) as store:
            pause = store.pause_for(pool, "core")
            assert pause is None or pause.until <= clock.time() + ADOPT_HORIZON + 1
    # the note goes: nothing of it stays in any host's store
    delete_ref(fleet, ref)
    for name in fleet.hosts:
        run_cli(fleet, name, clock_file, "intake")
        with HostStore(store_path(fleet, name), clock=clock) as store:
            pause = store.pause_for(pool, "core")
            assert pause is None or pause.until <= clock.time(), pause


def test_a_poisonous_row_in_the_host_store_is_discarded(fleet_factory, git_daemon: str, file_clock) -> None:
    """A row an older version wrote (a pause until 1e300, NaN) is dropped, never obeyed or printed."""
    clock, clock_file = file_clock
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, clock=clock)
    pool = fleet.session("host-a").forge.pool
    for name in fleet.hosts:
        run_cli(fleet, name, clock_file, "status")  # creates the store
        conn = sqlite3.connect(store_path(fleet, name))
        for resource, until in (("core", 1e300), ("graphql", 253402300800.0)):
            state = {"epoch": 3, "phase": "paused", "until": until, "source": "evil", "permits": {}}
            conn.execute("INSERT OR REPLACE INTO gates VALUES (?, ?, ?, ?)", (pool, resource, json.dumps(state), 0))
        conn.commit()
        conn.close()
        mark = fleet.gh.mark()
        for args in (("status",), ("status", "--json"), ("api", "user"), ("intake",)):
            done = run_cli(fleet, name, clock_file, *args)
            assert "Traceback" not in done.stderr and done.returncode == 0, (args, done.stderr)
        assert fleet.calls_by(name, since=mark), "the poisonous pause was obeyed"
        with HostStore(store_path(fleet, name), clock=clock) as store:
            assert store.pause_for(pool, "core") is None and store.pause_for(pool, "graphql") is None


# --------------------------------------------------------------------- point 2


def test_an_adopted_pause_ends_within_the_horizon_from_first_sight_and_when_its_note_goes(
    fleet_factory, git_daemon: str
) -> None:
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon)
    b = fleet.session("host-b")
    pool = b.forge.pool
    ref = f"refs/sluice/pause/{pool}/core"
    first_seen = fleet.clock.time()  # type: ignore[attr-defined]
    push_record(fleet, ref, note_message("253402300799", cls="primary"))  # the year 9999
    fetch_and_adopt(b)
    pause = b.store.pause_for(pool, "core")
    assert pause is not None and pause.until <= first_seen + ADOPT_HORIZON
    fleet.clock.advance(1800)  # type: ignore[attr-defined]
    fetch_and_adopt(b)  # seen again half an hour on: the ceiling does not move on
    assert b.store.pause_for(pool, "core").until <= first_seen + ADOPT_HORIZON
    mark = fleet.gh.mark()
    with pytest.raises(Exception):
        b.forge.get("user")
    assert fleet.gh.requests(since=mark) == 0
    delete_ref(fleet, ref)
    fetch_and_adopt(b)  # the note is gone and nothing here confirmed the pause: it ends
    b.forge.get("user")
    assert fleet.gh.requests(since=mark) == 1  # the one probe


# --------------------------------------------------------------------- point 3


def test_a_forged_day_long_lease_is_judged_by_the_readers_own_lease(fleet_factory, git_daemon: str) -> None:
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon)
    ready_pr(fleet.gh, "x")
    push_record(fleet, "refs/sluice/intake/main", lease_message("EVIL", lease="86400"))
    sessions = {name: fleet.session(name) for name in fleet.hosts}
    said: list[str] = []
    for session in sessions.values():
        drive(session, max_ticks=1, let_go=False, say=said.append)
    assert fleet.holder().holder == "EVIL"
    fleet.clock.advance(61)  # type: ignore[attr-defined]
    mark = fleet.gh.mark()
    for session in sessions.values():
        drive(session, max_ticks=1, let_go=False, say=said.append)
    record = fleet.holder()
    assert record is not None and record.holder in sessions  # one of ours, after ONE lease of its own
    assert list_calls(fleet, record.holder, mark)
    assert any("claims 86400 s" in line for line in said), said


# --------------------------------------------------------------------- point 4


def test_a_ref_in_the_way_of_every_lease_is_reported_and_no_host_takes_in_as_if_alone(
    fleet_factory, git_daemon: str
) -> None:
    fleet = fleet_factory(("host-a", "host-b", "host-c"), url=git_daemon)
    ready_pr(fleet.gh, "x")
    push_record(fleet, "refs/sluice/intake", "not a lease\n")  # a file where the directory belongs
    sessions = {name: fleet.session(name) for name in fleet.hosts}
    for session in sessions.values():
        assert session.forge.pool
    mark = fleet.gh.mark()
    said: dict[str, list[str]] = {name: [] for name in sessions}
    for _ in range(3):
        for name, session in sessions.items():
            drive(session, max_ticks=1, let_go=False, say=said[name].append)
        fleet.clock.advance(20)  # type: ignore[attr-defined]
    for name in sessions:
        assert list_calls(fleet, name, mark) == [], f"{name} took the branch in without a lease"
        told = [line for line in said[name] if "no race" in line]
        assert told, said[name]
    # a person's own git still works in every clone
    for host in fleet.hosts.values():
        git("fetch", "-q", cwd=host.path)
        git("pull", "-q", "--ff-only", cwd=host.path)


# --------------------------------------------------------------------- point 5


def holder_via(fleet: Fleet, name: str) -> str | None:
    """The lease's holder on the remote, asked through host ``name``'s clone (one not cut off)."""
    host = fleet.hosts[name]
    out = git("ls-remote", host.url, "refs/sluice/intake/main", cwd=host.path).split()
    if not out:
        return None
    git("fetch", "-q", host.url, f"+refs/sluice/intake/main:refs/probe/holder", cwd=host.path)
    message = git("log", "-1", "--format=%B", "refs/probe/holder", cwd=host.path)
    return next((line.split(":", 1)[1].strip() for line in message.splitlines() if line.startswith("Holder:")), None)


def _cut_off(host_path: Path) -> None:
    git("config", "remote.origin.url", "git://127.0.0.1:1/nothing.git", cwd=host_path)


def test_a_holder_cut_off_from_the_remote_stops_taking_in_before_its_successor_starts(
    fleet_factory, git_daemon: str
) -> None:
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, lease="60s", discovery="60s")
    ready_pr(fleet.gh, "x")
    a, b = fleet.session("host-a"), fleet.session("host-b")
    assert a.forge.pool and b.forge.pool
    drive(a, max_ticks=1, let_go=False)
    assert fleet.holder().holder == "host-a"
    _cut_off(fleet.hosts["host-a"].path)
    timeline: list[tuple[float, int, int]] = []
    for _ in range(7):
        fleet.clock.advance(20)  # type: ignore[attr-defined]
        mark = fleet.gh.mark()
        drive(a, max_ticks=1, let_go=False)
        a_calls = len(list_calls(fleet, "host-a", mark))
        mark = fleet.gh.mark()
        drive(b, max_ticks=1, let_go=False)
        timeline.append((fleet.clock.time(), a_calls, len(list_calls(fleet, "host-b", mark))))  # type: ignore[attr-defined]
    assert holder_via(fleet, "host-b") == "host-b"
    assert sum(b_calls for _, _, b_calls in timeline) > 0  # the successor took the branch in
    # host-a wrote its mark last at t0: from lease - one call's deadline on, it calls nothing
    assert all(a_calls == 0 for _, a_calls, _ in timeline[1:]), timeline


def _slow_holder(fleet_factory, git_daemon: str):
    """Two hosts, three ready requests, a 60 s lease; host-a's GitHub takes 35 s a call."""
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, lease="60s", discovery="60s")
    for i in range(3):
        ready_pr(fleet.gh, f"x{i}")
    a = fleet.session("host-a")
    assert a.forge.pool
    real = a.forge.request

    def slow(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        finally:
            fleet.clock.advance(35)  # type: ignore[attr-defined]

    a.forge.request = slow  # type: ignore[method-assign]
    return fleet, a


def test_a_round_stops_between_calls_when_the_holders_lease_runs_out(
    fleet_factory, git_daemon: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub slow (35 s a call): the holder checks its own lease before each call of a round
    (here a round of the old way, with no host watch: the fallback is guarded too)."""
    import git_sluice.commands.drive as drive_mod
    import git_sluice.runtime.rounds as rounds_mod

    monkeypatch.setattr(rounds_mod, "watch_for", lambda session, ticking=False: None)
    monkeypatch.setattr(drive_mod, "tick_watch", lambda session, branches: None)
    fleet, a = _slow_holder(fleet_factory, git_daemon)
    mark = fleet.gh.mark()
    state = drive(a, max_ticks=1, let_go=False)
    assert len(list_calls(fleet, "host-a", mark)) == 1  # the list; nothing after the lease ran short
    assert state.rounds[-1].outcome == "unleased"


def test_with_the_host_watch_no_call_goes_out_after_the_holders_lease_ran_short(
    fleet_factory, git_daemon: str
) -> None:
    """The same slow GitHub with the host watch: the watch's list and the round's one read go out
    while the lease is good; the driver's second tick of the watch (after its rounds) asks nothing
    for a branch whose lease has run short by its own clock."""
    fleet, a = _slow_holder(fleet_factory, git_daemon)
    start = fleet.clock.time()
    mark = fleet.gh.mark()
    drive(a, max_ticks=1, let_go=False)
    calls = list_calls(fleet, "host-a", mark)
    assert calls and all(c.time < start + 35 for c in calls), [(c.time - start, c.path) for c in calls]


# -------------------------------------------------------------------- point 11


def test_non_holders_whose_fetches_fail_never_take_the_branch_in(fleet_factory, git_daemon: str) -> None:
    fleet = fleet_factory(("host-a", "host-b", "host-c"), url=git_daemon, lease="60s", discovery="60s")
    ready_pr(fleet.gh, "x")
    sessions = {name: fleet.session(name) for name in fleet.hosts}
    for session in sessions.values():
        drive(session, max_ticks=1, let_go=False)
    assert fleet.holder().holder == "host-a"
    for name in ("host-b", "host-c"):
        _cut_off(fleet.hosts[name].path)
    mark = fleet.gh.mark()
    for _ in range(10):  # 200 s: more than three leases
        fleet.clock.advance(20)  # type: ignore[attr-defined]
        for session in sessions.values():
            drive(session, max_ticks=1, let_go=False)
    assert holder_via(fleet, "host-a") == "host-a"
    assert list_calls(fleet, "host-a", mark)
    for name in ("host-b", "host-c"):
        assert fleet.calls_by(name, since=mark) == [], f"{name} took the branch in on a mark it could not see"


# -------------------------------------------------------------------- point 10


def test_names_read_from_records_are_never_printed_raw(fleet_factory, git_daemon: str, file_clock) -> None:
    clock, clock_file = file_clock
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, clock=clock)
    evil = "EV\tIL\x1b[31m" + "x" * 5000
    push_record(fleet, "refs/sluice/intake/main", lease_message(evil))
    for name in fleet.hosts:
        run_cli(fleet, name, clock_file, "intake")
        for args in (("status",), ("lease",)):
            done = run_cli(fleet, name, clock_file, *args)
            assert "Traceback" not in done.stderr
            out = done.stdout + done.stderr
            assert "\t" not in out and "\x1b" not in out and "xxxxxxxxxx" not in out, out[:500]
            assert "unknown holder" in out or "garbage" in out, out


@pytest.mark.parametrize("what", ["file", "dangling symlink"])
def test_a_sluice_dir_that_is_not_a_directory_is_moved_aside(fleet_factory, git_daemon, file_clock, what) -> None:
    clock, clock_file = file_clock
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, clock=clock)
    sluice = fleet.hosts["host-a"].path / ".git" / "sluice"
    if sluice.exists():
        subprocess.run(["rm", "-rf", str(sluice)], check=True)
    if what == "file":
        sluice.write_text("x\n")
    else:
        sluice.symlink_to(sluice.parent / "gone" / "away")
    for n, args in enumerate((("status",), ("intake",), ("lease",), ("api", "user"))):
        done = run_cli(fleet, "host-a", clock_file, *args)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode == 0, done.stderr
        assert ("moved to sluice.corrupt-1" in done.stderr) == (n == 0), done.stderr  # once, in one line
    assert sluice.is_dir() and os.path.lexists(sluice.with_name("sluice.corrupt-1"))  # set aside, not deleted


def test_an_unusable_state_home_and_a_store_of_another_schema(fleet_factory, git_daemon, file_clock, tmp_path) -> None:
    clock, clock_file = file_clock
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, clock=clock)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    fleet.hosts["host-a"].env["XDG_STATE_HOME"] = str(blocker / "state")  # root ignores modes: a file in the way
    for args in (("status",), ("intake",), ("api", "user")):
        done = run_cli(fleet, "host-a", clock_file, *args)
        assert "Traceback" not in done.stderr and "XDG_STATE_HOME" in done.stderr, done.stderr
    path = store_path(fleet, "host-b")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE gates (pool TEXT, resource TEXT, other TEXT)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    done = run_cli(fleet, "host-b", clock_file, "api", "user")
    assert "Traceback" not in done.stderr and done.returncode == 0, done.stderr
    assert list(path.parent.glob("host.sqlite3.corrupt-*"))  # moved aside, rebuilt


def test_drive_says_a_failure_once_and_its_progress_reaches_the_log(fleet_factory, git_daemon: str) -> None:
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, lease="60s", discovery="60s")
    ready_pr(fleet.gh, "x")
    a = fleet.session("host-a")
    assert a.forge.pool
    fleet.gh.fault("status", path="pulls", code=502)
    said: list[str] = []
    drive(a, max_ticks=12, let_go=False, say=said.append)  # 12 ticks of 20 s (the fake clock sleeps at once)
    failures = [line for line in said if "502" in line or "unavailable" in line.lower()]
    assert len(failures) == 1, said


def test_drive_progress_lines_reach_the_clones_log(fleet_factory, git_daemon: str, file_clock) -> None:
    clock, clock_file = file_clock
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, clock=clock)
    host = fleet.hosts["host-a"]
    env = dict(host.env, GH_TOKEN=token_of("host-a"), GIT_SLUICE_TEST_CLOCK=str(clock_file))
    proc = subprocess.Popen([sys.executable, "-m", "git_sluice", "drive"], cwd=host.path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log = host.path / ".git" / "sluice" / "log"
    try:
        import time

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if log.exists() and "holding the lease" in log.read_text():
                break
            time.sleep(0.1)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert "holding the lease" in log.read_text(), err
    assert "Traceback" not in err


def test_status_shows_the_last_hook_failure_at_a_time_not_an_epoch(fleet_factory, git_daemon, file_clock) -> None:
    clock, clock_file = file_clock
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, clock=clock)
    host = fleet.hosts["host-a"]
    from git_sluice.commands.hook_round import FAILURE_NAME

    sluice = host.path / ".git" / "sluice"
    sluice.mkdir(exist_ok=True)
    (sluice / FAILURE_NAME).write_text(json.dumps(
        {"time": 1_800_000_123.25, "at": "2027-01-15T08:02:03Z", "reason": "fetch", "error": "boom", "exit_code": 1}
    ))
    done = run_cli(fleet, "host-a", clock_file, "status")
    line = next(li for li in done.stdout.splitlines() if "last hook round failed" in li)
    assert "1800000123" not in line and "boom" in line, line


# -------------------------------------------------------------------- point 14


def test_a_published_pause_stops_the_other_hosts_before_their_next_call(
    fleet_factory, git_daemon: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from git_sluice.runtime.pausecheck import CHECK_INTERVAL
    from git_sluice.errors import AllowanceSpent

    fleet = fleet_factory(("host-a", "host-b", "host-c"), url=git_daemon)
    sessions = {}
    for name, host in fleet.hosts.items():
        monkeypatch.setenv("XDG_STATE_HOME", host.env["XDG_STATE_HOME"])  # each host its own state dir
        sessions[name] = fleet.session(name)
    looks: dict[str, int] = {name: 0 for name in sessions}
    for name, session in sessions.items():
        real = session.remote.list_remote

        def counted(pattern: str, *, timeout: float = 5.0, _real=real, _name=name) -> dict[str, str]:
            looks[_name] += 1
            return _real(pattern, timeout=timeout)

        session.remote.list_remote = counted  # type: ignore[method-assign]
        assert session.forge.pool
    fleet.gh.fault("secondary", path="pulls", times=1, retry_after=300)
    with pytest.raises(AllowanceSpent):
        sessions["host-a"].forge.get("repos/o/r/pulls")  # host-a is refused and publishes the pause
    fleet.clock.advance(CHECK_INTERVAL + 1)  # type: ignore[attr-defined]
    mark = fleet.gh.mark()
    for name in ("host-b", "host-c"):
        for _ in range(5):
            with pytest.raises(AllowanceSpent):
                sessions[name].forge.get("repos/o/r/pulls")
        assert fleet.calls_by(name, since=mark) == [], f"{name} called GitHub past the published pause"
    # the look is rate-limited per host: calling often costs one ls-remote per interval
    before = dict(looks)
    for _ in range(20):
        fleet.clock.advance(CHECK_INTERVAL / 4)  # type: ignore[attr-defined]
        for name in ("host-b", "host-c"):
            with pytest.raises(AllowanceSpent):
                sessions[name].forge.get("repos/o/r")
    for name in ("host-b", "host-c"):
        assert looks[name] - before[name] <= 20 * (CHECK_INTERVAL / 4) / CHECK_INTERVAL + 1, looks


def test_a_rounds_fetch_counts_as_the_look_and_a_pause_published_after_it_is_still_seen(
    fleet_factory, git_daemon: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fetch a round starts with brings the pool's notes: its first call sends no ls-remote (issue 15).

    A pause published after that fetch is seen by the first look after the interval, as before."""
    from git_sluice.runtime.pausecheck import CHECK_INTERVAL
    from git_sluice.runtime.session import fetch_and_adopt
    from git_sluice.errors import AllowanceSpent

    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon)
    sessions = {}
    for name, host in fleet.hosts.items():
        monkeypatch.setenv("XDG_STATE_HOME", host.env["XDG_STATE_HOME"])
        sessions[name] = fleet.session(name)
        assert sessions[name].forge.pool
    b = sessions["host-b"]
    looks: list[str] = []
    real = b.remote.list_remote

    def counted(pattern: str, *, timeout: float = 5.0) -> dict[str, str]:
        looks.append(pattern)
        return real(pattern, timeout=timeout)

    b.remote.list_remote = counted  # type: ignore[method-assign]
    fleet.clock.advance(CHECK_INTERVAL + 1)  # type: ignore[attr-defined]
    assert fetch_and_adopt(b) is None
    b.forge.get("repos/o/r")
    assert looks == []  # the fetch just brought the notes: no look of its own
    fleet.clock.advance(CHECK_INTERVAL + 1)  # type: ignore[attr-defined]
    b.forge.get("repos/o/r")
    assert len(looks) == 1  # past the interval the look runs again
    fleet.gh.fault("secondary", path="pulls", times=1, retry_after=300)
    with pytest.raises(AllowanceSpent):
        sessions["host-a"].forge.get("repos/o/r/pulls")  # host-a publishes the pause
    fleet.clock.advance(CHECK_INTERVAL + 1)  # type: ignore[attr-defined]
    mark = fleet.gh.mark()
    with pytest.raises(AllowanceSpent):
        b.forge.get("repos/o/r/pulls")
    assert fleet.calls_by("host-b", since=mark) == [] and len(looks) == 2


# ------------------------------------------------------------- issue 33: evidence beats a note


@pytest.mark.parametrize("cls", ["primary", "secondary"])
def test_one_pushed_note_until_9999_stops_two_hosts_at_most_the_bound_then_goes(
    fleet_factory, git_daemon: str, monkeypatch: pytest.MonkeyPatch, cls: str
) -> None:
    """The pusher pushes once and never again: every host stops for at most its bound from first
    sight, then GitHub's answer to the one probe ends the pause everywhere and the note goes. The
    probe's claim (a re-written note) does not start anyone's bound again (issue 33)."""
    from git_sluice.errors import AllowanceSpent
    from git_sluice.forge.hoststore import adopt_horizon

    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon)
    sessions = {}
    for name, host in fleet.hosts.items():
        monkeypatch.setenv("XDG_STATE_HOME", host.env["XDG_STATE_HOME"])  # each host its own store
        sessions[name] = fleet.session(name)
        assert sessions[name].forge.pool
    pool = sessions["host-a"].forge.pool
    ref = f"refs/sluice/pause/{pool}/core"
    start = fleet.clock.time()  # type: ignore[attr-defined]
    push_record(fleet, ref, note_message("253402300799", cls=cls))
    bound = adopt_horizon(cls)
    calls: dict[str, list[float]] = {name: [] for name in sessions}
    step = 300.0
    while fleet.clock.time() < start + 3 * 3600:  # type: ignore[attr-defined]
        for name, session in sessions.items():
            fetch_and_adopt(session)
            mark = fleet.gh.mark()
            try:
                session.forge.get("user")
            except AllowanceSpent:
                pass
            if fleet.calls_by(name, since=mark):
                calls[name].append(fleet.clock.time() - start)  # type: ignore[attr-defined]
        fleet.clock.advance(step)  # type: ignore[attr-defined]
    for name, at in calls.items():
        assert at, f"{name} never called GitHub again"
        # stopped for at most the bound (the first sample past it calls), and never stopped again
        assert bound <= at[0] <= bound + step, (name, at[0], bound)
        assert len(at) == math.ceil((3 * 3600 - at[0]) / step), (name, at)
    assert git("ls-remote", fleet.hosts["host-a"].url, ref) == "", "the disproved note still stands"


def test_an_answer_sent_after_a_primary_note_was_seen_outranks_it_and_the_note_goes(
    fleet_factory, git_daemon: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that heard GitHub say the allowance is not spent, after it first saw a note saying it
    is, stops obeying the note and removes it by compare-and-swap (issue 33)."""
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon)
    monkeypatch.setenv("XDG_STATE_HOME", fleet.hosts["host-b"].env["XDG_STATE_HOME"])
    b = fleet.session("host-b")
    pool = b.forge.pool
    ref = f"refs/sluice/pause/{pool}/core"
    push_record(fleet, ref, note_message("253402300799", cls="primary"))
    fetch_and_adopt(b)
    assert b.store.pause_for(pool, "core") is not None
    # an answer GitHub gave this host after it first saw the note, with the allowance not spent
    # (a call already on its way when the note came): the host store heard it
    fleet.clock.advance(120)  # type: ignore[attr-defined]
    from git_sluice.forge.rules import RateHeaders

    b.store.record_rate(pool, "core", RateHeaders(limit=5000, remaining=4321, used=679, reset=None,
                                                   resource="core"), counted=True, cost=1)
    fetch_and_adopt(b)
    pause = b.store.pause_for(pool, "core")
    assert pause is None or pause.until <= fleet.clock.time(), "the disproved note is still obeyed"  # type: ignore[attr-defined]
    assert git("ls-remote", fleet.hosts["host-a"].url, ref) == "", "the disproved note still stands"
    mark = fleet.gh.mark()
    b.forge.get("user")
    assert fleet.gh.requests(since=mark) == 1


def test_an_answer_from_before_a_note_was_seen_does_not_outrank_it(
    fleet_factory, git_daemon: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Evidence must be newer than the note: what a host heard before proves nothing (another host may
    have spent the rest since), nor does a secondary note yield to the rate headers."""
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon)
    monkeypatch.setenv("XDG_STATE_HOME", fleet.hosts["host-b"].env["XDG_STATE_HOME"])
    b = fleet.session("host-b")
    pool = b.forge.pool
    b.forge.get("user")  # heard: plenty left
    for resource, cls in (("core", "primary"), ("search", "secondary")):
        ref = f"refs/sluice/pause/{pool}/{resource}"
        message = note_message(str(fleet.clock.time() + 600), cls=cls).replace("core", resource)  # type: ignore[attr-defined]
        push_record(fleet, ref, message)
    fleet.clock.advance(5)  # type: ignore[attr-defined]
    fetch_and_adopt(b)
    assert b.store.pause_for(pool, "core") is not None
    from git_sluice.forge.rules import RateHeaders

    fleet.clock.advance(120)  # type: ignore[attr-defined]
    b.store.record_rate(pool, "search", RateHeaders(limit=30, remaining=29, used=1, reset=None,
                                                    resource="search"), counted=True, cost=1)
    fetch_and_adopt(b)
    assert b.store.pause_for(pool, "core") is not None and b.store.pause_for(pool, "search") is not None
