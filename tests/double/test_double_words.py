"""GitHub's words and headers where a kind double would differ.

Both wordings of a spent limit; 304s without Content-Type or Link;
Last-Modified only on single objects; secondary limits per endpoint; a
GraphQL query that runs too long answered 502.
"""

from __future__ import annotations

import httpx
import pytest

from git_sluice.double.testing import ServedDouble

LIST = "/repos/o/r/pulls?per_page=1"


def test_a_spent_limit_says_exceeded_then_already_exceeded(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.set_limit("user:alice", "core", limit=1)
    assert alice.get("/repos/o/r").status_code == 200
    first, second = alice.get("/repos/o/r"), alice.get("/repos/o/r")
    assert first.json()["message"] == "API rate limit exceeded for user ID 1."
    assert second.json()["message"] == "API rate limit already exceeded for user ID 1."
    assert second.headers["x-ratelimit-remaining"] == "0"
    github.clock.advance(3600)  # a new window starts with the first wording again
    assert alice.get("/repos/o/r").status_code == 200
    assert alice.get("/repos/o/r").json()["message"] == "API rate limit exceeded for user ID 1."


@pytest.mark.parametrize(("knob", "word"), [("exceeded", "exceeded"), ("already", "already exceeded")])
def test_the_wording_can_be_fixed(github: ServedDouble, alice: httpx.Client, knob: str, word: str) -> None:
    gh = github.gh
    gh.primary_message = knob
    gh.set_limit("user:alice", "core", limit=0)
    assert [alice.get("/repos/o/r").json()["message"] for _ in range(2)] == [
        f"API rate limit {word} for user ID 1."
    ] * 2


def test_a_304_carries_no_content_type_and_no_link(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    for i in range(3):
        gh.open_pr("o/r", head_ref=f"f{i}")
    first = alice.get(LIST)
    assert "link" in first.headers and first.headers["content-type"].startswith("application/json")
    again = alice.get(LIST, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    for name in ("content-type", "link", "x-github-media-type"):
        assert name not in again.headers
    assert again.headers["etag"] == first.headers["etag"] and "x-ratelimit-remaining" in again.headers


def test_last_modified_only_on_single_objects(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    n = gh.open_pr("o/r", head_ref="a")
    sha = gh.pr("o/r", n).head_sha
    gh.add_check_run("o/r", sha, "ci")
    for single in ("/repos/o/r", f"/repos/o/r/pulls/{n}", "/user"):
        assert "last-modified" in alice.get(single).headers, single
    lists = ("/repos/o/r/pulls", f"/repos/o/r/commits/{sha}/check-runs", f"/repos/o/r/commits/{sha}/status",
             "/search/issues?q=repo:o/r")
    for listing in lists:
        answer = alice.get(listing)
        assert answer.status_code == 200 and "last-modified" not in answer.headers, listing
    # If-Modified-Since alone on a list is no question GitHub answers with a 304
    stamp = alice.get(f"/repos/o/r/pulls/{n}").headers["last-modified"]
    assert alice.get("/repos/o/r/pulls", headers={"If-Modified-Since": stamp}).status_code == 200


def test_secondary_points_are_counted_per_endpoint(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.secondary_points_per_minute = {"core": 5, "graphql": 2000}
    assert [alice.get("/repos/o/r/pulls").status_code for _ in range(6)] == [200] * 5 + [403]
    # another endpoint has its own 900 (here 5) points, the same pool notwithstanding
    assert [alice.get("/repos/o/r").status_code for _ in range(5)] == [200] * 5
    assert alice.get("/repos/o/r/pulls?state=closed").status_code == 403  # the query is the same endpoint
    github.clock.advance(60)
    assert alice.get("/repos/o/r/pulls").status_code == 200


def test_the_default_is_900_points_a_minute_per_endpoint(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    assert gh.secondary_points_per_minute["core"] == 900
    for _ in range(900):
        gh.secondary.spend("user:alice", "core GET /repos/{o}/{r}/pulls", github.clock.time(), 1)
    assert alice.get("/repos/o/r/pulls").status_code == 403
    assert alice.get("/repos/o/r").status_code == 200


QUERY = "query { repository(owner: \"o\", name: \"r\") { pullRequests(first: 100) { nodes { number } } } }"


def test_a_graphql_query_that_runs_too_long_is_a_502(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.graphql_timeout_nodes = 50  # a query over 50 nodes "runs past GitHub's 10 s"
    slow = alice.post("/graphql", json={"query": QUERY})
    assert slow.status_code == 502
    assert "timeout" in slow.json()["errors"][0]["message"]
    assert gh.calls()[-1].counted  # GitHub still charges a query that timed out
    small = "query { repository(owner: \"o\", name: \"r\") { pullRequests(first: 10) { nodes { number } } } }"
    assert alice.post("/graphql", json={"query": small}).status_code == 200

    gh.graphql_timeout_nodes = None
    gh.fault("graphql_timeout", times=1)
    assert alice.post("/graphql", json={"query": small}).status_code == 502
    assert alice.post("/graphql", json={"query": small}).status_code == 200


def test_the_ledger_names_each_calls_endpoint_and_the_busiest_minute(
    github: ServedDouble, alice: httpx.Client, http: httpx.Client
) -> None:
    gh = github.gh
    for _ in range(3):
        alice.get("/repos/o/r/pulls?state=open")
        github.clock.advance(10)
    alice.get("/repos/o/r")
    github.clock.advance(55)  # the first call leaves the minute
    alice.get("/repos/o/r/pulls?state=closed")
    assert gh.calls()[0].endpoint == "GET /repos/{o}/{r}/pulls"
    points, endpoint = gh.busiest_minute(resource="core")
    assert points == 3 and endpoint == gh.calls()[0].endpoint
    answer = http.get(f"{github.url}/_double/busiest_minute?resource=core").json()
    assert answer == {"result": {"points": 3, "endpoint": endpoint}}
