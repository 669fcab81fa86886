"""Small helpers for tests that need real git repositories (no network)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def make_clone(root: Path, *, api: str, host: str = "host-a", repository: str = "o/r") -> Path:
    """A bare remote with one commit on main, and a clone of it set up for git-sluice."""
    bare = root / "remote.git"
    if not bare.exists():
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
        seed = root / "seed"
        subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True)
        (seed / "README").write_text("seed\n")
        git(seed, "add", "README")
        git(seed, "commit", "-qm", "seed")
        git(seed, "push", "-q", str(bare), "main")
    work = root / host
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True, capture_output=True)
    git(work, "config", "sluice.repository", repository)
    git(work, "config", "sluice.api", api)
    git(work, "config", "sluice.host", host)
    return work
