"""Primary and secondary limits: headers, windows, spent answers, and the ledger agreeing."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from git_sluice.double.testing import ServedDouble

T0 = 1_800_000_000  # the FakeClock's start


def _rate(answer: httpx.Response) -> tuple[int, int, int, int, str]:
    h = answer.headers
    return (
        int(h["x-ratelimit-limit"]),
        int(h["x-ratelimit-remaining"]),
        int(h["x-ratelimit-used"]),
        int(h["x-ratelimit-reset"]),
        h["x-ratelimit-resource"],
    )


def test_headers_count_down_and_reset_when_the_clock_passes_reset(github: ServedDouble, alice: httpx.Client) -> None:
    gh, clock = github.gh, github.clock
    gh.set_limit("user:alice", "core", limit=3, window=60)
    clock.advance(5)  # the window opens at the first counted call, not before
    assert _rate(alice.get("/repos/o/r")) == (3, 2, 1, T0 + 65, "core")
    clock.advance(10)
    assert _rate(alice.get("/repos/o/r")) == (3, 1, 2, T0 + 65, "core")
    assert _rate(alice.get("/repos/o/r")) == (3, 0, 3, T0 + 65, "core")
    spent = alice.get("/repos/o/r")
    assert spent.status_code == 403
    assert spent.json() == {
        "message": "API rate limit exceeded for user ID 1.",
        "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
    }
    assert _rate(spent) == (3, 0, 3, T0 + 65, "core")
    assert gh.calls()[-1].counted is False and gh.remaining("user:alice", "core") == 0
    clock.advance(49)  # one second short of reset
    assert alice.get("/repos/o/r").status_code == 403
    clock.advance(1)  # at reset: a new window
    fresh = alice.get("/repos/o/r")
    assert fresh.status_code == 200
    assert _rate(fresh) == (3, 2, 1, T0 + 65 + 60, "core")


def test_a_fresh_pool_reports_a_full_window_from_now(github: ServedDouble, alice: httpx.Client) -> None:
    github.clock.advance(100)
    rate = alice.get("/rate_limit")
    assert rate.json()["resources"]["core"] == {"limit": 5000, "used": 0, "remaining": 5000, "reset": T0 + 100 + 3600}
    assert rate.json()["resources"]["search"]["limit"] == 30
    assert rate.json()["rate"] == rate.json()["resources"]["core"]


@pytest.mark.parametrize("status", [403, 429])
def test_a_spent_limit_answers_with_the_chosen_status(github: ServedDouble, alice: httpx.Client, status: int) -> None:
    gh = github.gh
    gh.primary_status = status
    gh.set_limit("user:alice", "core", limit=1, window=3600)
    assert alice.get("/repos/o/r").status_code == 200
    spent = alice.get("/repos/o/r/pulls")
    assert spent.status_code == status
    assert spent.json()["message"].startswith("API rate limit exceeded for")
    assert spent.headers["x-ratelimit-remaining"] == "0"
    assert "retry-after" not in spent.headers


def test_resources_are_separate(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.set_limit("user:alice", "core", limit=1, window=3600)
    alice.get("/repos/o/r")
    assert alice.get("/repos/o/r").status_code == 403
    search = alice.get("/search/issues", params={"q": "repo:o/r"})
    assert search.status_code == 200 and search.headers["x-ratelimit-resource"] == "search"
    graphql = alice.post("/graphql", json={"query": "{ viewer { login } }"})
    assert graphql.json()["data"]["viewer"]["login"] == "alice"


def test_the_unauthenticated_allowance(github: ServedDouble, http: httpx.Client) -> None:
    github.gh.set_limit("anon", "core", limit=2)
    url = f"{github.url}/repos/o/r"
    assert [http.get(url).status_code for _ in range(3)] == [200, 200, 403]
    spent = http.get(url)  # a window's second refusal: GitHub's other wording
    assert spent.json()["message"].startswith("API rate limit already exceeded for 127.0.0.1.")
    assert github.gh.remaining("anon", "core") == 0
    assert http.post(f"{github.url}/graphql", json={"query": "{ viewer { login } }"}).status_code == 401


def test_rate_limit_is_never_counted(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.set_limit("user:alice", "core", limit=1, window=3600)
    alice.get("/repos/o/r")
    for _ in range(3):
        answer = alice.get("/rate_limit")
        assert answer.status_code == 200  # even with core spent
        assert answer.json()["resources"]["core"]["remaining"] == 0
    assert gh.counted(pool="user:alice") == 1
    assert [c.counted for c in gh.calls(path=r"^/rate_limit")] == [False] * 3


def test_rate_limit_can_misreport_graphql_as_github_has(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.set_limit("user:alice", "graphql", limit=1)
    alice.post("/graphql", json={"query": "{ viewer { login } }"})
    assert alice.get("/rate_limit").json()["resources"]["graphql"]["remaining"] == 0
    gh.rate_limit_misreports_graphql = True
    assert alice.get("/rate_limit").json()["resources"]["graphql"]["remaining"] == 1


def _hold(github: ServedDouble, path: str, results: list[int]) -> threading.Thread:
    def run() -> None:
        answer = httpx.get(f"{github.url}{path}", headers={"Authorization": "token tok-alice"}, timeout=60)
        results.append(answer.status_code)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _wait_in_flight(github: ServedDouble, pool: str, n: int) -> None:
    deadline = time.monotonic() + 5
    while github.gh.secondary.in_flight.get(pool, 0) < n:
        assert time.monotonic() < deadline, "held requests never arrived"
        time.sleep(0.01)


@pytest.mark.parametrize(("retry_after", "status"), [(60, 403), (None, 429)])
def test_too_many_in_flight_is_a_secondary_limit(
    github: ServedDouble, alice: httpx.Client, retry_after: int | None, status: int
) -> None:
    gh = github.gh
    gh.secondary_concurrency = 2
    gh.secondary_retry_after = retry_after
    gh.secondary_status = status
    hang = gh.fault("hang", path=r"^GET /repos/o/r/pulls$", seconds=5.0)
    results: list[int] = []
    held = [_hold(github, "/repos/o/r/pulls", results) for _ in range(2)]
    _wait_in_flight(github, "user:alice", 2)
    refused = alice.get("/repos/o/r")
    assert refused.status_code == status
    assert "secondary rate limit" in refused.json()["message"]
    if retry_after is None:
        assert "retry-after" not in refused.headers
    else:
        assert refused.headers["retry-after"] == "60"
    assert refused.headers["x-ratelimit-remaining"] != "0"  # not the primary allowance
    gh.clear_faults(hang)  # lets the held requests go on at once
    for thread in held:
        thread.join(timeout=5)
    assert results == [200, 200]
    assert alice.get("/repos/o/r").status_code == 200
    assert gh.counted(pool="user:alice") == 3  # the refusal is not counted


def test_too_many_points_a_minute_is_a_secondary_limit(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.secondary_points_per_minute = {"core": 3, "graphql": 2000}
    assert [alice.get("/repos/o/r").status_code for _ in range(4)] == [200, 200, 200, 403]
    assert alice.get("/repos/o/r").headers["retry-after"] == "60"
    github.clock.advance(60)
    assert alice.get("/repos/o/r").status_code == 200


def test_the_ledger_agrees_with_the_headers(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    for i in range(3):
        gh.open_pr("o/r", head_ref=f"b{i}")
    last: httpx.Response | None = None
    etag = None
    for i in range(12):
        if i % 3 == 0:
            last = alice.get("/repos/o/r/pulls", headers={"If-None-Match": etag} if etag else {})
            etag = last.headers["etag"]
        elif i % 3 == 1:
            last = alice.get(f"/repos/o/r/pulls/{i}")  # some 404s
        else:
            last = alice.get("/rate_limit")
        limit, remaining, used, _, _ = _rate(last)
        assert used == gh.counted(pool="user:alice", resource="core")
        assert remaining == limit - used == gh.remaining("user:alice", "core")
    query = '{ repository(owner: "o", name: "r") { pullRequests(first: 100) { nodes { number } } } }'
    for _ in range(3):
        answer = alice.post("/graphql", json={"query": query})
        _, remaining, used, _, resource = _rate(answer)
        assert resource == "graphql"
        assert used == gh.counted(pool="user:alice", resource="graphql") == gh.used("user:alice", "graphql")
        assert remaining == 5000 - used
    assert gh.requests() == 15
    assert gh.requests(status=304) == len([c for c in gh.ledger if c.status == 304]) >= 2


def test_pools_are_separate(github: ServedDouble, alice: httpx.Client, http: httpx.Client) -> None:
    gh = github.gh
    gh.add_token("tok-bob", user="bob")
    gh.set_limit("user:alice", "core", limit=1)
    alice.get("/repos/o/r")
    assert alice.get("/repos/o/r").status_code == 403
    bob = http.get(f"{github.url}/repos/o/r", headers={"Authorization": "token tok-bob"})
    assert bob.status_code == 200 and bob.headers["x-ratelimit-remaining"] == "4999"
    assert gh.counted(pool="user:bob") == 1
