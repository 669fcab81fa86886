"""GitHub Enterprise Server: ``/api/v3`` and ``/api/graphql``, rate limiting off (its default) or on."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from git_sluice.clock import FakeClock
from git_sluice.double import GitHubDouble, serve
from git_sluice.double.scenario import load_scenario
from git_sluice.double.server import DoubleServer

QUERY = '{ viewer { login } rateLimit { cost remaining } }'


@pytest.fixture
def ghes() -> Iterator[tuple[GitHubDouble, DoubleServer, httpx.Client]]:
    gh = GitHubDouble(clock=FakeClock(), enterprise=True)
    gh.add_token("tok-alice", user="alice")
    gh.add_repo("o/r")
    for i in range(3):
        gh.open_pr("o/r", head_ref=f"f{i}")
    with serve(gh) as server, httpx.Client(headers={"Authorization": "token tok-alice"}) as client:
        yield gh, server, client


def test_enterprise_paths_and_no_limits(ghes: tuple[GitHubDouble, DoubleServer, httpx.Client]) -> None:
    gh, server, client = ghes
    assert server.url.endswith("/api/v3") and server.graphql_url.endswith("/api/graphql")
    pulls = client.get(f"{server.url}/repos/o/r/pulls?per_page=1")
    assert pulls.status_code == 200 and len(pulls.json()) == 1
    assert not [h for h in pulls.headers if h.lower().startswith("x-ratelimit")]
    assert f"{server.url}/repos/o/r/pulls?" in pulls.headers["link"]  # pages stay under /api/v3
    assert pulls.json()[0]["base"]["repo"]["url"] == f"{server.url}/repos/o/r"
    assert client.get(f"{server.origin}/repos/o/r/pulls").status_code == 404  # github.com's path is not the API
    rate = client.get(f"{server.url}/rate_limit")
    assert rate.status_code == 404 and rate.json()["message"] == "Rate limiting is not enabled."
    answer = client.post(server.graphql_url, json={"query": QUERY})
    assert answer.status_code == 200 and answer.json()["data"] == {"viewer": {"login": "alice"}, "rateLimit": None}
    assert not [h for h in answer.headers if h.lower().startswith("x-ratelimit")]
    assert gh.counted() == 0 and gh.requests() == 4  # nothing counts where nothing is limited
    assert [c.path.split("?")[0] for c in gh.calls()][:2] == ["/repos/o/r/pulls", "/repos/o/r/pulls"]


def test_enterprise_with_limits_on(ghes: tuple[GitHubDouble, DoubleServer, httpx.Client]) -> None:
    gh, server, client = ghes
    gh.rate_limits = True
    gh.set_limit("user:alice", "core", limit=1)
    assert client.get(f"{server.url}/repos/o/r").headers["x-ratelimit-remaining"] == "0"
    assert client.get(f"{server.url}/repos/o/r").status_code == 403
    assert client.get(f"{server.url}/rate_limit").status_code == 200
    answer = client.post(server.graphql_url, json={"query": QUERY}).json()
    assert answer["data"]["rateLimit"]["cost"] == 1


def test_the_control_api_answers_under_the_base_url_too(
    ghes: tuple[GitHubDouble, DoubleServer, httpx.Client],
) -> None:
    gh, server, client = ghes
    assert client.post(f"{server.url}/_double/star", json={"repo": "o/r"}).json() == {"result": None}
    assert client.get(f"{server.origin}/_double/knobs").json()["result"]["enterprise"] is True


def test_a_scenario_or_a_flag_chooses_enterprise(tmp_path: Path) -> None:
    gh = GitHubDouble()
    load_scenario(gh, {"enterprise": True})
    assert (gh.enterprise, gh.rate_limits) == (True, False)
    load_scenario(gh, {"enterprise": True, "rate_limits": True})
    assert (gh.enterprise, gh.rate_limits) == (True, True)

    proc = subprocess.Popen(
        [sys.executable, "-m", "git_sluice.double", "--enterprise", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.endswith("/api/v3")
        assert httpx.get(f"{url}/rate_limit").status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
