"""git-sluice's side of a run: drivers, waits and hook-driven steps on the fleet's hosts.

- A **driver** is an in-process session per (host, repository) — one
  ``git sluice drive`` — whose ticks are the product's own
  ``drive.drive(session, max_ticks=1, let_go=False)`` on the discovery clock
  (``max(1 s, min(discovery, lease / 3))``, 60 s by default).
- A **wait** is an in-process session following one request with the
  product's ``wait.wait_for``; each look is ``wait_for`` with a one-millisecond
  timeout, repeated at the interval ``wait_for`` itself sleeps (the discovery
  interval where its host takes the branch in, a quarter of it elsewhere).
  When its request reaches an outcome the wait ends and its host starts a new
  one on another request, as an agent would.
- A **hook-driven step** is real: the harness runs ``git push`` / ``git fetch``
  in the host's clone; the installed hooks start a detached
  ``git-sluice _hook-round`` process, and the harness waits (real time) until
  it has ended before the clock moves on.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from git_sluice.double import GitHubDouble
from git_sluice.errors import AllowanceSpent, SluiceError, TimedOut
from git_sluice.intake.queue import QueueStore
from git_sluice.remote.lease_keeper import LeaseKeeper
from git_sluice.commands.drive import drive
from git_sluice.commands.wait import wait_for
from git_sluice.runtime.session import Session
from git_sluice.runtime.watching import next_wake
from git_sluice.intake.hostwatch import HostWatch

from fleet_activity import Activity, Expectation, View, parse_time
from fleet_world import Host, World, as_host, git

HOOK_WAIT_LIMIT = 90.0  # real seconds a hook round may take before the run says so


# ----------------------------------------------------------------------------- the ledger
@dataclass
class Tally:
    """What reached the double between two ledger marks."""

    requests: int = 0
    counted_rest: int = 0
    points: int = 0
    throttled: int = 0  # 403/429 answers and GraphQL RATE_LIMITED answers
    not_modified: int = 0
    graphql_calls: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    by_route: dict[str, list[int]] = field(default_factory=dict)  # route -> [requests, counted cost]

    def scaled(self, factor: float) -> dict[str, float]:
        return {
            "requests": self.requests * factor,
            "counted_rest": self.counted_rest * factor,
            "points": self.points * factor,
            "throttled": self.throttled * factor,
            "not_modified": self.not_modified * factor,
            "graphql_calls": self.graphql_calls * factor,
        }


def route_of(path: str) -> str:
    """A call's kind, for the ledger's breakdown (what a counted call was spent on)."""
    bare = path.split("?", 1)[0]
    if bare == "/graphql":
        return "graphql"
    if bare.endswith("/check-runs"):
        return "check-runs"
    if bare.endswith("/status"):
        return "status"
    if bare.endswith("/pulls"):
        return "pulls list"
    if "/pulls/" in bare:
        return "pull"
    if bare == "/user":
        return "user"
    if bare.startswith("/app/installations/") and bare.endswith("/access_tokens"):
        return "app token"
    return "other"


def tally(gh: GitHubDouble, since: int, until: int | None = None, pool: str | None = None) -> Tally:
    """Requests, counted REST calls, GraphQL points and refusals between two ledger marks.

    ``throttled`` counts 403/429 answers and GraphQL 200s the double did not count — RATE_LIMITED
    answers (an invalid query would land there too, and would be a finding of its own) — where the
    double has rate limits at all (Enterprise Server's are off: it counts nothing).
    """
    calls = gh.ledger[since:until]
    out = Tally()
    for call in calls:
        if pool is not None and call.pool != pool:
            continue
        out.requests += 1
        out.by_status[call.status] = out.by_status.get(call.status, 0) + 1
        route = out.by_route.setdefault(route_of(call.path), [0, 0])
        route[0] += 1
        route[1] += call.cost if call.counted else 0
        if call.status == 304:
            out.not_modified += 1
        if call.resource == "graphql":
            out.graphql_calls += 1
            if call.counted:
                out.points += call.cost
            elif call.status == 200 and gh.rate_limits:
                out.throttled += 1  # a GraphQL 200 the double did not count is a RATE_LIMITED answer
        elif call.counted:
            out.counted_rest += call.cost
        if call.status in (403, 429):
            out.throttled += 1
    return out


# ------------------------------------------------------------------------- hook rounds
def _hook_rounds_running(clone: Path) -> list[int]:
    """Detached ``git-sluice _hook-round`` processes whose working directory is this clone."""
    found = []
    target = str(clone.resolve())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            if b"_hook-round" not in cmdline:
                continue
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd == target or cwd.startswith(target + os.sep):
            found.append(int(entry))
    return found


def wait_for_hook_rounds(clone: Path, limit: float = HOOK_WAIT_LIMIT) -> float:
    """Wait (real time) until no hook round of ``clone`` runs or waits to; returns the seconds waited."""
    sluice_dir = clone / ".git" / "sluice"
    started = time.monotonic()
    quiet = 0
    time.sleep(0.02)
    while time.monotonic() - started < limit:
        pending = any(sluice_dir.glob("hook-in.*")) or any(sluice_dir.glob("hook-ask.*"))
        if pending or _hook_rounds_running(clone):
            quiet = 0
        else:
            quiet += 1
            if quiet >= 2:
                return time.monotonic() - started
        time.sleep(0.02)
    raise TimeoutError(f"a hook round in {clone} still ran after {limit:g} s")


# ----------------------------------------------------------------------------- the git side
class GitWorld:
    """Changes made with real git: branches on the bare remotes, pushes and fetches from host clones."""

    def __init__(self, world: World, hosts: list[Host]) -> None:
        self.world = world
        self.hosts = hosts
        self.hook_seconds: list[float] = []
        self.hook_failures: list[str] = []

    def open_branch(self, repo: str, head_ref: str) -> str:
        return self.world.new_commit(self.world.repos[repo], head_ref, f"{head_ref}: work")

    def prepare_push(self, repo: str, host: int, head_ref: str) -> str:
        """A new commit on the head, made in the host's clone on top of the remote's (fetched first)."""
        clone = self.hosts[host].clones[repo]
        env = self.world.host_env(self.hosts[host])
        git(clone, "-c", "core.hooksPath=/dev/null", "fetch", "-q", *self.hosts[host].harness_fetch_args(repo),
            "origin", f"+refs/heads/{head_ref}:refs/remotes/origin/{head_ref}", env=env)
        raw = pygit2.Repository(str(clone))
        parent = raw.references[f"refs/remotes/origin/{head_ref}"].target
        sig = pygit2.Signature("Bench", "bench@sluice.invalid", int(self.world.clock.time()), 0)
        oid = raw.create_commit(None, sig, sig, f"{head_ref}: more work", raw.get(parent).tree.id, [parent])
        raw.references.create(f"refs/heads/{head_ref}", oid, force=True)
        return str(oid)

    def push(self, repo: str, host: int, head_ref: str, sha: str) -> float:
        """The user's own ``git push``, hooks and all; then wait for the round it started."""
        h = self.hosts[host]
        clone = h.clones[repo]
        started = time.monotonic()
        git(clone, "push", "-q", *h.harness_push_args(repo), "origin", f"refs/heads/{head_ref}:refs/heads/{head_ref}",
            env=self.world.host_env(h))
        self.world.repos[repo].branch_heads[head_ref] = sha
        return self._after_hook(clone, started)

    def merged(self, repo: str, host: int, number: int) -> float:
        """GitHub merged: the remote's main moves; one host's ``git fetch`` brings it (hooks fire)."""
        spec = self.world.repos[repo]
        sha = self.world.new_commit(spec, "main", f"Merge #{number}")
        self.world.gh.set_branch(repo, "main", sha)
        h = self.hosts[host]
        clone = h.clones[repo]
        started = time.monotonic()
        git(clone, "fetch", "-q", *h.harness_fetch_args(repo), "origin", env=self.world.host_env(h))
        return self._after_hook(clone, started)

    def _after_hook(self, clone: Path, started: float) -> float:
        """Wait for the hook round the command started; the real seconds from the command to its end."""
        try:
            wait_for_hook_rounds(clone)
        except TimeoutError as exc:
            self.hook_failures.append(str(exc))
        wall = time.monotonic() - started
        self.hook_seconds.append(wall)
        return wall

    def other_push(self, repo: str, branch: str) -> str:
        """Someone's push to a branch no request heads: a new commit on the bare remote (no hook fires)."""
        spec = self.world.repos[repo]
        return self.world.new_commit(spec, branch, f"{branch}: someone else's work")

    def holder(self, repo: str) -> int | None:
        """The host index holding the branch's lease, as the remote says."""
        spec = self.world.repos[repo]
        raw = pygit2.Repository(str(spec.bare))
        ref = raw.references.get("refs/sluice/intake/main")
        if ref is None:
            return None
        message = raw.get(ref.target).message
        for line in message.splitlines():
            if line.startswith("Holder:"):
                name = line.split(":", 1)[1].strip()
                for index, host in enumerate(self.hosts):
                    if host.name == name:
                        return index
        return None


# ------------------------------------------------------------------------------- queues
class QueueWatch:
    """Marks expectations seen once any host's queue shows them (reads only queues that changed)."""

    def __init__(self, hosts: list[Host], expectations: list[Expectation]) -> None:
        self.hosts = hosts
        self.expectations = expectations
        self._mtimes: dict[Path, int] = {}
        self._views: dict[tuple[str, str], dict[int, View] | None] = {}

    def _views_of(self, host: Host, repo: str) -> dict[int, View] | None:
        """The host's queue of ``repo`` as views; None while it has none of its own (never read, withdrawn)."""
        clone = host.clones.get(repo)
        if clone is None:
            return None
        store = QueueStore(clone / ".git" / "sluice")
        path = store.path_for("main")
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            return None
        key = (host.name, repo)
        if self._mtimes.get(path) != mtime:
            self._mtimes[path] = mtime
            doc = store.load("main")
            if doc.withdrawn_by is not None or doc.read_at is None:
                self._views[key] = None
            else:
                self._views[key] = {
                    n: View(True, e.head_sha, parse_time(e.updated_at),
                            e.checks_state in ("SUCCESS", "FAILURE", "ERROR"))
                    for n, e in doc.entries.items()
                }
        return self._views.get(key)

    def check(self, now: float) -> None:
        pending = [e for e in self.expectations if e.seen_at is None and not e.superseded]
        if not pending:
            return
        repos = {e.repo for e in pending}
        views: dict[str, list[dict[int, View]]] = {}
        for repo in repos:
            views[repo] = [v for v in (self._views_of(h, repo) for h in self.hosts) if v is not None]
        for exp in pending:
            for view in views[exp.repo]:
                if exp.met(view.get(exp.number)):
                    exp.seen_at = now
                    break


# -------------------------------------------------------------------------------- actors
class DriverActor:
    """One ``git sluice drive`` on one host and clone, waking when the product's drive would.

    Each tick is ``drive.drive(session, max_ticks=1)``; the next is when ``drive`` itself would wake
    (``watching.next_wake``: the host watch's next tick on the host's clock, with its jitter, or the
    driver's own tick for the lease renewals, whichever comes first).
    """

    def __init__(self, session: Session, host: Host | None = None) -> None:
        self.session = session
        self.host = host
        settings = session.settings
        self.tick = max(1.0, min(settings.discovery, settings.lease / 3))
        self.ticks = 0

    def step(self, now: float) -> float:
        self.ticks += 1
        with as_host(self.host):
            drive(self.session, max_ticks=1, let_go=False)
            watch = self.session.watch if isinstance(self.session.watch, HostWatch) else None
            return next_wake(self.session, watch, now, self.tick)


class WaitSlot:
    """One of a host's waits: follows a request to its outcome, then takes another (a new process)."""

    def __init__(self, world: World, host: Host, repos: list[str], activity: Activity, rng: random.Random) -> None:
        self.world = world
        self.host = host
        self.repos = repos
        self.activity = activity
        self.rng = rng
        self.session: Session | None = None
        self.repo: str | None = None
        self.number: int | None = None
        self.looks = 0
        self.outcomes: dict[str, int] = {}
        self.errors: list[str] = []

    def _start(self) -> None:
        for _ in range(10):
            repo = self.rng.choice(self.repos)
            numbers = [n for n in self.activity.open_numbers(repo) if not self.world.gh.pr(repo, n).draft]
            if numbers:
                self.repo, self.number = repo, self.rng.choice(numbers)
                self.session = self.world.session(self.host, repo)
                return

    def _interval(self) -> float:
        assert self.session is not None
        settings = self.session.settings
        keeper = LeaseKeeper.configured(self.session.repo, settings, role="wait", clock=self.session.clock,
                                        remote=self.session.remote)
        view = keeper.read("main")
        return min(settings.discovery, settings.lease / 3) if view.takes_in else settings.discovery / 4

    def step(self, now: float) -> float:
        with as_host(self.host):
            return self._step(now)

    def _step(self, now: float) -> float:
        if self.session is None:
            self._start()
            if self.session is None:
                return now + 60.0
        assert self.session is not None and self.number is not None
        self.looks += 1
        try:
            result = wait_for(self.session, self.number, timeout=1e-3)
        except TimedOut:
            return now + self._interval()
        except (AllowanceSpent, SluiceError) as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return now + self._interval()
        self.outcomes[result.outcome] = self.outcomes.get(result.outcome, 0) + 1
        self.session.close()
        self.session = None
        return now + 30.0  # the agent's next request, half a minute later


# ------------------------------------------------------------------------- queue polling
@dataclass
class Measured:
    """One real process: exit status, output, wall seconds and CPU seconds (its children's too)."""

    returncode: int
    stdout: bytes
    stderr: bytes
    wall: float
    cpu: float


def measured_run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120.0) -> Measured:
    """Run ``args`` and reap it with ``wait4`` so its CPU (user + system, children included) is its own."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.002)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(proc.returncode, out.read(), err.read(), wall, usage.ru_utime + usage.ru_stime)


@dataclass
class PollSample:
    wall: float
    cpu: float
    requests: int
    ok: bool
    error: str = ""


def poll_queue(world: World, host: Host, repo: str) -> PollSample:
    """One real ``git sluice queue --json`` in the host's clone: its wall time, CPU and calls made."""
    before = len(world.gh.ledger)
    run = measured_run(["git", "sluice", "queue", "--json"], host.clones[repo], world.host_env(host))
    requests = len(world.gh.ledger) - before
    ok, error = run.returncode == 0, ""
    if ok:
        try:
            data = json.loads(run.stdout)
            ok = isinstance(data, dict) and "entries" in data
            error = "" if ok else "queue --json is not a queue document"
        except ValueError as exc:
            ok, error = False, f"queue --json is not JSON ({exc})"
    else:
        error = run.stderr.decode(errors="replace").strip()[-300:]
    return PollSample(run.wall, run.cpu, requests, ok, error)
