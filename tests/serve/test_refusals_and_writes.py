"""``serve`` refuses the way GitHub does while the allowance is spent, and paces the host's writes;
nothing refused or deferred reaches the double."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from git_sluice.clock import FakeClock
from git_sluice.double.testing import ServedDouble
from tests.gitutil import git
from tests.serve.conftest import TOKEN, Served, TickingClock, start_serving


def spend(served: Served) -> None:
    """The pool's allowance runs out at GitHub: the next call is throttled and the host pauses."""
    gh = served.github.gh
    gh.set_limit("user:alice", "core", 2)
    with served.tcp() as client:
        for _ in range(3):
            client.get("/repos/o/r/pulls", params={"state": "all"})
            client.get("/repos/o/r")


def test_a_call_during_a_pause_gets_githubs_refusal_and_reaches_nothing(served: Served) -> None:
    spend(served)
    gh = served.github.gh
    mark = gh.mark()
    with served.tcp() as client:
        answer = client.get("/repos/o/r/issues")
    with served.unix() as client:
        over_socket = client.get("/repos/o/r/issues", headers={"Authorization": f"token {TOKEN}"})
    assert gh.ledger[mark:] == []
    for refused in (answer, over_socket):
        assert refused.status_code == 403
        assert refused.headers["x-ratelimit-remaining"] == "0"
        retry = int(refused.headers["retry-after"])
        assert 1 <= retry <= 3900
        assert int(refused.headers["x-ratelimit-reset"]) >= int(served.github.clock.time()) + retry - 1
        assert "API rate limit exceeded" in refused.json()["message"]
        assert "nothing was sent to GitHub" in refused.json()["message"]


@pytest.fixture
def fake_clock() -> FakeClock:
    """This module's writes wait for their slots as on a real clock (see TickingClock)."""
    return TickingClock()


def test_writes_of_one_pool_reach_github_a_second_apart(served: Served) -> None:
    gh = served.github.gh
    mark = gh.mark()
    statuses: list[int] = []

    def post(k: int) -> None:
        with served.tcp() as client:
            statuses.append(client.post("/repos/o/r/issues/1/comments", json={"body": f"c{k}"}).status_code)

    threads = [threading.Thread(target=post, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    writes = [c for c in gh.ledger[mark:] if c.method == "POST"]
    assert len(writes) == 4 and 403 not in statuses
    times = sorted(c.time for c in writes)
    assert all(b - a >= 1.0 - 1e-6 for a, b in zip(times, times[1:])), times


def test_a_write_past_its_patience_is_deferred_with_when_to_come_back(
        clone: Path, github: ServedDouble, short_dir: Path, isolated_env: Path) -> None:
    # the pool's admission: one content-creating write an hour; 5 s of patience: told at once
    for key, value in (("sluice.writeRate", "1/h"), ("sluice.writeBurst", "1"), ("sluice.writePatience", "5s")):
        git(clone, "config", key, value)
    served = start_serving(clone, github, isolated_env / ".local" / "state" / "git-sluice", short_dir / "s.sock")
    try:
        gh = github.gh
        mark = gh.mark()
        with served.unix() as client:
            first = client.post("/repos/o/r/issues/1/comments", json={"body": "one"})
            second = client.post("/repos/o/r/issues/1/comments", json={"body": "two"})
            edit = client.patch("/repos/o/r/issues/1", json={"title": "t"})  # not content-creating
        assert first.status_code != 403 and edit.status_code != 403
        assert second.status_code == 403
        assert "secondary rate limit" in second.json()["message"]
        assert 3590 <= int(second.headers["retry-after"]) <= 3602
        assert len([c for c in gh.ledger[mark:] if c.method == "POST"]) == 1
    finally:
        served.stop()
