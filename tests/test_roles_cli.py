"""The roles through the real console script (issue 13 points 4, 5, 6): what a person meets."""

from __future__ import annotations

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
