"""Real git, real hooks, a real bare remote: the world the hook tests run in.

``git-sluice`` reaches the hooks through a temporary PATH holding a small shim
that counts the runners the hooks start (``start``/``done`` lines in a file)
and then runs the installed console script, so a test can wait for every
detached runner to finish (a bounded poll) and can tell "started nothing"
from "started a runner that decided nothing".
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REAL_SLUICE = shutil.which("git-sluice") or str(Path(sys.executable).with_name("git-sluice"))


def closed_port() -> int:
    """A loopback port nothing listens on (the GitHub API "down")."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_path() -> str:
    """PATH without any folder that holds a git-sluice (the venv's bin)."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "git-sluice").exists()]
    for needed in ("/usr/local/bin", "/usr/bin", "/bin"):
        if needed not in keep:
            keep.append(needed)
    return os.pathsep.join(keep)


@dataclass
class World:
    root: Path
    remote: Path
    work: Path
    other: Path
    bin: Path
    counter: Path
    env: dict[str, str]

    # --- running things -------------------------------------------------------

    def run(
        self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            list(args),
            cwd=cwd or self.work,
            env=env or self.env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return proc

    def git(self, *args: str, cwd: Path | None = None, check: bool = True, **kw: object) -> subprocess.CompletedProcess[str]:
        return self.run("git", *args, cwd=cwd, check=check, **kw)  # type: ignore[arg-type]

    def sluice(self, *args: str, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
        return self.run(REAL_SLUICE, *args, cwd=cwd, check=check)

    def setup(self, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        proc = self.sluice("setup", cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        return proc

    def advance(self, branch: str = "main", message: str = "move") -> str:
        """Another clone pushes a new commit to ``branch`` on the remote."""
        self.git("fetch", "-q", "origin", cwd=self.other)
        self.git("checkout", "-q", "-B", branch, f"origin/{branch}", cwd=self.other, check=False)
        self.git("commit", "-q", "--allow-empty", "-m", message, cwd=self.other)
        self.git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", cwd=self.other)
        return self.git("rev-parse", "HEAD", cwd=self.other).stdout.strip()

    # --- what happened ----------------------------------------------------------

    @property
    def sluice_dir(self) -> Path:
        return self.work / ".git" / "sluice"

    def log_lines(self, sluice_dir: Path | None = None) -> list[str]:
        path = (sluice_dir or self.sluice_dir) / "log"
        try:
            return path.read_text().splitlines()
        except OSError:
            return []

    def rounds(self, sluice_dir: Path | None = None) -> list[str]:
        return [line for line in self.log_lines(sluice_dir) if "hook round start" in line]

    def runners(self) -> tuple[int, int]:
        try:
            lines = self.counter.read_text().split()
        except OSError:
            return 0, 0
        return lines.count("start"), lines.count("done")

    def wait_quiet(self, sluice_dir: Path | None = None, timeout: float = 20.0) -> None:
        """Until no inbox waits and every runner started has finished (bounded poll)."""
        folder = sluice_dir or self.sluice_dir
        deadline = time.monotonic() + timeout
        calm = 0
        while time.monotonic() < deadline:
            started, finished = self.runners()
            inboxes = list(folder.glob("hook-in.*")) if folder.is_dir() else []
            if started == finished and not inboxes:
                calm += 1
                if calm >= 4:
                    return
            else:
                calm = 0
            time.sleep(0.02)
        raise AssertionError(f"hook runners still busy after {timeout}s: {self.runners()}")


def _write_shim(folder: Path, counter: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "git-sluice"
    shim.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = _hook-round ]; then\n'
        f'    echo start >>"{counter}"\n'
        # whether the git command the runner waits for had ended when the runner began
        '    if [ "$2" = --wait-pid ] && kill -0 "$3" 2>/dev/null; then\n'
        '        st=; IFS= read -r st <"/proc/$3/stat"\n'
        f'        case $st in *") Z "*) echo ended ;; *) echo running ;; esac >>"{counter}.git"\n'
        f'    else echo ended >>"{counter}.git"; fi\n'
        '    [ -n "${SLUICE_TEST_SHIM_DELAY:-}" ] && sleep "$SLUICE_TEST_SHIM_DELAY"\n'
        f'    "{REAL_SLUICE}" "$@"\n'
        "    rc=$?\n"
        f'    echo done >>"{counter}"\n'
        "    exit $rc\n"
        "fi\n"
        f'exec "{REAL_SLUICE}" "$@"\n'
    )
    shim.chmod(0o755)


def build_world(root: Path, *, with_setup: bool = True, api_port: int | None = None) -> World:
    """A bare remote (main and side), a clone set up for git-sluice, and another clone that moves things."""
    root.mkdir(parents=True, exist_ok=True)
    counter = root / "runners"
    bin_dir = root / "bin"
    _write_shim(bin_dir, counter)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{base_path()}"
    # a token, so rounds get as far as calling the (unreachable) API
    env["GH_TOKEN"] = "ghp_" + "hooktest" * 4 + "0000"
    remote = root / "remote.git"
    seed = root / "seed"
    work = root / "work"
    other = root / "other"

    def git(*args: str, cwd: Path | None = None) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    git("init", "-q", "--bare", "-b", "main", str(remote))
    git("init", "-q", "-b", "main", str(seed))
    (seed / "README").write_text("seed\n")
    git("add", "README", cwd=seed)
    git("commit", "-qm", "seed", cwd=seed)
    git("push", "-q", str(remote), "main", "main:side", cwd=seed)
    git("clone", "-q", str(remote), str(work))
    git("clone", "-q", str(remote), str(other))
    git("config", "sluice.repository", "octo/widgets", cwd=work)
    git("config", "sluice.api", f"http://127.0.0.1:{api_port or closed_port()}", cwd=work)
    git("config", "sluice.host", "host-a", cwd=work)
    world = World(root=root, remote=remote, work=work, other=other, bin=bin_dir, counter=counter, env=env)
    if with_setup:
        world.setup()
    return world


@pytest.fixture
def make_world(tmp_path: Path) -> Callable[..., World]:
    made = 0

    def make(**kw: object) -> World:
        nonlocal made
        made += 1
        return build_world(tmp_path / f"world{made}", **kw)  # type: ignore[arg-type]

    return make


@pytest.fixture
def world(make_world: Callable[..., World]) -> World:
    return make_world()
