"""What the host watch costs one repository with production activity, per tick, by open requests.

    PYTHONPATH=. python contrib/bench/watch_cost.py 20 1000 5000 [--warmup 20] [--ticks 30]

One clone, one driver (the watch's tick, the round, the tick again, as ``drive`` does), on the
double with a fake clock. Half the open requests wait on checks, a few have failed checks; every
tick brings production activity: a star, a push to an unrelated branch and an issue (which change
every REST list page), one push to a request and one review; every few ticks a check finishes, a
request is merged and one opened. After ``--warmup`` ticks (longer than the failed heads' 15-min
re-check), ``--ticks`` ticks are measured: counted units (REST calls + GraphQL points) and calls
that reached the double, per tick and per hour; how often what moved was in the queue by the
tick after it (freshness); the tick's own thread CPU (the double serves in another thread).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


def _isolate(root: Path) -> None:
    home = root / "home"
    home.mkdir()
    for key, value in {
        "HOME": str(home), "XDG_STATE_HOME": str(home / ".local/state"), "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"), "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b.invalid", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b.invalid",
        "GH_TOKEN": "tok-alice", "GIT_TERMINAL_PROMPT": "0",
    }.items():
        os.environ[key] = value
    for key in [k for k in os.environ if k.startswith("GIT_SLUICE_")]:
        del os.environ[key]


def run(n: int, warmup: int, ticks: int, profile: str = "production", seed: int = 1,
        verbose: bool = False) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="watch-cost-"))
    _isolate(root)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from git_sluice.clock import FakeClock
    from git_sluice.runtime.session import open_session
    from git_sluice.runtime.rounds import intake_for
    from git_sluice.runtime.watching import tick_watch
    from git_sluice.double.testing import running_double
    from git_sluice.errors import SluiceError
    from git_sluice.intake.queue import QueueStore
    from tests.gitutil import make_clone

    rng = random.Random(seed)
    repo = "o/r"
    clock = FakeClock()
    with running_double(clock=clock) as (gh, server):
        gh.add_user("bob")
        waiting: list[int] = []
        opened: list[int] = []

        def open_one(i: int) -> int:
            k = gh.open_pr(repo, head_ref=f"feat-{i}")
            sha = gh.pr(repo, k).head_sha
            gh.set_mergeable(repo, k, "MERGEABLE")
            if i % 2 == 0:
                gh.add_check_run(repo, sha, "ci", status="in_progress", conclusion=None)
                waiting.append(k)
            elif i % 20 == 1:
                gh.add_check_run(repo, sha, "ci", status="completed", conclusion="failure", finished_ago=3600)
            else:
                gh.add_check_run(repo, sha, "ci", status="completed", conclusion="success")
                gh.review(repo, k, "bob", "APPROVED")
            opened.append(k)
            return k

        for i in range(n):
            open_one(i)
        clone = make_clone(root / "c", api=server.url, repository=repo)
        session = open_session(clone, clock=clock)
        intake, keeper = intake_for(session, role="driver")
        counter = n

        def tick() -> float:
            t0 = time.thread_time()
            try:
                keeper.ensure(["main"])
                tick_watch(session, ["main"])
                intake.round("main")
                tick_watch(session, ["main"])
            except SluiceError as exc:  # a refusal (the first round at 5,000 meets the secondary limit)
                refused.append(str(exc)[:120])
            return time.thread_time() - t0

        counted: list[int] = []
        refused: list[str] = []
        calls: list[int] = []
        cpus: list[float] = []
        fresh = stale = 0
        routes: Counter[str] = Counter()
        tick()
        tick()  # the first round's readings spend what a fresh allowance hour then does not pace against
        clock.advance(3600)
        finishing: dict[int, list[tuple[int, str]]] = {}
        pushed = reviewed = 0
        sha = ""
        for t in range(warmup + ticks):
            # production activity (contrib/bench/fleet_activity.py's PRODUCTION and MODERATE, on a 1-min grid),
            # or busy: every tick a push to a request, a review, a star, a branch push and an issue
            busy = profile == "busy"
            if busy or t % 2 == 0:
                gh.push_branch(repo, f"unrelated-{t}")
            if busy or t % 10 == 3:
                gh.star(repo, login=f"fan-{t}")
            if busy or t % 10 == 8:
                gh.open_issue(repo, title=f"issue {t}")
            live = [k for k in opened if gh.pr(repo, k).state == "open"]
            moved: list[int] = []
            if busy or t % 15 == 4:
                pushed = rng.choice(live)
                sha = gh.push_pr(repo, pushed)
                gh.add_check_run(repo, sha, "ci", status="in_progress", conclusion=None)
                finishing.setdefault(t + 4, []).append((pushed, sha))
                moved.append(pushed)
            if busy or t % 15 == 11:
                reviewed = rng.choice(live)
                gh.review(repo, reviewed, "bob", rng.choice(["APPROVED", "CHANGES_REQUESTED"]))
                moved.append(reviewed)
            for k, done_sha in finishing.pop(t, []):
                gh.add_check_run(repo, done_sha, "ci", status="completed", conclusion="success")
            if t % 30 == 15:
                gh.merge_pr(repo, rng.choice(live))
            if t % 30 == 25:
                open_one(counter)
                counter += 1
            clock.advance(60)
            mark = gh.mark()
            cpu = tick()
            if t >= warmup:
                counted.append(gh.counted(since=mark))
                if verbose:
                    print("tick", t, counted[-1], len(gh.calls(since=mark)), file=sys.stderr)
                got = gh.calls(since=mark)
                calls.append(len(got))
                for c in got:
                    path = c.path.split("?", 1)[0]
                    routes["graphql" if path == "/graphql" else path.rsplit("/", 1)[-1] if "/commits/" in path
                           else "pulls" if path.endswith("/pulls") else path] += 1
                cpus.append(cpu)
                entries = QueueStore(session.repo.sluice_dir).load("main").entries
                if reviewed in moved:
                    e = entries.get(reviewed)
                    ok = e is not None and e.review_decision == gh.pr(repo, reviewed).review_decision()
                    fresh, stale = fresh + ok, stale + (not ok)
                    if not ok and verbose:
                        print("stale review", t, reviewed, e and e.review_decision, file=sys.stderr)
                if pushed in moved:
                    e = entries.get(pushed)
                    ok = e is not None and e.head_sha == sha
                    fresh, stale = fresh + ok, stale + (not ok)
                    if not ok and verbose:
                        print("stale push", t, pushed, e and e.head_sha[:8], sha[:8], file=sys.stderr)
        session.close()
    per_tick_u = sum(counted) / len(counted)
    per_tick_c = sum(calls) / len(calls)
    return {
        "n": n, "units_tick": per_tick_u, "calls_tick": per_tick_c, "units_h": per_tick_u * 60,
        "calls_h": per_tick_c * 60, "max_units": max(counted), "max_calls": max(calls),
        "fresh": fresh / max(1, fresh + stale), "cpu_ms": 1000 * sorted(cpus)[len(cpus) // 2],
        "routes": dict(routes), "refused": len(refused),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[20, 1000, 5000])
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--round-cpu", action="store_true", help="the CPU of one-shot intake rounds instead")
    parser.add_argument("--profile", choices=("production", "busy"), default="production")
    args = parser.parse_args()
    import logging
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    for n in args.sizes if args.round_cpu else ():
        cpu = round_cpu(n)
        print(f"round CPU at {n:>5} open: first {cpu['first']:.2f} s, 5 moved {cpu['changed']:.2f} s, "
              f"quiet {cpu['quiet']:.2f} s", flush=True)
    for n in args.sizes if not args.round_cpu else ():
        r = run(n, args.warmup, args.ticks, args.profile, verbose=args.verbose)
        print(f"{args.profile} {r['n']:>5} open: {r['units_tick']:.2f} units/tick ({r['units_h']:.0f}/h, max {r['max_units']}), "
              f"{r['calls_tick']:.1f} calls/tick ({r['calls_h']:.0f}/h, max {r['max_calls']}), "
              f"fresh {r['fresh']:.0%}, tick+round CPU median {r['cpu_ms']:.0f} ms; calls by route {r['routes']}, refused ticks {r['refused']}",
              flush=True)



def round_cpu(requests: int, changed: int = 5, quiet_samples: int = 3) -> dict[str, float]:
    """``git sluice intake`` as a real process over ``requests`` open requests (as fleet_overheads.round_cpu
    measures it, without its other figures): CPU of the first round, of one where ``changed`` requests moved,
    and of a quiet one (median of ``quiet_samples``)."""
    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(here), str(here.parents[1])]
    from fleet_activity import Activity  # type: ignore[import-not-found]
    from fleet_sluice import GitWorld, measured_run  # type: ignore[import-not-found]
    from fleet_world import repo_name, world  # type: ignore[import-not-found]

    with world() as wd:
        name = repo_name(1)
        wd.add_repo(name)
        activity = Activity(wd.gh, GitWorld(wd, []))
        activity.populate(name, requests, seed=6)
        host = wd.add_host("host-1", hooks=False)
        clone = host.clones[name]
        env = wd.host_env(host)
        out: dict[str, float] = {"requests": requests}

        def intake() -> float:
            run = measured_run(["git", "sluice", "intake", "--json"], clone, env, timeout=900)
            assert run.returncode == 0, run.stderr[-500:]
            return float(run.cpu)

        out["first"] = intake()
        wd.clock.advance(61)
        intake()  # the checks' baselines
        numbers = activity.open_numbers(name)
        for n in [n for n in numbers if not wd.gh.pr(name, n).draft][:changed]:
            wd.gh.review(name, n, "carol", "APPROVED")
        wd.clock.advance(61)
        out["changed"] = intake()
        quiet = []
        for _ in range(quiet_samples):
            wd.clock.advance(61)
            quiet.append(intake())
        out["quiet"] = sorted(quiet)[len(quiet) // 2]
        return out


if __name__ == "__main__":
    main()
