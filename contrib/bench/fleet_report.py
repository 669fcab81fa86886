"""The benchmark's outputs: its section of ``docs/benchmarks.md`` and the raw JSON.

Other figures live in ``docs/benchmarks.md`` too, so this harness rewrites only
the text between ``<!-- bench:fleet:start -->`` and ``<!-- bench:fleet:end -->``
and leaves everything else byte for byte as it found it. A file without the
markers gets the section appended; a missing file is created.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from fleet_scenarios import Row, Scenario

START = "<!-- bench:fleet:start -->"
END = "<!-- bench:fleet:end -->"
README_START = "<!-- bench:readme:start -->"
README_END = "<!-- bench:readme:end -->"


def machine() -> dict[str, Any]:
    def out(args: list[str]) -> str:
        try:
            return subprocess.run(args, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return "unknown"

    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "bytecode": compile_bytecode(),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "git": out(["git", "--version"]).replace("git version ", ""),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in load],
    }


def compile_bytecode() -> str:
    """git_sluice's modules compiled to bytecode before any process starts, as ``pip install`` leaves them.

    An installed git-sluice starts from ``.pyc`` files (pip compiles a wheel at
    install). A source tree run with ``PYTHONDONTWRITEBYTECODE=1`` (this
    machine's environment) never writes them, so every ``git-sluice`` process
    would compile some 70 modules from source first (~0.1 s of CPU in each):
    a cost of the checkout, not of git-sluice. Compiled here, into the tree's
    own ``__pycache__`` folders (ignored by git), so each process reads them as
    an installed copy's would; the sources are untouched.
    """
    import compileall

    import git_sluice

    root = Path(git_sluice.__file__).resolve().parent
    try:
        done = compileall.compile_dir(str(root), quiet=1, workers=1)
    except OSError as exc:  # a read-only install: pip compiled it, or the processes compile from source
        return f"not compiled ({exc.strerror or exc})"
    return "compiled before the run" if done else "compiling failed (processes compile from source)"


def worst(scenarios: list[Scenario]) -> tuple[Row, str] | None:
    ranked = [(row, sc.key) for sc in scenarios for row in sc.rows if row.rankable and row.ratio is not None]
    if not ranked:
        return None
    return min(ranked, key=lambda pair: pair[0].ratio or 0.0)


def _cell(value: Any, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value).replace("|", "\\|")
    if isinstance(value, int):
        text = f"{value:,}"
    elif abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 1 or value == 0:
        text = f"{value:,.1f}"
    else:
        text = f"{value:.3f}"
    if unit == "%":
        return f"{text} %"
    return f"{text} {unit}".strip()


HOW_IT_RAN = """\
**How it runs.** One GitHub double (`git_sluice.double`) serves every run on
loopback; every figure is read from its ledger (what reached "GitHub") or from
timestamps within the run, and every ratio compares two runs of the same
invocation on the same machine. Time is compressed with one shared
`FileClock` (`GIT_SLUICE_TEST_CLOCK`): the double, the in-process hosts and
every subprocess read it, and only the harness's scheduler moves it. git-sluice
runs with its **default settings** (discovery 60 s, lease 5 min): the clock is
compressed, not the intervals.

- **Real processes, real hooks, real git:** every host is a real clone of a
  real bare remote, set up with `git_sluice.commands.setup.install` (what `git sluice
  setup` runs); the activity's pushes and fetches are real `git push` /
  `git fetch` in those clones, whose installed hooks start real detached
  `git-sluice _hook-round` processes (the harness waits for them before the
  clock moves on). The Tower dashboard's polls are real
  `git sluice queue --json` processes — a sample of them, timed, then
  extrapolated to 13 repositories × 1,440 polls an hour. Scenario 6's rounds
  are real `git sluice intake` processes, their CPU taken with `wait4`.
  Leases and pause notes are real compare-and-swap pushes to the bare remotes.
- **In-process, on the shared clock:** drivers (one session per host and
  repository, each tick the product's `drive.drive(session, max_ticks=1)`),
  waits (`wait.wait_for` with a 1 ms timeout, repeated at the interval the
  wait would sleep), and the fence scenario's sibling processes (sessions with
  their own host-store connections, on threads). Sessions due at the same
  moment run together on 4 threads, except the waits' looks, which run one at a
  time after them (a wait's 1 ms timeout sleeps to its deadline, which moves the
  shared clock; a wait beside it then found its own deadline past before its
  first read, and read at a random later look); runs that stand alone (S1's App and
  Enterprise Server runs, S3's quiet run, S8's tick runs) run in a second
  worker process, each a world of its own. A host's in-process drivers and waits
  share one host-store connection: a second connection opened in one process
  drops the first one's POSIX locks (`HostStore._open_once` opens and closes
  the database file itself), and a hook round's process that then closes
  last deletes the WAL under it ("disk I/O error"). Deployed processes, one
  connection each, do not meet this; in-process hosts did, in earlier runs.
