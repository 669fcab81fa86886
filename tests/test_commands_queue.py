"""commands/queue.py: what ``git sluice queue`` reads, and what it never loads (dashboards poll it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitutil import git


@pytest.fixture
def work(github_clone: Path) -> Path:
    git(github_clone, "config", "sluice.repository", "octo/widgets")
    git(github_clone, "config", "sluice.branch", "main")
    return github_clone


def test_read_queues_names_the_configured_repository_and_loads_neither_libgit2_nor_filelock(work: Path) -> None:
    code = (
        "import sys; from git_sluice.commands.queue import read_queues; "
        "docs = read_queues('.'); "
        "assert [(d.repository, d.branch, d.entries) for d in docs] == [('octo/widgets', 'main', {})], docs; "
        "assert 'pygit2' not in sys.modules and 'filelock' not in sys.modules, 'a reader loaded a writer'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=work, check=True)


def test_read_queues_reads_the_branches_asked_for(work: Path) -> None:
    subprocess.run(["git", "-C", str(work), "update-ref", "refs/remotes/origin/dev", "HEAD"], check=True)
    from git_sluice.commands.queue import UnknownBranch, read_queues

    assert [d.branch for d in read_queues(str(work), ["dev", "main"])] == ["dev", "main"]
    try:
        read_queues(str(work), ["main", "nope"])
    except UnknownBranch as exc:
        assert exc.branches == ["nope"] and exc.exit_code == 2
    else:
        raise AssertionError("an unknown branch read as an empty queue")
