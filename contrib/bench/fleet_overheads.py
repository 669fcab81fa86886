"""What git-sluice costs the machine: a round's CPU, ``queue``'s start-up, the hooks' added time.

Every figure here is a real process reaped with ``wait4`` (so its CPU is its
own and its children's, never the double's, which runs in the harness), or a
real ``git push`` / ``git fetch`` timed with and without the hooks, in
alternation, so a noisy machine slows both alike and the ratio survives.
Issue 15's rows each stand beside a bare ``python -c pass`` measured in the
same run (:func:`python_baseline`), so a figure from a slower or busier
machine can still be read. Two figures are taken in-process: the CPU of a
quiet round inside a running ``drive`` (the calling thread's CPU, so the
double serving on other threads is not in it), and the SQLite write
transactions a quiet round makes (a fresh ``git sluice intake`` process whose
``sqlite3.connect`` is wrapped to count them).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from git_sluice.commands.drive import drive
from git_sluice.commands.intake import run_rounds

from fleet_activity import Activity
from fleet_baselines import Direct, NaivePoller
from fleet_sluice import GitWorld, measured_run, tally, wait_for_hook_rounds
from fleet_world import TOKEN, World, as_host, repo_name, world


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def round_cpu(requests: int = 500, changed: int = 5, samples: int = 1) -> dict[str, Any]:
    """``git sluice intake`` as a real process over ``requests`` open requests: first, changed, quiet."""
    started = time.monotonic()
    with world() as w:
        name = repo_name(1)
        w.add_repo(name)
        activity = Activity(w.gh, GitWorld(w, []))
        activity.populate(name, requests, seed=6)
        w.pack_remote_refs(name)
        host = w.add_host("host-1", hooks=False)
        w.maintain_clone(host, name)
        clone = host.clones[name]
        env = w.host_env(host)
        out: dict[str, Any] = {"requests": requests}

        def intake(label: str) -> None:
            mark = len(w.gh.ledger)
            run = measured_run(["git", "sluice", "intake", "--json"], clone, env, timeout=600)
            t = tally(w.gh, mark, len(w.gh.ledger))
            out[label] = {"cpu": run.cpu, "wall": run.wall, "exit": run.returncode, "requests": t.requests,
                          "counted_rest": t.counted_rest, "points": t.points,
                          "error": run.stderr.decode(errors="replace").strip()[-300:] if run.returncode else ""}

        intake("first")
        numbers = activity.open_numbers(name)
        for n in [n for n in numbers if not w.gh.pr(name, n).draft][:changed]:
            w.gh.review(name, n, "carol", "APPROVED")
        w.clock.advance(61)
        intake("changed")
        quiet = []
        for _ in range(max(samples, 1)):
            w.clock.advance(61)
            intake("quiet")
            quiet.append(out["quiet"])
        out["quiet"] = sorted(quiet, key=lambda r: r["cpu"])[len(quiet) // 2]
        splits = []
        for _ in range(max(samples, 1)):
            w.clock.advance(61)
            splits.append(split_cpu_of_a_round(clone, env))
        good = [s for s in splits if "error" not in s]
        out["quiet_split"] = sorted(good, key=lambda s: s["python"] + s["git"])[len(good) // 2] if good else splits[0]
        w.clock.advance(61)
        out["sqlite_writes"] = sqlite_writes_of_a_round(clone, env)
        out["in_drive"] = in_drive_cpu(w, host, name, samples=max(samples, 3))
        # the naive pass over the same requests, for its call count (in-process, against this double)
        # (GitHub's secondary limit would end that pass at 900 calls; lifted here to count all it asks)
        w.gh.secondary_points_per_minute = {}
        mark = len(w.gh.ledger)
        for _ in NaivePoller(Direct(w.gh, TOKEN), name).run_pass():
            pass
        out["naive_pass_requests"] = len(w.gh.ledger) - mark
        out["wall_seconds"] = time.monotonic() - started
        return out


def _to_next_tick(w: Any, host: Any) -> None:
    """Move the shared clock past the host watch's next tick, if it is not due yet.

    A one-shot ``intake`` ticks the watch only when a tick is due; between two
    ticks it reads the last tick's answers and takes nothing new in. A
    "changed" round must be one that takes the change in, whatever phase the
    world's clock started at (the host's tick phase is its own), or its CPU
    measures a round with nothing to do.
    """
    for answers in Path(host.state_home).rglob("answers.json"):
        try:
            next_at = float(json.loads(answers.read_text()).get("next_at"))
        except (OSError, ValueError, TypeError, AttributeError):
            continue
        if next_at > w.clock.time():
            w.clock.advance(next_at - w.clock.time() + 1.0)


def _unsaid(host: Any) -> int | None:
    """How many listed requests the host watch has not yet said the inputs of (listed by REST at the
    first round, each said by a later tick's query, a page a tick); None when it has no answers."""
    count = None
    for answers in Path(host.state_home).rglob("answers.json"):
        try:
            repos = json.loads(answers.read_text()).get("repos") or {}
        except (OSError, ValueError, AttributeError):
            continue
        count = (count or 0) + sum(
            1 for record in repos.values() for part in (record.get("bases") or {}).values()
            for item in part.get("items") or []
            if not isinstance(item.get("inputs"), list) or item["inputs"][2] in (None, "UNKNOWN"))
    return count


def round_scaling(sizes: tuple[int, ...], changed: int = 5, samples: int = 3) -> dict[str, Any]:
    """Issue 29: a fresh ``git sluice intake``'s CPU, quiet and with ``changed`` requests moved, at each queue size.

    Per size, a world of its own: the first round (not judged), the warm-up, then ``samples`` changed
    rounds (each after ``changed`` new reviews) and ``samples`` quiet ones, a discovery interval apart;
    the median of each. Real processes, their CPU taken with ``wait4``, as :func:`round_cpu`'s.

    The warm-up: the first round lists the requests by REST; once a long list
    moves, the watch's query takes it over and says the inputs (reviews,
    checks, mergeability) of the requests REST listed, a hundred a tick — 50
    ticks at 5,000. Until it has, every tick changes a hundred requests more
    than moved. The warm-up runs rounds a tick apart, each after ``changed``
    reviews of other requests than the samples', until none is left unsaid or
    ``size // 100 + 5`` rounds have run (a short list REST keeps: no query
    says it); ``warmup_ticks`` and ``unsaid_after_warmup`` in the output.
    """
    out: dict[str, Any] = {"changed_requests": changed, "samples": samples, "sizes": {}}
    for size in sizes:
        started = time.monotonic()
        with world() as w:
            name = repo_name(1)
            w.add_repo(name)
            activity = Activity(w.gh, GitWorld(w, []))
            activity.populate(name, size, seed=6)
            w.pack_remote_refs(name)
            host = w.add_host("host-1", hooks=False)
            w.maintain_clone(host, name)
            clone = host.clones[name]
            env = w.host_env(host)
            runs: dict[str, list[float]] = {"first": [], "warmup": [], "changed": [], "quiet": []}
            errors: list[str] = []

            def intake(label: str) -> None:
                run = measured_run(["git", "sluice", "intake", "--json"], clone, env, timeout=600)
                if run.returncode != 0:
                    errors.append(run.stderr.decode(errors="replace").strip()[-300:])
                runs[label].append(run.cpu)

            intake("first")
            reviewers = ("carol", "dave", "erin")
            open_ = [n for n in activity.open_numbers(name) if not w.gh.pr(name, n).draft]
            warmup = 0
            while (_unsaid(host) or 0) > 0 and warmup < size // 100 + 5:
                for n in open_[len(open_) - (warmup + 1) * changed:len(open_) - warmup * changed]:
                    w.gh.review(name, n, "frank", "APPROVED")
                w.clock.advance(61)
                _to_next_tick(w, host)
                intake("warmup")
                warmup += 1
            for k in range(max(samples, 1)):
                for n in open_[k * changed:(k + 1) * changed]:
                    w.gh.review(name, n, reviewers[k % len(reviewers)], "APPROVED")
                w.clock.advance(61)
                _to_next_tick(w, host)  # a changed round that takes the change in, never one before its tick
                intake("changed")
            for _ in range(max(samples, 1)):
                w.clock.advance(61)
                intake("quiet")
            out["sizes"][str(size)] = {label: _median(cpus) for label, cpus in runs.items() if label != "warmup"}
            out["sizes"][str(size)]["warmup_ticks"] = warmup
            out["sizes"][str(size)]["unsaid_after_warmup"] = _unsaid(host)
            out["sizes"][str(size)]["errors"] = errors[:2]
            out["sizes"][str(size)]["wall_seconds"] = time.monotonic() - started
    return out


# A fresh git-sluice process whose sqlite3.connect counts write transactions: a BEGIN, or a write
# statement outside one (autocommit), per connection; the count goes to the file named by argv[1].
COUNT_WRITES = r"""
import atexit, sqlite3, sys
out, argv = sys.argv[1], sys.argv[2:]
count = [0]
_connect = sqlite3.connect
def connect(*args, **kwargs):
    conn = _connect(*args, **kwargs)
    state = {"tx": False}
    def trace(sql):
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if head == "BEGIN":
            state["tx"] = True
            count[0] += 1
        elif head in ("COMMIT", "END", "ROLLBACK"):
            state["tx"] = False
        elif head in ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP") and not state["tx"]:
            count[0] += 1
    conn.set_trace_callback(trace)
    return conn
sqlite3.connect = connect
atexit.register(lambda: open(out, "w").write(str(count[0])))
sys.argv = ["git-sluice", *argv]
from git_sluice.entry import run
run()
"""


# A fresh git-sluice process that, as it exits, writes its own CPU and that of the processes it waited
# for (git's: rev-parse, config, the fetch with the remote's upload-pack) to the file named by argv[1].
SPLIT_CPU = r"""
import atexit, dataclasses, json, resource, sys, time
out, argv = sys.argv[1], sys.argv[2:]
made = [0.0, 0]
_dataclass = dataclasses.dataclass
def dataclass(*args, **kwargs):  # what defining the records costs (records.record calls dataclass)
    started = time.process_time()
    try:
        return _dataclass(*args, **kwargs)
    finally:
        made[0] += time.process_time() - started
        made[1] += 1
dataclasses.dataclass = dataclass
def report():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as f:
        json.dump({"python": me.ru_utime + me.ru_stime, "git": kids.ru_utime + kids.ru_stime,
                   "dataclass": made[0], "dataclasses": made[1],
                   "modules": sum(1 for name in sys.modules if name.split(".")[0] == "git_sluice")}, f)
atexit.register(report)
sys.argv = ["git-sluice", *argv]
from git_sluice.entry import run
run()
"""


def split_cpu_of_a_round(clone: Path, env: dict[str, str]) -> dict[str, Any]:
    """One quiet ``git sluice intake``'s CPU in two parts: the Python process's own, and git's processes'."""
    path = clone.parent / "round-split.json"
    path.unlink(missing_ok=True)
    run = measured_run([sys.executable, "-c", SPLIT_CPU, str(path), "intake", "--json"], clone, env, timeout=600)
    if run.returncode != 0 or not path.exists():
        return {"error": run.stderr.decode(errors="replace").strip()[-300:] or "no split written"}
    return dict(json.loads(path.read_text()))


def sqlite_writes_of_a_round(clone: Path, env: dict[str, str]) -> dict[str, Any]:
    """SQLite write transactions of one quiet ``git sluice intake`` (a fresh process, counted by wrapping)."""
    counter = clone.parent / "sqlite-writes.count"
    run = measured_run([sys.executable, "-c", COUNT_WRITES, str(counter), "intake", "--json"], clone, env,
                       timeout=600)
    if run.returncode != 0 or not counter.exists():
        return {"error": run.stderr.decode(errors="replace").strip()[-300:] or "no count written"}
    return {"writes": int(counter.read_text() or 0), "cpu": run.cpu}


def in_drive_cpu(w: World, host: Any, name: str, samples: int = 3) -> dict[str, Any]:
    """The CPU of a quiet tick inside a running ``drive`` (warm session, this thread's CPU only)."""
    session = w.session(host, name)
    cpu, calls = [], []
    with as_host(host):
        drive(session, max_ticks=1, let_go=False)  # the drive starts: lease, first round, the watch's first tick
        for _ in range(samples):
            w.clock.advance(61)
            mark = len(w.gh.ledger)
            before = time.thread_time()
            drive(session, max_ticks=1, let_go=False)
            cpu.append(time.thread_time() - before)
            calls.append(len(w.gh.ledger) - mark)
    return {"cpu": _median(cpu), "calls": _median(calls), "samples": samples}


# What a process that calls GitHub pays before any work of git-sluice's own: the interpreter, httpx
# imported as git-sluice's own process imports it (its command line marked absent by git_sluice, trio by
# entry.run) and the transport a forge builds (loopback: no certificate store), measured beside the rows,
# so the floor of a fresh round is a figure.
HTTPX_FLOOR = (
    "import sys; sys.modules['httpx._main'] = None; sys.modules['trio'] = None\n"
    "import ssl, httpx\n"
    "httpx.HTTPTransport(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))\n"
)


def python_baseline(samples: int = 5) -> dict[str, Any]:
    """A bare ``python -c pass`` (this interpreter): what any Python command costs before its own work.

    Beside it, the same interpreter importing httpx and building its transport
    (:data:`HTTPX_FLOOR`): the part of a fresh round's CPU that is the HTTP
    library's, before git-sluice does anything.
    """
    wall, cpu, floor = [], [], []
    for _ in range(max(samples, 1)):
        run = measured_run([sys.executable, "-c", "pass"], Path.cwd(), None)  # type: ignore[arg-type]
        wall.append(run.wall)
        cpu.append(run.cpu)
        floor.append(measured_run([sys.executable, "-c", HTTPX_FLOOR], Path.cwd(), None).cpu)  # type: ignore[arg-type]
    return {"wall": _median(wall), "cpu": _median(cpu), "samples": len(wall), "httpx_cpu": _median(floor)}


SMALL_QUEUE = 20  # open requests behind the rows of `status`, `queue --json` and the hooks' added time


def command_walls(samples: int = 5) -> dict[str, Any]:
    """``git sluice status`` and ``git sluice queue --json`` from start to end, over a 20-request queue."""
    with world() as w:
        name = repo_name(1)
        w.add_repo(name)
        Activity(w.gh, GitWorld(w, [])).populate(name, SMALL_QUEUE, seed=7)
        host = w.add_host("host-1", hooks=False)
        clone = host.clones[name]
        env = w.host_env(host)
        run_rounds(w.session(host, name))
        out: dict[str, Any] = {}
        for key, args in (("status", ["git", "sluice", "status"]), ("queue", ["git", "sluice", "queue", "--json"])):
            walls, calls = [], 0
            for _ in range(max(samples, 1)):
                mark = len(w.gh.ledger)
                run = measured_run(args, clone, env)
                calls += len(w.gh.ledger) - mark
                if run.returncode != 0:
                    out[key] = {"error": run.stderr.decode(errors="replace").strip()[-300:]}
                    break
                walls.append(run.wall)
            else:
                out[key] = {"wall": _median(walls), "calls": calls, "samples": len(walls)}
        return out


def prepush_at(heads: int, samples: int = 5) -> dict[str, Any]:
    """A ``git push`` of a branch nobody takes in, with ``heads`` queued heads, hooks on and off (paired)."""
    with world() as w:
        name = repo_name(1)
        w.add_repo(name)
        Activity(w.gh, GitWorld(w, [])).populate(name, heads, seed=11)
        hooked = w.add_host("hooked", hooks=True)
        plain = w.add_host("plain", hooks=False)
        gitside = GitWorld(w, [hooked, plain])
        reports = run_rounds(w.session(hooked, name))
        queued = sum(len(getattr(r, "entries", ()) or ()) for r in reports) if reports else None
        marks = hooked.clones[name] / ".git" / "sluice" / "heads.d"
        times: dict[str, list[float]] = {"hooked": [], "plain": []}
        for i in range(max(samples, 1)):
            order = [(0, "hooked"), (1, "plain")] if i % 2 == 0 else [(1, "plain"), (0, "hooked")]
            for index, label in order:
                host = gitside.hosts[index]
                clone = host.clones[name]
                branch = f"scratch-{label}"
                sha = w.new_commit(w.repos[name], branch, f"scratch {i}")
                git_env = w.host_env(host)
                import subprocess

                subprocess.run(["git", "-C", str(clone), "-c", "core.hooksPath=/dev/null", "fetch", "-q", "origin",
                                f"+refs/heads/{branch}:refs/heads/{branch}"], env=git_env, check=True,
                               capture_output=True)
                run = measured_run(["git", "push", "-q", "-f", "origin", f"{sha}:refs/heads/{branch}-mine"], clone,
                                   git_env)
                if run.returncode != 0:
                    return {"error": run.stderr.decode(errors="replace").strip()[-300:]}
                times[label].append(run.wall)
                wait_for_hook_rounds(clone)
        added = _median([h - p for h, p in zip(times["hooked"], times["plain"])])
        hook = _hook_alone(w, hooked, name, max(samples, 5))
        return {"heads": heads, "marks": sum(1 for _ in marks.rglob("*~")) if marks.is_dir() else None,
                "queued": queued, "hooked": _median(times["hooked"]), "plain": _median(times["plain"]),
                "added": added, "samples": len(times["hooked"]), **hook}


def _hook_alone(w: World, host: Any, name: str, samples: int) -> dict[str, Any]:
    """The installed pre-push script run as git runs it (a push of a branch nobody takes in), timed alone:
    a whole push's wall at thousands of refs is too noisy to show a few milliseconds."""
    import subprocess

    clone = host.clones[name]
    env = w.host_env(host)
    path = subprocess.run(["git", "-C", str(clone), "rev-parse", "--git-path", "hooks/pre-push"], env=env,
                          capture_output=True, text=True).stdout.strip()
    hook = (clone / path) if not Path(path).is_absolute() else Path(path)
    if not hook.is_file():
        return {"hook_error": f"no pre-push hook at {hook}"}
    sha = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], env=env, capture_output=True,
                         text=True).stdout.strip()
    stdin = clone.parent / "pre-push.stdin"
    stdin.write_text(f"refs/heads/scratch-alone {sha} refs/heads/scratch-alone {'0' * 40}\n")
    walls = []
    for _ in range(samples):
        started = time.monotonic()
        with open(stdin, "rb") as feed:
            done = subprocess.run([str(hook), "origin", str(w.repos[name].bare)], cwd=clone, env=env, stdin=feed,
                                  capture_output=True)
        walls.append(time.monotonic() - started)
        if done.returncode != 0:
            return {"hook_error": done.stderr.decode(errors="replace").strip()[-300:] or f"exit {done.returncode}"}
    return {"hook_wall": _median(walls), "hook_samples": len(walls)}


