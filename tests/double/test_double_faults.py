"""Every fault kind, how it matches, how long it lasts, and what the ledger records."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from git_sluice.double import DoubleError
from git_sluice.double.testing import ServedDouble

VIEWER = {"query": "{ viewer { login } }"}


def test_status_fault_matches_method_path_and_query_for_its_times(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.fault("status", path=r"^GET /repos/o/r/pulls\?state=open", code=502, times=2)
    assert alice.get("/repos/o/r/pulls", params={"state": "closed"}).status_code == 200
    broken = alice.get("/repos/o/r/pulls", params={"state": "open"})
    assert broken.status_code == 502 and broken.json()["message"] == "Server Error"
    assert "x-ratelimit-remaining" in broken.headers
    assert alice.get("/repos/o/r/pulls", params={"state": "open"}).status_code == 502
    assert alice.get("/repos/o/r/pulls", params={"state": "open"}).status_code == 200  # used up
    assert [c.status for c in gh.ledger] == [200, 502, 502, 200]
    assert [c.counted for c in gh.ledger] == [True, False, False, True]
    assert gh.faults.active() == []


def test_a_fault_without_path_or_times_lasts_until_cleared(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    fid = gh.fault("status", code=503, message="Unavailable for a test")
    assert alice.get("/repos/o/r").json()["message"] == "Unavailable for a test"
    assert alice.post("/graphql", json=VIEWER).status_code == 503
    gh.clear_faults(fid)
    assert alice.get("/repos/o/r").status_code == 200


def test_hang_is_a_real_wait_and_a_client_timeout_is_real(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.fault("hang", path="/repos/o/r$", seconds=0.3, times=1)
    with pytest.raises(httpx.ReadTimeout):
        alice.get("/repos/o/r", timeout=0.05)
    answered = alice.get("/repos/o/r")  # the fault was used up by the first
    assert answered.status_code == 200
    gh.fault("hang", path="/repos/o/r$", seconds=0.1, times=1)
    assert alice.get("/repos/o/r", timeout=2).status_code == 200  # a hang then the normal answer


def test_drop_closes_the_connection_without_an_answer(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.fault("drop", path="pulls", times=1)
    with pytest.raises(httpx.RemoteProtocolError):
        alice.get("/repos/o/r/pulls")
    assert gh.calls()[-1].status == 0 and gh.calls()[-1].counted is False
    assert alice.get("/repos/o/r/pulls").status_code == 200


def test_truncate_cuts_a_counted_200_in_half(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.open_pr("o/r", head_ref="a")
    whole = alice.get("/repos/o/r/pulls")
    gh.fault("truncate", path="pulls", times=1)
    cut = alice.get("/repos/o/r/pulls", headers={"If-None-Match": whole.headers["etag"]})
    assert cut.status_code == 200  # a truncated answer is never a 304
    assert cut.content == whole.content[: len(whole.content) // 2]
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.content)
    gh.fault("truncate", path="graphql", times=1)
    with pytest.raises(json.JSONDecodeError):
        alice.post("/graphql", json=VIEWER).json()
    assert gh.counted(resource="core") == 2 and gh.counted(resource="graphql") == 1


def test_not_json_is_a_200_html_page(github: ServedDouble, alice: httpx.Client) -> None:
    github.gh.fault("not_json", times=1)
    page = alice.get("/repos/o/r")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text.lstrip().startswith("<!DOCTYPE html>")
    assert github.gh.calls()[-1].counted is False


@pytest.mark.parametrize(
    ("value", "expected"),
    [("past", str(1_800_000_000 - 3600)), ("absurd", str(1_800_000_000 + 10 * 365 * 86400)),
     ("garbage", "soon"), (1_800_000_123.0, "1800000123"), (1_800_000_123.5, "1800000123.5")],
)
def test_reset_fault_overrides_the_reset_header(
    github: ServedDouble, alice: httpx.Client, value: object, expected: str
) -> None:
    github.gh.fault("reset", value=value, times=1)
    assert alice.get("/repos/o/r").headers["x-ratelimit-reset"] == expected
    assert alice.get("/repos/o/r").headers["x-ratelimit-reset"] == str(1_800_000_000 + 3600)


@pytest.mark.parametrize("status", [403, 429])
def test_primary_fault_answers_as_a_spent_limit(github: ServedDouble, alice: httpx.Client, status: int) -> None:
    gh = github.gh
    gh.fault("primary", path="pulls", status=status, times=1)
    gh.fault("reset", path="pulls", value="past", times=1)  # faults combine: a spent limit with a stale reset
    spent = alice.get("/repos/o/r/pulls")
    assert spent.status_code == status
    assert spent.json()["message"] == "API rate limit exceeded for user ID 1."
    assert spent.headers["x-ratelimit-remaining"] == "0"
    assert spent.headers["x-ratelimit-reset"] == str(1_800_000_000 - 3600)
    assert gh.remaining("user:alice", "core") == 5000  # a fault, not the real bucket


@pytest.mark.parametrize(("status", "retry_after"), [(403, 3600), (429, None)])
def test_secondary_fault(github: ServedDouble, alice: httpx.Client, status: int, retry_after: int | None) -> None:
    github.gh.fault("secondary", status=status, retry_after=retry_after, times=1)
    refused = alice.get("/repos/o/r")
    assert refused.status_code == status
    assert refused.json()["message"].startswith("You have exceeded a secondary rate limit.")
    assert refused.headers.get("retry-after") == (None if retry_after is None else str(retry_after))
    assert refused.headers["x-ratelimit-remaining"] == "5000"


@pytest.mark.parametrize("kind", ["RATE_LIMITED", "RATE_LIMIT"])
def test_graphql_rate_limited_fault(github: ServedDouble, alice: httpx.Client, kind: str) -> None:
    gh = github.gh
    gh.fault("graphql_rate_limited", type=kind, times=1)
    assert alice.get("/repos/o/r").status_code == 200  # only GraphQL is touched
    answer = alice.post("/graphql", json=VIEWER)
    assert answer.status_code == 200 and answer.headers["x-ratelimit-remaining"] == "0"
    (error,) = answer.json()["errors"]
    assert error["type"] == kind and error["message"] == "API rate limit exceeded for user ID 1."
    if kind == "RATE_LIMIT":
        assert error["code"] == "graphql_rate_limit"
    assert gh.calls()[-1].counted is False
    assert alice.post("/graphql", json=VIEWER).json()["data"]["viewer"]["login"] == "alice"


def test_graphql_partial_fault_nulls_one_field_with_an_error(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.open_pr("o/r", head_ref="a")
    gh.open_pr("o/r", head_ref="b")
    gh.fault("graphql_partial", times=1)
    query = ('{ repository(owner: "o", name: "r") { a: pullRequest(number: 1) { number } '
             "b: pullRequest(number: 2) { number } } rateLimit { cost } }")
    body = alice.post("/graphql", json={"query": query}).json()
    assert body["data"]["repository"] == {"a": None, "b": {"number": 2}}
    assert body["data"]["rateLimit"] == {"cost": 1}
    (error,) = body["errors"]
    assert error["path"] == ["repository", "a"] and error["locations"]
    assert gh.calls()[-1].counted is True  # GitHub charges a partial answer
    assert "errors" not in alice.post("/graphql", json={"query": query}).json()


def test_bad_faults_are_refused_plainly(github: ServedDouble) -> None:
    gh = github.gh
    with pytest.raises(DoubleError, match="fault kind"):
        gh.fault("explode")
    with pytest.raises(DoubleError, match="takes"):
        gh.fault("drop", code=500)
    with pytest.raises(DoubleError, match="403 or 429"):
        gh.fault("primary", status=500)
    with pytest.raises(DoubleError, match="reset fault value"):
        gh.fault("reset", value="tomorrow")


def test_a_held_call_has_reached_github_before_it_is_answered(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    mark = gh.mark()
    hang = gh.fault("hang", path="/repos/o/r$", seconds=30.0)
    statuses: list[int] = []
    thread = threading.Thread(target=lambda: statuses.append(alice.get("/repos/o/r").status_code))
    thread.start()
    deadline = time.monotonic() + 10
    while gh.requests(since=mark) == 0:
        assert time.monotonic() < deadline, "the held call never arrived"
        time.sleep(0.01)
    assert gh.calls(since=mark) == []  # not answered yet …
    assert gh.requests(since=mark, pool="user:alice", path="/repos/o/r$") == 1  # … but it reached the double
    assert gh.requests(since=mark, pool="user:bob") == 0
    gh.clear_faults(hang)
    thread.join(timeout=10)
    assert statuses == [200]
    assert gh.requests(since=mark) == 1 and [c.status for c in gh.calls(since=mark)] == [200]
