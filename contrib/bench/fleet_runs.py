"""One run of a fleet: git-sluice's (real git, hooks, sessions) or a baseline's (pollers on the double).

Both take the same :class:`FleetSpec` and the same seeded activity, run a
warm-up that is not measured (the first intake, the pollers' first passes),
then a measured window, and report per-hour figures from the double's ledger.

A baseline may run a *time-scaled hour*: the double's allowance window and
size are both divided by ``scale`` (5,000 calls per hour becomes 1,250 per
15 minutes), the pollers keep their real periods, and the window's figures
are multiplied by ``scale``. A poller that outruns its allowance behaves the
same in every such window (spend it, be refused until the reset), so the
hour's counts are the window's times ``scale``; freshness is not scaled and
is measured only on unscaled runs.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from git_sluice.clock import FakeClock
from git_sluice.double import GitHubDouble

from fleet_activity import MODERATE, Activity, NoGit, Rates, Unrelated, freshness, plan, unrelated_plan
from fleet_baselines import (AppMinter, ConditionalPoller, DashboardPoller, Direct, GraphQLPoller, NaivePoller,
                             Observer, PassActor, TowerFixPoller, adr_pacer)
from fleet_sim import Scheduler
from fleet_sluice import DriverActor, GitWorld, QueueWatch, WaitSlot, poll_queue, tally
from fleet_world import (APP_ID, INSTALLATION_ID, TOKEN, BenchClock, GitRequest, busiest_minute_of, make_double, pool_of,
                         repo_name, world)

ALLOWANCE = 5000
SECONDARY_PER_MINUTE = 900  # GitHub's secondary limit: points a minute per REST endpoint


class ProductWarnings(logging.Handler):
    """Keeps what git-sluice logs at WARNING and above in this process (in-process hosts), for the report."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []
        self._lock_list = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        with self._lock_list:
            self.records.append(text)

    def since(self, mark: int) -> list[str]:
        with self._lock_list:
            return list(self.records[mark:])


WARNINGS = ProductWarnings()
logging.getLogger("git_sluice").addHandler(WARNINGS)


def _summarise(messages: list[str], limit: int = 5) -> list[str]:
    counts: dict[str, int] = {}
    for m in messages:
        key = re.sub(r"/tmp/[^\s:;,)]+", "<path>", m)
        counts[key] = counts.get(key, 0) + 1
    return [f"{n}× {m}" for m, n in sorted(counts.items(), key=lambda kv: -kv[1])[:limit]]
FRESHNESS_CLASSES = {
    "discovery": ("discovery",),
    "local-push-holder": ("local-push-holder",),
    "local-push-other": ("local-push-other",),
    "fetch": ("fetch",),
}


@dataclass(frozen=True)
class FleetSpec:
    repos: int = 10
    hosts: int = 3
    prs: int = 20
    waits_per_host: int = 2  # git-sluice waits; in a baseline, pollers like every other process
    rates: Rates = MODERATE
    warmup: float = 180.0
    window: float = 3600.0
    seed: int = 8
    extra_procs_per_host: int = 0  # further processes per host (scaling): waits in git-sluice, pollers in baselines
    unrelated: Unrelated | None = None  # repository activity no request sees (issue 11)
    auth: str = "user"  # user | app | ghes (fleet_world.AUTHS)

    @property
    def repo_names(self) -> list[str]:
        return [repo_name(i + 1) for i in range(self.repos)]

    def describe(self) -> str:
        r = self.rates
        activity = ("no activity" if r.total() == 0 else
                    f"per repository and hour {r.opened:g} opened, {r.pushed:g} pushed, {r.reviewed:g} reviewed, "
                    f"{r.merged:g} merged")
        if self.unrelated is not None:
            activity += "; " + self.unrelated.describe()
        return (f"{self.repos} repositories × {self.prs} open requests, {self.hosts} hosts, per host a driver per "
                f"repository and {self.waits_per_host + self.extra_procs_per_host} waits; {activity}")