- **Baselines** are implemented in the harness (`contrib/bench/fleet_baselines.py`)
  and call the double's request pipeline in-process (the code its HTTP server
  runs, minus the socket). The naive poller is paced to ADR 0071's own hour
  by one pace its processes share: the allowance lasts 45 minutes, the
  refused passes bring the hour to about 10,500 calls (the ADR's
  9,000–12,000), whatever the fleet's size. The GraphQL poller is the
  competent client a careful engineer would write without git-sluice: one
  query a minute per host over all its repositories, 100 requests a page. The double has no reviews route, so a pass's
  "reviews" read is `GET /pulls/{n}` (one REST call alike). S3's dashboard
  baseline reads Tower's three as three pull-request queries (open with
  reviews and labels — 2 points —, merged, closed); S10 runs Tower's own gh
  commands against the double's issues and search.
- **Windows:** each run has a warm-up that is not measured (the first intake,
  the pollers' first passes and cache fill), then a measured window; "/h"
  figures are the window's × 3,600 / window. Each scenario says how its runs
  were measured; the JSON has `window_s`, `warmup_s` and `scale`.
- **Time-scaled baseline hours:** where the dashboard poller's hour would
  cost minutes of real time, it runs a 1/N hour with the double's allowance
  window *and* size divided by N (5,000 per hour → 5,000/N per 3,600/N s),
  the poller at its real period, and its figures are ×N. A poller that
  outruns its allowance behaves the same in every such window (spend it, be
  refused until the reset), so the counts scale; freshness does not, and is
  measured only on unscaled runs. The naive poller, paced as ADR 0071
  describes it, runs a whole unscaled hour (the quick profile scales it).
  The per-process conditional client is never scaled (its one-time cache
  fill would not scale): it runs a window of the real allowance.
- **Three ways to authenticate, each a run** (S1): one user token on every
  host (every process shares its pool); a GitHub App, every process minting
  its own installation token as the product does (`sluice.appId`,
  `sluice.appKeyFile`, `sluice.installation`; the double checks the JWT
  against the App's key, a token lives an hour and ETags are per token, so a
  kept answer helps only the process whose token received it); GitHub
  Enterprise Server (`/api/v3`, `/api/graphql`) with its rate limits off
  (nothing counted, no secondary limit). Baselines authenticate alike.
- **Git requests to the remote** (issue 29) are counted in every fleet run:
  each clone's `remote.origin.uploadpack` / `remote.origin.receivepack` is a
  wrapper that logs the request (the shared clock's time, host, repository,
  `fetch` / `ls-remote` / `push`) and execs git's own, so every fetch,
  ls-remote and push git-sluice sends, in process or from a hook round, is
  in the log. The harness's own git commands name wrappers of their own on
  the command line and are counted apart, never as git-sluice's. S6 times
  git commands and runs without the wrappers.
- **Calls per host:** each host's processes talk to their own loopback port
  of the one double, so the busiest minute of calls *a host* sent is
  counted beside the busiest minute on one endpoint of the pool (what
  GitHub's secondary limit, 900 points a minute per REST endpoint, counts).

**Activity model** (`contrib/bench/fleet_activity.py`, seeded, the same for
git-sluice and every baseline): each repository starts with its open requests
CI-finished an hour to a day before (85 % green), mergeability known, 30 % approved, 10 % drafts.
Requests are opened, pushed to, reviewed (75 % approvals) and merged as
Poisson arrivals at the rates in each scenario's title. Where a title says
so, unrelated activity runs beside it on every repository from the start of
the warm-up (a push to a branch no request heads every 2 minutes, a star or
an issue every 10; "busy": a push a minute): on the double, as on GitHub,
each changes every list page's ETag and the combined status, so a
conditional list answers 200, counted, though no request moved. A push comes from one
of the fleet's hosts (a real `git push`, so the hooks fire); an opening or a
push starts CI (a pending check run, completed 4–10 minutes later — no
`updated_at` moves, as on GitHub); a merge moves the base on the remote, one
host's `git fetch` brings it, and GitHub recomputes the other requests'
mergeability a minute later. Freshness is the time from a change to the first
queue (any host's) or baseline view that shows it.
"""


def render_section(result: dict[str, Any]) -> str:
    scenarios: list[Scenario] = result["scenarios_obj"]
    m = result["machine"]
    lines = [
        START,
        "## The fleet benchmark (issues 8, 11, 12, 15, 29, 30)",
        "",
        "_This section is written by `contrib/bench/fleet.py`; edit the harness, not the text._",
        "",
    ]
    prov = result.get("provenance") or {}
    if prov.get("dirty"):
        lines += [
            f"**⚠ NOT FROM ONE COMMIT.** The tree differed from {prov.get('short')} by {prov.get('change_count')} "
            "uncommitted change(s) (`--allow-dirty`): these figures are for development, not for publishing.",
            "",
        ]
    lines += [
        f"- Commit: `{prov.get('commit', 'unknown')}`"
        + (" plus uncommitted changes" if prov.get("dirty") else "")
        + f"; git_sluice {prov.get('version', '?')} imported from this tree by the harness, the baselines' "
          "worker and the `git-sluice` console script (checked before the run)",
        f"- Command: `{result['command']}`",
        f"- Date: {result['date']} ({result['profile']} profile; {result['seconds']:.0f} s wall)",
        f"- Machine: {m['nproc']} CPUs, Python {m['python']}, git {m['git']}, {m['platform']}; load average "
        f"{' / '.join(str(x) for x in m['loadavg_at_start'])} at the start (the machine is shared); git_sluice's "
        f"bytecode {m.get('bytecode', 'as found')}, as `pip install` leaves it (`fleet_report.compile_bytecode`)",
        f"- Raw figures: `{result['json_path']}`",
        "",
        HOW_IT_RAN,
        "**Ratio** = baseline ÷ git-sluice for a figure where less is better: above 1 git-sluice spends or "
        "waits less; below 1 it spends or waits more.",
        "",
    ]
    w = worst(scenarios)
    if w is not None:
        row, key = w
        lines += [
            f"**Worst ratio: {row.ratio_text}** — {key.upper()}, {row.figure} ({row.baseline_name} "
            f"{_cell(row.baseline, row.unit)} vs git-sluice {_cell(row.sluice, row.unit)}).",
            "",
        ]
    below = [(sc.key, row) for sc in scenarios for row in sc.rows
             if row.rankable and row.ratio is not None and row.ratio < 1]
    if below:
        lines.append("Every figure where git-sluice spends or waits more than a baseline (ratio below 1):")
        lines.append("")
        for key, row in sorted(below, key=lambda pair: pair[1].ratio or 0.0):
            lines.append(f"- {key.upper()}, {row.figure}: {row.baseline_name} {_cell(row.baseline, row.unit)}, "
                         f"git-sluice {_cell(row.sluice, row.unit)} (ratio {row.ratio_text})")
        lines.append("")
    lines.append("Rows marked in their note as not like for like, and rows without a baseline, do not rank.")
    lines.append("")
    lines += render_done_when(scenarios)
    worse = [note for sc in scenarios if sc.key == "s8" for note in sc.notes if note.startswith("Worse than before")]
    if worse:
        lines.append("**Figures that got worse** against the harder double (issue 12's 'before' was measured on "
                     "the kind double):")
        lines.append("")
        lines += [f"- {note.removeprefix('Worse than before: ')}" for note in worse]
        lines.append("")
    for sc in scenarios:
        lines.append(f"### {sc.key.upper()} — {sc.title}")
        lines.append("")
        if sc.status != "ok":
            lines.append(f"**Failed:** {sc.error}")
            lines.append("")
        if sc.rows:
            lines.append("| figure | baseline | baseline value | git-sluice | ratio | note |")
            lines.append("|---|---|---:|---:|---:|---|")
            for row in sc.rows:
                lines.append(
                    f"| {row.figure} | {row.baseline_name} | {_cell(row.baseline, row.unit)} | "
                    f"{_cell(row.sluice, row.unit)} | {row.ratio_text} | {row.note} |"
                )
            lines.append("")
        for note in sc.notes:
            lines.append(f"- {note}")
        extra = _run_notes(sc)
        for note in extra:
            lines.append(f"- {note}")
        lines.append(f"- Ran in {sc.seconds:.0f} s.")
        lines.append("")
    lines.append(END)
    return "\n".join(lines) + "\n"


DONE_WHEN = (("s9", "issue 29", "Figures from S9 below (each row's run, window and real time are in its notes)."),
             ("s10", "issue 30", "Figures from S10 below (its legs, units and window are in its notes)."))
"""The scenarios whose raw figures carry an issue's "done when" (``raw["done_when"]``), and the issue."""


def render_done_when(scenarios: list[Scenario]) -> list[str]:
    """Each issue's "done when": each goal, this run's figure, met / not met (S9's for issue 29, with S6's;
    S10's for issue 30)."""
    lines: list[str] = []
    for key, issue, source in DONE_WHEN:
        sc = next((sc for sc in scenarios if sc.key == key), None)
        goals = (sc.raw.get("done_when") if sc is not None else None) or []
        if not goals:
            continue
        lines += [f"### {issue}: done when", "", "| goal | this run | verdict |", "|---|---|---|"]
        for g in goals:
            verdict = "—" if g["met"] is None else ("met" if g["met"] else "**not met**")
            lines.append(f"| {_cell(g['goal'])} | {_cell(g['figure'])} | {verdict} |")
        lines += ["", source, ""]
    return lines


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.3g} min" if seconds >= 120 else f"{seconds:.0f} s"


def _window_text(run: dict[str, Any]) -> str:
    window, warmup, scale = run.get("window_s"), run.get("warmup_s"), run.get("scale", 1.0) or 1.0
    if window is None:
        return ""
    baseline = run.get("kind") != "git-sluice"
    if scale != 1:
        text = f"a time-scaled 1/{scale:g} hour ({_minutes(window)}, ×{scale:g})"
    elif window >= 3600:
        text = "a full hour"
    else:
        text = f"{_minutes(window)}{' of the real allowance' if baseline else ''} (×{3600 / window:.3g})"
    if warmup:
        text += f" after a {_minutes(warmup)} warm-up"
    if scale == 1 and baseline and run.get("allowance_spent") is not None and window < 3600:
        text += "; the allowance " + ("ran out, so the hour is understated" if run["allowance_spent"] else "lasted")
    return text


def _run_notes(sc: Scenario) -> list[str]:
    """How each run was measured, and what the runs reported: crashes, hook rounds that failed or hung."""
    notes = []
    measured = []
    for name, run in sc.raw.items():
        if isinstance(run, dict) and run.get("window_s") is not None:
            label = {"naive": "naive poller", "conditional": "per-process conditional",
                     "dashboard": "dashboard poller", "graphql": "GraphQL poller"}.get(name, name)
            measured.append(f"{label}: {_window_text(run)}")
    if measured:
        notes.append("Measured: " + "; ".join(measured) + ".")
    runs = [v for v in sc.raw.values() if isinstance(v, dict)]
    for v in list(runs):
        for inner in v.values():
            if isinstance(inner, dict) and "kind" in inner:
                runs.append(inner)
    for run in runs:
        kind = run.get("kind")
        if not kind:
            continue
        if run.get("actor_failure_count"):
            notes.append(f"{kind}: {run['actor_failure_count']} actor failure(s), e.g. {run['actor_failures'][0]}")
        for key in ("hook_timeouts", "hook_round_failures", "wait_errors", "product_warnings", "hook_log_warnings",
                    "host_store_moved_aside"):
            if run.get(key):
                notes.append(f"{kind}: {key.replace('_', ' ')}: {run[key][0]}")
        if kind == "git-sluice" and run.get("wait_looks"):
            outcomes = run.get("wait_outcomes") or {}
            ended = sum(outcomes.values())
            said = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "none"
            notes.append(f"git-sluice's waits (warm-up included): {run['wait_looks']} looks, {ended} reached an "
                         f"outcome ({said}); each outcome ends a wait, and the agent's next wait, 30 s later, "
                         "reads its new request once")
        if kind == "git-sluice" and run.get("hook_commands"):
            notes.append(f"git-sluice: {run['hook_commands']} real git commands fired the hooks; "
                         f"{run['hook_rounds_logged']} hook rounds ran; median {run['hook_seconds_median']:.2f} s "
                         "from the command to its round's end")
    return list(dict.fromkeys(notes))


def _row(sc: Scenario | None, prefix: str) -> Row | None:
    if sc is None:
        return None
    return next((r for r in sc.rows if r.figure.startswith(prefix)), None)


def render_readme(result: dict[str, Any]) -> str:
    """The README's figures, from the same run as docs/benchmarks.md (so they cannot drift apart)."""
    by_key = {sc.key: sc for sc in result["scenarios_obj"]}
    prov = result.get("provenance") or {}
    lines = [README_START,
             f"_Written by `{result['command']}` at commit `{prov.get('short', '?')}`"
             + (" **plus uncommitted changes**" if prov.get("dirty") else "")
             + f" ({result['date']}); every figure and its method: [docs/benchmarks.md](docs/benchmarks.md)._", ""]
    s1 = by_key.get("s1")
    if s1 is not None:
        lines += [f"S1, {s1.title.removeprefix('sluice fleet: ')}:", "",
                  "| figure | git-sluice | naive poller (ADR pace) |", "|---|---:|---:|"]
        for auth, label in (("user", "user token"), ("app", "GitHub App"), ("ghes", "Enterprise Server")):
            for figure, short in (("REST calls counted /h", "REST counted /h"), ("GraphQL points /h", "GraphQL points /h"),
                                  ("calls reaching GitHub /h", "calls reaching GitHub /h"),
                                  ("refusals /h", "refusals /h"),
                                  ("freshness of a change on GitHub, p99", "freshness p99")):
                if auth == "ghes" and figure in ("REST calls counted /h", "GraphQL points /h"):
                    continue  # nothing is counted where limits are off
                row = _row(s1, f"[{auth}] {figure}")
                if row is not None:
                    lines.append(f"| {label}: {short} | {_cell(row.sluice, row.unit)} | "
                                 f"{_cell(row.baseline, row.unit)} |")
        lines.append("")
    s8 = by_key.get("s8")
    if s8 is not None and s8.rows:
        lines += ["| issue 12's figure | before (kind double) | now | goal |", "|---|---:|---:|---|"]
        for row in s8.rows:
            verdict = "met" if row.met else "**not met**"
            lines.append(f"| {row.figure} | {_cell(row.baseline, row.unit)} | {_cell(row.sluice, row.unit)} | "
                         f"{row.goal} ({verdict}) |")
        lines.append("")
    lines.append(README_END)
    return "\n".join(lines) + "\n"


def write_section(doc: Path, section: str, start_marker: str = START, end_marker: str = END) -> None:
    """Replace the delimited section of ``doc`` (or append it); nothing else in the file changes."""
    if doc.exists():
        text = doc.read_text(encoding="utf-8")
        start, end = text.find(start_marker), text.find(end_marker)
        if start != -1 and end != -1 and end > start:
            text = text[:start] + section.rstrip("\n") + text[end + len(end_marker):]
            if not text.endswith("\n"):
                text += "\n"
        else:
            text = text.rstrip("\n") + "\n\n" + section
    else:
        text = "# Benchmarks\n\n" + section
    doc.parent.mkdir(parents=True, exist_ok=True)
    tmp = doc.with_name(f".{doc.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, doc)


def write_json(path: Path, result: dict[str, Any]) -> None:
    data = {k: v for k, v in result.items() if k != "scenarios_obj"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str, ensure_ascii=False) + "\n", encoding="utf-8")
