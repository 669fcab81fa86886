"""The roles through the real console script (issue 13 points 4, 5, 6): what a person meets."""

from __future__ import annotations

import signal
import time
from pathlib import Path

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