def schedule_activity(sched: Scheduler, activity: Activity, spec: FleetSpec, t0: float, t_start: float,
                      window: float) -> None:
    """The window's request activity from ``t_start``, and the unrelated activity from ``t0`` (warm-up too)."""
    for intent in plan(spec.repo_names, spec.rates, window, hosts=spec.hosts, seed=spec.seed):
        sched.at(t_start + intent.at, f"{intent.kind} {intent.repo}",
                 lambda now, intent=intent: activity.apply(intent, now))
    for intent in unrelated_plan(spec.repo_names, spec.unrelated, t_start - t0 + window, seed=spec.seed):
        if t0 + intent.at >= t_start:
            sched.at(t0 + intent.at, f"{intent.kind} {intent.repo}",
                     lambda now, intent=intent: activity.apply(intent, now))


def schedule_warmup_unrelated(sched: Scheduler, activity: Activity, spec: FleetSpec, t0: float,
                              warmup: float) -> None:
    """The unrelated activity of the warm-up (the request activity starts with the window)."""
    for intent in unrelated_plan(spec.repo_names, spec.unrelated, warmup, seed=spec.seed):
        sched.at(t0 + intent.at, f"{intent.kind} {intent.repo}",
                 lambda now, intent=intent: activity.apply(intent, now))


def ledger_figures(gh: Any, mark: int, end: int, pool: str) -> dict[str, Any]:
    """The busiest minute against the secondary limit (the run's pool, any endpoint), from the ledger."""
    calls = gh.ledger[mark:end]
    points, endpoint = gh.busiest_minute(since=mark, pool=pool)
    other_pools = sorted({str(c.pool) for c in calls if c.pool != pool and c.pool is not None
                          and not str(c.pool).startswith("app:")})
    return {"busiest_minute": points, "busiest_endpoint": endpoint, "other_pools": other_pools}


def _per_hour(window: float) -> float:
    return 3600.0 / window


def _fresh(expectations: list[Any]) -> dict[str, Any]:
    return {name: freshness(expectations, classes) for name, classes in FRESHNESS_CLASSES.items()}


# ------------------------------------------------------------------------- git requests
TICK = 60.0  # the discovery interval: a host's "tick" for the git figures


