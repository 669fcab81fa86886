"""The forge client against the GitHub double: what reached "GitHub" is asserted from its ledger."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from git_sluice.double.testing import ServedDouble
from git_sluice.errors import AllowanceSpent
from git_sluice.forge.client import ForgeUnavailable
from git_sluice.forge import rules
from git_sluice.forge.hoststore import HostStore
from git_sluice.forge.kept_answers import address_of
from git_sluice.paths import host_store_path
from git_sluice.runtime.session import Session, open_session

TOKEN = "tok-alice"  # the double's test token (tests/forge/conftest.py)

POOL = "user:alice"  # the double's name for alice's pool
PULLS = "repos/o/r/pulls"


def primed(session: Session) -> Session:
    """Learn the pool id first (one GET /user, once per token), so counts below are the test's own."""
    assert session.forge.pool
    return session


def test_second_identical_get_costs_nothing_and_a_change_costs_one(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    primed(session)
    gh.open_pr("o/r", head_ref="feat-1")
    mark = gh.mark()
    first = session.forge.get(PULLS, {"state": "open"})
    assert first.status == 200 and not first.from_kept
    assert gh.counted(since=mark) == 1

    mark = gh.mark()
    second = session.forge.get(PULLS, {"state": "open"})
    assert second.from_kept and second.json() == first.json()
    assert gh.requests(since=mark) == 1  # asked, conditionally...
    assert gh.counted(since=mark) == 0  # ...and GitHub did not count it
    assert [c.status for c in gh.calls(since=mark)] == [304]

    new_sha = gh.push_pr("o/r", 1)
    mark = gh.mark()
    third = session.forge.get(PULLS, {"state": "open"})
    assert gh.counted(since=mark) == 1
    assert third.json()[0]["head"]["sha"] == new_sha
    assert session.forge.stats.not_modified == 1


def test_every_get_is_sent_with_the_kept_validators(session: Session, github: ServedDouble) -> None:
    primed(session)
    session.forge.get(PULLS)
    etag = session.forge.kept.meta(address_of("GET", session.forge.url_for(PULLS))).etag
    assert etag and etag.startswith('W/"')


def test_pool_id_reveals_no_token_and_is_stable(session: Session, clone: Path, github: ServedDouble) -> None:
    pool = session.forge.pool
    assert TOKEN not in pool and "alice" not in pool and len(pool) == 12
    mark = github.gh.mark()
    with open_session(clone, clock=github.clock, need_branches=False) as again:
        assert again.forge.pool == pool
    assert github.gh.requests(since=mark) == 0  # GET /user asked once per token, then remembered


@pytest.mark.parametrize(
    ("fault", "params", "resource", "expect"),
    [
        ("primary", {"status": 403}, "core", "reset"),
        ("primary", {"status": 429}, "core", "reset"),
        ("secondary", {"status": 403, "retry_after": 120}, "core", "retry-after"),
        ("secondary", {"status": 429, "retry_after": 120}, "core", "retry-after"),
        ("secondary", {"status": 403, "retry_after": None}, "core", "fallback"),
    ],
)
def test_each_throttle_form_pauses_the_right_resource_for_the_right_time(
    session: Session, github: ServedDouble, fault: str, params: dict, resource: str, expect: str
) -> None:
    gh, clock = github.gh, github.clock
    primed(session)
    gh.fault(fault, path="pulls", times=1, **params)
    now = clock.time()
    with pytest.raises(AllowanceSpent) as caught:
        session.forge.get(PULLS)
    until = caught.value.until
    assert caught.value.resource == resource and caught.value.exit_code == 3
    if expect == "reset":
        assert abs(until - gh.reset_at(POOL, "core")) <= 1
    elif expect == "retry-after":
        assert until == pytest.approx(now + 120, abs=1)
    else:
        assert now + 60 <= until < now + 70  # 60 s fallback plus a deterministic jitter below 10 s
    view = session.store.pause_for(session.forge.pool, resource)
    assert view is not None and view.until == pytest.approx(until)

    # while paused: no call reaches GitHub, on this resource only
    mark = gh.mark()
    with pytest.raises(AllowanceSpent):
        session.forge.get("repos/o/r")
    assert gh.requests(since=mark) == 0
    # graphql is a separate resource: still open
    data = session.forge.graphql("query { viewer { login } }")
    assert data["data"]["viewer"]["login"] == "alice"


def test_graphql_rate_limited_pauses_graphql_only(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    primed(session)
    gh.fault("graphql_rate_limited", times=1, type="RATE_LIMITED")
    with pytest.raises(AllowanceSpent) as caught:
        session.forge.graphql("query { viewer { login } }")
    assert caught.value.resource == "graphql"
    mark = gh.mark()
    with pytest.raises(AllowanceSpent):
        session.forge.graphql("query { viewer { login } }")
    assert gh.requests(since=mark) == 0
    assert session.forge.get(PULLS).status == 200  # REST untouched


def test_remaining_zero_on_a_success_pauses_without_a_call_to_find_out(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    primed(session)
    gh.set_limit(POOL, "core", limit=gh.used(POOL, "core") + 2)
    session.forge.get("repos/o/r")
    last = session.forge.get(PULLS)  # spends the last call: 200 with remaining 0
    assert last.status == 200
    mark = gh.mark()
    with pytest.raises(AllowanceSpent) as caught:
        session.forge.get("repos/o/r/pulls/1")
    assert gh.requests(since=mark) == 0
    assert abs(caught.value.until - gh.reset_at(POOL, "core")) <= 1


def test_a_permission_403_pauses_nothing(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    primed(session)
    gh.fault("status", path="pulls", times=1, code=403, message="Resource not accessible by integration")
    answer = session.forge.get(PULLS)
    assert answer.status == 403
    assert session.store.pause_for(session.forge.pool, "core") is None
    assert session.forge.get(PULLS).status == 200


@pytest.mark.parametrize("value", ["past", "absurd", "garbage"])
def test_an_incredible_reset_takes_the_fallback(session: Session, github: ServedDouble, value: str) -> None:
    gh, clock = github.gh, github.clock
    primed(session)
    gh.fault("primary", path="pulls", times=1, status=403)
    gh.fault("reset", path="pulls", times=1, value=value)
    now = clock.time()
    with pytest.raises(AllowanceSpent) as caught:
        session.forge.get(PULLS)
    assert now + 60 <= caught.value.until < now + 70


def test_a_failing_address_is_asked_once_per_backoff_window(session: Session, github: ServedDouble) -> None:
    gh, clock = github.gh, github.clock
    primed(session)
    gh.fault("status", path="pulls", code=502)
    mark = gh.mark()
    with pytest.raises(ForgeUnavailable):
        session.forge.get(PULLS)
    for _ in range(5):
        with pytest.raises(ForgeUnavailable):
            session.forge.get(PULLS)
    assert gh.requests(since=mark) == 1
    clock.advance(61)
    with pytest.raises(ForgeUnavailable) as caught:
        session.forge.get(PULLS)
    assert gh.requests(since=mark) == 2
    assert caught.value.until == pytest.approx(clock.time() + 120)  # doubling while it keeps failing
    gh.clear_faults()
    clock.advance(121)
    assert session.forge.get(PULLS).status == 200
    assert session.store.pause_for(session.forge.pool, "core") is None  # a failure is not a pause


@pytest.mark.parametrize("kind", ["not_json", "truncate", "drop"])
def test_unparsable_or_dropped_answers_are_failures_not_pauses(
    session: Session, github: ServedDouble, kind: str
) -> None:
    primed(session)
    github.gh.fault(kind, path="pulls", times=1)
    with pytest.raises(ForgeUnavailable):
        session.forge.get(PULLS)
    assert session.store.pause_for(session.forge.pool, "core") is None


def test_a_corrupt_kept_answer_is_discarded_and_read_again(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    primed(session)
    first = session.forge.get(PULLS).json()
    kept_dir = session.forge.kept.directory
    for path in kept_dir.glob("*.meta"):
        path.write_bytes(b"\x00garbage{")
    for path in kept_dir.glob("*.body"):
        path.write_bytes(b"not json")
    mark = gh.mark()
    again = session.forge.get(PULLS)
    assert again.json() == first and not again.from_kept
    assert gh.counted(since=mark) == 1
    mark = gh.mark()
    assert session.forge.get(PULLS).from_kept
    assert gh.counted(since=mark) == 0


def test_a_corrupt_host_store_recovers_on_the_next_call(clone: Path, github: ServedDouble) -> None:
    path = host_store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        assert session.forge.get(PULLS).status == 200


def test_observe_only_records_but_blocks_nothing(clone: Path, github: ServedDouble) -> None:
    gh = github.gh
    subprocess.run(["git", "-C", str(clone), "config", "sluice.enforce", "false"], check=True)
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        primed(session)
        gh.fault("secondary", path="pulls", times=1, retry_after=120)
        answer = session.forge.get(PULLS)
        assert answer.status == 403  # handed back as it came: nothing blocked
        mark = gh.mark()
        assert session.forge.get(PULLS).status == 200
        assert gh.requests(since=mark) == 1
        views = [v for v in session.store.pauses() if v.observe_only]
        assert views and views[0].resource == "core"


def _cli(clone: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.Popen[str]:
    exe = shutil.which("git-sluice") or sys.executable
    cmd = [exe, *args] if exe != sys.executable else [exe, "-m", "git_sluice", *args]
    return subprocess.Popen(
        cmd, cwd=clone, env=env or dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.slow
def test_eight_processes_asking_one_address_at_once_make_one_call(clone: Path, github: ServedDouble) -> None:
    gh = github.gh
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        primed(session)  # pool learned and remembered for the processes too
    gh.fault("hang", path="pulls", times=1, seconds=4.0)
    mark = gh.mark()
    procs = [_cli(clone, "api", "repos/o/r/pulls") for _ in range(8)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, outs
    bodies = {json.dumps(json.loads(out), sort_keys=True) for out, _ in outs}
    assert len(bodies) == 1
    assert gh.requests(since=mark, path="pulls") == 1


@pytest.mark.slow
def test_after_a_throttle_other_processes_make_no_call_and_exit_3(clone: Path, github: ServedDouble) -> None:
    gh = github.gh
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        primed(session)
        gh.fault("secondary", path="pulls", times=1, retry_after=600)
        with pytest.raises(AllowanceSpent):
            session.forge.get(PULLS)
    mark = gh.mark()
    # the processes run on the real clock: the double's clock is fake and far in the future (2027),
    # so put the subprocesses on a shared file clock at the double's time
    clock_file = clone.parent / "clock"
    clock_file.write_text(repr(github.clock.time()))
    env = dict(os.environ, GIT_SLUICE_TEST_CLOCK=str(clock_file))
    procs = [_cli(clone, "api", "repos/o/r", env=env) for _ in range(8)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [3] * 8, outs
    for _, err in outs:
        assert "no call until" in err
    assert gh.requests(since=mark) == 0


def test_at_until_one_probe_goes_first_then_cohorts_1_2_4_8(clone: Path, github: ServedDouble) -> None:
    gh, clock = github.gh, github.clock
    with open_session(clone, clock=clock, need_branches=False) as session:
        primed(session)
        gh.fault("secondary", path="pulls", times=1, retry_after=60)
        with pytest.raises(AllowanceSpent) as caught:
            session.forge.get(PULLS)
        until = caught.value.until
    clock.set(until + 0.5)

    entries: list[int] = []
    enter = gh.secondary.enter
    lock = threading.Lock()

    def recording_enter(pool: str) -> int:
        value = enter(pool)
        with lock:
            entries.append(value)
        return value

    gh.secondary.enter = recording_enter  # type: ignore[method-assign]
    gh.fault("hang", path=r"/repos/o/r\?", seconds=0.15)  # every call stays on the wire a moment
    mark = gh.mark()
    errors: list[BaseException] = []

    def worker() -> None:
        # each thread is its own "process": its own session and host-store connection on the same file
        try:
            with open_session(clone, clock=clock, need_branches=False) as own:
                for _ in range(4):
                    own.forge.request("GET", "repos/o/r", params={"n": threading.get_ident()})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert gh.requests(since=mark) == 32
    # the first call after until went alone (the probe), then cohorts never exceeded 1, 2, 4, 8
    assert entries[0] == 1 and entries[1] == 1
    assert max(entries[2:4]) <= 2
    assert max(entries[4:8]) <= 4
    assert max(entries[8:16]) <= 8


def test_kill_9_mid_call_wedges_nothing(clone: Path, github: ServedDouble) -> None:
    gh = github.gh
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        primed(session)
    gh.fault("hang", path="pulls", times=1, seconds=30)
    proc = _cli(clone, "api", "repos/o/r/pulls")
    deadline = time.monotonic() + 20
    while gh.requests(path="pulls") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    gh.clear_faults()
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        assert session.forge.get(PULLS).status == 200


def test_no_token_is_written_anywhere(clone: Path, github: ServedDouble, caplog: pytest.LogCaptureFixture) -> None:
    gh = github.gh
    caplog.set_level("DEBUG", logger="git_sluice")
    texts: list[str] = []
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        session.forge.get(PULLS)
        session.forge.get(PULLS)
        session.forge.graphql("query { viewer { login } }")
        gh.fault("status", path="pulls", code=500, times=1)
        with pytest.raises(ForgeUnavailable) as failed:
            session.forge.get(PULLS, {"x": 1})
        texts.append(str(failed.value))
        gh.fault("secondary", path="repos/o/r$", times=1, retry_after=30)
        with pytest.raises(AllowanceSpent) as spent:
            session.forge.get("repos/o/r")
        texts.append(str(spent.value))
        texts.append(repr(session.credentials))
    texts.append(caplog.text)
    home = Path(os.environ["HOME"])
    for root in (home, clone / ".git"):
        for path in root.rglob("*"):
            if path.is_file():
                assert TOKEN.encode() not in path.read_bytes(), path
    for text in texts:
        assert TOKEN not in text


def test_the_python_api_goes_through_the_same_road(clone: Path, github: ServedDouble) -> None:
    from git_sluice import api

    gh = github.gh
    gh.open_pr("o/r", head_ref="x")
    with api.github(clone) as forge:
        assert forge.pool
        mark = gh.mark()
        first = forge.get(PULLS).json()
        assert forge.get(PULLS).json() == first
    assert gh.counted(since=mark) == 1 and gh.requests(since=mark) == 2
    doc = api.queue(clone)
    assert doc["schema"] == 1 and doc["entries"] == []


@pytest.mark.slow
def test_git_sluice_api_cli_conditional_and_graphql(clone: Path, github: ServedDouble) -> None:
    gh = github.gh
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        primed(session)
    gh.open_pr("o/r", head_ref="x", title="hello")
    mark = gh.mark()
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "git_sluice", "api", "-X", "GET", "repos/o/r/pulls", "-f", "state=open"],
                              cwd=clone, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)[0]["title"] == "hello"
    assert gh.counted(since=mark) == 1 and gh.requests(since=mark) == 2
    done = subprocess.run([sys.executable, "-m", "git_sluice", "api", "graphql", "-f",
                           "query=query { viewer { login } }"], cwd=clone, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["data"]["viewer"]["login"] == "alice"
    done = subprocess.run([sys.executable, "-m", "git_sluice", "api", "graphql", "-f",
                           "query=query { viewer { nope } }"], cwd=clone, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "nope" in done.stdout
    done = subprocess.run([sys.executable, "-m", "git_sluice", "api", "repos/o/missing"], cwd=clone,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Not Found" in done.stdout


def test_two_stores_in_one_process_keep_each_others_locks(clone: Path, github: ServedDouble) -> None:
    """Opening a second store must not drop the first one's POSIX locks.

    Were it so, another process closing the store last would find the file
    unlocked, think nobody else had it open, checkpoint and delete the WAL
    under the first connection ("disk I/O error" there next).
    """
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n"
        "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)\n"
        "    print('free')\n"
        "except OSError:\n"
        "    print('locked')\n"
    )

    def seen_from_another_process() -> str:
        done = subprocess.run([sys.executable, "-c", probe, str(host_store_path())], capture_output=True,
                              text=True, check=True, timeout=60)
        return done.stdout.strip()

    first = HostStore(clock=github.clock)
    try:
        assert seen_from_another_process() == "locked"  # an open WAL connection holds the file shared
        second = HostStore(clock=github.clock)
        assert seen_from_another_process() == "locked"
        second.close()
        assert seen_from_another_process() == "locked"
        first.record_rate("p", "core", rules.parse_rate_headers({"x-ratelimit-remaining": "1"}), counted=True, cost=1)
        assert first.budget()[0].remaining == 1
    finally:
        first.close()


def test_many_sessions_naming_the_pool_at_once_in_one_process(clone: Path, github: ServedDouble) -> None:
    from git_sluice.forge.auth import UserPoolResolver
    from git_sluice.paths import host_state_dir

    errors: list[BaseException] = []
    pools: set[str] = set()

    def name_it() -> None:
        try:
            pools.add(UserPoolResolver(github.url, host_state_dir()).pool_for(TOKEN))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=name_it) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(pools) == 1


def test_has_validator_says_whether_a_get_would_be_conditional(session: Session, github: ServedDouble) -> None:
    primed(session)
    assert not session.forge.has_validator(PULLS)
    session.forge.get(PULLS)
    assert session.forge.has_validator(PULLS)
    assert session.forge.has_validator(session.forge.url_for(PULLS))  # a full URL names the same answer


def test_api_with_a_timeout_against_a_hang_returns_within_about_its_timeout(clone: Path, github: ServedDouble) -> None:
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        primed(session)
    github.gh.fault("hang", path="pulls", times=1, seconds=30)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "git_sluice", "api", "--wait", "--timeout", "1s", PULLS],
                          cwd=clone, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 4 and "within the given timeout" in done.stderr, done.stderr
    assert elapsed < 10  # httpx's per-read timeout alone took 30 s here
    assert "Traceback" not in done.stderr
    # the caller's short timeout is not GitHub's failure: the clone's other callers still ask
    github.gh.clear_faults()
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        assert session.forge.get(PULLS).status == 200


def test_a_second_process_waiting_on_a_hung_call_ends_with_a_clear_error_at_its_timeout(
    clone: Path, github: ServedDouble
) -> None:
    gh = github.gh
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        primed(session)
    gh.fault("hang", path="pulls", times=1, seconds=30)
    first = _cli(clone, "api", PULLS)  # holds the address's flight while GitHub hangs
    try:
        deadline = time.monotonic() + 20
        while gh.requests(path="pulls") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        second = subprocess.run([sys.executable, "-m", "git_sluice", "api", "--timeout", "1s", PULLS],
                                cwd=clone, capture_output=True, text=True, timeout=60)
        elapsed = time.monotonic() - started
    finally:
        first.kill()
        first.communicate()
        gh.clear_faults()
    assert second.returncode == 4, second.stderr  # it was a filelock.Timeout traceback after 120 s
    assert "another caller on this clone" in second.stderr and "Traceback" not in second.stderr
    assert elapsed < 10
    assert gh.requests(path="pulls") == 1  # the second sent nothing


def test_a_session_told_to_stop_sends_nothing_more(clone: Path, github: ServedDouble) -> None:
    from git_sluice.errors import Interrupted

    with open_session(clone, clock=github.clock, need_branches=False) as session:
        primed(session)
    cancel = threading.Event()
    cancel.set()  # as a SIGTERM handler would
    mark = github.gh.mark()
    with open_session(clone, clock=github.clock, need_branches=False, cancel=cancel) as session:
        with pytest.raises(Interrupted) as caught:
            session.forge.get(PULLS, wait=True)
    assert caught.value.exit_code == 130
    assert github.gh.requests(since=mark) == 0


def test_a_call_sent_with_a_moment_left_on_its_deadline_still_gets_its_answer(
    session: Session, github: ServedDouble
) -> None:
    """GitHub counts a call once it is sent, read or not: a call started a moment before its caller's
    deadline is given time to answer (``wire.MIN_ANSWER_TIME``), not cut off after it was paid for."""
    primed(session)
    github.gh.fault("hang", path="pulls", times=1, seconds=0.3)
    mark = github.gh.mark()
    answer = session.forge.get(PULLS, deadline=github.clock.time() + 0.001)
    assert answer.status == 200
    assert github.gh.requests(since=mark) == 1


def test_a_call_on_the_wire_cut_short_by_a_stop_ends_at_once_and_is_held_against_no_one(
    clone: Path, github: ServedDouble
) -> None:
    """Issue 33: a stop with a call on the wire (GitHub holding its answer) waited out the call's 30 s
    and was then remembered as GitHub's failure. Now it ends within the wire's poll, and the next caller
    asks the same address at once: no failure remembered, no pause, the permit counted cut short."""
    from git_sluice.errors import CallCancelled

    gh = github.gh
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        pool = primed(session).forge.pool
    gh.fault("hang", path="pulls", seconds=60)
    cancel, stopped = threading.Event(), []
    mark = gh.mark()

    def stop_once_on_the_wire() -> None:
        bound = time.monotonic() + 30
        while gh.requests(since=mark, path="pulls") == 0 and time.monotonic() < bound:
            time.sleep(0.01)
        stopped.append(time.monotonic())
        cancel.set()  # as the SIGTERM handler does

    threading.Thread(target=stop_once_on_the_wire, daemon=True).start()
    with open_session(clone, clock=github.clock, need_branches=False, cancel=cancel) as session:
        with pytest.raises(CallCancelled) as caught:
            session.forge.get(PULLS)
        ended = time.monotonic()
    gh.clear_faults()
    assert ended - stopped[0] < 1.0
    assert caught.value.exit_code == 130 and "Traceback" not in str(caught.value)
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        meta = session.forge.kept.meta(address_of("GET", session.forge.url_for(PULLS)))
        assert meta.fail_until is None and meta.fail_reason is None
        assert session.forge.get(PULLS).status == 200  # asked at once: failure memory holds nothing
        assert session.store.pause_for(pool, "core") is None
        assert session.store.counters()[(pool, "core")] == {"cut_short": 1}
    assert gh.requests(since=mark, path="pulls") == 2  # the one cut short, and the next one