def queue_startup(samples: int = 5) -> dict[str, Any]:
    """``git sluice queue --json`` over a 20-request queue, and Python's own bare start-up beside it."""
    started = time.monotonic()
    with world() as w:
        name = repo_name(1)
        w.add_repo(name)
        Activity(w.gh, GitWorld(w, [])).populate(name, SMALL_QUEUE, seed=7)
        host = w.add_host("host-1", hooks=False)
        clone = host.clones[name]
        env = w.host_env(host)
        run_rounds(w.session(host, name))
        queue_wall, queue_cpu, py_wall, py_cpu, calls = [], [], [], [], 0
        for _ in range(samples):
            mark = len(w.gh.ledger)
            run = measured_run(["git", "sluice", "queue", "--json"], clone, env)
            calls += len(w.gh.ledger) - mark
            if run.returncode != 0:
                return {"error": run.stderr.decode(errors="replace").strip()[-300:]}
            queue_wall.append(run.wall)
            queue_cpu.append(run.cpu)
            run = measured_run([sys.executable, "-c", "pass"], clone, env)
            py_wall.append(run.wall)
            py_cpu.append(run.cpu)
        return {
            "samples": samples,
            "queue_wall": _median(queue_wall),
            "queue_cpu": _median(queue_cpu),
            "python_wall": _median(py_wall),
            "python_cpu": _median(py_cpu),
            "calls": calls,
            "wall_seconds": time.monotonic() - started,
        }


