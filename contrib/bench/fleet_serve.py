"""S10 (issue 30): Tower's overview loop through ``git sluice serve`` with the real ``gh``, beside the same loop direct.

The incident (Tower, docs/benchmarks.md): a dashboard daemon backs each of 13
workspaces' overview with three GraphQL-backed ``gh`` calls every 30 s — the
open issues (``--limit 200`` with authors, assignees and labels), the issues
closed and the pull requests merged since a date (two searches) — about 4,700
calls an hour, the whole GraphQL allowance of the user's token. Nobody rewrites
that daemon; ``serve`` is for exactly such a tool: ``gh config set
http_unix_socket`` and nothing else changes.

Why it is built this way:

- **The real gh, unchanged.** gh 2.23 speaks to GitHub only over https, or
  plain HTTP over ``http_unix_socket``. The direct leg therefore puts a
  byte-for-byte pass-through (:class:`PassThrough`) on a Unix socket in front
  of the double's TCP port: the same gh, the same bytes, no git-sluice. The
  serve leg points gh at a real ``git-sluice serve`` process's socket.
- **One world, one pool.** One double on the shared FileClock
  (``GIT_SLUICE_TEST_CLOCK``, read by ``serve`` too), 13 repositories with a
  population the three commands find (open issues, issues closed and pull
  requests merged within the searches' week), one user token. The direct leg
  runs first; the serve leg starts once the double's GraphQL window has reset,
  so each leg spends a fresh allowance.
- **Simulated time, real processes.** Every 30 s of simulated time each
  workspace's three commands run (a few at a time, as the daemon's spawns
  overlap); then the harness moves the clock to the next 30 s mark. No real
  time is slept for a simulated interval; a command takes the real time it
  takes, at one simulated instant.
- **A merge bot beside it** (serve leg): once a simulated minute a REST list of
  one workspace's pull requests and a small GraphQL query, through the same
  ``serve`` (its TCP port, the same token): the done-when asks that its calls
  are answered as before — every answer a 200.
- **Figures from the double's ledger** (what reached "GitHub"), per leg:
  GraphQL points and calls, refusals (403/429 and RATE_LIMITED answers), and
  gh's own failures; the pool's lowest ``remaining`` sampled after every loop;
  for ``serve``, its ``/metrics`` (queries answered from the window).
"""

from __future__ import annotations

import json
import math
import random
import shutil
import signal
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from fleet_sluice import tally
from fleet_world import POOL, TOKEN, World, git, world

GH_ENV = {"GH_HOST": "github.com", "GH_NO_UPDATE_NOTIFIER": "1", "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1"}
ALLOWANCE = 5000
DAY = 86_400.0
RUN_START = 1_788_843_600.0  # 2026-09-08 05:00 UTC: the morning the incident's sample was taken
SEARCH_DAYS = 7  # the searches ask for what closed or merged after the day a week before the run
GH_TIMEOUT = 120.0  # real seconds one gh command may take before it counts as failed
SERVE_START_TIMEOUT = 60.0


@dataclass(frozen=True)
class ServeSpec:
    """S10's size: the workspaces, the loop, the two legs' simulated durations, serve's window."""

    workspaces: int = 13
    period: float = 30.0  # Tower's overview TTL: each workspace's three commands every 30 s
    direct_window: float = 3600.0
    serve_window: float = 7200.0
    graphql_window: float = 60.0  # sluice.graphqlWindow in serve's clone, seconds
    sized_duration: float = 3600.0  # the third leg: through serve with a window sized for the loop's cost
    budget: float = 2400.0  # points/h the sized window is sized for (the issue's goal)
    concurrency: int = 3  # gh commands at once (the daemon's overlapping spawns; 2 cores)
    bot_every: float = 60.0  # the merge bot's period (serve leg)
    open_issues: tuple[int, int] = (60, 90)  # per workspace; under 100: gh's --limit 200 is one page
    closed_recent: tuple[int, int] = (5, 15)  # issues closed within the searches' week
    merged_recent: tuple[int, int] = (5, 15)  # pull requests merged within it
    open_pulls: tuple[int, int] = (2, 8)  # what the merge bot lists
    seed: int = 30

    def describe(self) -> str:
        return (f"{self.workspaces} workspaces × 3 gh commands every {self.period:g} s; direct "
                f"{span(self.direct_window)}, through serve ({self.graphql_window:g} s window) "
                f"{span(self.serve_window)}")


