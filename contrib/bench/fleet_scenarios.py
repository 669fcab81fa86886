"""The issue's seven scenarios, each a list of table rows: a figure, a baseline, git-sluice, the ratio.

A ratio is always *baseline ÷ git-sluice* for a figure where less is better
(calls, points, refusals, seconds), so above 1 git-sluice spends or waits
less, below 1 it spends or waits more. A scenario that fails, or a baseline
that was not run, says so in its row instead of a number.
"""

from __future__ import annotations

import multiprocessing
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from fleet_activity import MODERATE, QUIET, Rates
from fleet_fence import fence_baseline, fence_sluice
from fleet_overheads import hook_overhead, queue_startup, round_cpu
from fleet_runs import ALLOWANCE, FleetSpec, run_job, sluice_fleet

Value = float | int | str | None


@dataclass
class Row:
    figure: str
    baseline_name: str
    baseline: Value
    sluice: Value
    unit: str = ""
    note: str = ""
    ratio: float | None = None
    ratio_text: str = ""
    rankable: bool = True  # counts toward "the worst ratio"

    def finish(self) -> "Row":
        b, s = self.baseline, self.sluice
        if isinstance(b, (int, float)) and isinstance(s, (int, float)):
            if s == 0 and b == 0:
                self.ratio_text = "both 0"
            elif s == 0:
                self.ratio_text = "∞ (git-sluice 0)"
            elif b == 0:
                self.ratio, self.ratio_text = 0.0, "0 (baseline 0)"
            else:
                self.ratio = b / s
                self.ratio_text = f"{self.ratio:,.2f}" if self.ratio < 10 else f"{self.ratio:,.0f}"
        elif isinstance(b, str) and b:
            self.ratio_text = "—"
        else:
            self.ratio_text = "—"
        return self


@dataclass
class Scenario:
    key: str
    title: str
    rows: list[Row] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    status: str = "ok"
    error: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class Profile:
    """How big each scenario runs (the full benchmark, or the quick one the tests run)."""

    name: str
    s1: FleetSpec
    s1_naive_scale: float
    s1_conditional_window: float  # unscaled: the conditional client's one-time cache fill must not be scaled
    s2: FleetSpec
    s2_scale: float
    s2_conditional_window: float
    s3: FleetSpec
    s3_polls: int
    s3_dashboard_scale: float
    s4: dict[str, Any]
    s6_requests: int
    s6_samples: int
    s7_base: FleetSpec
    s7_scale: float
    s7_configs: tuple[tuple[int, int, int], ...]  # (hosts, processes per host, open requests)
    workers: int = 4


FULL = Profile(
    name="full",
    s1=FleetSpec(repos=10, hosts=3, prs=20, waits_per_host=2, rates=Rates(pushed=6.0), warmup=180, window=1800),
    s1_naive_scale=1.0,
    s1_conditional_window=1800.0,
    s2=FleetSpec(repos=10, hosts=3, prs=20, waits_per_host=2, rates=QUIET, warmup=180, window=900),
    s2_scale=12.0,
    s2_conditional_window=900.0,
    s3=FleetSpec(repos=13, hosts=1, prs=20, waits_per_host=0, warmup=120, window=1200),
    s3_polls=13,
    s3_dashboard_scale=30.0,
    s4={},
    s6_requests=500,
    s6_samples=7,
    s7_base=FleetSpec(repos=1, hosts=1, prs=20, waits_per_host=0, warmup=120, window=600),
    s7_scale=6.0,
    s7_configs=((1, 1, 20), (3, 1, 20), (6, 1, 20), (1, 4, 20), (1, 8, 20), (1, 1, 200), (1, 1, 1000)),
)

QUICK_RATES = Rates(opened=10.0, pushed=30.0, reviewed=20.0, merged=15.0)
QUICK = Profile(
    name="quick",
    s1=FleetSpec(repos=1, hosts=2, prs=5, waits_per_host=1, rates=QUICK_RATES, warmup=70, window=180),
    s1_naive_scale=15.0,
    s1_conditional_window=180.0,
    s2=FleetSpec(repos=1, hosts=2, prs=5, waits_per_host=0, rates=QUIET, warmup=70, window=180),
    s2_scale=20.0,
    s2_conditional_window=180.0,
    s3=FleetSpec(repos=2, hosts=1, prs=5, waits_per_host=0, warmup=70, window=180),
    s3_polls=1,
    s3_dashboard_scale=120.0,
    s4={"siblings": 4, "others": 2, "calls_each": 2, "stagger": 0.15, "hang": 0.45, "ramp_hang": 0.1,
        "ramp_calls": 10},
    s6_requests=20,
    s6_samples=1,
    s7_base=FleetSpec(repos=1, hosts=1, prs=5, waits_per_host=0, warmup=70, window=120),
    s7_scale=30.0,
    s7_configs=((1, 1, 5), (2, 1, 5)),
    workers=4,
)


