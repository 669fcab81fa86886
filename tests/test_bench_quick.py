"""The fleet benchmark's quick mode runs inside the suite, so the harness cannot rot.

It asserts only that every scenario produces figures or says why not (the
figures themselves are the benchmark's business, not a test's), and that the
harness rewrites only its own section of the Markdown file it is given.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "contrib" / "bench" / "fleet.py"
SCENARIOS = {"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10"}


def _report_module():
    sys.path.insert(0, str(HARNESS.parent))
    try:
        import fleet_report

        return fleet_report
    finally:
        sys.path.remove(str(HARNESS.parent))


def test_the_section_is_replaced_and_nothing_else(tmp_path: Path) -> None:
    report = _report_module()
    doc = tmp_path / "benchmarks.md"
    before = "# Benchmarks\n\n## Hook overhead\n\nsomeone else's table\n\n"
    after = "\n## A 500-request round\n\nanother table, no trailing newline"
    doc.write_text(before + f"{report.START}\nold figures\n{report.END}" + after)
    report.write_section(doc, f"{report.START}\nnew figures\n{report.END}\n")
    text = doc.read_text()
    assert text.startswith(before)
    assert text.endswith(after + "\n") or text.endswith(after)
    assert "new figures" in text and "old figures" not in text
    assert text.count(report.START) == 1 and text.count(report.END) == 1

    bare = tmp_path / "other.md"
    bare.write_text("# Benchmarks\n\nonly others' figures\n")
    report.write_section(bare, f"{report.START}\nmine\n{report.END}\n")
    assert bare.read_text().startswith("# Benchmarks\n\nonly others' figures\n")
    assert bare.read_text().rstrip().endswith(report.END)


@pytest.mark.slow(seconds=240)
def test_quick_mode_gives_every_scenario_figures_or_a_reason(tmp_path: Path) -> None:
    out, raw, readme = tmp_path / "benchmarks.md", tmp_path / "benchmarks.json", tmp_path / "README.md"
    out.write_text("# Benchmarks\n\nkept as it was\n")
    readme.write_text("# x\n\n<!-- bench:readme:start -->\nold\n<!-- bench:readme:end -->\n\n## After\n")
    done = subprocess.run(
        # --allow-dirty: the suite runs on uncommitted work too; the refusal itself is tested in
        # test_bench_provenance.py
        [sys.executable, str(HARNESS), "--quick", "--allow-dirty", "--out", str(out), "--json", str(raw),
         "--readme", str(readme)],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(raw.read_text())
    scenarios = {sc["key"]: sc for sc in data["scenarios"]}
    assert set(scenarios) == SCENARIOS
    for key, sc in scenarios.items():
        if sc["status"] != "ok":
            assert sc["error"].strip(), f"{key} failed without saying why"
            continue
        assert sc["rows"], f"{key} produced no rows"
        for row in sc["rows"]:
            value = row["sluice"]
            assert value is not None and value != "", f"{key}: {row['figure']} has no git-sluice figure"
            if isinstance(value, str) and value.startswith("failed"):
                assert len(value) > len("failed: "), f"{key}: {row['figure']} failed without a reason"
        assert any(isinstance(row["sluice"], (int, float)) for row in sc["rows"]) or key in ("s5", "s6"), \
            f"{key} has no numeric git-sluice figure"
    text = out.read_text()
    assert text.startswith("# Benchmarks\n\nkept as it was\n")
    assert "<!-- bench:fleet:start -->" in text and "<!-- bench:fleet:end -->" in text
    assert "python contrib/bench/fleet.py --quick" in text
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert data["provenance"]["commit"] == commit and f"Commit: `{commit}`" in text
    assert ("NOT FROM ONE COMMIT" in text) == data["provenance"]["dirty"]
    # issue 11's figures per run, for each of the three ways to authenticate
    s1 = [row["figure"] for row in scenarios["s1"]["rows"]]
    for auth in ("user", "app", "ghes"):
        for figure in ("REST calls counted /h", "GraphQL points /h", "calls reaching GitHub /h",
                       "busiest minute on one endpoint", "refusals /h", "freshness of a change on GitHub, p99"):
            assert any(f.startswith(f"[{auth}] {figure}") for f in s1), f"S1 has no {figure} for {auth}"
    written = readme.read_text()
    assert written.startswith("# x\n\n<!-- bench:readme:start -->") and written.endswith("## After\n")
    assert "old" not in written and "[user] " not in written and "user token: REST counted /h" in written
    app = scenarios["s1"]["raw"]["app"]["git-sluice"]
    # every process authenticated as the App: the installation's pool, the App's own for the exchange,
    # never the user's token (warm-up included: a token minted then lives the whole quick window)
    assert "installation:171576254" in app["pools_seen"] and "user:fleet-bot" not in app["pools_seen"]
    # issue 29: git requests to the remote are a figure of every fleet run, git-sluice's apart from the harness's
    user = scenarios["s1"]["raw"]["git-sluice"]
    git = user["git"]
    assert git["read_per_hour"] > 0 and git["fetch_per_hour"] + git["ls_remote_per_hour"] == git["read_per_hour"]
    assert git["read_per_host_hour"]["max"] >= git["read_per_host_hour"]["mean"] > 0
    assert git["push_busiest_minute_repo"] >= 0 and git["read_busiest_host_tick_remote"] >= 1
    assert git["harness_push_per_hour"] > 0  # the user's own pushes, counted apart
    for key in ("s1", "s2", "s3", "s9"):
        figures = [row["figure"] for row in scenarios[key]["rows"]]
        assert any("git requests to the remote /h, read side" in f for f in figures), f"{key} has no git figure"
    # the naive poller at the incident's pace, not past it (9,000–12,000 calls/h); the competent one beside it
    naive = scenarios["s1"]["raw"]["naive"]["per_hour"]
    assert naive["requests"] <= 12_000 and 4_000 <= naive["counted_rest"] <= 5_200
    assert any(row["baseline_name"].startswith("GraphQL poller") for row in scenarios["s1"]["rows"])
    # S9: every row's figures, each with its goal and this run's verdict
    s9 = scenarios["s9"]
    assert s9["status"] == "ok", s9["error"]
    labels = {row["figure"].split(":", 1)[0] for row in s9["rows"]}
    assert {"S1 shape, 1 host", "S1 shape, 2 hosts", "one repository, 5 open requests",
            "one repository, 150 open requests"} <= labels
    for label in labels:
        rows: dict[str, dict] = {}
        for row in s9["rows"]:  # the first row of a figure carries its goal (beside the competent client)
            if row["figure"].startswith(label + ":"):
                rows.setdefault(row["figure"].split(": ", 1)[1], row)
        for figure in ("counted units /h (REST counted + GraphQL points)", "calls reaching GitHub /h",
                       "freshness of a change on GitHub, p99", "git read side per host per tick per remote",
                       "git pushes, busiest minute on one repository, fleet"):
            assert figure in rows, f"S9 {label} has no {figure}"
        assert isinstance(rows["counted units /h (REST counted + GraphQL points)"]["sluice"], (int, float))
        for figure in ("counted units /h (REST counted + GraphQL points)", "freshness of a change on GitHub, p99",
                       "git read side per host per tick per remote"):
            row = rows[figure]
            assert row["met"] in (True, False) and row["goal"], f"S9 {label}: {figure} has no verdict"
            assert ("not met" in row["note"]) == (row["met"] is False)
    done = s9["raw"]["done_when"]
    assert len(done) >= 8 and all(isinstance(g["goal"], str) and g["figure"] for g in done)
    assert "### issue 29: done when" in text
    # S6's timing rows say met / not met; the rows measured at 20 requests say so
    s6 = [row for row in scenarios["s6"]["rows"] if row["goal"]]
    assert len(s6) >= 7 and all(row["met"] in (True, False) for row in s6)
    assert all("20 open requests" in row["figure"] for row in scenarios["s6"]["rows"]
               if row["figure"].startswith(("`git sluice status`", "`git sluice queue --json`", "push heading")))


@pytest.mark.slow(seconds=60)
def test_quick_s10_runs_towers_loop_with_the_real_gh_direct_and_through_serve(tmp_path: Path) -> None:
    """Issue 30's scenario alone, quick: both legs ran every gh command, and every goal has its verdict."""
    if shutil.which("gh") is None:  # a missing real client fails, never skips
        pytest.fail("S10 runs the real gh, which is not installed: tests/clients/install (the README's test "
                    "command) installs Debian's package", pytrace=False)
    out, raw = tmp_path / "benchmarks.md", tmp_path / "benchmarks.json"
    done = subprocess.run(
        [sys.executable, str(HARNESS), "--quick", "--only", "s10", "--allow-dirty", "--out", str(out),
         "--json", str(raw)],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    scenarios = {sc["key"]: sc for sc in json.loads(raw.read_text())["scenarios"]}
    assert set(scenarios) == {"s10"}
    s10 = scenarios["s10"]
    assert s10["status"] == "ok", s10["error"] + s10["raw"].get("traceback", "")
    run, spec = s10["raw"], s10["raw"]["spec"]
    direct, served = run["direct"], run["serve"]
    for leg in (direct, served):  # every workspace's three commands at every loop, none failed
        assert leg["gh"]["runs"] == 3 * spec["workspaces"] * leg["ticks"] and leg["gh"]["failures"] == 0, leg["gh"]
        assert leg["other_pools"] == [] and 0 <= leg["lowest_remaining"] <= 5000
    # the pass-through changes nothing: one connection and one GraphQL call reaching the double per command
    assert direct["pass_through_connections"] == direct["gh"]["runs"] == direct["totals"]["graphql_calls"]
    # serve ran as a process and answered from its window; the bot asked once a minute, REST and GraphQL
    assert served["serve"]["exit"] == 0 and served["serve"]["graphql_kept"] > 0
    assert served["bot"]["calls"] == 2 * int(spec["serve_window"] // spec["bot_every"])
    assert served["totals"]["graphql_calls"] < served["gh"]["runs"] + served["bot"]["calls"]
    rows = {row["figure"]: row for row in s10["rows"]}
    for prefix in ("GraphQL points /h", "GraphQL calls reaching GitHub /h", "refusals in the leg",
                   "the pool's lowest GraphQL remaining", "merge bot through the same serve"):
        row = next((r for f, r in rows.items() if f.startswith(prefix)), None)
        assert row is not None, f"S10 has no {prefix} row"
        assert isinstance(row["sluice"], (int, float)), row
    for row in s10["rows"]:
        if row["goal"]:
            assert row["met"] in (True, False) and ("not met" in row["note"]) == (row["met"] is False), row
    goals = run["done_when"]
    assert len(goals) == 6 and all(g["met"] in (True, False) and g["figure"] for g in goals)
    # the third leg: serve with the least window (whole loops) at which the 60 s leg's points fit the budget
    sized = run["sized"]
    assert run["sized_window"] > spec["graphql_window"] and run["sized_window"] % spec["period"] == 0
    assert sized["graphql_window"] == run["sized_window"] and sized["gh"]["failures"] == 0
    assert sized["per_hour"]["points"] < served["per_hour"]["points"]
    text = out.read_text()
    assert "### issue 30: done when" in text and "### S10 — " in text
