"""The roles through the real console script (issue 13 points 4, 5, 6): what a person meets."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.cliworld import cli_world


@pytest.mark.parametrize("command", ["drive", "queue", "intake"])
def test_an_unknown_branch_is_refused_with_exit_2_and_nothing_is_written(tmp_path: Path, command: str) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        mark = world.gh.mark()
        done = host.run(command, "-b", "nope", timeout=60)
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert "nope" in done.stderr and "no such branch on origin" in done.stderr
        assert "holding the lease" not in done.stderr + done.stdout
        assert host.git("ls-remote", "origin", "refs/sluice/*") == ""
        assert world.gh.requests(since=mark) == 0


def _wait_for(predicate, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_a_second_driver_in_the_same_clone_refuses_naming_the_first_and_releases_nothing(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        first = host.popen("drive")
        try:
            _wait_for(lambda: host.git("ls-remote", "origin", "refs/sluice/intake/main") != "")
            second = host.run("drive", timeout=60)
            assert second.returncode == 2, second.stderr
            assert f"pid {first.pid}" in second.stderr
            assert "holding the lease" not in second.stderr
            # the first still holds its mark (renewals may have moved it, never deleted it)
            assert host.git("ls-remote", "origin", "refs/sluice/intake/main") != ""
            assert first.poll() is None
        finally:
            first.send_signal(signal.SIGTERM)
            _, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
        assert host.git("ls-remote", "origin", "refs/sluice/intake/main") == ""  # the first let go on its own


def _spend(world, window: float | None = None) -> float:
    """alice's core allowance spent by someone else before any git-sluice process ran; returns the reset."""
    world.gh.add_token("tok-spender", user="alice")
    world.gh.set_limit("user:alice", "core", 1, window=window)
    assert httpx.get(f"{world.url}/repos/o/r", headers={"Authorization": "token tok-spender"}).status_code == 200
    return world.gh.reset_at("user:alice", "core")


def _ready_pr(gh) -> int:
    n = gh.open_pr("o/r", head_ref="feature")
    gh.add_check_run("o/r", gh.pr("o/r", n).head_sha, "ci", status="completed", conclusion="success")
    gh.review("o/r", n, "bob", "APPROVED")
    gh.set_mergeable("o/r", n, "MERGEABLE")
    return n


def test_wait_during_a_pause_learned_from_another_hosts_note_waits_it_out_within_its_timeout(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        n = _ready_pr(world.gh)
        reset = _spend(world, window=300)  # a short window: the wait's 1 s slices of fake time are few
        a, b = world.host("host-a"), world.host("host-b")
        assert a.run("intake").returncode == 3  # host A meets the spent allowance and publishes the note
        assert a.git("ls-remote", "origin", "refs/sluice/pause/*") != ""
        world.gh.set_limit("user:alice", "core", 5000, window=300)  # GitHub would answer again at the reset
        assert b.run("intake").returncode == 3  # host B learns the pause from the note (no call)
        done = b.run("wait", str(n), "--timeout", "2h")
        assert done.returncode == 0, done.stderr  # waited the pause out, then followed #n to ready
        assert f"#{n}: ready" in done.stdout
        assert world.clock.time() >= reset


class _Lines(list[str]):
    """stderr's lines as they come; :meth:`all` once the process ended: every line, the last included."""

    pump: threading.Thread

    def all(self) -> str:
        self.pump.join(timeout=30)  # the process has exited: its stderr ends, and the pump with it
        return "".join(self)


def _stderr_lines(proc: subprocess.Popen[str]) -> _Lines:
    lines = _Lines()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)

    lines.pump = threading.Thread(target=pump, daemon=True)
    lines.pump.start()
    return lines


WAIT = ("wait", "1", "--timeout", "2h")
INTAKE = ("intake", "--wait", "--timeout", "2h")
API = ("api", "repos/o/r", "--wait", "--timeout", "2h")


@pytest.mark.parametrize(("args", "signum"), [
    (WAIT, signal.SIGINT), (WAIT, signal.SIGTERM), (INTAKE, signal.SIGINT), (INTAKE, signal.SIGTERM),
    (API, signal.SIGTERM), (("drive",), signal.SIGINT),
], ids=["wait-int", "wait-term", "intake-int", "intake-term", "api-term", "drive-int"])
def test_every_long_running_command_stops_within_a_second_of_a_signal_while_paused(
    tmp_path: Path, args: tuple[str, ...], signum: int
) -> None:
    with cli_world(tmp_path, real_clock=True) as world:
        world.gh.open_pr("o/r", head_ref="feature")
        _spend(world)  # a pause of a real hour
        host = world.host("host-a")
        proc = host.popen(*args)
        lines = _stderr_lines(proc)
        word = "the forge's part of rounds waits" if args[0] == "drive" else "waiting until then"
        deadline = time.monotonic() + 60
        while not any(word in line for line in lines):
            assert proc.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "".join(lines)
            time.sleep(0.05)
        time.sleep(0.3)  # well inside the wait
        sent = time.monotonic()
        proc.send_signal(signum)
        proc.wait(timeout=30)
        took = time.monotonic() - sent
        said = lines.all()  # not what the pump has read so far: the last line ("stopped …") comes at the exit
        assert "Traceback" not in said, said
        if args[0] == "drive":
            assert proc.returncode == 0, said
            assert "let go of the lease of main" in said and "stopped (" in said, said
            assert host.git("ls-remote", "origin", "refs/sluice/intake/main") == ""
            assert took < 5.0, took  # one push to let go of the lease, after a second at most
        else:
            assert proc.returncode == 130, said
            assert "stopped" in said, said
            assert took < 2.0, took


def test_demo_keep_leaves_state_that_reads_right_on_the_real_clock(tmp_path: Path) -> None:
    import re
    import shutil

    from tests.cliworld import SLUICE

    done = subprocess.run([SLUICE, "demo", "--keep"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    host_a = Path(re.search(r"cd (\S+) && git for-each-ref", done.stdout).group(1))
    prefix = re.search(r"prefix them with HOME=(\S+) XDG_STATE_HOME=(\S+)\)", done.stdout)
    try:
        env = {**os.environ, "HOME": prefix.group(1), "XDG_STATE_HOME": prefix.group(2)}
        queue = subprocess.run([SLUICE, "queue"], cwd=host_a, env=env, capture_output=True, text=True, timeout=60)
        assert queue.returncode == 0, queue.stderr
        assert " read in " not in queue.stdout and " ago" in queue.stdout, queue.stdout
    finally:
        shutil.rmtree(host_a.parent, ignore_errors=True)