def git_figures(requests: list[GitRequest], hosts: list[str], repos: list[str], t_start: float,
                t_end: float) -> dict[str, Any]:
    """Issue 29's git figures over a window: what git-sluice's processes asked of the bare remotes.

    Read side = upload-pack (``git fetch``, ``git ls-remote``), push side = receive-pack. Per hour for
    the fleet and per host (max, mean over the hosts); the read side per host, per tick (60 s, from the
    window's start) and per remote, mean and busiest; the busiest 60 s of pushes to one repository for
    the whole fleet. The harness's own git commands (the user's pushes, the fetch that brings a merge)
    are counted apart, never in these figures.
    """
    window = max(t_end - t_start, 1e-9)
    factor = 3600.0 / window
    inside = [r for r in requests if t_start <= r.at < t_end]
    mine = [r for r in inside if r.who == "sluice"]
    reads = [r for r in mine if r.kind in ("fetch", "ls-remote")]
    pushes = [r for r in mine if r.kind == "push"]
    shorts = [name.split("/", 1)[-1] for name in repos]

    def per_host(items: list[GitRequest]) -> dict[str, float]:
        counts = {h: 0 for h in hosts}
        for r in items:
            counts[r.host] = counts.get(r.host, 0) + 1
        return {h: n * factor for h, n in counts.items()}

    ticks = max(1, round(window / TICK))
    per_tick: dict[tuple[str, str, int], int] = {}
    for r in reads:
        key = (r.host, r.repo, min(int((r.at - t_start) // TICK), ticks - 1))
        per_tick[key] = per_tick.get(key, 0) + 1
    slots = max(len(hosts) * len(shorts) * ticks, 1)
    push_minute = {repo: busiest_minute_of([r.at for r in pushes if r.repo == repo]) for repo in shorts}
    busiest_repo = max(push_minute.items(), key=lambda kv: kv[1]) if push_minute else (None, 0)
    read_host, push_host = per_host(reads), per_host(pushes)

    def spread(values: dict[str, float]) -> dict[str, float]:
        vals = list(values.values()) or [0.0]
        return {"max": max(vals), "mean": sum(vals) / len(vals)}

    harness = [r for r in inside if r.who == "harness"]
    return {
        "read_per_hour": len(reads) * factor,
        "fetch_per_hour": sum(1 for r in reads if r.kind == "fetch") * factor,
        "ls_remote_per_hour": sum(1 for r in reads if r.kind == "ls-remote") * factor,
        "push_per_hour": len(pushes) * factor,
        "read_per_host_hour": spread(read_host),
        "push_per_host_hour": spread(push_host),
        "read_by_host": read_host,
        "push_by_host": push_host,
        "read_per_host_tick_remote": len(reads) / slots,
        "read_busiest_host_tick_remote": max(per_tick.values(), default=0),
        "push_busiest_minute_repo": busiest_repo[1],
        "push_busiest_repo": busiest_repo[0],
        "push_per_minute_repo": len(pushes) / max(len(shorts), 1) / (window / 60.0),
        "hosts": len(hosts),
        "remotes": len(shorts),
        "ticks": ticks,
        "harness_read_per_hour": sum(1 for r in harness if r.kind != "push") * factor,
        "harness_push_per_hour": sum(1 for r in harness if r.kind == "push") * factor,
        "logged": len(requests),
    }


# ------------------------------------------------------------------------------ git-sluice
def sluice_fleet(spec: FleetSpec, *, workers: int = 4, queue_polls: int = 0) -> dict[str, Any]:
    """git-sluice's fleet on real git: drivers and waits in-process, hook rounds as real processes."""
    started = time.monotonic()
    warned = len(WARNINGS.records)
    with world(auth=spec.auth, count_git=True) as w:
        for name in spec.repo_names:
            w.add_repo(name)
        gitside = GitWorld(w, [])
        activity = Activity(w.gh, gitside)
        for index, name in enumerate(spec.repo_names):
            activity.populate(name, spec.prs, seed=spec.seed * 1000 + index)
        hosts = [w.add_host(f"host-{k + 1}") for k in range(spec.hosts)]
        gitside.hosts = hosts
        # Name the pool once before sessions run side by side: the first naming writes the host's
        # pools.json through a temporary file named by pid alone, which two threads of one process
        # (our in-process hosts) can trip over (see the report); later namings only read it.
        _ = w.session(hosts[0], spec.repo_names[0]).forge.pool
        setup_seconds = time.monotonic() - started
        watch = QueueWatch(hosts, activity.expectations)
        sched = Scheduler(w.clock, workers=workers, after_batch=lambda now, labels: watch.check(now))
        if isinstance(w.clock, BenchClock):
            w.clock.others_running = sched.others_running  # a sleep beside others' work waits for it
        w.defer(sched.close)
        t0 = w.clock.time()
        drivers = []
        for host in hosts:
            for name in spec.repo_names:
                actor = DriverActor(w.session(host, name), host)
                drivers.append(actor)
                sched.at(t0, f"drive {host.name} {name}", actor.step)
        rng = random.Random(spec.seed)
        slots = []
        for host in hosts:
            for k in range(spec.waits_per_host + spec.extra_procs_per_host):
                slot = WaitSlot(w, host, spec.repo_names, activity, random.Random(rng.random()))
                slots.append(slot)
                sched.at(t0 + 61.0 + 2.5 * k, f"wait {host.name} {k}", slot.step)

        def followups(now: float) -> float:
            for fn in activity.due(now):
                fn(now)
            return now + 15.0

        sched.at(t0 + 1.0, "ci", followups)
        schedule_warmup_unrelated(sched, activity, spec, t0, spec.warmup)
        sched.run_until(t0 + spec.warmup)
        mark = len(w.gh.ledger)
        t_start = w.clock.time()
        activity.expectations.clear()
        schedule_activity(sched, activity, spec, t0, t_start, spec.window)
        polls = []
        for k in range(queue_polls):
            # spread over the window, off the drivers' grid, so each poll runs alone
            host = hosts[k % len(hosts)]
            name = spec.repo_names[k % len(spec.repo_names)]
            when = t_start + spec.window * (k + 0.5) / queue_polls + 0.25

            def poll(now: float, host=host, name=name) -> None:
                polls.append(poll_queue(w, host, name))
                return None

            sched.at(when, f"queue poll {host.name} {name}", poll)
        run_started = time.monotonic()
        sched.run_until(t_start + spec.window)
        run_seconds = time.monotonic() - run_started
        end = len(w.gh.ledger)
        t = tally(w.gh, mark, end)
        figures = ledger_figures(w.gh, mark, end, w.pool)
        t_end = w.clock.time()
        per_host = {h.name: busiest_minute_of(h.arrivals(t_start, t_end)) for h in hosts}
        per_host_calls = {h.name: len(h.arrivals(t_start, t_end)) * _per_hour(spec.window) for h in hosts}
        git_requests = git_figures(w.git_requests(), [h.name for h in hosts], spec.repo_names, t_start, t_end)
        # hook rounds that ran for real, and any the product recorded as failed
        hook_failures = []
        hook_rounds = 0
        hook_log_warnings: list[str] = []
        moved_aside = [str(p.name) for host in hosts for p in (host.store_path.parent.glob("*.corrupt-*")
                                                                if host.store_path.parent.exists() else [])]
        for host in hosts:
            for name, clone in host.clones.items():
                log_path = clone / ".git" / "sluice" / "log"
                if log_path.exists():
                    text = log_path.read_text(errors="replace")
                    hook_rounds += text.count("hook round start")
                    hook_log_warnings += [line.split("] ", 1)[-1] for line in text.splitlines()
                                          if "unusable" in line or "failed" in line or "could not" in line]
                failure = clone / ".git" / "sluice" / "last-failure.json"
                if failure.exists():
                    record = json.loads(failure.read_text())
                    if "recovered_at" not in record:
                        hook_failures.append(f"{host.name} {name}: {record.get('error')}")
        sched.close()
        factor = _per_hour(spec.window)
        return {
            "kind": "git-sluice",
            "auth": spec.auth,
            "spec": spec.describe(),
            "window_s": spec.window,
            **figures,
            "host_busiest_minute": per_host,
            "pools_seen": sorted({str(c.pool) for c in w.gh.ledger}),
            "host_calls_per_hour": per_host_calls,
            "git": git_requests,
            "warmup_s": spec.warmup,
            "per_hour": t.scaled(factor),
            "window": t.__dict__,
            "freshness": _fresh(activity.expectations),
            "changes": dict(activity.applied),
            "driver_ticks": sum(d.ticks for d in drivers),
            "wait_looks": sum(s.looks for s in slots),
            "wait_outcomes": _merge([s.outcomes for s in slots]),
            "wait_errors": [e for s in slots for e in s.errors][:5],
            "hook_commands": len(gitside.hook_seconds),
            "hook_rounds_logged": hook_rounds,
            "hook_seconds_median": _median(gitside.hook_seconds),
            "hook_timeouts": gitside.hook_failures[:5],
            "hook_round_failures": hook_failures[:5],
            "actor_failures": [f"{f.label}: {f.error}" for f in sched.failures][:10],
            "actor_failure_count": len(sched.failures),
            "product_warnings": _summarise(WARNINGS.since(warned)),
            "hook_log_warnings": _summarise(hook_log_warnings),
            "host_store_moved_aside": moved_aside,
            "queue_polls": [p.__dict__ for p in polls],
            "setup_seconds": setup_seconds,
            "warmup_seconds": run_started - started - setup_seconds,
            "run_seconds": run_seconds,
            "wall_seconds": time.monotonic() - started,
        }


def _merge(dicts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


# ------------------------------------------------------------------------------- baselines
def _double(start: float, scale: float, auth: str = "user") -> tuple[FakeClock, GitHubDouble, Any]:
    """A baseline's own in-process double: (its clock, it, a token maker per process)."""
    clock = FakeClock(start)
    gh, private = make_double(clock, auth)
    if scale != 1:
        for resource in ("core", "graphql"):
            gh.set_limit(pool_of(auth), resource, round(ALLOWANCE / scale), window=3600.0 / scale)

    def direct(refusals: dict[str, int] | None = None) -> Direct:
        if private is None:
            return Direct(gh, TOKEN, refusals)
        return Direct(gh, None, refusals, minter=AppMinter(gh, APP_ID, INSTALLATION_ID, private))

    return clock, gh, direct


def _install(gh: GitHubDouble, auth: str, names: list[str]) -> None:
    for name in names:
        gh.add_repo(name)
    if auth == "app":
        gh.add_installation(APP_ID, INSTALLATION_ID, list(names))


def baseline_fleet(kind: str, spec: FleetSpec, *, scale: float = 1.0, window: float | None = None,
                   warmup: float | None = None) -> dict[str, Any]:
    """A poller fleet (``naive`` or ``conditional``): one poller per (host, repository), plus one per
    git-sluice wait, every 3 s; each local push or fetch runs one pass in a fresh process.
    ``graphql``: the competent client, one :class:`GraphQLPoller` per host over all its repositories,
    a pass a minute, nothing more for a push or a fetch (its waits read its answers).

    ``scale`` runs a time-scaled hour (see the module docstring); otherwise ``window`` seconds of the
    real allowance are measured and extrapolated to the hour, which holds only while the allowance
    lasts (``allowance_spent`` in the result says whether it did).
    """
    started = time.monotonic()
    if scale != 1:
        window, factor = 3600.0 / scale, scale
    else:
        window = window or 3600.0
        factor = 3600.0 / window
    warmup = spec.warmup if warmup is None else warmup
    clock, gh, direct_for = _double(float(int(time.time())), scale, spec.auth)
    sched = Scheduler(clock, workers=1)
    observer = Observer([], clock.time) if scale == 1 else None

    refusals = {"primary": 0, "secondary": 0}
    processes = spec.hosts * (spec.repos + spec.waits_per_host + spec.extra_procs_per_host)
    # the fleet's one pace (issue 29): the allowance lasts 45 minutes, the hour's calls stay at the ADR's
    # (a time-scaled hour keeps both intervals: its allowance and calls are both divided by ``scale``)
    pacer = adr_pacer(ALLOWANCE) if kind == "naive" else None

    def make(repo: str) -> Any:
        direct = direct_for(refusals)
        if kind == "naive":
            return NaivePoller(direct, repo, observer, pacer=pacer, clock=clock.time)
        return ConditionalPoller(direct, repo, clock.time, observer)

    def on_step(repo: str, host: int) -> None:
        poller = make(repo)
        sched.at(clock.time(), f"step {repo}", PassActor(poller.run_pass, 3.0, once=True).step)

    activity = Activity(gh, NoGit(None if kind == "graphql" else on_step))
    if observer is not None:
        observer.expectations = activity.expectations
    _install(gh, spec.auth, spec.repo_names)
    for index, name in enumerate(spec.repo_names):
        activity.populate(name, spec.prs, seed=spec.seed * 1000 + index)
    rng = random.Random(spec.seed)
    t0 = clock.time()
    pollers = []
    for _host in range(spec.hosts if kind == "graphql" else 0):
        poller = GraphQLPoller(direct_for(refusals), list(spec.repo_names), clock.time, observer)
        actor = PassActor(poller.run_pass, 60.0)
        pollers.append((poller, actor))
        sched.at(t0 + rng.uniform(0, 60.0), "poll graphql", actor.step)
    for _host in range(0 if kind == "graphql" else spec.hosts):
        names = list(spec.repo_names)
        names += [rng.choice(spec.repo_names) for _ in range(spec.waits_per_host + spec.extra_procs_per_host)]
        for name in names:
            poller = make(name)
            actor = PassActor(poller.run_pass, 3.0)
            pollers.append((poller, actor))
            sched.at(t0 + rng.uniform(0, 3.0), f"poll {name}", actor.step)

    def followups(now: float) -> float:
        for fn in activity.due(now):
            fn(now)
        return now + 15.0

    sched.at(t0 + 1.0, "ci", followups)
    schedule_warmup_unrelated(sched, activity, spec, t0, warmup)
    sched.run_until(t0 + warmup)
    mark = len(gh.ledger)
    refusals.update(primary=0, secondary=0)
    t_start = clock.time()
    activity.expectations.clear()
    schedule_activity(sched, activity, spec, t0, t_start, window)
    sched.run_until(t_start + window)
    end = len(gh.ledger)
    t = tally(gh, mark, end)
    figures = ledger_figures(gh, mark, end, pool_of(spec.auth))
    # refused time, in minutes of the (scaled) hour: minutes of the window with a refusal (a scaled run's
    # minute is 60/scale s of its window)
    bucket = 60.0 / scale
    refused_minutes = len({int((c.time - t_start) // bucket) for c in gh.ledger[mark:end]
                           if c.status in (403, 429)}) * bucket * factor / 60.0
    sched.close()
    return {
        "refused_minutes_per_hour": refused_minutes,
        "kind": kind,
        "auth": spec.auth,
        "pace_s": pacer.ok_interval if pacer is not None else None,
        "refused_pace_s": pacer.refused_interval if pacer is not None else None,
        "processes": spec.hosts if kind == "graphql" else processes,
        **figures,
        "spec": spec.describe(),
        "scale": scale,
        "window_s": window,
        "warmup_s": warmup,
        "refusals": dict(refusals),
        "allowance_spent": refusals["primary"] > 0,
        "per_hour": t.scaled(factor),
        "window": t.__dict__,
        "freshness": _fresh(activity.expectations) if observer is not None else None,
        "changes": dict(activity.applied),
        "passes": sum(a.passes for _, a in pollers),
        "actor_failures": [f"{f.label}: {f.error}" for f in sched.failures][:10],
        "actor_failure_count": len(sched.failures),
        "wall_seconds": time.monotonic() - started,
    }


def dashboard_baseline(spec: FleetSpec, *, scale: float, poll: float = 2.5, warmup: float = 60.0,
                       fixed: bool = False) -> dict[str, Any]:
    """Tower's overview: one dashboard client polling every ``poll`` seconds, 3 GraphQL reads per repository
    (``fixed``: as Tower's own fix left it, :class:`TowerFixPoller`), under ``spec``'s activity."""
    started = time.monotonic()
    window = 3600.0 / scale
    clock, gh, direct_for = _double(float(int(time.time())), scale, spec.auth)
    activity = Activity(gh, NoGit())
    names = spec.repo_names
    _install(gh, spec.auth, names)
    for index, name in enumerate(names):
        activity.populate(name, spec.prs, seed=spec.seed * 1000 + index)
    dash: Any = TowerFixPoller(direct_for(), names) if fixed else DashboardPoller(direct_for(), names)
    sched = Scheduler(clock, workers=1)

    def step(now: float) -> float:
        dash.poll(now)
        return now + poll

    def followups(now: float) -> float:
        for fn in activity.due(now):
            fn(now)
        return now + 15.0

    t0 = clock.time()
    sched.at(t0, "dashboard", step)
    sched.at(t0 + 1.0, "ci", followups)
    schedule_warmup_unrelated(sched, activity, spec, t0, warmup)
    sched.run_until(t0 + warmup)
    mark = len(gh.ledger)
    t_start = clock.time()
    schedule_activity(sched, activity, spec, t0, t_start, window)
    sched.run_until(t_start + window)
    end = len(gh.ledger)
    t = tally(gh, mark, end)
    figures = ledger_figures(gh, mark, end, pool_of(spec.auth))
    sched.close()
    return {
        "kind": "tower-fix" if fixed else "dashboard",
        "auth": spec.auth,
        **figures,
        "scale": scale,
        "window_s": window,
        "warmup_s": warmup,
        "per_hour": t.scaled(scale),
        "window": t.__dict__,
        "actor_failures": [f"{f.label}: {f.error}" for f in sched.failures][:10],
        "wall_seconds": time.monotonic() - started,
    }


def run_job(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A run by name, for a worker process: a baseline (pure CPU, no git) or a git-sluice fleet (its own world).

    ``identity`` answers which git_sluice the worker imported, so the harness can refuse a worker
    running another tree's code (every figure from one commit).
    """
    if name == "identity":
        from fleet_provenance import identity

        return identity()
    jobs = {"baseline_fleet": baseline_fleet, "dashboard_baseline": dashboard_baseline, "sluice_fleet": sluice_fleet}
    return jobs[name](*args, **kwargs)