def span(seconds: float) -> str:
    """A simulated duration in words: ``2 h``, ``1 h``, ``10 min``."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    return f"{seconds / 60:g} min"


# ------------------------------------------------------------------------------- the population
@dataclass(frozen=True)
class Event:
    """One thing that happened to a workspace before the run: an issue or request opened, closed, merged."""

    at: float
    repo: str
    what: str  # issue | pull | close | merge
    key: str  # names the issue or request for its later close or merge
    title: str = ""
    author: str = ""


def populate(w: World, spec: ServeSpec, start: float) -> list[str]:
    """The workspaces' repositories on the double, built over the weeks before ``start``; returns their names.

    Events are applied in time order on the shared clock, so every issue's and pull request's times
    are what GitHub would show: opened over the past weeks, closed or merged within the searches' week.
    """
    rng = random.Random(spec.seed)
    names = [f"tower/ws{k:02d}" for k in range(1, spec.workspaces + 1)]
    events: list[Event] = []
    for name in names:
        w.add_repo(name)  # a bare remote too: serve's clone is one of them
        events += history(name, rng, spec, start)
    made: dict[tuple[str, str], int] = {}
    for event in sorted(events, key=lambda e: e.at):
        w.clock.set(event.at)
        apply(w, event, made)
    w.clock.set(start)
    return names


def history(name: str, rng: random.Random, spec: ServeSpec, start: float) -> list[Event]:
    """One repository's past: open issues, issues closed and requests merged lately, a few open requests."""
    people = ["alice", "bob", "carol", "dana", "erin"]
    week = SEARCH_DAYS * DAY
    out: list[Event] = []
    for i in range(rng.randint(*spec.open_issues)):
        out.append(Event(start - rng.uniform(3600, 30 * DAY), name, "issue", f"i{i}", f"issue {i}", rng.choice(people)))
    for i in range(rng.randint(*spec.closed_recent)):
        out.append(Event(start - rng.uniform(week, 20 * DAY), name, "issue", f"c{i}", f"fixed {i}", rng.choice(people)))
        out.append(Event(start - rng.uniform(600, week - DAY), name, "close", f"c{i}"))
    for i in range(rng.randint(*spec.merged_recent)):
        out.append(Event(start - rng.uniform(week, 14 * DAY), name, "pull", f"m{i}", f"change {i}", rng.choice(people)))
        out.append(Event(start - rng.uniform(600, week - DAY), name, "merge", f"m{i}"))
    for i in range(rng.randint(*spec.open_pulls)):
        out.append(Event(start - rng.uniform(3600, 5 * DAY), name, "pull", f"p{i}", f"work {i}", rng.choice(people)))
    return out


def apply(w: World, event: Event, made: dict[tuple[str, str], int]) -> None:
    """One event on the double, at the clock's present time."""
    gh, key = w.gh, (event.repo, event.key)
    if event.what == "issue":
        made[key] = gh.open_issue(event.repo, title=event.title, author=event.author)
    elif event.what == "pull":
        made[key] = gh.open_pr(event.repo, head_ref=event.key, title=event.title, author=event.author)
    elif event.what == "close":
        gh.close_issue(event.repo, made[key])
    elif event.what == "merge":
        gh.merge_pr(event.repo, made[key])


def search_date(start: float) -> str:
    """The searches' date: the day a week before the run (what a dashboard's "last week" asks)."""
    return datetime.fromtimestamp(start - SEARCH_DAYS * DAY, tz=timezone.utc).strftime("%Y-%m-%d")


