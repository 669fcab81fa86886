"""The host store: one SQLite file shared by every git-sluice process on the host.

It holds, per (pool, resource), the state of the pause machine (``gate_machine``) with
the permits in flight, plus the budget ledger (the last rate headers and the
counted calls) and the counters of held, fenced and not-attempted calls.

Why SQLite, and why this way (docs/design.md#the-host-state-dir,
docs/design.md#pitfalls-it-is-built-around):

- one file for the whole host, so a throttle seen by any process stops every
  process of every repository on the host at once;
- WAL mode and a busy timeout, so readers never wait and writers queue;
- ``BEGIN IMMEDIATE`` for every read-modify-write of a gate, so two processes
  seeing a throttle at the same moment cannot both open the pause, and two
  processes at a pause's end cannot both get the probe;
- permits carry a deadline, so a process killed with -9 while holding one (even
  the probe) never wedges anything: the next caller expires it;
- a corrupt file is moved aside and the store starts afresh — losing a pause
  costs at most one throttle, crashing costs every tool on the host.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Literal, TypeVar

from .. import paths
from ..clock import Clock
from ..errors import HostStoreCorrupt as _Corrupt
from ..errors import HostStoreError as HostStoreError
from ..records import record
from ..statefile import FileLock, LockTimeout, ensure_dir
from . import gate_machine, pacing, rules
from .gate_machine import PauseView

log = logging.getLogger("git_sluice")

ADOPT_HORIZON = float(rules.RESET_HORIZON)
"""The longest pause this host sets on its own (1 h 5 min): an adopted pause ends at the latest
this long after this host first saw its note, whatever the note says (issue #14, point 2)."""
ADOPT_SHORT_HORIZON = rules.FALLBACK_CAP + rules.JITTER_SPAN
"""A secondary-limit (or unknown) note's bound (15 min 10 s): nothing GitHub says confirms or
disproves it before the one probe, and GitHub's own secondary waits are a minute or so (issue 33)."""


def adopt_horizon(cls: str | None) -> float:
    """How long after first sight a note of class ``cls`` can pause this host at most.

    A primary pause is GitHub's hourly window: up to the reset, an hour and
    some. Any other class is bounded by the longest fallback this host uses
    on its own, so a note no answer can confirm stops the fleet for a quarter
    of an hour, not an hour.
    """
    return ADOPT_HORIZON if cls == "primary" else ADOPT_SHORT_HORIZON
_SANE_SPAN = ADOPT_HORIZON + rules.JITTER_SPAN + 60.0
"""A stored pause ending later than this from now came from no rule of this host: it is discarded."""

SCHEMA_VERSION = 2
"""2: the writes table (the host's write slots, forge/pacing.py)."""
DEFAULT_BUSY_TIMEOUT = 10.0
LEDGER_BUCKET = 60  # seconds per ledger bucket: "the last hour" is then exact to a minute
LEDGER_KEEP = 2 * 86400
NOTE_FLUSH_AFTER = 2.0
"""Real seconds a process keeps noted rate headers and counted calls before it writes them (issue 15)."""

OutcomeKind = Literal["ok", "throttle", "spent", "failure", "not_attempted", "cut_short"]
"""``cut_short``: sent, then given up by a stop (SIGINT / SIGTERM) before its answer. For the gate it
told nothing, as a call not attempted (a probe's turn passes on, a cohort does not count it clean);
it is counted apart, since it did reach GitHub."""
_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS gates (
    pool TEXT NOT NULL,
    resource TEXT NOT NULL,
    state TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (pool, resource)
);
CREATE TABLE IF NOT EXISTS rates (
    pool TEXT NOT NULL,
    resource TEXT NOT NULL,
    lim INTEGER,
    remaining INTEGER,
    used INTEGER,
    reset REAL,
    observed_at REAL NOT NULL,
    PRIMARY KEY (pool, resource)
);
CREATE TABLE IF NOT EXISTS ledger (
    pool TEXT NOT NULL,
    resource TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    counted INTEGER NOT NULL DEFAULT 0,
    cost INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (pool, resource, bucket)
);
CREATE TABLE IF NOT EXISTS counters (
    pool TEXT NOT NULL,
    resource TEXT NOT NULL,
    name TEXT NOT NULL,
    value INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (pool, resource, name)
);
CREATE TABLE IF NOT EXISTS writes (
    pool TEXT NOT NULL,
    at REAL NOT NULL,
    creating INTEGER NOT NULL,
    sent REAL,
    ended REAL
);
CREATE INDEX IF NOT EXISTS writes_by_pool ON writes (pool, at);
"""


_SCHEMA_PROBES = (
    "SELECT pool, resource, state, updated_at FROM gates LIMIT 0",
    "SELECT pool, resource, lim, remaining, used, reset, observed_at FROM rates LIMIT 0",
    "SELECT pool, resource, bucket, counted, cost FROM ledger LIMIT 0",
    "SELECT pool, resource, name, value FROM counters LIMIT 0",
    "SELECT rowid, pool, at, creating, sent, ended FROM writes LIMIT 0",
)
"""Every column this module reads, asked for once per open (no rows read): a file with
another schema is told apart at once, not at the first query that needs a missing column."""


@record(frozen=True)
class Permit:
    """Leave to send one call; ``start`` it just before the wire and ``finish`` it after.

    ``enforce`` False marks an observe-only permit: it is never fenced, but what
    would have happened is counted.
    """

    id: str
    pool: str
    resource: str
    epoch: int
    kind: str  # normal | probe | cohort
    deadline_at: float
    enforce: bool = True


@record(frozen=True)
class Wait:
    """No call now for (pool, resource); ask again at ``until``."""

    pool: str
    resource: str
    until: float
    reason: str  # paused | probe | ramp


@record(frozen=True)
class Outcome:
    """How a permitted call ended; the verdict lets ``finish`` compute the pause end."""

    kind: OutcomeKind
    verdict: rules.Verdict | None = None


@record(frozen=True)
class WriteSlot:
    """When a write may go (``at``, on the store's clock read at ``now``) and whether it was kept."""

    at: float
    now: float
    granted: bool
    ident: int | None = None

    @property
    def wait(self) -> float:
        return max(self.at - self.now, 0.0)


@record(frozen=True)
class BudgetRow:
    pool: str
    resource: str
    limit: int | None
    remaining: int | None
    used: int | None
    reset: float | None
    observed_at: float | None
    counted_last_hour: int
    cost_last_hour: int


PermitCheck = Literal["ok", "gone", "fenced"]


class HostStore:
    """The host-wide store of pauses, permits and the budget ledger. Safe across threads and processes."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        clock: Clock,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        self.path = Path(path) if path is not None else paths.host_store_path()
        self.clock = clock
        self.busy_timeout = float(busy_timeout)
        self._mutex = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._inode: tuple[int, int] | None = None
        self._pid = os.getpid()
        self._inherited: list[sqlite3.Connection] = []
        self.writes = 0  # write transactions this object ran (a quiet round's are counted by the tests)
        # check()'s last read of each gate row, valid while the file is unchanged (_load_unchanged)
        self._unchanged: dict[tuple[str, str], tuple[sqlite3.Connection, tuple[int, int], gate_machine.GateState]] = {}
        # rate headers and counted calls noted, not yet written (one write per round, not one per call)
        self._noted_rates: dict[tuple[str, str], tuple[rules.RateHeaders, float]] = {}
        self._noted_calls: dict[tuple[str, str, int], list[int]] = {}
        self._noted_since: float | None = None
        with self._mutex:
            self._connect()

    # --- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Write what was noted, then close the connection."""
        with self._mutex:
            if self._noted_rates or self._noted_calls:
                with contextlib.suppress(HostStoreError):
                    self.flush()
            self._disconnect()

    def _disconnect(self) -> None:
        with self._mutex:
            if self._conn is not None and self._pid == os.getpid():
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
            self._conn = None

    def __enter__(self) -> HostStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> None:
        """Open (creating, or recovering from corruption) the database file."""
        try:
            self._open_once()
        except _Corrupt as exc:
            self._recover(str(exc))

    def _open_once(self) -> None:
        self._disconnect()
        parent = self.path.parent
        if not parent.is_dir():
            ensure_dir(parent)
        for suffix in ("", "-wal", "-shm"):  # a directory or a dangling link in the way: set aside like a corrupt file
            where = str(self.path) + suffix
            if os.path.lexists(where) and not os.path.isfile(where):
                raise _Corrupt(f"{os.path.basename(where)} is not a file")
        # Never open (and close) the database file ourselves: closing any descriptor of a
        # file drops every POSIX lock this *process* holds on it, including the locks of
        # another connection to the same store in this process (SQLite's "how to corrupt",
        # 2.2). SQLite creates the file; we only tighten its mode, by path.
        unwritable = HostStoreError(
            f"cannot open the host state file {self.path}; "
            "make its directory writable by you (or set XDG_STATE_HOME to a directory that is)"
        )
        try:
            conn = sqlite3.connect(
                str(self.path), timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error:
            raise unwritable from None
        try:
            os.chmod(self.path, 0o600)
            st = os.stat(self.path)
        except OSError:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            raise unwritable from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA synchronous = NORMAL")
            # the schema is written once per file; opening an existing file takes no write lock
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
            for probe in _SCHEMA_PROBES:
                conn.execute(probe).fetchall()  # another schema fails here, and is rebuilt
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            raise self._translate(exc) from None
        self._conn = conn
        self._inode = (st.st_dev, st.st_ino)

    def _translate(self, exc: sqlite3.Error) -> Exception:
        """A locked file becomes an actionable HostStoreError; a broken one becomes _Corrupt."""
        text = str(exc).lower()
        if isinstance(exc, sqlite3.OperationalError):
            if "locked" in text or "busy" in text:
                return HostStoreError(
                    f"the host state file {self.path} stayed locked by another process for more than "
                    f"{self.busy_timeout:g} s; look for a hung git-sluice process holding it "
                    f"(`fuser {self.path}`) and stop it, or, if the file is on a network file system, "
                    "point XDG_STATE_HOME at a local disk"
                )
            if "malformed" in text or "not a database" in text:
                return _Corrupt(str(exc))
            if "no such column" in text or "no such table" in text or "has no column" in text:
                # a file of another schema (another program's, or a version's gone wrong):
                # unusable as it is, so moved aside and rebuilt like a corrupt one (issue #14, point 10)
                return _Corrupt(f"another schema: {exc}")
            return HostStoreError(
                f"the host state file {self.path} cannot be used: {exc}; check that the file and its "
                "directory are writable by you and the disk is not full"
            )
        if isinstance(exc, sqlite3.DatabaseError):
            return _Corrupt(str(exc))
        return HostStoreError(f"the host state file {self.path} cannot be used: {exc}")

    def _recover(self, why: str) -> None:
        """Move a corrupt file aside (once, even with many processes at it) and start afresh."""
        self._disconnect()
        # statefile's lock: the same flock on the same file the filelock package took here before
        lock = FileLock(str(self.path) + ".recover.lock", timeout=self.busy_timeout)
        try:
            with lock:
                try:
                    self._open_once()  # someone else may have recovered it already
                    return
                except _Corrupt:
                    pass
                stamp = int(self.clock.time())
                aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
                n = 1
                while aside.exists():
                    aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}.{n}")
                    n += 1
                for suffix in ("", "-wal", "-shm"):
                    src = Path(str(self.path) + suffix)
                    if os.path.lexists(src):
                        os.replace(src, Path(str(aside) + suffix))
                log.warning(
                    "the host state file %s was unusable (%s); moved it aside to %s and started afresh "
                    "(pauses and the budget ledger on this host are forgotten)",
                    self.path,
                    why,
                    aside,
                )
                try:
                    self._open_once()
                except _Corrupt as exc:
                    raise HostStoreError(
                        f"the host state file {self.path} cannot be created afresh ({exc}); "
                        "check the disk and the directory"
                    ) from None
        except LockTimeout:
            raise HostStoreError(
                f"could not take {lock.lock_file} within {self.busy_timeout:g} s to recover the corrupt "
                f"host state file {self.path}; remove the lock file if no git-sluice process is running"
            ) from None

    def _ensure_current_file(self) -> None:
        """Reconnect if another process replaced the file (moved a corrupt one aside), or after a fork."""
        if self._pid != os.getpid():
            # SQLite forbids using a connection across fork(); the parent's is kept
            # (never closed here, which could disturb the parent's locks) and a new one opened
            if self._conn is not None:
                self._inherited.append(self._conn)
            self._conn = None
            self._pid = os.getpid()
        try:
            st = os.stat(self.path)
            same = self._inode == (st.st_dev, st.st_ino)
        except OSError:
            same = False
        if self._conn is None or not same:
            self._connect()

    def _run(self, op: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run one operation; a file that turns out corrupt is recovered and the operation retried once."""
        with self._mutex:
            for attempt in (1, 2):
                self._ensure_current_file()
                assert self._conn is not None
                try:
                    return op(self._conn)
                except sqlite3.Error as exc:
                    err = self._translate(exc)
                    if isinstance(err, _Corrupt) and attempt == 1:
                        self._recover(str(err))
                        continue
                    if isinstance(err, _Corrupt):
                        raise HostStoreError(
                            f"the host state file {self.path} is corrupt and could not be recovered: {err}"
                        ) from None
                    raise err from None
            raise AssertionError("unreachable")

    @contextlib.contextmanager
    def _write(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        """One read-modify-write under SQLite's write lock, so no other process interleaves."""
        conn.execute("BEGIN IMMEDIATE")
        self.writes += 1
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            # never leave the connection inside a transaction: the next BEGIN would fail
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    # --- gate state ----------------------------------------------------------------

    def _load_live(self, conn: sqlite3.Connection, pool: str, resource: str, now: float) -> gate_machine.GateState:
        """The gate's state less the permits past their deadline, counted ``expired`` (inside a write)."""
        state = self._load(conn, pool, resource)
        expired = gate_machine.expire(state, now)
        if expired:
            self._count(conn, pool, resource, "expired", len(expired))
        return state

    def _load_unchanged(self, conn: sqlite3.Connection, pool: str, resource: str) -> gate_machine.GateState:
        """:meth:`_load` for a reader that changes nothing (``check``), the row read again only once the file changed.

        A round checks its kept permit before each of its ~150 calls (issue 15);
        the gate's row changes only by a commit. ``PRAGMA data_version`` moves
        whenever *another* connection commits to the file, and this
        connection's own commits move its ``total_changes``: while neither
        moved, the row is the one last read, so it is not read and parsed again.
        The state is the caller's to read only: it is never saved from here.
        """
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        seen = (version, conn.total_changes)
        cached = self._unchanged.get((pool, resource))
        if cached is not None and cached[0] is conn and cached[1] == seen:
            return cached[2]
        state = self._load(conn, pool, resource)
        self._unchanged[(pool, resource)] = (conn, seen, state)
        return state

    def _load(self, conn: sqlite3.Connection, pool: str, resource: str) -> gate_machine.GateState:
        row = conn.execute("SELECT state FROM gates WHERE pool = ? AND resource = ?", (pool, resource)).fetchone()
        if row is None:
            return gate_machine.GateState(pool_id=pool)
        try:
            state = gate_machine.GateState.from_dict(json.loads(row[0]))
            if not gate_machine.sane(state, self.clock.time(), _SANE_SPAN):
                raise ValueError(f"a pause until {state.until!r}, past any this host sets")
        except (ValueError, TypeError, RecursionError) as exc:
            log.warning("pause state for %s/%s in %s was unreadable (%s); starting it afresh", pool, resource, self.path, exc)
            return gate_machine.GateState(pool_id=pool)
        state.pool_id = pool
        return state

    def _save(self, conn: sqlite3.Connection, pool: str, resource: str, state: gate_machine.GateState, now: float) -> None:
        conn.execute(
            "INSERT INTO gates (pool, resource, state, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (pool, resource) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
            (pool, resource, json.dumps(state.to_dict(), separators=(",", ":")), now),
        )

    def _count(self, conn: sqlite3.Connection, pool: str, resource: str, name: str, n: int = 1) -> None:
        conn.execute(
            "INSERT INTO counters (pool, resource, name, value) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (pool, resource, name) DO UPDATE SET value = value + excluded.value",
            (pool, resource, name, n),
        )

    # --- the permit road --------------------------------------------------------------

    def acquire(self, pool: str, resource: str, *, deadline: float = 60.0, enforce: bool = True) -> Permit | Wait:
        """A permit for one call, or how long to wait. Observe-only (``enforce=False``) always grants."""

        def op(conn: sqlite3.Connection) -> Permit | Wait:
            with self._write(conn):
                now = self.clock.time()
                state = self._load_live(conn, pool, resource, now)
                permit_id = os.urandom(16).hex()  # as uuid4().hex, without importing uuid
                if enforce:
                    decision = gate_machine.acquire(state, now, permit_id, now + deadline)
                    if isinstance(decision, gate_machine.Deferred) and decision.reason == "paused":
                        self._count(conn, pool, resource, "held")
                else:
                    import copy

                    trial = copy.deepcopy(state)
                    decision = gate_machine.acquire(trial, now, permit_id, now + deadline)
                    if isinstance(decision, gate_machine.Grant):
                        state = trial
                    else:
                        # what enforcement would have held goes out anyway, untracked, as a
                        # call from inside the window (its throttle extends, never escalates)
                        state.held += 1
                        self._count(conn, pool, resource, f"would_hold_{decision.reason}")
                        decision = gate_machine.Grant("normal", state.epoch - 1)
                self._save(conn, pool, resource, state, now)
            if isinstance(decision, gate_machine.Deferred):
                return Wait(pool, resource, decision.until, decision.reason)
            return Permit(permit_id, pool, resource, decision.epoch, decision.kind, now + deadline, enforce)

        return self._run(op)

    def start(self, permit: Permit) -> bool:
        """May the call go on the wire now? False = fenced: do not send it (it is counted not attempted)."""

        def op(conn: sqlite3.Connection) -> bool:
            with self._write(conn):
                now = self.clock.time()
                state = self._load_live(conn, permit.pool, permit.resource, now)
                tracked = permit.id in state.permits
                ok = gate_machine.start(state, permit.id, now)
                if not ok and (permit.enforce or tracked):
                    self._count(conn, permit.pool, permit.resource, "fenced" if permit.enforce else "would_fence")
                self._save(conn, permit.pool, permit.resource, state, now)
            return ok or not permit.enforce

        return self._run(op)

    def check(self, permit: Permit) -> PermitCheck:
        """Would ``start`` still let this permit's next call on the wire? Read only: no write lock taken.

        A process reusing one normal permit for a round's calls (host_gate.py) asks
        this before each call: "ok" while the gate stays open at the permit's
        epoch and the permit is recorded; "fenced" once a throttle anywhere on
        the host moved the epoch (the caller then ``start``s it, which drops and
        counts it, as for any permit fenced before the wire); "gone" when it
        expired or was handed back.
        """

        def op(conn: sqlite3.Connection) -> PermitCheck:
            state = self._load_unchanged(conn, permit.pool, permit.resource)
            if state.epoch != permit.epoch or state.phase != "open":
                return "fenced"
            held = state.permits.get(permit.id)
            if held is None or self.clock.time() >= held.deadline:
                return "gone"
            return "ok"

        return self._run(op)

    def finish(self, permit: Permit, outcome: Outcome) -> PauseView | None:
        """Hand the permit back; returns the pause this opened or extended (to publish), else None."""

        def op(conn: sqlite3.Connection) -> PauseView | None:
            with self._write(conn):
                now = self.clock.time()
                state = self._load_live(conn, permit.pool, permit.resource, now)
                finished = self._finished(state, permit, outcome, now)
                if outcome.kind in ("not_attempted", "cut_short"):
                    self._count(conn, permit.pool, permit.resource, outcome.kind)
                effect = gate_machine.finish(state, permit.id, now, finished, epoch=permit.epoch)
                if effect == "paused" and not permit.enforce:
                    state.observe_only = True
                self._save(conn, permit.pool, permit.resource, state, now)
            if effect in ("paused", "extended"):
                return state.view(permit.pool, permit.resource)
            return None

        return self._run(op)

    @staticmethod
    def _finished(state: gate_machine.GateState, permit: Permit, outcome: Outcome, now: float) -> gate_machine.Finished:
        if outcome.kind in ("throttle", "spent"):
            until, how = gate_machine.pause_until_for(state, outcome.verdict, now=now, permit_epoch=permit.epoch)
            if outcome.kind == "spent":
                return gate_machine.spent(until, how)
            cls = outcome.verdict.cls if outcome.verdict is not None and outcome.verdict.cls else "unknown"
            return gate_machine.throttled(until, cls, how)
        return {"ok": gate_machine.OK, "failure": gate_machine.FAILURE, "not_attempted": gate_machine.NOT_ATTEMPTED,
                "cut_short": gate_machine.NOT_ATTEMPTED}[outcome.kind]

    def adopt(
        self,
        pool: str,
        resource: str,
        until: float,
        cls: str | None,
        *,
        source: str,
        seen_at: float | None = None,
        origin: str | None = None,
    ) -> bool:
        """Take on a pause another host published; True if it paused (or lengthened the pause) here.

        Anything may be in a note: the pause ends at the latest :func:`adopt_horizon`
        after ``seen_at`` (when this host first saw the note, by its own clock;
        now if not given). ``origin`` names where the note lives
        (:meth:`release_adopted`).
        """

        def op(conn: sqlite3.Connection) -> bool:
            with self._write(conn):
                now = self.clock.time()
                first = now if seen_at is None or not seen_at <= now else seen_at
                bounded = min(until, first + adopt_horizon(cls)) if until == until else now
                state = self._load(conn, pool, resource)
                gate_machine.expire(state, now)
                changed = gate_machine.adopt(state, bounded, cls, now, source=source, origin=origin)
                if changed:
                    self._save(conn, pool, resource, state, now)
            return changed

        return self._run(op)

    def release_adopted(self, origin: str, pools: Collection[str], present: Collection[tuple[str, str]]) -> int:
        """End the pauses adopted from ``origin`` whose note is no longer there (issue #14, point 2).

        ``present`` is every (pool, resource) with a note at ``origin`` now; a
        pause this host confirmed itself (a local answer) is never ended here.
        Returns how many pauses were ended.
        """
        wanted = set(pools)
        there = set(present)

        def op(conn: sqlite3.Connection) -> int:
            ended = 0
            with self._write(conn):
                now = self.clock.time()
                keys = conn.execute("SELECT pool, resource FROM gates").fetchall()
                for pool, resource in keys:
                    if pool not in wanted or (pool, resource) in there:
                        continue
                    state = self._load(conn, pool, resource)
                    if gate_machine.release_adopted(state, now, origin):
                        self._save(conn, pool, resource, state, now)
                        ended += 1
            return ended

        return self._run(op)

    # --- reading ----------------------------------------------------------------------

    def _views(self, where: str = "", args: tuple[str, ...] = ()) -> list[PauseView]:
        def op(conn: sqlite3.Connection) -> list[PauseView]:
            now = self.clock.time()
            rows = conn.execute(f"SELECT pool, resource, state FROM gates {where} ORDER BY pool, resource", args)
            views = []
            for pool, resource, text in rows.fetchall():
                try:
                    state = gate_machine.GateState.from_dict(json.loads(text))
                except (ValueError, TypeError, RecursionError):
                    continue
                if not gate_machine.sane(state, now, _SANE_SPAN):
                    continue  # discarded by the next write of it; never shown
                state.pool_id = pool
                gate_machine.expire(state, now)  # what the next caller will find; nothing is written
                if state.phase != "open":
                    views.append(state.view(pool, resource))
            return views

        return self._run(op)

    def pauses(self) -> list[PauseView]:
        """Every (pool, resource) not open: paused, probing or ramping (observe-only ones flagged)."""
        return self._views()

    def heard(self, pool: str, resource: str) -> tuple[int, float] | None:
        """What GitHub last said was left of (pool, resource), and when this host heard it (its clock).

        The evidence a pause note is weighed against (:meth:`PauseNotes.adopt_into`); answers
        noted but not yet flushed are the newest.
        """
        with self._mutex:
            noted = self._noted_rates.get((pool, resource)) if self._pid == os.getpid() else None
        if noted is not None and noted[0].remaining is not None:
            return int(noted[0].remaining), float(noted[1])

        def op(conn: sqlite3.Connection) -> tuple[int, float] | None:
            row = conn.execute("SELECT remaining, observed_at FROM rates WHERE pool = ? AND resource = ?",
                               (pool, resource)).fetchone()
            if row is None or not isinstance(row[0], int) or not isinstance(row[1], (int, float)):
                return None
            return int(row[0]), float(row[1])

        return self._run(op)

    def pause_for(self, pool: str, resource: str) -> PauseView | None:
        views = self._views("WHERE pool = ? AND resource = ?", (pool, resource))
        return views[0] if views else None

    def counters(self) -> dict[tuple[str, str], dict[str, int]]:
        """Held, would-hold, fenced, would-fence, not-attempted and expired calls per (pool, resource)."""

        def op(conn: sqlite3.Connection) -> dict[tuple[str, str], dict[str, int]]:
            out: dict[tuple[str, str], dict[str, int]] = {}
            for pool, resource, name, value in conn.execute("SELECT pool, resource, name, value FROM counters"):
                out.setdefault((pool, resource), {})[name] = value
            return out

        return self._run(op)

    # --- write slots (forge/pacing.py) ----------------------------------------------------

    def reserve_write(self, pool: str, *, creating: bool, rules: pacing.WriteRules, patience: float) -> WriteSlot:
        """A slot for one write of ``pool``, given in one transaction with every other process's.

        Granted (and kept, so later writes go after it) only when it comes within
        ``patience`` seconds; otherwise nothing is kept and the slot says when to
        come back. Slots older than the rules' span are dropped, and so is one
        further ahead than the span (a clock that went back must not stop the
        pool's writes for an hour).
        """

        def op(conn: sqlite3.Connection) -> WriteSlot:
            with self._write(conn):
                now = self.clock.time()
                conn.execute("DELETE FROM writes WHERE pool = ? AND (at <= ? OR at > ?)",
                             (pool, now - rules.span, now + rules.span))
                history = [pacing.Written(at=float(at), creating=bool(c)) for at, c in conn.execute(
                    "SELECT at, creating FROM writes WHERE pool = ?", (pool,))]
                slot = pacing.next_slot(history, now, creating, rules)
                granted = slot - now <= patience
                ident = None
                if granted:
                    ident = conn.execute("INSERT INTO writes (pool, at, creating) VALUES (?, ?, ?)",
                                         (pool, slot, int(creating))).lastrowid
                    self._count(conn, pool, "writes", "paced" if slot > now else "written")
                else:
                    self._count(conn, pool, "writes", "deferred")
                return WriteSlot(at=slot, now=now, granted=granted, ident=ident)

        return self._run(op)

    def write_clear(self, pool: str, slot: WriteSlot, rules: pacing.WriteRules, *, creating: bool) -> float | None:
        """When the write of ``slot`` may go, now that its slot has come (:func:`pacing.clear_from`)."""

        def op(conn: sqlite3.Connection) -> float | None:
            earlier = [pacing.Written(at=float(at), creating=bool(c), sent=sent, ended=ended)
                       for at, c, sent, ended in conn.execute(
                           "SELECT at, creating, sent, ended FROM writes WHERE pool = ? AND at < ? AND rowid != ?",
                           (pool, slot.at, slot.ident if slot.ident is not None else -1))]
            return pacing.clear_from(earlier, self.clock.time(), rules, creating)

        return self._run(op)

    def write_went(self, slot: WriteSlot) -> None:
        """The write of ``slot`` goes now: later writes count their windows from this moment."""
        self._mark_write(slot, "sent")

    def write_ended(self, slot: WriteSlot) -> None:
        """The write of ``slot`` has its answer (or failed): the next write counts its gap from now."""
        self._mark_write(slot, "ended")

    def _mark_write(self, slot: WriteSlot, column: Literal["sent", "ended"]) -> None:
        if slot.ident is None:
            return

        def op(conn: sqlite3.Connection) -> None:
            with self._write(conn):
                # a write that never went (interrupted in its wait) has an end and no "sent": no window
                conn.execute(f"UPDATE writes SET {column} = ? WHERE rowid = ?", (self.clock.time(), slot.ident))

        self._run(op)

    # --- the budget ledger --------------------------------------------------------------

    def record_rate(self, pool: str, resource: str, headers: rules.RateHeaders, *, counted: bool, cost: int) -> None:
        """Remember the last rate headers of (pool, resource) and, if GitHub counted it, the call (written now)."""

        def op(conn: sqlite3.Connection) -> None:
            with self._write(conn):
                now = self.clock.time()
                if any(v is not None for v in (headers.limit, headers.remaining, headers.used, headers.reset)):
                    self._upsert_rate(conn, pool, resource, headers, now)
                if counted:
                    self._add_calls(conn, pool, resource, int(now // LEDGER_BUCKET) * LEDGER_BUCKET, 1, cost)
                    conn.execute("DELETE FROM ledger WHERE bucket < ?", (int(now) - LEDGER_KEEP,))

        self._run(op)

    def note_rate(self, pool: str, resource: str, headers: rules.RateHeaders, *, counted: bool, cost: int) -> None:
        """``record_rate``, kept in memory and written with the others by ``flush`` (at most every 2 s).

        The road notes every answer's headers here: written one by one they cost
        a write transaction per call (issue 15). What waits is only the ledger
        (the last headers, the counted calls); a pause is never deferred.
        """
        with self._mutex:
            if self._pid != os.getpid():  # a forked child does not write its parent's notes
                self._noted_rates.clear()
                self._noted_calls.clear()
                self._noted_since = None
            now = self.clock.time()
            key = (pool, resource)
            if any(v is not None for v in (headers.limit, headers.remaining, headers.used, headers.reset)):
                old = self._noted_rates.get(key)
                if old is not None:
                    prev = old[0]
                    headers = rules.RateHeaders(
                        limit=headers.limit if headers.limit is not None else prev.limit,
                        remaining=headers.remaining if headers.remaining is not None else prev.remaining,
                        used=headers.used if headers.used is not None else prev.used,
                        reset=headers.reset if headers.reset is not None else prev.reset,
                        resource=headers.resource,
                    )
                self._noted_rates[key] = (headers, now)
            if counted:
                bucket = int(now // LEDGER_BUCKET) * LEDGER_BUCKET
                tally = self._noted_calls.setdefault((pool, resource, bucket), [0, 0])
                tally[0] += 1
                tally[1] += int(cost)
            if self._noted_since is None:
                self._noted_since = time.monotonic()
            elif time.monotonic() - self._noted_since >= NOTE_FLUSH_AFTER:
                self.flush()

    def flush(self) -> None:
        """Write the noted rate headers and counted calls, in one transaction (nothing noted: no write)."""
        with self._mutex:
            if self._pid != os.getpid():
                self._noted_rates.clear()
                self._noted_calls.clear()
            if not self._noted_rates and not self._noted_calls:
                self._noted_since = None
                return
            rates, calls = dict(self._noted_rates), dict(self._noted_calls)

            def op(conn: sqlite3.Connection) -> None:
                with self._write(conn):
                    for (pool, resource), (headers, at) in rates.items():
                        self._upsert_rate(conn, pool, resource, headers, at)
                    for (pool, resource, bucket), (counted, cost) in calls.items():
                        self._add_calls(conn, pool, resource, bucket, counted, cost)
                    if calls:
                        conn.execute("DELETE FROM ledger WHERE bucket < ?", (int(self.clock.time()) - LEDGER_KEEP,))

            self._run(op)
            self._noted_rates.clear()
            self._noted_calls.clear()
            self._noted_since = None

    @staticmethod
    def _upsert_rate(conn: sqlite3.Connection, pool: str, resource: str, headers: rules.RateHeaders, now: float) -> None:
        conn.execute(
            "INSERT INTO rates (pool, resource, lim, remaining, used, reset, observed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (pool, resource) DO UPDATE SET "
            "lim = COALESCE(excluded.lim, lim), remaining = COALESCE(excluded.remaining, remaining), "
            "used = COALESCE(excluded.used, used), reset = COALESCE(excluded.reset, reset), "
            "observed_at = excluded.observed_at",
            (pool, resource, headers.limit, headers.remaining, headers.used, headers.reset, now),
        )

    @staticmethod
    def _add_calls(conn: sqlite3.Connection, pool: str, resource: str, bucket: int, counted: int, cost: int) -> None:
        conn.execute(
            "INSERT INTO ledger (pool, resource, bucket, counted, cost) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (pool, resource, bucket) DO UPDATE SET "
            "counted = counted + excluded.counted, cost = cost + excluded.cost",
            (pool, resource, bucket, int(counted), int(cost)),
        )

    def budget(self) -> list[BudgetRow]:
        """Per (pool, resource): the last rate headers seen and the calls counted in the last hour."""
        self.flush()

        def op(conn: sqlite3.Connection) -> list[BudgetRow]:
            since = self.clock.time() - 3600
            rates = {
                (r[0], r[1]): r[2:]
                for r in conn.execute("SELECT pool, resource, lim, remaining, used, reset, observed_at FROM rates")
            }
            spent = {
                (r[0], r[1]): (r[2], r[3])
                for r in conn.execute(
                    "SELECT pool, resource, SUM(counted), SUM(cost) FROM ledger WHERE bucket > ? "
                    "GROUP BY pool, resource",
                    (since - LEDGER_BUCKET,),
                )
            }
            rows = []
            for key in sorted(set(rates) | set(spent)):
                lim, remaining, used, reset, observed_at = rates.get(key, (None,) * 5)
                counted, cost = spent.get(key, (0, 0))
                rows.append(
                    BudgetRow(key[0], key[1], lim, remaining, used, reset, observed_at, int(counted), int(cost))
                )
            return rows

        return self._run(op)