def hook_overhead(samples: int = 5) -> dict[str, Any]:
    """The user's ``git push`` / ``git fetch`` with the hooks installed and without, alternated."""
    started = time.monotonic()
    with world() as w:
        name = repo_name(1)
        spec = w.add_repo(name)
        activity = Activity(w.gh, GitWorld(w, []))
        activity.populate(name, SMALL_QUEUE, seed=9)
        hooked = w.add_host("hooked", hooks=True)
        plain = w.add_host("plain", hooks=False)
        # the control arm: the same two hooks, empty, so git's own price for starting hooks is a figure
        empty = w.add_host("empty", hooks=False)
        for hook in ("pre-push", "reference-transaction"):
            path = empty.clones[name] / ".git" / "hooks" / hook
            path.write_text("#!/bin/sh\nexit 0\n")
            path.chmod(0o755)
        gitside = GitWorld(w, [hooked, plain, empty])
        run_rounds(w.session(hooked, name))  # a queue, so a push to a request's head concerns the hooks
        heads = [w.gh.pr(name, n).head_ref for n in activity.open_numbers(name) if not w.gh.pr(name, n).draft]
        times: dict[str, list[float]] = {f"{what}_{arm}": [] for what in ("push", "fetch_moved", "fetch_still")
                                         for arm in ("hooked", "plain", "empty")}
        rounds_wall: list[float] = []

        def timed(key: str, world_: World, host_index: int, args: list[str]) -> None:
            host = gitside.hosts[host_index]
            clone = host.clones[name]
            run = measured_run(["git", *args], clone, world_.host_env(host))
            if run.returncode != 0:
                raise RuntimeError(f"git {' '.join(args)}: {run.stderr.decode(errors='replace').strip()}")
            times[key].append(run.wall)
            t0 = time.monotonic()
            wait_for_hook_rounds(clone)
            if key.endswith("hooked"):
                rounds_wall.append(time.monotonic() - t0)

        for i in range(samples):
            arms = [(0, "hooked"), (1, "plain"), (2, "empty")]
            order = arms[i % 3:] + arms[:i % 3]
            if i % 2:
                order.reverse()
            for index, label in order:
                head = heads[(3 * i + index) % len(heads)]
                sha = gitside.prepare_push(name, index, head)
                w.gh.push_pr(name, next(n for n in activity.open_numbers(name)
                                        if w.gh.pr(name, n).head_ref == head), sha)
                timed(f"push_{label}", w, index, ["push", "-q", "origin", f"refs/heads/{head}:refs/heads/{head}"])
            w.new_commit(spec, "main", f"main moves {i}")
            for index, label in order:
                timed(f"fetch_moved_{label}", w, index, ["fetch", "-q", "origin"])
            for index, label in order:
                timed(f"fetch_still_{label}", w, index, ["fetch", "-q", "origin"])
        med = {k: _median(v) for k, v in times.items()}
        added = {what: _median([h - p for h, p in zip(times[f"{what}_hooked"], times[f"{what}_plain"])])
                 for what in ("push", "fetch_moved", "fetch_still")}
        empty_added = {what: _median([e - p for e, p in zip(times[f"{what}_empty"], times[f"{what}_plain"])])
                       for what in ("push", "fetch_moved", "fetch_still")}
        return {
            "samples": samples,
            "median_wall": med,
            "median_added": added,
            "median_added_empty_hooks": empty_added,
            "walls": times,
            "hook_round_after_median": _median(rounds_wall),
            "hook_round_failures": _failures(hooked, name),
            "wall_seconds": time.monotonic() - started,
        }


def _failures(host: Any, name: str) -> list[str]:
    import json

    path = host.clones[name] / ".git" / "sluice" / "last-failure.json"
    if not path.exists():
        return []
    record = json.loads(path.read_text())
    return [] if "recovered_at" in record else [str(record.get("error"))]



