"""What ``pip install .`` ships: every package of the source tree (setuptools' list is written by hand)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_of_the_tree_is_in_pyprojects_list() -> None:
    """A package left out installs without it: ``git sluice serve`` failed on its import after
    ``pip install .`` (git_sluice.serve was missing), while the tests, run from the tree, passed."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    tree = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "git_sluice").rglob("__init__.py")}
    assert tree - listed == set()
