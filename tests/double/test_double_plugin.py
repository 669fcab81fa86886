"""The double's fixtures reach any project's tests through the ``pytest11`` entry point."""

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


def test_pyproject_registers_the_plugin() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["project"]["entry-points"]["pytest11"] == {"git_sluice_double": "git_sluice.double.pytest_plugin"}


@pytest.mark.slow
def test_a_project_without_a_conftest_gets_github_and_fake_clock(tmp_path: Path) -> None:
    """docs/double.md's example, run as another project's test: no conftest, the entry point alone."""
    if not any(ep.name == "git_sluice_double" for ep in entry_points(group="pytest11")):
        pytest.skip("this install predates the entry point: pip install -e . again")
    (tmp_path / "test_other.py").write_text(_docs_example())
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_other.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
