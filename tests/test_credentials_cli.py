"""Credentials under real conditions, through the real console script (issue 13 points 1, 2, 3)."""

from __future__ import annotations

from pathlib import Path

import httpx

from git_sluice.errors import local_time
from tests.cliworld import cli_world


# --------------------------------------------------------- point 1: a token whose pool is unknown


def test_with_the_allowance_spent_before_anything_ran_a_new_host_with_a_new_token_sends_nothing(
    tmp_path: Path,
) -> None:
    with cli_world(tmp_path) as world:
        gh = world.gh
        for token in ("tok-a", "tok-b", "tok-spender"):
            gh.add_token(token, user="alice")
        gh.set_limit("user:alice", "core", 1)
        # someone else spent alice's allowance before any git-sluice process ran
        assert httpx.get(f"{world.url}/repos/o/r", headers={"Authorization": "token tok-spender"}).status_code == 200
        reset = gh.reset_at("user:alice", "core")
        a = world.host("host-a", token="tok-a")
        b = world.host("host-b", token="tok-b")

        first = a.run("intake")
        assert first.returncode == 3, first.stderr
        assert "hash for now" not in first.stderr
        assert a.git("ls-remote", "origin", "refs/sluice/pause/*") != ""  # published to the fleet

        mark = gh.mark()
        again = a.run("intake")  # a second process on host A: the pause stands, so nobody asks GET /user
        assert again.returncode == 3, again.stderr
        assert gh.requests(since=mark) == 0

        mark = gh.mark()
        step = b.run("intake")  # a new host, a token never seen: fetches the note, then obeys it
        assert step.returncode == 3, step.stderr
        api = b.run("api", "repos/o/r")
        assert api.returncode == 3, api.stderr
        assert local_time(reset) in api.stderr  # names the end
        assert gh.requests(since=mark) == 0  # not even GET /user

        # the pause over, host B learns whose token it is and the call goes
        gh.set_limit("user:alice", "core", 5000)
        world.clock.set(reset + 1)
        done = b.run("api", "repos/o/r")
        assert done.returncode == 0, done.stderr