def tower_commands(repo: str, since: str) -> list[list[str]]:
    """The three gh commands the Tower daemon runs for one workspace (its seed, verbatim but the repo)."""
    return [
        ["issue", "list", "-R", repo, "--limit", "200", "--json", "number,title,author,assignees,labels,updatedAt"],
        ["issue", "list", "-R", repo, "--state", "closed", "--search", f"closed:>{since}", "--json", "number,title"],
        ["pr", "list", "-R", repo, "--state", "merged", "--search", f"merged:>{since}", "--json", "number,title"],
    ]


# ----------------------------------------------------------------------------- the direct road
class _Pipe(socketserver.BaseRequestHandler):
    """One gh connection: its bytes to the double's port and the double's back, untouched."""

    def handle(self) -> None:
        target: tuple[str, int] = self.server.target  # type: ignore[attr-defined]  # a _UnixRelay
        try:
            upstream = socket.create_connection(target, timeout=GH_TIMEOUT)
        except OSError:
            return
        self.server.opened()  # type: ignore[attr-defined]
        back = threading.Thread(target=_pump, args=(upstream, self.request), daemon=True)
        back.start()
        _pump(self.request, upstream)
        back.join(GH_TIMEOUT)
        upstream.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy until the source ends, then end the sink's writing side (so the other end sees it close)."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class _UnixRelay(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    target: tuple[str, int] = ("127.0.0.1", 0)
    connections = 0
    _count = threading.Lock()

    def opened(self) -> None:
        with self._count:
            self.connections += 1


class PassThrough:
    """A Unix socket in front of a TCP port that changes nothing: gh's direct road to the double.

    gh reaches an API over plain HTTP only through ``http_unix_socket``; this is the least that
    lets it reach the double with no git-sluice between: bytes in, bytes out, both ways.
    """

    def __init__(self, path: Path, target: tuple[str, int]) -> None:
        self.path = path
        self._server = _UnixRelay(str(path), _Pipe)
        self._server.target = target
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="s10-pass-through", daemon=True)
        self._thread.start()

    @property
    def connections(self) -> int:
        return self._server.connections

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        try:
            self.path.unlink()
        except OSError:
            pass


