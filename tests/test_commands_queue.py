"""commands/queue.py: what ``git sluice queue`` reads, and what it never loads (dashboards poll it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _clone(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "config", "sluice.repository", "octo/widgets"], check=True)
    subprocess.run(["git", "-C", str(work), "config", "sluice.branch", "main"], check=True)
    subprocess.run(["git", "-C", str(work), "remote", "add", "origin", "https://github.com/octo/widgets.git"], check=True)
    subprocess.run(["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "commit", "-q", "--allow-empty", "-m", "seed"], check=True)
    subprocess.run(["git", "-C", str(work), "update-ref", "refs/remotes/origin/main", "HEAD"], check=True)
    return work


def test_read_queues_names_the_configured_repository_and_loads_neither_libgit2_nor_filelock(tmp_path: Path) -> None:
    work = _clone(tmp_path)
    code = (
        "import sys; from git_sluice.commands.queue import read_queues; "
        "docs = read_queues('.'); "
        "assert [(d.repository, d.branch, d.entries) for d in docs] == [('octo/widgets', 'main', {})], docs; "
        "assert 'pygit2' not in sys.modules and 'filelock' not in sys.modules, 'a reader loaded a writer'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=work, check=True)


def test_read_queues_reads_the_branches_asked_for(tmp_path: Path) -> None:
    work = _clone(tmp_path)
    subprocess.run(["git", "-C", str(work), "update-ref", "refs/remotes/origin/dev", "HEAD"], check=True)
    from git_sluice.commands.queue import UnknownBranch, read_queues

    assert [d.branch for d in read_queues(str(work), ["dev", "main"])] == ["dev", "main"]
    try:
        read_queues(str(work), ["main", "nope"])
    except UnknownBranch as exc:
        assert exc.branches == ["nope"] and exc.exit_code == 2
    else:
        raise AssertionError("an unknown branch read as an empty queue")