def _r(value: Any, digits: int = 0) -> Any:
    if isinstance(value, (int, float)):
        return round(value, digits) if digits else round(value)
    return value


def _fresh_value(fresh: dict[str, Any] | None, cls: str, q: str) -> Value:
    if fresh is None:
        return "not measured (time-scaled run)"
    entry = fresh.get(cls)
    if not entry or not entry["n"]:
        return "no such change in the window"
    value = entry[q]
    if value is None:
        return f"none of {entry['n']} seen"
    return round(value, 1)


# ---------------------------------------------------------------------------- baseline jobs
CONDITIONAL_WARMUP = 300.0  # its cache fill: one 200 per address per process, the first minutes


def s7_spec(p: Profile, hosts: int, procs: int, prs: int) -> FleetSpec:
    return replace(p.s7_base, hosts=hosts, prs=prs, extra_procs_per_host=procs - 1)


def s7_label(hosts: int, procs: int, prs: int) -> str:
    return f"{hosts} host(s) × {procs} process(es), {prs} open requests"


def baseline_jobs(p: Profile, keys: set[str]) -> dict[str, tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """Every baseline run the chosen scenarios need (they run in a worker process, beside git-sluice)."""
    jobs: dict[str, tuple[str, tuple[Any, ...], dict[str, Any]]] = {}
    if "s1" in keys:
        jobs["s1/naive"] = ("baseline_fleet", ("naive", p.s1), {"scale": p.s1_naive_scale})
        jobs["s1/conditional"] = ("baseline_fleet", ("conditional", p.s1),
                                  {"window": p.s1_conditional_window, "warmup": CONDITIONAL_WARMUP})
    if "s2" in keys:
        jobs["s2/naive"] = ("baseline_fleet", ("naive", p.s2), {"scale": p.s2_scale})
        jobs["s2/conditional"] = ("baseline_fleet", ("conditional", p.s2),
                                  {"window": p.s2_conditional_window, "warmup": CONDITIONAL_WARMUP})
    if "s3" in keys:
        jobs["s3/dashboard"] = ("dashboard_baseline", (p.s3.repos, p.s3.prs),
                                {"scale": p.s3_dashboard_scale, "seed": p.s3.seed})
    if "s7" in keys:
        for hosts, procs, prs in p.s7_configs:
            jobs[f"s7/{hosts}/{procs}/{prs}"] = ("baseline_fleet", ("naive", s7_spec(p, hosts, procs, prs)),
                                                {"scale": p.s7_scale})
    return jobs


Base = Callable[[str], dict[str, Any]]
NAMES = {"naive": "naive poller", "conditional": "per-process conditional"}


# ----------------------------------------------------------------------------- scenarios
def s1_fleet(p: Profile, base: Base) -> Scenario:
    sc = Scenario("s1", "sluice fleet: " + p.s1.describe())
    sl = sluice_fleet(p.s1, workers=p.workers)
    sc.raw["git-sluice"] = sl
    s = sl["per_hour"]
    for kind in ("naive", "conditional"):
        b_run = base(f"s1/{kind}")
        sc.raw[kind] = b_run
        b = b_run["per_hour"]
        name = NAMES[kind]
        sc.rows += [
            Row("REST calls reaching GitHub /h", name, _r(b["requests"] - b["graphql_calls"]),
                _r(s["requests"] - s["graphql_calls"])),
            Row("REST calls counted /h", name, _r(b["counted_rest"]), _r(s["counted_rest"])),
            Row("share of the 5,000 REST allowance", name, _r(100 * b["counted_rest"] / ALLOWANCE, 1),
                _r(100 * s["counted_rest"] / ALLOWANCE, 1), unit="%"),
            Row("GraphQL points /h", name, _r(b["points"]), _r(s["points"]),
                note="a separate 5,000-point allowance", rankable=False),
            Row("403/429 answers /h", name, _r(b["throttled"]), _r(s["throttled"])),
        ]
    sc.notes.append("Anchor: 9,000–12,000 REST calls/h before sluice's fix (ADR 0071), against 5,200.")
    sc.notes.append(_routes(sl))
    return sc


def _routes(run: dict[str, Any]) -> str:
    """git-sluice's calls per hour by kind: what reached GitHub, and what of it was counted."""
    factor = 3600.0 / run["window_s"]
    parts = [f"{route} {requests * factor:,.0f} ({counted * factor:,.0f} counted)"
             for route, (requests, counted) in sorted(run["window"]["by_route"].items(),
                                                      key=lambda kv: -kv[1][0])]
    return "git-sluice's calls /h by kind: " + ", ".join(parts) + "."


def s2_quiet(p: Profile, base: Base) -> Scenario:
    sc = Scenario("s2", "quiet hour: " + p.s2.describe())
    sl = sluice_fleet(p.s2, workers=p.workers)
    sc.raw["git-sluice"] = sl
    s = sl["per_hour"]
    for kind in ("naive", "conditional"):
        b_run = base(f"s2/{kind}")
        sc.raw[kind] = b_run
        b = b_run["per_hour"]
        name = NAMES[kind]
        sc.rows += [
            Row("counted calls /h (REST + GraphQL points)", name, _r(b["counted_rest"] + b["points"]),
                _r(s["counted_rest"] + s["points"]), note="the floor is 0"),
            Row("calls reaching GitHub /h (304s included)", name, _r(b["requests"]), _r(s["requests"])),
            Row("403/429 answers /h", name, _r(b["throttled"]), _r(s["throttled"])),
        ]
    sc.notes.append(_routes(sl))
    return sc


def s3_tower(p: Profile, base: Base) -> Scenario:
    spec = p.s3
    sc = Scenario("s3", f"Tower: {spec.repos} repositories watched by a dashboard polling every 2.5 s")
    sl = sluice_fleet(spec, workers=p.workers, queue_polls=p.s3_polls)
    sc.raw["git-sluice"] = sl
    s = sl["per_hour"]
    b_run = base("s3/dashboard")
    sc.raw["dashboard"] = b_run
    b = b_run["per_hour"]
    polls = sl["queue_polls"]
    polls_per_hour = spec.repos * 3600 / 2.5
    good = [q for q in polls if q["ok"]]
    poll_calls = sum(q["requests"] for q in polls)
    name = "dashboard poller"
    sc.rows += [
        Row("counted calls /h (GraphQL points + REST)", name, _r(b["points"] + b["counted_rest"]),
            _r(s["points"] + s["counted_rest"]), note="git-sluice: its drivers' intake of all the repositories"),
        Row("calls reaching GitHub /h", name, _r(b["requests"]), _r(s["requests"])),
        Row("rate-limited answers /h", name, _r(b["throttled"]), _r(s["throttled"])),
    ]
    if polls and len(good) == len(polls):
        per_poll = poll_calls / len(polls)
        sc.rows.append(Row(f"calls made by the dashboard's own reads ({polls_per_hour:,.0f} "
                           "`git sluice queue --json` polls /h)", name, _r(b["requests"]),
                           _r(per_poll * polls_per_hour),
                           note=f"extrapolated from {len(polls)} timed real polls ({poll_calls} calls)"))
        wall = sorted(q["wall"] for q in polls)[len(polls) // 2]
        cpu = sorted(q["cpu"] for q in polls)[len(polls) // 2]
        sc.rows.append(Row("one `git sluice queue --json` poll (median of the sample)", "—",
                           "no baseline", f"{wall:.2f} s wall, {cpu:.2f} s CPU",
                           note=f"{polls_per_hour:,.0f} polls/h would take {cpu * polls_per_hour / 60:,.0f} "
                                "CPU-minutes/h", rankable=False))
    else:
        bad = [q["error"] for q in polls if not q["ok"]]
        sc.rows.append(Row("`git sluice queue --json` polls", name, "—", f"failed: {bad[:1] or 'no poll ran'}"))
    sc.notes.append("The baseline is one dashboard client: every 2.5 s each repository's overview, kept 30 s, "
                    "three GraphQL reads when not kept, a failed read never kept, nothing reading the reset "
                    f"(a time-scaled hour, ×{p.s3_dashboard_scale:g}). git-sluice: a driver per repository on one "
                    "host, and the dashboard reading `git sluice queue --json`.")
    sc.notes.append("Anchors: 9,090 gh calls/h before Tower's fix; 52/h per repository after it "
                    f"({52 * spec.repos:,}/h for {spec.repos}); its goal ≤ 60/h for all 13.")
    sc.notes.append("git-sluice's figures are its drivers' intake of the repositories under the activity in "
                    "the title (one host holds every lease); S2 gives the same for a quiet hour. " + _routes(sl))
    return sc


def s4_fence(p: Profile, base: Base) -> Scenario:
    sc = Scenario("s4", "throttle fence (the ClawSweeper incident): sibling processes, a throttle, the reset")
    sl = fence_sluice(**p.s4)
    b_run = fence_baseline(**{k: v for k, v in p.s4.items() if k != "ramp_calls"})
    sc.raw = {"git-sluice": sl, "per-process conditional": b_run}
    if "error" in sl:
        sc.status, sc.error = "failed", sl["error"]
        return sc
    a, ba = sl["phase_a"], b_run["phase_a"]
    siblings = p.s4.get("siblings", 8)
    sc.title = (f"throttle fence (the ClawSweeper incident): {siblings} sibling processes, a throttle, "
                "the reset across 2 hosts")
    name = "per-process conditional"
    sc.rows += [
        Row("calls sent after the first throttle answered", name, ba["sent_after_first_throttle"],
            a["sent_after_first_throttle"], note="must be 0"),
        Row("calls already on the wire then (they finish, counted)", name, ba["on_wire_at_first_throttle"],
            a["on_wire_at_first_throttle"], note="the only calls that reach GitHub after it", rankable=False),
        Row("calls sent at the reset before the first answer (probes, 2 hosts)", name, b_run["probes_at_reset"],
            sl["probes_at_reset"], note="must be 1"),
        Row("waves of concurrent calls after the reset", name, b_run["ramp"], sl["ramp"],
            note="cohorts 1 → 2 → 4 → 8, then free", rankable=False),
    ]
    sc.notes.append(f"{siblings} siblings on host-a (in-process sessions on threads, each with its own host-store "
                    "connection, as separate processes have) start one after another with calls ready; the double "
                    "holds every call on the wire for a moment (a hang fault) and answers with a secondary limit "
                    "(retry-after 300 s). At the pause's end host-a's siblings call again while "
                    f"{p.s4.get('others', 4)} processes on host-b, which adopted the pause note by fetching "
                    "refs/sluice/*, try theirs once the probe is on the wire. Times are each call's own send and "
                    "answer, noted by the client's transport.")
    if not sl["host_b_adopted_pause"]:
        sc.notes.append("host-b did not adopt the pause note before the reset")
    if sl["errors"]:
        sc.notes.append("errors: " + "; ".join(sl["errors"]))
    return sc


def s5_freshness(s1: Scenario) -> Scenario:
    sc = Scenario("s5", "freshness: from a change on the double to a queue showing it (the S1 fleet, S1's hour)")
    if s1.status != "ok":
        sc.status, sc.error = "failed", f"S1 failed: {s1.error}"
        return sc
    sl = s1.raw["git-sluice"]["freshness"]
    for kind in ("naive", "conditional"):
        fresh = s1.raw[kind].get("freshness")
        for cls, label in (("discovery", "a change on GitHub (review, CI, opening): discovery clock"),
                           ("local-push-holder", "a local push on the lease holder's host (hooks)"),
                           ("local-push-other", "a local push on another host (baseline: on any host)"),
                           ("fetch", "a merge, seen through a host's `git fetch` (hooks)")):
            if cls == "local-push-holder" and kind != "naive":
                continue  # a baseline has no lease holder: shown once
            for q in ("p50", "p99"):
                n = sl.get(cls, {}).get("n", 0)
                bn = fresh.get(cls, {}).get("n", 0) if fresh else 0
                note = f"changes: {bn} (baseline), {n} (git-sluice)"
                if cls == "local-push-holder":
                    sc.rows.append(Row(f"{label}, {q}", "—", "no lease in a baseline", _fresh_value(sl, cls, q),
                                       unit="s", note=f"changes: {n}; the round its own hook started",
                                       rankable=False))
                    continue
                # git-sluice's own hook round is timed in real seconds (a process starting), the
                # baseline's step pass in-process at the same simulated instant (no process start):
                # not a like-for-like pair, so it does not rank
                like = cls in ("discovery", "local-push-other")
                if not like:
                    note += "; baseline step timed without a process start"
                sc.rows.append(Row(f"{label}, {q}", NAMES[kind], _fresh_value(fresh, cls, q),
                                   _fresh_value(sl, cls, q), unit="s", note=note, rankable=like))
    sc.notes.append("A change a host's own hook round saw at once is timed in real seconds (the hook round's "
                    "wall time); every other change in simulated seconds on the shared clock. A change no "
                    "view had shown by the end of the window is counted among the changes but has no latency.")
    sc.notes.append("A baseline has no lease: every host reads GitHub itself, so each of its pushes is timed as "
                    "'on another host'. In git-sluice a host that does not hold the lease starts no round for its "
                    "own push (docs/design.md#the-lease): the holder sees it at its next discovery.")
    return sc


def s6_overheads(p: Profile, base: Base) -> Scenario:
    sc = Scenario("s6", "overheads: a round's CPU, `git sluice queue` start-up, the hooks' added time")
    rc = round_cpu(p.s6_requests)
    qs = queue_startup(max(p.s6_samples, 1))
    ho = hook_overhead(max(p.s6_samples, 1))
    sc.raw = {"round_cpu": rc, "queue_startup": qs, "hook_overhead": ho}
    n = p.s6_requests
    for label in ("first", "changed", "quiet"):
        r = rc[label]
        if r["exit"] != 0:
            sc.rows.append(Row(f"`git sluice intake`, {label} round over {n} open requests", "—", "—",
                               f"failed: {r['error']}"))
            continue
        sc.rows.append(Row(f"`git sluice intake` CPU, {label} round over {n} open requests", "—",
                           "no baseline", f"{r['cpu']:.2f} s CPU ({r['wall']:.2f} s wall)",
                           note=f"{r['requests']} calls, {r['counted_rest']} counted, {r['points']} points",
                           rankable=False))
    sc.rows.append(Row(f"calls for one pass over {n} open requests", "naive poller", rc["naive_pass_requests"],
                       rc["first"]["requests"], note="git-sluice's first round: list pages + GraphQL pages"))
    if "error" in qs:
        sc.rows.append(Row("`git sluice queue --json` start-up", "—", "—", f"failed: {qs['error']}"))
    else:
        sc.rows.append(Row("`git sluice queue --json` start-up (median)", "—", "no baseline",
                           f"{qs['queue_wall']:.2f} s wall, {qs['queue_cpu']:.2f} s CPU",
                           note=f"bare `python -c pass`: {qs['python_wall']:.2f} s wall, {qs['python_cpu']:.2f} s "
                                f"CPU; calls made: {qs['calls']}", rankable=False))
    med, added = ho["median_wall"], ho["median_added"]
    for what, label in (("push", "`git push` to a request's head"), ("fetch_moved", "`git fetch` that moves main"),
                        ("fetch_still", "`git fetch` that moves nothing")):
        sc.rows.append(Row(f"{label}, wall (median of {ho['samples']})", "no hooks", _r(med[f"{what}_plain"], 3),
                           _r(med[f"{what}_hooked"], 3), unit="s",
                           note=f"with the hooks: {1000 * (added[what] or 0):+.0f} ms (median of the paired "
                                "differences); the round runs detached afterwards"))
    if ho["hook_round_failures"]:
        sc.notes.append("hook round failures: " + "; ".join(ho["hook_round_failures"]))
    sc.notes.append(f"The detached round a hook starts took {ho['hook_round_after_median'] or 0:.2f} s (median, "
                    "real time) after the git command had returned.")
    sc.notes.append("These pushes and fetches concern git-sluice (a request's head, the branch taken in), so the "
                    "hooks start a round; for commands that concern it in nothing see docs/benchmarks-hooks.md.")
    return sc


def s7_scaling(p: Profile, base: Base) -> Scenario:
    sc = Scenario("s7", "scaling: counted calls per hour as hosts, processes per host and open requests grow")
    r = p.s7_base.rates
    sc.notes.append(f"One repository; per repository and hour {r.opened:g} opened, {r.pushed:g} pushed, "
                    f"{r.reviewed:g} reviewed, {r.merged:g} merged; {p.s7_base.window / 60:g}-minute windows. Each "
                    "host runs a driver; further processes are waits. The baseline runs a naive poller per "
                    f"process (a time-scaled hour, ×{p.s7_scale:g}): its counted calls stop at the allowance, "
                    "so the calls reaching GitHub show its growth.")
    for hosts, procs, prs in p.s7_configs:
        label = s7_label(hosts, procs, prs)
        try:
            sl = sluice_fleet(s7_spec(p, hosts, procs, prs), workers=p.workers)
            b_run = base(f"s7/{hosts}/{procs}/{prs}")
        except Exception as exc:
            sc.rows.append(Row(f"{label}: counted calls /h", "naive poller", "—", f"failed: {exc}"))
            continue
        sc.raw[label] = {"git-sluice": sl, "naive": b_run}
        s, b = sl["per_hour"], b_run["per_hour"]
        sc.rows.append(Row(f"{label}: counted calls /h (REST + points)", "naive poller",
                           _r(b["counted_rest"] + b["points"]), _r(s["counted_rest"] + s["points"]),
                           note=f"calls reaching GitHub /h: naive {_r(b['requests']):,}, git-sluice "
                                f"{_r(s['requests']):,}"))
    return sc


SCENARIOS: list[tuple[str, Callable[[Profile, Base], Scenario]]] = [
    ("s1", s1_fleet),
    ("s2", s2_quiet),
    ("s3", s3_tower),
    ("s4", s4_fence),
    ("s7", s7_scaling),
    ("s6", s6_overheads),  # last: it times processes, so it runs once the baselines' worker is done
]
ORDER = ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]


def run_all(profile: Profile, only: set[str] | None = None, say: Callable[[str], None] = print) -> list[Scenario]:
    """Every scenario, each in its own try: a failure is a row or a status, never the end of the benchmark.

    The baselines are pure CPU against in-process doubles; they run in one worker process while the
    git-sluice side (mostly waiting on git and on hook processes) runs here. Scenario 6 times real
    processes, so it waits for the worker to finish first.
    """
    keys = {k for k, _ in SCENARIOS if not only or k in only or (k == "s1" and "s5" in only)}
    jobs = baseline_jobs(profile, keys)
    futures: dict[str, Future[dict[str, Any]]] = {}
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) if jobs else None
    try:
        for key, (fn, args, kwargs) in jobs.items():
            assert pool is not None
            futures[key] = pool.submit(run_job, fn, args, kwargs)

        def base(key: str) -> dict[str, Any]:
            return futures[key].result()

        done: dict[str, Scenario] = {}
        for key, fn in SCENARIOS:
            if key not in keys:
                continue
            if key == "s6":
                for future in futures.values():
                    try:
                        future.result()
                    except Exception:
                        pass
            say(f"{key}: running…")
            started = time.monotonic()
            try:
                sc = fn(profile, base)
            except Exception as exc:
                sc = Scenario(key, dict(TITLES).get(key, key), status="failed", error=f"{type(exc).__name__}: {exc}")
                sc.raw["traceback"] = traceback.format_exc()
            sc.seconds = time.monotonic() - started
            for row in sc.rows:
                row.finish()
            done[key] = sc
            say(f"{key}: {sc.status} in {sc.seconds:.0f} s")
            if key == "s1":
                s5 = s5_freshness(sc)
                for row in s5.rows:
                    row.finish()
                done["s5"] = s5
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return [done[k] for k in ORDER if k in done and (not only or k in only or k in ("s1", "s5") and "s5" in only)]


TITLES = [
    ("s1", "sluice fleet"), ("s2", "quiet hour"), ("s3", "Tower"), ("s4", "throttle fence"),
    ("s5", "freshness"), ("s6", "overheads"), ("s7", "scaling"),
]


def as_json(scenarios: list[Scenario]) -> list[dict[str, Any]]:
    return [asdict(sc) for sc in scenarios]


__all__ = ["FULL", "QUICK", "MODERATE", "Profile", "Row", "Scenario", "run_all", "as_json"]
