"""A world for driving the real ``git-sluice`` console script against the GitHub double.

One bare remote, any number of clones ("hosts"), each with its own host state
dir; a double on a :class:`FileClock` shared with every subprocess through
``GIT_SLUICE_TEST_CLOCK``, so a process that waits out a pause moves time for
the double too, and no test sleeps through an interval.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from git_sluice.clock import FileClock, SystemClock
from git_sluice.double import GitHubDouble, serve
from tests.gitutil import git, make_clone

START = 1_800_000_000.0
SLUICE = shutil.which("git-sluice") or str(Path(sys.executable).with_name("git-sluice"))


@dataclass
class CliHost:
    name: str
    path: Path
    state: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SLUICE, *args], cwd=self.path, env={**self.env, **env}, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def popen(self, *args: str, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen([SLUICE, *args], cwd=self.path, env={**self.env, **env}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def git(self, *args: str) -> str:
        return git(self.path, *args)


@dataclass
class CliWorld:
    root: Path
    gh: GitHubDouble
    url: str
    clock: FileClock | SystemClock
    clock_file: Path | None
    hosts: dict[str, CliHost] = field(default_factory=dict)

    def host(self, name: str, token: str | None = "tok-alice", **config: str) -> CliHost:
        path = make_clone(self.root, api=self.url, host=name)
        for key, value in config.items():
            git(path, "config", key, value)
        state = self.root / "state" / name
        state.mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
        env.update(XDG_STATE_HOME=str(state), PATH=str(Path(SLUICE).parent) + os.pathsep + os.environ.get("PATH", ""))
        if self.clock_file is not None:
            env["GIT_SLUICE_TEST_CLOCK"] = str(self.clock_file)
        if token is not None:
            env["GH_TOKEN"] = token
        host = CliHost(name, path, state, env)
        self.hosts[name] = host
        return host


@contextmanager
def cli_world(root: Path, *, clock_start: float = START, real_clock: bool = False,
              enterprise: bool = False) -> Iterator[CliWorld]:
    """``real_clock``: the double and the processes on the system clock (a pause that truly stands);
    ``enterprise``: the double serves Enterprise Server's paths (``sluice.api`` ends in ``/api/v3``)."""
    clock_file: Path | None = None
    clock: FileClock | SystemClock
    if real_clock:
        clock = SystemClock()
    else:
        clock_file = root / "clock"
        clock = FileClock(clock_file, start=clock_start)
    gh = GitHubDouble(clock=clock, enterprise=enterprise)
    gh.add_user("alice")
    gh.add_token("tok-alice", user="alice")
    gh.add_repo("o/r")
    with serve(gh) as server:
        yield CliWorld(root, gh, server.url, clock, clock_file)