def address_of(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", int(parts.port or 80)


# ------------------------------------------------------------------------------------- gh
@dataclass
class GhRuns:
    """Every gh command of a leg: how many, how many failed and why, their real seconds."""

    runs: int = 0
    failures: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    walls: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def note(self, code: int, stderr: str, wall: float) -> None:
        with self.lock:
            self.runs += 1
            self.walls.append(wall)
            if code != 0:
                self.failures += 1
                first = next((line for line in stderr.splitlines() if line.strip()), f"exit {code}")
                self.reasons[f"exit {code}: {first[:160]}"] += 1

    def summary(self) -> dict[str, Any]:
        walls = sorted(self.walls)
        return {"runs": self.runs, "failures": self.failures,
                "reasons": [f"{n}× {why}" for why, n in self.reasons.most_common(4)],
                "wall_median": walls[len(walls) // 2] if walls else None,
                "wall_max": walls[-1] if walls else None}


class Gh:
    """The real gh, configured (its own config dir) to speak plain HTTP over one Unix socket."""

    def __init__(self, binary: str, config_dir: Path, socket_path: Path, env: dict[str, str]) -> None:
        self.binary = binary
        self.env = {**env, **GH_ENV, "GH_CONFIG_DIR": str(config_dir), "GH_TOKEN": TOKEN}
        self.runs = GhRuns()
        config_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([binary, "config", "set", "http_unix_socket", str(socket_path)], env=self.env,
                       check=True, capture_output=True, timeout=60)

    def run(self, args: list[str]) -> int:
        began = time.monotonic()
        try:
            done = subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True,
                                  timeout=GH_TIMEOUT, stdin=subprocess.DEVNULL)
            code, stderr = done.returncode, done.stderr
        except subprocess.TimeoutExpired:
            code, stderr = -1, f"no answer within {GH_TIMEOUT:g} s"
        self.runs.note(code, stderr, time.monotonic() - began)
        return code


# ---------------------------------------------------------------------------------- serve
class ServeProcess:
    """A real ``git-sluice serve`` in a clone, on a socket and a loopback port, until :meth:`stop`."""

    def __init__(self, clone: Path, socket_path: Path, env: dict[str, str], log: Path) -> None:
        script = shutil.which("git-sluice", path=env.get("PATH"))
        if script is None:
            raise RuntimeError("no git-sluice console script on PATH")
        self.log = log
        self._err = open(log, "wb")  # noqa: SIM115 - lives as long as the process
        self.proc = subprocess.Popen([script, "serve", "--socket", str(socket_path), "--port", "0"], cwd=clone,
                                     env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True)
        self.socket, self.port = self._listening()

    def _listening(self) -> tuple[Path, int]:
        """Where it says it listens (``socket PATH``, ``port N``), read within a bounded time."""
        said: list[str] = []
        reader = threading.Thread(target=self._read_lines, args=(said, 2), daemon=True)
        reader.start()
        reader.join(SERVE_START_TIMEOUT)
        if len(said) < 2 or not said[0].startswith("socket ") or not said[1].startswith("port "):
            self.stop()
            raise RuntimeError(f"git-sluice serve did not start: said {said!r}; its log: {self.errors()[-400:]}")
        return Path(said[0].split(" ", 1)[1].strip()), int(said[1].split()[1])

    def _read_lines(self, into: list[str], count: int) -> None:
        assert self.proc.stdout is not None
        for _ in range(count):
            into.append(self.proc.stdout.readline())

    def metrics(self) -> dict[str, float]:
        """``GET /metrics``: each sample's value by its name and labels (``name{k=v,…}``)."""
        text = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=30).text
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                try:
                    out[key] = float(value)
                except ValueError:
                    pass
        return out

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._err.close()
        return self.proc.returncode

    def errors(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


def metric_sum(metrics: dict[str, float], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    total = 0.0
    for key, value in metrics.items():
        bare, _, rest = key.partition("{")
        if bare == name and all(f'{k}="{v}"' in rest for k, v in labels.items()):
            total += value
    return total


# ---------------------------------------------------------------------------------- the bot
BOT_QUERY = ("query($owner: String!, $name: String!) { repository(owner: $owner, name: $name) { "
             "pullRequests(states: OPEN, first: 20) { nodes { number headRefOid mergeable } } } "
             "rateLimit { cost remaining } }")


@dataclass
class MergeBot:
    """A merge bot on serve's TCP port with the same token: one workspace's requests, once a minute.

    Each minute the next workspace (the bot merges across the fleet): its open pull requests by REST
    and a small GraphQL query, which asks its own ``rateLimit { cost }`` so the bot's share of the
    leg's points is known rather than assumed.
    """

    port: int
    answers: Counter[str] = field(default_factory=Counter)  # "graphql 200 counted", "rest 200 304", …
    points: int = 0  # the GraphQL cost GitHub named in the answers that reached it
    bad: list[str] = field(default_factory=list)

    def once(self, repo: str) -> None:
        owner, name = repo.split("/")
        with httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=GH_TIMEOUT,
                          headers={"Authorization": f"token {TOKEN}", "Accept": "application/vnd.github+json"}) as c:
            self._ask(c, "rest", "GET", f"/repos/{repo}/pulls?state=open&per_page=100", None)
            self._ask(c, "graphql", "POST", "/graphql", {"query": BOT_QUERY,
                                                         "variables": {"owner": owner, "name": name}})

    def _ask(self, client: httpx.Client, kind: str, method: str, path: str, body: dict[str, Any] | None) -> None:
        try:
            answer = client.request(method, path, json=body)
            status, how = answer.status_code, answer.headers.get("x-sluice", "?")
        except httpx.HTTPError as exc:
            status, how, answer = 0, type(exc).__name__, None
        self.answers[f"{kind} {status} {how}"] += 1
        if status != 200 and len(self.bad) < 5:
            self.bad.append(f"{method} {path.split('?')[0]}: {status} {how}")
        if answer is not None and kind == "graphql" and how == "counted":
            try:
                self.points += int(answer.json()["data"]["rateLimit"]["cost"])
            except (ValueError, KeyError, TypeError):
                pass

    def summary(self) -> dict[str, Any]:
        total = sum(self.answers.values())
        ok = sum(n for key, n in self.answers.items() if key.split()[1] == "200")
        graphql_sent = sum(n for key, n in self.answers.items()
                           if key.startswith("graphql ") and key.endswith(" counted"))
        return {"calls": total, "ok": ok, "not_200": total - ok, "answers": dict(self.answers), "bad": self.bad,
                "graphql_reaching": graphql_sent, "points": self.points}


# ---------------------------------------------------------------------------------- a leg
@dataclass
class Leg:
    """What one leg's loop saw, besides the ledger: the pool's lowest remaining, the clock's drift."""

    start: float
    ticks: int
    period: float
    lowest_remaining: int = ALLOWANCE
    lowest_at_tick: int = 0
    ran_out_tick: int | None = None  # the first loop after which the pool had nothing left
    drift: float = 0.0  # the most the clock moved within a loop (the product's own short sleeps)
    real_seconds: float = 0.0


def move_to(w: World, at: float) -> None:
    """The shared clock to ``at``, never back (a process's own sleep may have moved it a little)."""
    if w.clock.time() < at:
        w.clock.set(at)


def run_loop(w: World, spec: ServeSpec, gh: Gh, repos: list[str], since: str, start: float, window: float,
             bot: MergeBot | None = None) -> Leg:
    """Tower's loop for ``window`` simulated seconds from ``start``: every period, each workspace's three
    commands (``spec.concurrency`` at a time), the bot's calls beside them once a minute; then the clock
    moves to the next mark."""
    leg = Leg(start=start, ticks=int(window // spec.period), period=spec.period)
    commands = [cmd for repo in repos for cmd in tower_commands(repo, since)]
    began = time.monotonic()
    bot_every = max(int(round(spec.bot_every / spec.period)), 1)
    with ThreadPoolExecutor(max_workers=spec.concurrency, thread_name_prefix="s10-gh") as pool, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="s10-bot") as bot_lane:
        for k in range(leg.ticks):
            at = start + k * spec.period
            move_to(w, at)
            bot_call: Future[None] | None = None
            if bot is not None and k % bot_every == 0:
                bot_call = bot_lane.submit(bot.once, repos[(k // bot_every) % len(repos)])
            list(pool.map(gh.run, commands))
            if bot_call is not None:
                bot_call.result()
            _sample(w, leg, k, at)
    move_to(w, start + leg.ticks * spec.period)
    leg.real_seconds = time.monotonic() - began
    return leg


def _sample(w: World, leg: Leg, tick: int, at: float) -> None:
    remaining = w.gh.remaining(POOL, "graphql")
    if remaining < leg.lowest_remaining:
        leg.lowest_remaining, leg.lowest_at_tick = remaining, tick
    if remaining <= 0 and leg.ran_out_tick is None:
        leg.ran_out_tick = tick
    leg.drift = max(leg.drift, w.clock.time() - at)


def figures(w: World, leg: Leg, since: int, until: int, window: float, gh: Gh) -> dict[str, Any]:
    """One leg's figures from the double's ledger between two marks, and per hour."""
    t = tally(w.gh, since, until, pool=POOL)
    other = {c.pool for c in w.gh.ledger[since:until] if c.pool != POOL}
    factor = 3600.0 / window
    return {
        "window_seconds": window, "ticks": leg.ticks,
        "started_at": datetime.fromtimestamp(leg.start, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "totals": {"graphql_calls": t.graphql_calls, "points": t.points, "requests": t.requests,
                   "counted_rest": t.counted_rest, "refusals": t.throttled, "by_status": t.by_status,
                   "by_route": t.by_route},
        "per_hour": {"graphql_calls": t.graphql_calls * factor, "points": t.points * factor,
                     "requests": t.requests * factor, "counted_rest": t.counted_rest * factor,
                     "refusals": t.throttled * factor},
        "lowest_remaining": leg.lowest_remaining, "lowest_at_minute": leg.lowest_at_tick * leg.period / 60,
        "ran_out_at_minute": None if leg.ran_out_tick is None else leg.ran_out_tick * leg.period / 60,
        "clock_drift_within_loop": leg.drift, "real_seconds": leg.real_seconds, "gh": gh.runs.summary(),
        "other_pools": sorted(str(p) for p in other),
    }


# ---------------------------------------------------------------------------------- the run
@contextmanager
def short_dir() -> Iterator[Path]:
    """A short directory under /tmp for the sockets (a Unix socket's path holds at most ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="s10-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def direct_leg(w: World, spec: ServeSpec, binary: str, repos: list[str], since: str, sockets: Path,
               start: float) -> dict[str, Any]:
    """The loop with gh straight to the double, through the pass-through only."""
    relay = PassThrough(sockets / "direct.sock", address_of(w.api))
    try:
        gh = Gh(binary, w.root / "gh-direct", relay.path, w.env)
        mark = w.gh.mark()
        leg = run_loop(w, spec, gh, repos, since, start, spec.direct_window)
        out = figures(w, leg, mark, w.gh.mark(), spec.direct_window, gh)
        out["pass_through_connections"] = relay.connections
        return out
    finally:
        relay.close()


def serve_leg(w: World, spec: ServeSpec, binary: str, repos: list[str], since: str, sockets: Path,
              start: float, *, window: float, duration: float, name: str = "tower") -> dict[str, Any]:
    """The loop with gh through a real ``git sluice serve`` (``sluice.graphqlWindow`` ``window``
    seconds) for ``duration``, and the merge bot on its port."""
    host = w.add_host(name, repos=[repos[0]], hooks=False)
    clone = host.clones[repos[0]]
    git(clone, "config", "sluice.graphqlWindow", f"{window:g}s", env=w.env)
    mark = w.gh.mark()
    proc = ServeProcess(clone, sockets / f"{name}.sock", w.host_env(host), w.root / f"{name}.log")
    try:
        gh = Gh(binary, w.root / f"gh-{name}", proc.socket, w.env)
        bot = MergeBot(proc.port)
        leg = run_loop(w, spec, gh, repos, since, start, duration, bot=bot)
        metrics = proc.metrics()
    finally:
        code = proc.stop()
    out = figures(w, leg, mark, w.gh.mark(), duration, gh)
    out["graphql_window"] = window
    out["bot"] = bot.summary()
    out["serve"] = serve_figures(metrics, code, proc.errors())
    return out


def serve_figures(metrics: dict[str, float], code: int | None, log: str) -> dict[str, Any]:
    """What serve's ``/metrics`` said at the end of the leg, and how it stopped."""
    graphql = metric_sum(metrics, "sluice_serve_calls_total", resource="graphql")
    kept = metrics.get("sluice_serve_graphql_kept_total", 0.0)
    answers = {how: metric_sum(metrics, "sluice_serve_calls_total", answer=how)
               for how in ("counted", "not_modified", "kept", "shared", "refused", "deferred", "error", "bad")}
    lines = [line for line in log.splitlines() if line.strip()]
    return {"graphql_answered": graphql, "graphql_kept": kept,
            "kept_share": kept / graphql if graphql else None,
            "answers": {k: v for k, v in answers.items() if v}, "refused": answers["refused"] + answers["deferred"],
            "exit": code, "log_lines": len(lines), "log_tail": lines[-3:]}


def serve_tower(spec: ServeSpec) -> dict[str, Any]:
    """S10's two legs in one world: the loop direct for ``direct_window``, then through serve for
    ``serve_window``, each from a fresh GraphQL allowance. Raises when gh is not installed."""
    binary = shutil.which("gh")
    if binary is None:
        raise RuntimeError("the real gh is not installed (S10 runs it unchanged)")
    began = time.monotonic()
    with world("sluice-s10-", start=RUN_START - 30 * DAY) as w, short_dir() as sockets:
        repos = populate(w, spec, RUN_START)
        since = search_date(RUN_START)
        setup = time.monotonic() - began
        direct = direct_leg(w, spec, binary, repos, since, sockets, RUN_START)
        serve_start = fresh_allowance(w, spec, RUN_START)
        served = serve_leg(w, spec, binary, repos, since, sockets, serve_start,
                           window=spec.graphql_window, duration=spec.serve_window)
        sized = sized_window(loop_points(served), spec.graphql_window, spec.period, spec.budget)
        resized = None
        if sized > spec.graphql_window and spec.sized_duration > 0:
            resized = serve_leg(w, spec, binary, repos, since, sockets, fresh_allowance(w, spec, RUN_START),
                                window=sized, duration=spec.sized_duration, name="sized")
    return {"spec": asdict(spec), "repos": len(repos), "since": since, "setup_seconds": setup,
            "gh_version": gh_version(binary), "population": population(spec), "direct": direct, "serve": served,
            "sized_window": sized, "sized": resized, "real_seconds": time.monotonic() - began}


def loop_points(leg: dict[str, Any]) -> float:
    """Points an hour the leg's Tower loop spent (the merge bot's apart)."""
    bot = leg.get("bot") or {}
    return float(leg["per_hour"]["points"]) - bot.get("points", 0) * 3600.0 / leg["window_seconds"]


def sized_window(points_per_hour: float, window: float, period: float, budget: float) -> float:
    """The least window, a whole number of loop periods, at which the loop's points fit ``budget``/h.

    A window of W seconds lets each distinct query reach GitHub once per W (rounded up to the loop's
    period: the boundary is exclusive), so the hourly spend scales as ``window / W``."""
    if points_per_hour <= budget or budget <= 0:
        return window
    least = points_per_hour * window / budget
    return period * math.ceil(least / period - 1e-9)


def fresh_allowance(w: World, spec: ServeSpec, start: float) -> float:
    """The first loop mark at which the pool's GraphQL allowance is whole again (the clock moved there).

    A bucket whose window has closed reads as fresh (nothing used, reset a window ahead), so the
    serve leg starts as soon as nothing of the direct leg's spending is left in it."""
    if w.gh.used(POOL, "graphql") > 0:
        move_to(w, float(w.gh.reset_at(POOL, "graphql")))
    mark = start + spec.period * math.ceil((w.clock.time() - start) / spec.period)
    move_to(w, mark)
    return mark


def population(spec: ServeSpec) -> dict[str, Any]:
    """What each workspace holds (ranges: each drawn per workspace from the seed)."""
    return {"open_issues": spec.open_issues, "closed_recent": spec.closed_recent,
            "merged_recent": spec.merged_recent, "open_pulls": spec.open_pulls}


def gh_version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return "unknown"
    return out.splitlines()[0] if out else "unknown"


if __name__ == "__main__":  # a quick look by hand: python contrib/bench/fleet_serve.py [workspaces] [minutes]
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    minutes = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    result = serve_tower(ServeSpec(workspaces=n, direct_window=60 * minutes, serve_window=60 * minutes))
    print(json.dumps(result, indent=1, default=str))
