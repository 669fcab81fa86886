"""The double's fixtures reach a project's tests when it asks for them (``-p git_sluice.double.pytest_plugin``),
and nobody else's: installing git-sluice loads nothing into other projects' pytest runs (issue 32)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _docs_example() -> str:
    """docs/double.md's example of a test in another project (the one Python block that defines a test)."""
    text = (ROOT / "docs" / "double.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M) if "def test_" in b]
    return block


def test_pyproject_registers_no_plugin_into_every_pytest_run() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "pytest11" not in data["project"].get("entry-points", {})
    assert not any(ep.value.startswith("git_sluice") for ep in entry_points(group="pytest11"))


@pytest.mark.slow(seconds=25)
def test_a_project_that_asks_gets_github_and_fake_clock_and_one_that_does_not_gets_nothing(tmp_path: Path) -> None:
    """docs/double.md's example, run as another project's test, with the documented opt-in and without."""
    (tmp_path / "test_other.py").write_text(_docs_example())
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_other.py"]
    done = subprocess.run([*base, "-p", "git_sluice.double.pytest_plugin"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    without = subprocess.run(base, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert without.returncode != 0 and "fixture 'github' not found" in without.stdout, without.stdout
