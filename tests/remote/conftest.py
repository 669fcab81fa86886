"""Multi-host fixtures: one bare remote, several clones ("hosts"), a git daemon.

Every host is a separate clone with its own ``sluice.host``, its own state dir
(given as an env dict its subprocesses get) and no ``refs/sluice/*`` fetch
refspec, exactly as ``git sluice setup`` leaves a clone (the rounds fetch by
refspecs of their own). The bare remote logs
every ref update (``core.logAllRefUpdates=always``) so tests can read the
remote's own history of a lease.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pytest_git import GitRepo

from git_sluice.clock import FakeClock
from git_sluice.remote.git import RemoteGit
from git_sluice.remote.lease_keeper import LeaseKeeper
from git_sluice.remote.notes import PauseNotes
from git_sluice.remote.observe import ObservationStore
from git_sluice.repo import Repo


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


class SkewedClock:
    """A host's clock: the test's shared fake time plus a fixed offset (a wrong clock)."""

    def __init__(self, base: FakeClock, offset: float = 0.0) -> None:
        self.base = base
        self.offset = offset

    def time(self) -> float:
        return self.base.time() + self.offset

    def monotonic(self) -> float:
        return self.base.monotonic() + self.offset

    def sleep(self, seconds: float) -> None:
        self.base.sleep(seconds)


@dataclass
class Host:
    """One clone standing for one host of the fleet."""

    name: str
    path: Path
    url: str
    env: dict[str, str]
    boot: str = "boot-1"
    repo: Repo = field(init=False)

    def __post_init__(self) -> None:
        self.repo = Repo.discover(self.path)

    def remote_git(self, clock: object) -> RemoteGit:
        return RemoteGit(self.repo, "origin", clock=clock)  # type: ignore[arg-type]

    def observations(self, clock: object) -> ObservationStore:
        return ObservationStore(self.repo.sluice_dir, clock, boot=self.boot)  # type: ignore[arg-type]

    def keeper(self, clock: object, *, role: str = "driver", lease: float = 300.0) -> LeaseKeeper:
        return LeaseKeeper(
            self.repo,
            self.remote_git(clock),
            host=self.name,
            role=role,
            lease=lease,
            clock=clock,  # type: ignore[arg-type]
            observations=self.observations(clock),
        )

    def notes(self, clock: object, **kwargs: object) -> PauseNotes:
        return PauseNotes(
            self.repo,
            self.remote_git(clock),
            host=self.name,
            clock=clock,  # type: ignore[arg-type]
            observations=self.observations(clock),
            **kwargs,  # type: ignore[arg-type]
        )


@pytest.fixture
def bare_remote(tmp_path: Path, git_repo: GitRepo) -> Path:
    """A bare repository with one commit on main, pushed from pytest-git's throw-away repository."""
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    git("config", "core.logAllRefUpdates", "always", cwd=bare)
    seed = Path(git_repo.workspace)
    (seed / "README").write_text("seed\n")
    git("add", "README", cwd=seed)
    git("commit", "-q", "-m", "initial", cwd=seed)
    git("push", "-q", bare.as_uri(), "HEAD:refs/heads/main", cwd=seed)
    return bare


@pytest.fixture
def make_host(tmp_path: Path, bare_remote: Path) -> Callable[..., Host]:
    """``make_host(name, url=None)``: a fresh clone of the bare remote acting as host ``name``."""

    def make(name: str, url: str | None = None) -> Host:
        origin = url or bare_remote.as_uri()
        path = tmp_path / "hosts" / name
        git("clone", "-q", origin, str(path))
        git("config", "sluice.host", name, cwd=path)
        state = tmp_path / "state" / name
        state.mkdir(parents=True)
        env = {**os.environ, "XDG_STATE_HOME": str(state)}
        return Host(name=name, path=path, url=origin, env=env)

    return make


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def git_daemon(bare_remote: Path) -> Iterator[str]:
    """A ``git daemon`` on loopback serving the bare remote; yields its git:// URL."""
    base = bare_remote.parent
    # `git daemon` execs a child; run git-daemon itself, in its own session, so
    # killing its process group at the end leaves nothing behind.
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True).stdout.strip()
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen(
            [
                str(Path(exec_path) / "git-daemon"),
                "--export-all",
                "--enable=receive-pack",
                "--reuseaddr",
                "--informative-errors",
                f"--base-path={base}",
                "--listen=127.0.0.1",
                f"--port={port}",
                str(base),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 5.0
        up = False
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    up = True
                    break
            except OSError:
                time.sleep(0.02)
        if up:
            break
        _stop(proc)
    else:
        pytest.fail("git daemon did not start on loopback")
    try:
        yield f"git://127.0.0.1:{port}/{bare_remote.name}"
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the daemon and the children it forked per connection (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.fixture(params=["file", "daemon"])
def url_for(request: pytest.FixtureRequest, bare_remote: Path) -> str:
    """The bare remote's URL over file:// and, in a second run, over a loopback git daemon."""
    if request.param == "daemon":
        return str(request.getfixturevalue("git_daemon"))
    return bare_remote.as_uri()


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock(1_800_000_000.0)


@pytest.fixture
def skewed() -> Callable[[FakeClock, float], SkewedClock]:
    """``skewed(base, offset)``: a host clock that is ``offset`` seconds wrong."""
    return SkewedClock


def remote_reflog(bare: Path, ref: str) -> list[tuple[str, str]]:
    """(old, new) object ids of every update of ``ref`` on the bare remote, oldest first."""
    log = bare / "logs" / ref
    if not log.exists():
        return []
    pairs = []
    for line in log.read_text().splitlines():
        head = line.split("\t", 1)[0].split()
        pairs.append((head[0], head[1]))
    return pairs


@pytest.fixture
def reflog() -> Callable[[Path, str], list[tuple[str, str]]]:
    return remote_reflog
