"""GitHub's other words for a spent limit, through the real ``git sluice api`` (issue 13 point 8)."""

from __future__ import annotations

from pathlib import Path

from git_sluice.errors import local_time
from git_sluice.forge.hoststore import HostStore
from tests.cliworld import cli_world

CHEAP = 'query { viewer { login } }'
DEAR = ('query { repository(owner: "o", name: "r") { pullRequests(first: 100) { nodes { '
        'labels(first: 100) { nodes { name } } reviews(first: 100) { nodes { state } } } } } }')  # 2 points


def test_api_rate_limit_already_exceeded_pauses_and_the_next_call_sends_nothing(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        # a refusal in GitHub's later wording whose headers still show calls left (another window's)
        world.gh.fault("status", path="/repos/o/r$", code=403,
                       message="API rate limit already exceeded for user ID 1.", times=1)
        first = host.run("api", "repos/o/r")
        assert first.returncode == 3, first.stderr
        assert "spent" in first.stderr and "permission" not in first.stderr.lower()
        mark = world.gh.mark()
        second = host.run("api", "repos/o/r")
        assert second.returncode == 3, second.stderr
        assert world.gh.requests(since=mark) == 0  # paused: nothing reached GitHub


def test_graphql_rate_limited_with_points_left_pauses_until_reset_at(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        world.gh.set_limit("user:alice", "graphql", 2)
        assert host.run("api", "graphql", "-f", f"query={CHEAP}").returncode == 0  # 1 point: 1 left
        reset = world.gh.reset_at("user:alice", "graphql")
        done = host.run("api", "graphql", "-f", f"query={DEAR}")  # costs 2 > 1 left: RATE_LIMITED
        assert done.returncode == 3, done.stderr
        assert world.gh.remaining("user:alice", "graphql") == 1  # GitHub's word came with points left
        assert local_time(reset) in done.stderr  # until resetAt, not the 60 s fallback
        store = HostStore(host.state / "git-sluice" / "host.sqlite3", clock=world.clock)
        try:
            (pause,) = [p for p in store.pauses() if p.resource == "graphql"]
        finally:
            store.close()
        assert (pause.until, pause.how) == (reset, "reset")


def test_a_throttle_met_in_observe_only_mode_reads_would_have_paused_not_rate_limited(tmp_path: Path) -> None:
    import httpx

    with cli_world(tmp_path) as world:
        world.gh.add_token("tok-spender", user="alice")
        world.gh.set_limit("user:alice", "core", 1)
        assert httpx.get(f"{world.url}/repos/o/r", headers={"Authorization": "token tok-spender"}).status_code == 200
        host = world.host("host-a", **{"sluice.enforce": "false"})
        done = host.run("intake")
        assert done.returncode == 1, done.stderr
        assert "would have paused core until" in done.stderr and "rate-limited" not in done.stderr, done.stderr
        status = host.run("status")
        assert status.returncode == 0, status.stderr
        assert "would have paused" in status.stdout and "rate-limited" not in status.stdout, status.stdout
