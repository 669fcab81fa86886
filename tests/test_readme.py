"""The README's two set-up commands are what .ci/run runs, and they name real things."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    script = ROOT / ".ci" / "run"
    text = script.read_text()
    start = text.index("readme_command() {")
    end = text.index("\n}\n", start) + 3
    out = []
    for n in (1, 2):
        done = subprocess.run(["bash", "-c", text[start:end] + f"\nreadme_command {n}"], cwd=ROOT,
                              capture_output=True, text=True, check=True)
        out.append(done.stdout.strip())
    return out


def test_ci_runs_the_readme_commands_verbatim() -> None:
    demo, tests = _readme_commands()
    assert demo == "pip install . && git sluice demo"
    assert tests.startswith("tests/clients/install && pip install '.[test]' && python -m pytest")
    readme = (ROOT / "README.md").read_text()
    assert demo in readme and tests in readme


@pytest.mark.slow
def test_the_demo_tells_the_whole_story() -> None:
    from git_sluice.commands.demo import run_demo

    lines: list[str] = []
    result = run_demo(say=lines.append)
    story = "\n".join(lines)
    assert result.figures["host_b_calls"] == 0
    assert result.figures["first_round_list"] == 1 and result.figures["first_round_points"] == 1
    assert result.figures["first_round_checks"] == 2  # the baseline of #2's failing checks
    assert result.figures["idle_counted"] == 0
    assert result.figures["idle_list_calls"] == result.figures["idle_rounds"]
    # the host watch's list each minute; #2's failing checks (runs, and its status once, to learn the
    # repository uses none) less and less often, not every minute as before the watch (3 calls a round)
    assert result.figures["idle_requests"] < 1.2 * result.figures["idle_rounds"]
    assert result.figures["change_rest"] == 1 and result.figures["change_points"] == 1
    assert result.figures["host_b_paused_calls"] == 0
    assert result.figures["probes"] == 1
    assert "refs/sluice/pause/" in story and "refs/sluice/intake/main" in story
    assert "read [" not in story and "#4 moved" in story  # step 4 in words, never a raw list (issue 31)
    assert "main: main:" not in story
    assert not result.directory.exists()  # nothing left behind without --keep
