"""The processes a test (or the whole run) started and left behind, found in /proc, and stopped.

Why: a process that outlives its test holds a socket, a lock or a clone in a
folder pytest is deleting, spends the machine's cores for the next tests, and
— a ``git credential-cache--daemon`` holding an App token — stays up to an
hour after ``pytest`` has returned (issue 31). tests/conftest.py stops what
is expected to linger (git's credential-cache daemon on a host's private
socket: the product starts it on purpose, docs/design.md#credentials) and
fails the test, naming every other process still alive.

A process is the test's when its environment carries the test's mark
(:data:`OWNER`, set by the ``isolated_env`` fixture, inherited through every
fork and daemonisation), or its command line or working folder is under the
test's temporary folder (for a process started with an environment of its
own). Linux only: elsewhere nothing is found, and nothing fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

OWNER = "SLUICE_TEST_OWNER"
"""The environment variable naming the test (its tmp_path) whose process this is."""
SESSION = "SLUICE_TEST_SESSION"
"""The environment variable naming the pytest process (its pid) whose run this is."""

_PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    pid: int
    pgid: int
    cmdline: list[str]

    def __str__(self) -> str:
        return f"pid {self.pid}: {' '.join(self.cmdline)[:300]}"

    @property
    def credential_socket(self) -> str | None:
        """The socket of a ``git credential-cache--daemon``, else None."""
        if any(part.endswith("credential-cache--daemon") for part in self.cmdline[:3]) and len(self.cmdline) > 1:
            return self.cmdline[-1]
        return None


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def now() -> float:
    """Seconds since boot, the clock of /proc's start times: what :func:`left` takes as ``since``."""
    try:
        return float((_PROC / "uptime").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return 0.0


def _stat(pid: int) -> tuple[str, float] | None:
    """(state, start in seconds since boot) of a live process; None when it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    state = fields[0].decode()
    if state in ("Z", "X"):
        return None
    return state, int(fields[19]) / _TICKS


def _read(pid: int) -> tuple[list[str], bytes, str] | None:
    """(cmdline, environ, cwd) of a process; None when it is gone or unreadable."""
    base = f"/proc/{pid}"
    try:
        with open(f"{base}/cmdline", "rb") as f:
            cmdline = [part for part in f.read().decode(errors="replace").split("\0") if part]
        with open(f"{base}/environ", "rb") as f:
            environ = f.read()
    except OSError:
        return None
    try:
        cwd = os.readlink(f"{base}/cwd")
    except OSError:
        cwd = ""
    return cmdline, environ, cwd


def _ancestors() -> set[int]:
    """This process and the ones above it (pytest's own, xdist's controller): never reported."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            pid = int((_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return out


def left(*, mark: tuple[str, str] | None = None, under: Path | None = None, since: float = 0.0) -> list[Proc]:
    """Live processes started at or after ``since`` (:func:`now`) carrying ``mark`` (name, value) in
    their environment, or whose command line or working folder is under ``under``; never this process
    or its ancestors. (The start time first: one small read for each of the machine's older processes.)"""
    if not _PROC.is_dir():
        return []
    needle = f"{mark[0]}={mark[1]}".encode() if mark else None
    folder = str(under) if under is not None else None
    mine = _ancestors()
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        stat = _stat(int(entry.name))
        if stat is None or stat[1] < since - 1.0:
            continue
        read = _read(int(entry.name))
        if read is None:
            continue
        cmdline, environ, cwd = read
        hit = needle is not None and needle in environ.split(b"\0")
        if folder is not None and not hit:
            hit = _inside(cwd, folder) or any(_inside(part, folder) or f"{folder}/" in part for part in cmdline)
        if hit:
            try:
                pgid = os.getpgid(int(entry.name))
            except OSError:
                continue
            found.append(Proc(int(entry.name), pgid, cmdline))
    return found


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def stop_credential_daemons(procs: list[Proc]) -> list[Proc]:
    """Ask each ``git credential-cache--daemon`` among ``procs`` to exit, as a person would
    (``git credential-cache --socket PATH exit``); returns the other processes."""
    others = []
    for proc in procs:
        socket = proc.credential_socket
        if socket is None:
            others.append(proc)
            continue
        try:
            subprocess.run(["git", "credential-cache", "--socket", socket, "exit"], capture_output=True,
                           timeout=10, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
        except (OSError, subprocess.SubprocessError):
            others.append(proc)
    return others


def gone(procs: list[Proc], within: float) -> list[Proc]:
    """Those of ``procs`` still alive after up to ``within`` real seconds."""
    deadline = time.monotonic() + within
    alive = procs
    while True:
        alive = [p for p in alive if _stat(p.pid) is not None]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def terminate(procs: list[Proc]) -> None:
    """SIGTERM each one's process group (its own only: never ours), then SIGKILL what is left."""
    ours = os.getpgid(0)
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 1.0)):
        for proc in procs:
            try:
                if proc.pgid != ours:
                    os.killpg(proc.pgid, sig)
                else:
                    os.kill(proc.pid, sig)
            except OSError:
                pass
        procs = gone(procs, wait)
        if not procs:
            return


def reap(*, mark: tuple[str, str] | None = None, under: Path | None = None, since: float = 0.0,
         grace: float = 10.0) -> list[Proc]:
    """Stop the credential-cache daemons found, give the others ``grace`` real seconds to end on their own
    (a detached hook round finishing), then end the rest; returns those that had to be ended."""
    found = left(mark=mark, under=under, since=since)
    stop_credential_daemons(found)
    # a daemon that did not exit on its socket, or a process still running (a detached hook round
    # finishing its work): each has the grace to end on its own
    still = gone(found, grace)
    if still:
        terminate(still)
    return still
