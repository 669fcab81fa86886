"""The fleet benchmark's quick mode runs inside the suite, so the harness cannot rot.

It asserts only that every scenario produces figures or says why not (the
figures themselves are the benchmark's business, not a test's), and that the
harness rewrites only its own section of the Markdown file it is given.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "contrib" / "bench" / "fleet.py"
SCENARIOS = {"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"}


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


@pytest.mark.slow
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
