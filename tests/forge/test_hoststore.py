"""The host store across real processes: one file, one pause, one probe, one ramp.

The multi-process tests fork eight workers that each open their own
``HostStore`` on the same file and share time through a ``FileClock``; the
parent tells them what to do and when (a barrier lines up their acquires so
they really contend for SQLite's write lock).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from git_sluice import paths
from git_sluice.clock import FakeClock, FileClock
from git_sluice.errors import SluiceError
from git_sluice.forge import rules
from git_sluice.forge.gate_machine import PauseView
from git_sluice.forge.hoststore import (
    BudgetRow,
    HostStore,
    HostStoreError,
    Outcome,
    Permit,
    Wait,
)

T0 = 1_800_000_000.0
POOL = "pool-3f9a"
CTX = multiprocessing.get_context("fork")


def throttle(now: float, *, retry_after: float | None = None, reset: float | None = None) -> rules.Verdict:
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["retry-after"] = str(int(retry_after))
    if reset is not None:
        headers.update({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(reset))})
    v = rules.classify(403, headers, b'{"message": "API rate limit exceeded"}', method="GET", path="/x", now=now)
    assert v.kind == "throttle"
    return v


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[HostStore]:
    s = HostStore(tmp_path / "host.sqlite3", clock=clock)
    yield s
    s.close()


def granted(decision: Permit | Wait) -> Permit:
    assert isinstance(decision, Permit), decision
    return decision


def open_pause(store: HostStore, clock: FakeClock, seconds: float = 60) -> PauseView:
    p = granted(store.acquire(POOL, "core"))
    assert store.start(p)
    view = store.finish(p, Outcome("throttle", throttle(clock.time(), retry_after=seconds)))
    assert view is not None
    return view


# --- in one process -----------------------------------------------------------------


def test_default_path_is_the_private_host_state_dir(tmp_path: Path, clock: FakeClock) -> None:
    state_home = Path(os.environ["XDG_STATE_HOME"])
    with HostStore(clock=clock) as s:
        assert s.path == state_home / "git-sluice" / "host.sqlite3" == paths.host_store_path()
        granted(s.acquire(POOL, "core"))
        assert stat.S_IMODE(os.stat(s.path.parent).st_mode) == 0o700
        for suffix in ("", "-wal", "-shm"):
            f = Path(str(s.path) + suffix)
            if f.exists():
                assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f


def test_throttle_pauses_fences_and_holds(store: HostStore, clock: FakeClock) -> None:
    a = granted(store.acquire(POOL, "core", deadline=30))
    assert (a.kind, a.epoch, a.deadline_at) == ("normal", 0, T0 + 30)
    b = granted(store.acquire(POOL, "core"))
    c = granted(store.acquire(POOL, "core"))
    assert store.start(a) and store.start(c)
    view = store.finish(a, Outcome("throttle", throttle(T0, reset=T0 + 600)))
    assert view is not None
    assert (view.phase, view.until, view.cls, view.how, view.epoch, view.streak, view.source) == (
        "paused", T0 + 600, "primary", "reset", 1, 1, "local"
    )
    assert not store.start(b)  # fenced before the wire
    w = store.acquire(POOL, "core")
    assert w == Wait(POOL, "core", T0 + 600, "paused")
    # c was on the wire: its throttle lengthens the window, once, without escalating
    again = store.finish(c, Outcome("throttle", throttle(T0 + 1, reset=T0 + 700)))
    assert again is not None and (again.until, again.epoch, again.streak) == (T0 + 700, 1, 1)
    assert store.pause_for(POOL, "core") == PauseView(
        POOL, "core", "paused", T0 + 700, "primary", "reset", 1, 1, "local", False, 1, paused_at=T0
    )
    assert store.counters()[(POOL, "core")] == {"fenced": 1, "held": 1}
    # resources are separate
    assert granted(store.acquire(POOL, "graphql")).kind == "normal"
    assert store.pause_for(POOL, "graphql") is None
    assert [v.resource for v in store.pauses()] == ["core"]


def test_probe_ramp_and_close_in_one_process(store: HostStore, clock: FakeClock) -> None:
    view = open_pause(store, clock, 60)
    clock.set(view.until)
    probe = granted(store.acquire(POOL, "core"))
    assert probe.kind == "probe"
    assert store.acquire(POOL, "core") == Wait(POOL, "core", view.until + 0.5, "probe")
    assert store.start(probe)
    assert store.finish(probe, Outcome("ok")) is None
    for size in (1, 2, 4, 8):
        ramp = store.pause_for(POOL, "core")
        assert ramp is not None and (ramp.phase, ramp.cohort_size) == ("ramp", size)
        permits = [granted(store.acquire(POOL, "core")) for _ in range(size)]
        assert {p.kind for p in permits} == {"cohort"}
        assert isinstance(store.acquire(POOL, "core"), Wait)
        for p in permits:
            assert store.start(p)
            store.finish(p, Outcome("ok"))
    assert store.pause_for(POOL, "core") is None
    assert granted(store.acquire(POOL, "core")).kind == "normal"


def test_a_call_cut_short_by_a_stop_opens_nothing_passes_the_probe_on_and_is_no_clean_cohort_call(
    store: HostStore, clock: FakeClock
) -> None:
    """Issue 33: a SIGINT / SIGTERM with a call on the wire is the user's doing, not GitHub's answer."""
    view = open_pause(store, clock, 60)
    clock.set(view.until)
    probe = granted(store.acquire(POOL, "core"))
    assert probe.kind == "probe" and store.start(probe)
    assert store.finish(probe, Outcome("cut_short")) is None  # no pause opened or lengthened
    again = granted(store.acquire(POOL, "core"))
    assert again.kind == "probe" and again.epoch > probe.epoch  # the next caller probes at once
    assert store.start(again)
    store.finish(again, Outcome("ok"))
    cohort = granted(store.acquire(POOL, "core"))
    assert cohort.kind == "cohort" and store.start(cohort)
    store.finish(cohort, Outcome("cut_short"))
    ramp = store.pause_for(POOL, "core")
    assert ramp is not None and (ramp.phase, ramp.cohort_size) == ("ramp", 1)  # not counted clean: no step up
    assert store.counters()[(POOL, "core")]["cut_short"] == 2
    assert "not_attempted" not in store.counters()[(POOL, "core")]  # it was sent: not the fenced kind


def test_failed_probe_lets_the_next_caller_probe(store: HostStore, clock: FakeClock) -> None:
    view = open_pause(store, clock, 60)
    clock.set(view.until)
    first = granted(store.acquire(POOL, "core"))
    assert store.finish(first, Outcome("failure")) is None
    second = granted(store.acquire(POOL, "core"))
    assert second.kind == "probe" and second.epoch > first.epoch
    # a throttled probe pauses again, one fallback step further
    v = rules.classify(429, {}, None, method="GET", path="/x", now=clock.time())
    again = store.finish(second, Outcome("throttle", v))
    assert again is not None and again.streak == 2 and again.how == "fallback"
    assert clock.time() + 120 <= again.until < clock.time() + 130


def test_spent_success_pauses_until_reset(store: HostStore, clock: FakeClock) -> None:
    p = granted(store.acquire(POOL, "core"))
    store.start(p)
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(T0 + 1500))}
    v = rules.classify(200, headers, b"[]", method="GET", path="/x", now=T0)
    view = store.finish(p, Outcome("spent", v))
    assert view is not None and (view.until, view.how, view.cls, view.streak) == (T0 + 1500, "reset", "primary", 0)


def test_throttle_without_verdict_takes_the_fallback(store: HostStore, clock: FakeClock) -> None:
    p = granted(store.acquire(POOL, "core"))
    view = store.finish(p, Outcome("throttle"))
    assert view is not None and view.cls == "unknown" and T0 + 60 <= view.until < T0 + 70


def test_ok_and_failure_open_nothing(store: HostStore) -> None:
    for kind in ("ok", "failure", "not_attempted"):
        p = granted(store.acquire(POOL, "core"))
        assert store.finish(p, Outcome(kind)) is None  # type: ignore[arg-type]
    assert store.pauses() == []
    assert store.counters()[(POOL, "core")] == {"not_attempted": 1}


def test_adopt_a_remote_pause(store: HostStore, clock: FakeClock) -> None:
    p = granted(store.acquire(POOL, "core"))
    assert store.adopt(POOL, "core", T0 + 300, "secondary", source="host-b")
    assert not store.start(p)
    view = store.pause_for(POOL, "core")
    assert view is not None and (view.source, view.until, view.cls, view.how) == ("host-b", T0 + 300, "secondary", "remote")
    assert not store.adopt(POOL, "core", T0 + 200, "secondary", source="host-c")  # ends sooner: no-op
    assert not store.adopt(POOL, "core", T0 - 5, "primary", source="host-c")  # already over
    assert store.adopt(POOL, "core", T0 + 400, "primary", source="host-c")
    assert store.pause_for(POOL, "core").source == "host-c"  # type: ignore[union-attr]


def test_expired_probe_does_not_wedge(store: HostStore, clock: FakeClock) -> None:
    view = open_pause(store, clock, 60)
    clock.set(view.until)
    granted(store.acquire(POOL, "core", deadline=20))  # its process dies: never finished
    assert isinstance(store.acquire(POOL, "core"), Wait)
    clock.advance(20)
    assert granted(store.acquire(POOL, "core")).kind == "probe"
    assert store.counters()[(POOL, "core")]["expired"] == 1


def test_observe_only_grants_everything_and_counts(store: HostStore, clock: FakeClock) -> None:
    a = store.acquire(POOL, "core", enforce=False)
    b = store.acquire(POOL, "core", enforce=False)
    assert isinstance(a, Permit) and isinstance(b, Permit) and not a.enforce
    assert store.start(a)
    view = store.finish(a, Outcome("throttle", throttle(T0, retry_after=120)))
    assert view is not None and view.observe_only
    assert store.start(b)  # would have been fenced, but observe-only never holds anything back
    c = store.acquire(POOL, "core", enforce=False)
    assert isinstance(c, Permit) and c.kind == "normal"
    assert store.start(c)
    # its throttle (sent inside the window) lengthens the window without escalating
    later = store.finish(c, Outcome("throttle", throttle(T0 + 5, retry_after=200)))
    assert later is not None and (later.until, later.streak, later.epoch) == (T0 + 205, 1, 1)
    [seen] = store.pauses()
    assert seen.observe_only and seen.held == 1
    assert store.counters()[(POOL, "core")] == {"would_fence": 1, "would_hold_paused": 1}
    # an enforcing caller on the same host does honour what was observed
    assert isinstance(store.acquire(POOL, "core"), Wait)


def test_budget_ledger(store: HostStore, clock: FakeClock) -> None:
    h = rules.parse_rate_headers(
        {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4990", "x-ratelimit-used": "10",
         "x-ratelimit-reset": str(int(T0 + 1800))}
    )
    store.record_rate(POOL, "core", h, counted=True, cost=1)
    clock.advance(600)
    store.record_rate(POOL, "core", rules.RateHeaders(None, 4989, None, None, "core"), counted=True, cost=1)
    store.record_rate(POOL, "core", rules.RateHeaders(None, None, None, None, None), counted=False, cost=0)  # a 304
    store.record_rate(POOL, "graphql", rules.RateHeaders(5000, 4900, 100, T0 + 3000, "graphql"), counted=True, cost=7)
    assert store.budget() == [
        BudgetRow(POOL, "core", 5000, 4989, 10, T0 + 1800, T0 + 600, 2, 2),
        BudgetRow(POOL, "graphql", 5000, 4900, 100, T0 + 3000, T0 + 600, 1, 7),
    ]
    clock.advance(3600 - 600 + 61)  # the first call is more than an hour old
    core = store.budget()[0]
    assert (core.counted_last_hour, core.cost_last_hour) == (1, 1)
    clock.advance(600)
    assert [(r.counted_last_hour, r.cost_last_hour) for r in store.budget()] == [(0, 0), (0, 0)]


def test_corrupt_file_is_moved_aside(tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "host.sqlite3"
    path.write_bytes(b"this is not a database" * 200)
    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        with HostStore(path, clock=clock) as s:
            assert granted(s.acquire(POOL, "core")).kind == "normal"
    aside = tmp_path / f"host.sqlite3.corrupt-{int(T0)}"
    assert aside.read_bytes().startswith(b"this is not a database")
    assert any("moved it aside" in r.getMessage() and str(aside) in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
@pytest.mark.parametrize("kind", ["directory", "dangling"])
def test_a_store_file_of_the_wrong_kind_is_moved_aside(tmp_path: Path, clock: FakeClock, suffix: str, kind: str) -> None:
    """Issue 33: a directory (or a link to nothing) where the store or its WAL goes is set aside like a corrupt file."""
    path = tmp_path / "host.sqlite3"
    place = Path(str(path) + suffix)
    if kind == "directory":
        place.mkdir()
    else:
        place.symlink_to(tmp_path / "nowhere")
    with HostStore(path, clock=clock) as s:
        assert granted(s.acquire(POOL, "core")).kind == "normal"
    assert path.is_file() and os.path.lexists(str(tmp_path / f"host.sqlite3.corrupt-{int(T0)}") + suffix)


def test_corrupt_file_twice_in_one_second(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "host.sqlite3"
    with HostStore(path, clock=clock) as s:
        open_pause(s, clock)
    path.write_bytes(b"\x00garbage" * 500)
    with HostStore(path, clock=clock) as s:
        assert s.pauses() == []  # the pause is forgotten; nothing crashed
    assert (tmp_path / f"host.sqlite3.corrupt-{int(T0)}").read_bytes().startswith(b"\x00garbage")
    path.write_bytes(b"again")
    with HostStore(path, clock=clock) as s:
        assert granted(s.acquire(POOL, "core")).kind == "normal"
    assert (tmp_path / f"host.sqlite3.corrupt-{int(T0)}.1").read_bytes() == b"again"


def test_replaced_file_is_followed(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "host.sqlite3"
    a = HostStore(path, clock=clock)
    b = HostStore(path, clock=clock)
    open_pause(a, clock)
    # b moves a broken file aside and starts afresh; a must follow to the new file
    os.replace(path, tmp_path / "elsewhere.sqlite3")
    for suffix in ("-wal", "-shm"):
        if Path(str(path) + suffix).exists():
            os.replace(Path(str(path) + suffix), tmp_path / f"elsewhere.sqlite3{suffix}")
    assert b.pause_for(POOL, "core") is None
    b.adopt(POOL, "core", T0 + 999, "primary", source="host-z")
    assert a.pause_for(POOL, "core").source == "host-z"  # type: ignore[union-attr]
    a.close()
    b.close()


def test_unreadable_gate_row_starts_afresh(store: HostStore, caplog: pytest.LogCaptureFixture) -> None:
    granted(store.acquire(POOL, "core"))
    conn = sqlite3.connect(store.path)
    conn.execute("UPDATE gates SET state = ?", (json.dumps({"phase": "exploded"}),))
    conn.commit()
    conn.close()
    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        assert granted(store.acquire(POOL, "core")).kind == "normal"
    assert any("unreadable" in r.getMessage() for r in caplog.records)


def test_held_write_lock_raises_quickly(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "host.sqlite3"
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    with pytest.raises(HostStoreError) as caught:
        HostStore(path, clock=clock, busy_timeout=0.2)  # a new file's schema needs the lock
    assert str(path) in str(caught.value)
    blocker.execute("ROLLBACK")
    s = HostStore(path, clock=clock, busy_timeout=0.2)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        began = time.monotonic()
        with pytest.raises(HostStoreError) as caught:
            s.acquire(POOL, "core")
        assert time.monotonic() - began < 2.0
        assert isinstance(caught.value, SluiceError)
        assert str(path) in str(caught.value) and "locked" in str(caught.value)
        # opening an existing file needs no write lock; reads go on under WAL while a writer holds the lock
        assert s.pauses() == []
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert isinstance(s.acquire(POOL, "core"), Permit)
    s.close()


def test_threads_share_one_store(store: HostStore) -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                p = granted(store.acquire(POOL, "core"))
                assert store.start(p)
                store.finish(p, Outcome("ok"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.pauses() == []


def test_a_forked_child_opens_its_own_connection(store: HostStore, clock: FakeClock) -> None:
    granted(store.acquire(POOL, "core"))
    reader, writer = CTX.Pipe(duplex=False)

    def child() -> None:
        p = store.acquire(POOL, "core")
        writer.send(isinstance(p, Permit) and p.kind)
        store.close()

    proc = CTX.Process(target=child)
    proc.start()
    assert reader.poll(10) and reader.recv() == "normal"
    proc.join(5)
    assert proc.exitcode == 0
    assert granted(store.acquire(POOL, "core")).kind == "normal"  # the parent's connection still works
    open_pause(store, clock)
    assert store.pause_for(POOL, "core") is not None


# --- across processes -----------------------------------------------------------------


def _worker(path: str, clock_path: str, conn: Any, barrier: Any) -> None:
    """One process with its own HostStore; does what the parent says, one permit at a time."""
    store = HostStore(Path(path), clock=FileClock(clock_path), busy_timeout=5.0)
    permit: Permit | None = None
    while True:
        cmd, *args = conn.recv()
        try:
            if cmd == "acquire":
                if args[1]:
                    barrier.wait(timeout=10)
                if permit is not None:
                    conn.send(("holding", permit.kind))
                    continue
                decision = store.acquire(POOL, "core", deadline=args[0])
                if isinstance(decision, Permit):
                    permit = decision
                    conn.send(("permit", decision.kind))
                else:
                    conn.send(("wait", decision.reason))
            elif cmd == "start":
                conn.send(("started", store.start(permit)))  # type: ignore[arg-type]
            elif cmd == "finish":
                view = store.finish(permit, Outcome(args[0], args[1]))  # type: ignore[arg-type]
                permit = None
                conn.send(("finished", view))
            elif cmd == "hold_lock":  # sit inside a write transaction until killed
                assert store._conn is not None
                store._conn.execute("BEGIN IMMEDIATE")
                conn.send(("locked",))
            elif cmd == "exit":
                store.close()
                conn.send(("bye",))
                return
        except Exception as exc:  # pragma: no cover - surfaced to the parent
            conn.send(("error", repr(exc)))


class Fleet:
    """N worker processes on one store file and one shared clock."""

    def __init__(self, path: Path, clock_path: Path, n: int) -> None:
        self.barrier = CTX.Barrier(n)
        self.conns = []
        self.procs = []
        for _ in range(n):
            parent, child = CTX.Pipe()
            proc = CTX.Process(target=_worker, args=(str(path), str(clock_path), child, self.barrier), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def ask(self, i: int, *cmd: Any) -> tuple[Any, ...]:
        self.conns[i].send(cmd)
        return self.recv(i)

    def recv(self, i: int) -> tuple[Any, ...]:
        assert self.conns[i].poll(15), f"worker {i} did not answer"
        reply = self.conns[i].recv()
        assert reply[0] != "error", reply
        return reply

    def acquire_all(self, deadline: float = 60.0) -> list[tuple[Any, ...]]:
        """Every worker asks at once (those holding a permit answer 'holding')."""
        for conn in self.conns:
            conn.send(("acquire", deadline, True))
        return [self.recv(i) for i in range(len(self.conns))]

    def acquire(self, i: int, deadline: float = 60.0) -> tuple[Any, ...]:
        return self.ask(i, "acquire", deadline, False)

    def kill(self, i: int) -> None:
        os.kill(self.procs[i].pid, signal.SIGKILL)  # type: ignore[arg-type]
        self.procs[i].join(5)
        assert not self.procs[i].is_alive()

    def close(self) -> None:
        for i, proc in enumerate(self.procs):
            if proc.is_alive():
                with_reply = self.conns[i]
                with_reply.send(("exit",))
                if with_reply.poll(5):
                    with_reply.recv()
            proc.join(5)
            if proc.is_alive():  # pragma: no cover - never leave a worker behind
                proc.kill()
                proc.join()


@pytest.fixture
def shared(tmp_path: Path) -> tuple[Path, FileClock]:
    clock = FileClock(tmp_path / "clock", start=T0)
    return tmp_path / "host.sqlite3", clock


@pytest.fixture
def fleet(shared: tuple[Path, FileClock]) -> Iterator[Fleet]:
    path, clock = shared
    f = Fleet(path, clock.path, 8)
    yield f
    f.close()


def permits_of(replies: list[tuple[Any, ...]], kind: str) -> list[int]:
    return [i for i, r in enumerate(replies) if r == ("permit", kind)]


def test_eight_processes_one_probe_then_cohorts_1_2_4_8(fleet: Fleet, shared: tuple[Path, FileClock]) -> None:
    path, clock = shared
    with HostStore(path, clock=clock) as parent:
        view = open_pause(parent, clock, 60)  # type: ignore[arg-type]
    clock.set(view.until)

    replies = fleet.acquire_all()
    probes = permits_of(replies, "probe")
    assert len(probes) == 1, replies
    assert sorted(r for r in replies if r[0] == "wait") == [("wait", "probe")] * 7
    [p] = probes
    assert fleet.ask(p, "start") == ("started", True)
    assert fleet.ask(p, "finish", "ok", None) == ("finished", None)

    for size in (1, 2, 4, 8):
        replies = fleet.acquire_all()
        cohort = permits_of(replies, "cohort")
        assert len(cohort) == size, (size, replies)
        assert [r for r in replies if r[0] != "permit"] == [("wait", "ramp")] * (8 - size)
        for i in cohort:
            assert fleet.ask(i, "start") == ("started", True)
        for i in cohort:
            assert fleet.ask(i, "finish", "ok", None) == ("finished", None)

    replies = fleet.acquire_all()
    assert replies == [("permit", "normal")] * 8
    with HostStore(path, clock=clock) as parent:
        assert parent.pause_for(POOL, "core") is None
    for i in range(8):
        fleet.ask(i, "finish", "ok", None)


def test_a_throttle_in_one_process_fences_the_others(fleet: Fleet, shared: tuple[Path, FileClock]) -> None:
    path, clock = shared
    assert fleet.acquire_all() == [("permit", "normal")] * 8
    assert fleet.ask(0, "start") == ("started", True)
    assert fleet.ask(1, "start") == ("started", True)  # already on the wire
    kind, view = fleet.ask(0, "finish", "throttle", throttle(T0, reset=T0 + 600))
    assert (view.phase, view.until, view.epoch, view.streak) == ("paused", T0 + 600, 1, 1)
    for i in range(2, 8):
        assert fleet.ask(i, "start") == ("started", False), i  # never reaches the wire
        fleet.ask(i, "finish", "not_attempted", None)
    # the call that was on the wire comes back throttled too: same window, no new escalation
    kind, view = fleet.ask(1, "finish", "throttle", throttle(T0, reset=T0 + 900))
    assert (view.until, view.epoch, view.streak) == (T0 + 900, 1, 1)
    assert fleet.acquire_all() == [("wait", "paused")] * 8
    with HostStore(path, clock=clock) as parent:
        assert parent.counters()[(POOL, "core")] == {"fenced": 6, "not_attempted": 6, "held": 8}


def test_a_killed_probe_holder_does_not_wedge_the_pool(shared: tuple[Path, FileClock]) -> None:
    path, clock = shared
    with HostStore(path, clock=clock) as parent:
        view = open_pause(parent, clock, 60)  # type: ignore[arg-type]
    clock.set(view.until)
    fleet = Fleet(path, clock.path, 3)
    try:
        replies = fleet.acquire_all(deadline=30)
        [p] = permits_of(replies, "probe")
        assert fleet.ask(p, "start") == ("started", True)
        fleet.kill(p)  # kill -9 in the middle of its probe
        survivor = next(i for i in range(3) if i != p)
        clock.advance(29.5)
        assert fleet.acquire(survivor) == ("wait", "probe")  # the probe is still held...
        clock.advance(0.5)
        assert fleet.acquire(survivor) == ("permit", "probe")  # ...until its deadline
        assert fleet.ask(survivor, "start") == ("started", True)
        assert fleet.ask(survivor, "finish", "ok", None) == ("finished", None)
        with HostStore(path, clock=clock) as parent:
            assert parent.pause_for(POOL, "core").phase == "ramp"  # type: ignore[union-attr]
            assert parent.counters()[(POOL, "core")]["expired"] == 1
    finally:
        fleet.close()


def test_a_process_killed_inside_a_transaction_releases_the_file(shared: tuple[Path, FileClock]) -> None:
    path, clock = shared
    fleet = Fleet(path, clock.path, 2)
    try:
        assert fleet.acquire(0) == ("permit", "normal")
        assert fleet.ask(1, "hold_lock") == ("locked",)
        with HostStore(path, clock=clock, busy_timeout=0.2) as parent:
            with pytest.raises(HostStoreError):
                parent.acquire(POOL, "core")
            fleet.kill(1)
            assert isinstance(parent.acquire(POOL, "core"), Permit)
        assert fleet.ask(0, "start") == ("started", True)
    finally:
        fleet.close()


def test_a_kept_permit_s_check_sees_every_commit_and_rereads_only_after_one(
        tmp_path: Path, clock: FakeClock) -> None:
    """check() skips re-reading the gate while the file is unchanged (issue 15), yet sees any commit at once."""
    path = tmp_path / "host.sqlite3"
    mine, other = HostStore(path, clock=clock), HostStore(path, clock=clock)
    try:
        kept = granted(mine.acquire(POOL, "core", deadline=300))
        assert mine.start(kept)
        reads: list[str] = []
        assert mine._conn is not None
        mine._conn.set_trace_callback(lambda sql: reads.append(sql) if sql.lstrip().startswith("SELECT") else None)
        assert [mine.check(kept) for _ in range(5)] == ["ok"] * 5
        assert len(reads) == 1  # one read of the gate's row, then PRAGMA data_version alone
        # another process's throttle moves the epoch: the very next check sees it
        probe = granted(other.acquire(POOL, "core"))
        assert other.start(probe)
        other.finish(probe, Outcome("throttle", throttle(T0, reset=T0 + 600)))
        assert mine.check(kept) == "fenced"
        # this connection's own write is seen as well (its commits do not move data_version)
        mine2 = granted(other.acquire(POOL, "graphql", deadline=300))
        assert other.start(mine2)
        assert mine.check(mine2) == "ok"
        assert mine.finish(mine2, Outcome("ok")) is None  # handed back by this connection
        assert mine.check(mine2) == "gone"
    finally:
        mine.close()
        other.close()
