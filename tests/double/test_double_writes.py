"""Writes as GitHub takes them: issue comments over REST and GraphQL, who may write, and the
content-creation limits (80 a minute, 500 an hour per pool) a pacing proxy must stay inside.

Time is the double's FakeClock throughout; nothing here sleeps. The bulk tests
call the pipeline directly (no sockets): hundreds of writes in a blink, the
same answers a served double gives.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import given, settings
from hypothesis import strategies as st

from git_sluice.clock import FakeClock
from git_sluice.double import GitHubDouble, serve
from git_sluice.double.pipeline import SECONDARY_DOCS, Request, Response, handle
from git_sluice.double.testing import ServedDouble

T0 = 1_800_000_000  # the FakeClock's start
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID of this answer."
)
ADD_COMMENT = """
mutation($id: ID!, $body: String!) {
  addComment(input: {subjectId: $id, body: $body, clientMutationId: "m1"}) {
    clientMutationId
    commentEdge { node { id databaseId body author { login } } }
    subject { __typename id }
  }
}"""


def _no_sleep(seconds: float, released: object) -> None:
    raise AssertionError("no hang fault in these tests")


def _call(gh: GitHubDouble, method: str, path: str, token: str | None = "tok-alice", body: object = None) -> Response:
    """One request straight through the pipeline, as the server would hand it over."""
    headers = {"authorization": f"token {token}"} if token else {}
    raw = json.dumps(body).encode() if body is not None else b""
    path, _, query = path.partition("?")
    return handle(gh, Request(method, path, query, headers, raw, base_url="http://double"), _no_sleep)


def _comment(gh: GitHubDouble, number: int = 1, token: str = "tok-alice", body: str = "hi") -> Response:
    return _call(gh, "POST", f"/repos/o/r/issues/{number}/comments", token, {"body": body})


def _header(answer: Response, name: str) -> str | None:
    return next((v for k, v in answer.headers if k.lower() == name.lower()), None)


def _double(clock: FakeClock | None = None) -> GitHubDouble:
    """alice (tok-alice), bob (tok-bob), repository o/r with pull request #1: unserved."""
    gh = GitHubDouble(clock=clock or FakeClock())
    gh.add_token("tok-alice", user="alice")
    gh.add_token("tok-bob", user="bob")
    gh.add_repo("o/r")
    gh.open_pr("o/r", head_ref="topic", title="t")
    return gh


def _keys() -> tuple[bytes, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    return private, public


def _mint(github: ServedDouble, private: bytes, body: dict[str, object] | None = None, installation: int = 42) -> str:
    now = github.clock.time()
    bearer = jwt.encode({"iat": int(now) - 60, "exp": int(now) + 540, "iss": "7"}, private, "RS256")
    minted = httpx.post(f"{github.url}/app/installations/{installation}/access_tokens",
                        headers={"Authorization": f"Bearer {bearer}"}, json=body)
    assert minted.status_code == 201, minted.text
    token: str = minted.json()["token"]
    return token


@pytest.fixture
def pr(github: ServedDouble) -> int:
    return github.gh.open_pr("o/r", head_ref="topic", title="t")


# -- REST: the comment and its read-back -------------------------------------------------------
def test_a_comment_answers_201_in_githubs_shape_and_reads_back(
    github: ServedDouble, fake_clock: FakeClock, alice: httpx.Client, pr: int
) -> None:
    gh, clock = github.gh, fake_clock
    issue = gh.open_issue("o/r", "a bug", author="bob")
    before = gh.pr("o/r", pr).updated_at
    clock.advance(30)
    made = alice.post(f"/repos/o/r/issues/{pr}/comments", json={"body": "ship it"})
    assert made.status_code == 201
    body = made.json()
    assert made.headers["location"] == body["url"] == f"{github.url}/repos/o/r/issues/comments/{body['id']}"
    assert body["body"] == "ship it" and body["user"]["login"] == "alice" and body["user"]["type"] == "User"
    assert body["html_url"] == f"https://github.com/o/r/pull/{pr}#issuecomment-{body['id']}"
    assert body["issue_url"] == f"{github.url}/repos/o/r/issues/{pr}"  # a pull request's comments are its issue's
    assert body["created_at"] == body["updated_at"] == "2027-01-15T08:00:30Z"
    assert body["node_id"].startswith("IC_") and body["performed_via_github_app"] is None
    assert {"author_association", "reactions"} <= set(body)
    on_issue = alice.post(f"/repos/o/r/issues/{issue}/comments", json={"body": "me too"})
    assert on_issue.status_code == 201 and on_issue.json()["html_url"].endswith(f"/issues/{issue}#issuecomment-2")

    assert [(c.id, c.body, c.author) for c in gh.comments("o/r", pr)] == [(body["id"], "ship it", "alice")]
    assert gh.pr("o/r", pr).updated_at == T0 + 30 > before and gh.pr("o/r", pr).comments == 1
    listed = alice.get(f"/repos/o/r/issues/{pr}/comments")
    assert listed.status_code == 200 and listed.json() == [body]
    # the ledger: each write counted once against core, created, content-creating
    posts = gh.calls(method="POST")
    assert [(c.status, c.counted, c.cost, c.created, c.content) for c in posts] == [(201, True, 1, True, True)] * 2
    assert posts[0].endpoint == "POST /repos/{o}/{r}/issues/{n}/comments"
    assert gh.counted(pool="user:alice", resource="core") == 3


def test_the_comment_list_pages_and_is_free_to_revalidate_until_a_comment_lands(
    github: ServedDouble, fake_clock: FakeClock, alice: httpx.Client, pr: int
) -> None:
    gh = github.gh
    for word in ("one", "two", "three"):
        gh.comment("o/r", pr, word, author="bob")  # world-building: no write, no ledger entry
    assert gh.writes() == [] and gh.calls() == []
    first = alice.get(f"/repos/o/r/issues/{pr}/comments", params={"per_page": 2})
    assert [c["body"] for c in first.json()] == ["one", "two"]
    assert 'rel="next"' in first.headers["link"] and "last-modified" not in first.headers  # a list, not an object
    etag = first.headers["etag"]
    fake_clock.advance(60)
    gh.star("o/r", "carol")  # repository activity: the comments embed no repository
    again = alice.get(f"/repos/o/r/issues/{pr}/comments", params={"per_page": 2}, headers={"If-None-Match": etag})
    assert again.status_code == 304 and gh.calls()[-1].counted is False
    assert alice.post(f"/repos/o/r/issues/{pr}/comments", json={"body": "four"}).status_code == 201
    page2 = alice.get(f"/repos/o/r/issues/{pr}/comments", params={"per_page": 2, "page": 2})
    assert [c["body"] for c in page2.json()] == ["three", "four"]
    moved = alice.get(f"/repos/o/r/issues/{pr}/comments", params={"per_page": 2}, headers={"If-None-Match": etag})
    assert moved.status_code == 304  # page 1 holds the same two comments: still not modified
    whole = alice.get(f"/repos/o/r/issues/{pr}/comments", headers={"If-None-Match": etag})
    assert whole.status_code == 200 and len(whole.json()) == 4 and gh.calls()[-1].counted is True


# -- who may write ---------------------------------------------------------------------------------
def test_writes_are_refused_as_github_refuses_them(github: ServedDouble, alice: httpx.Client, http: httpx.Client,
                                                   pr: int) -> None:
    gh = github.gh
    gh.add_token("tok-reader", user="carol", write=False)
    gh.add_token("tok-elsewhere", user="dave", repos=["o/other"])
    gh.add_repo("o/private", private=True)
    url = f"/repos/o/r/issues/{pr}/comments"

    def post(path: str, token: str | None, **kw: object) -> httpx.Response:
        headers = {"Authorization": f"token {token}"} if token else {}
        return http.post(github.url + path, headers=headers, **kw)  # type: ignore[arg-type]

    nobody = post(url, None, json={"body": "x"})
    assert nobody.status_code == 401 and nobody.json()["message"] == "Requires authentication"
    assert post("/repos/o/missing/issues/1/comments", "tok-alice", json={"body": "x"}).status_code == 404
    assert post("/repos/o/r/issues/99/comments", "tok-alice", json={"body": "x"}).status_code == 404
    assert post(url, "tok-elsewhere", json={"body": "x"}).status_code == 404  # cannot read it: hidden, not forbidden
    reader = post(url, "tok-reader", json={"body": "x"})
    assert reader.status_code == 403
    assert reader.json()["message"] == "Resource not accessible by personal access token"
    assert post(url, "tok-reader", content=b"{").status_code == 403  # permission before the body is read
    assert post(url, "tok-alice", content=b"{not json").status_code == 400
    for sent in ({}, {"body": ""}, {"body": "  \n"}, {"body": 3}, ["body"]):
        refused = post(url, "tok-alice", json=sent)
        assert refused.status_code == 422, sent
        assert refused.json()["message"] == "Validation Failed"
        assert refused.json()["errors"] == [{"resource": "IssueComment", "field": "body", "code": "missing_field"}]
    assert gh.comments("o/r", pr) == []
    assert alice.get(url).json() == []
    assert gh.writes(created=True) == []
    assert len(gh.writes(created=False)) == 12 and all(c.content for c in gh.writes())


def test_an_installation_writes_only_with_the_permission_and_as_its_bot(github: ServedDouble, pr: int) -> None:
    gh = github.gh
    private, public = _keys()
    gh.add_app(app_id=7, public_key_pem=public, slug="pacer")
    gh.add_installation(app_id=7, installation_id=42, repos=["o/r"])  # the default: read only
    gh.add_installation(app_id=7, installation_id=43, repos=["o/r"], permissions={"issues": "write"})
    gh.add_installation(app_id=7, installation_id=44, repos=["o/r"], permissions={"pull_requests": "write"})
    issue = gh.open_issue("o/r", "a bug")

    def post(token: str, number: int) -> httpx.Response:
        return httpx.post(f"{github.url}/repos/o/r/issues/{number}/comments",
                          headers={"Authorization": f"token {token}"}, json={"body": "from the app"})

    reader = post(_mint(github, private, installation=42), pr)
    assert reader.status_code == 403 and reader.json()["message"] == "Resource not accessible by integration"
    writer = _mint(github, private, installation=43)
    made = post(writer, pr)
    assert made.status_code == 201
    assert made.json()["user"]["login"] == "pacer[bot]" and made.json()["user"]["type"] == "Bot"
    assert made.json()["performed_via_github_app"]["slug"] == "pacer"
    assert post(writer, issue).status_code == 201  # issues: write covers issues and pull requests
    pulls_only = _mint(github, private, installation=44)
    assert post(pulls_only, pr).status_code == 201
    assert post(pulls_only, issue).status_code == 403  # pull_requests: write does not reach a plain issue
    narrowed = _mint(github, private, {"permissions": {"issues": "read"}}, installation=43)
    assert post(narrowed, pr).status_code == 403  # a token narrowed at minting stays narrow
    assert [c.pool for c in gh.writes(created=True)] == ["installation:43", "installation:43", "installation:44"]


# -- content-creation limits ---------------------------------------------------------------------
def test_the_81st_comment_in_a_minute_is_a_secondary_limit_with_the_exact_wait() -> None:
    clock = FakeClock()
    gh = _double(clock)
    for i in range(80):
        assert _comment(gh, body=f"c{i}").status == 201
        clock.advance(0.5)  # 80 in 40 s: under 900 points (80 x 5), over nothing else
    clock.advance(10)  # t = 50 s
    refused = _comment(gh)
    assert refused.status == 403
    assert json.loads(refused.body) == {"message": SECONDARY_MESSAGE, "documentation_url": SECONDARY_DOCS}
    assert _header(refused, "retry-after") == "10"  # the first comment, at t = 0, leaves the minute at 60 s
    assert _header(refused, "x-ratelimit-remaining") == "4920"  # a secondary limit, not a spent allowance
    last = gh.calls()[-1]
    assert (last.status, last.counted, last.cost, last.content, last.created) == (403, False, 0, True, False)
    assert len(gh.comments("o/r", 1)) == 80
    clock.advance(9)
    assert _header(_comment(gh), "retry-after") == "1"
    clock.advance(1)
    assert _comment(gh).status == 201  # t = 60: the first has left the minute
    assert _comment(gh).status == 403  # and only the first
    assert len(gh.writes(pool="user:alice", created=True)) == 81
    assert len(gh.writes(pool="user:alice", created=False)) == 3


def test_the_501st_comment_in_an_hour_is_refused_until_the_first_leaves_the_hour() -> None:
    clock = FakeClock()
    gh = _double(clock)
    for i in range(500):
        assert _comment(gh).status == 201, i
        clock.advance(7)  # 500 in 3,500 s: about 8.6 a minute, far under 80
    refused = _comment(gh)  # t = 3,500
    assert refused.status == 403 and _header(refused, "retry-after") == "100"
    clock.advance(100)
    assert _comment(gh).status == 201
    assert _comment(gh).status == 403 and _header(_comment(gh), "retry-after") == "7"


def test_pools_are_limited_apart_and_rest_and_graphql_share_one_count() -> None:
    clock = FakeClock()
    gh = _double(clock)
    gh.set_content_limits(per_minute=3, per_hour=10)
    node = gh.pr("o/r", 1).node_id
    assert [_comment(gh).status for _ in range(2)] == [201, 201]
    mutation = _call(gh, "POST", "/graphql", body={"query": ADD_COMMENT, "variables": {"id": node, "body": "gql"}})
    assert json.loads(mutation.body)["data"]["addComment"]["commentEdge"]["node"]["body"] == "gql"
    assert _comment(gh).status == 403  # 2 over REST + 1 over GraphQL: the pool's minute is full
    over = _call(gh, "POST", "/graphql", body={"query": ADD_COMMENT, "variables": {"id": node, "body": "more"}})
    assert over.status == 403 and json.loads(over.body)["message"] == SECONDARY_MESSAGE
    assert _header(over, "retry-after") == "60"
    assert _comment(gh, token="tok-bob").status == 201  # bob's pool is his own
    assert _call(gh, "GET", "/repos/o/r/issues/1/comments").status == 200  # reads are not content
    gh.comment("o/r", 1, "world-building")  # not a write: spends no slot
    gh.set_content_limits(per_minute=1, per_hour=1, pool="user:bob")
    assert _comment(gh, token="tok-bob").status == 403
    assert [c.created for c in gh.writes(pool="user:alice")] == [True, True, True, False, False]


def test_without_rate_limits_nothing_is_refused() -> None:
    gh = GitHubDouble(clock=FakeClock(), enterprise=True)
    gh.add_token("tok-alice", user="alice")
    gh.add_repo("o/r")
    gh.open_pr("o/r", head_ref="topic")
    gh.set_content_limits(per_minute=1, per_hour=1)
    answers = [_comment(gh) for _ in range(5)]
    assert [a.status for a in answers] == [201] * 5 and all(_header(a, "retry-after") is None for a in answers)


@settings(max_examples=60, deadline=None)
@given(
    per_minute=st.integers(1, 4),
    extra_per_hour=st.integers(0, 6),
    gaps=st.lists(
        st.one_of(st.integers(0, 160).map(lambda n: n / 2), st.sampled_from([600.0, 1800.0, 3599.5, 3600.0])),
        min_size=1,
        max_size=40,
    ),
)
def test_a_write_is_refused_exactly_when_a_window_is_full_and_retry_after_is_enough(
    per_minute: int, extra_per_hour: int, gaps: list[float]
) -> None:
    """Against a plain model: accepted iff fewer than the limit were made in the last 60 s (and
    3,600 s); a refusal's retry-after is the wait the model computes, and waiting it is enough."""
    per_hour = per_minute + extra_per_hour
    clock = FakeClock()
    gh = _double(clock)
    gh.set_content_limits(per_minute=per_minute, per_hour=per_hour)
    made: list[float] = []
    for gap in gaps:
        clock.advance(gap)
        now = clock.time()
        waits = [
            inside[-limit] + window - now
            for limit, window in ((per_minute, 60.0), (per_hour, 3600.0))
            if len(inside := [t for t in made if t > now - window]) >= limit
        ]
        answer = _comment(gh)
        if not waits:
            assert answer.status == 201
            made.append(now)
            continue
        assert answer.status == 403
        retry = int(_header(answer, "retry-after") or "0")
        assert retry == max(1, math.ceil(max(waits)))
        clock.advance(retry)
        assert _comment(gh).status == 201  # obeying retry-after is never refused
        made.append(clock.time())
    assert [c.time for c in gh.writes(created=True)] == made


def test_writes_give_the_spacing_a_pacing_proxy_is_judged_by(
    github: ServedDouble, fake_clock: FakeClock, alice: httpx.Client, http: httpx.Client, pr: int
) -> None:
    gh, clock = github.gh, fake_clock
    mark = gh.mark()
    for gap in (0, 2, 5):
        clock.advance(gap)
        alice.get(f"/repos/o/r/pulls/{pr}")  # reads between writes are not writes
        alice.post(f"/repos/o/r/issues/{pr}/comments", json={"body": "paced"})
    times = [c.time for c in gh.writes(pool="user:alice", since=mark, created=True)]
    assert [b - a for a, b in zip(times, times[1:])] == [2, 5]
    over_http = http.get(f"{github.url}/_double/writes", params={"pool": "user:alice", "created": "true"}).json()
    assert [c["time"] for c in over_http["calls"]] == times and over_http["next"] == gh.mark()
    assert all(c["content"] and c["endpoint"] == "POST /repos/{o}/{r}/issues/{n}/comments" for c in over_http["calls"])
    limits = http.post(f"{github.url}/_double/set_content_limits", json={"per_minute": 1, "per_hour": 500})
    assert limits.json() == {"result": None}
    assert alice.post(f"/repos/o/r/issues/{pr}/comments", json={"body": "too soon"}).status_code == 403
    assert http.get(f"{github.url}/_double/writes", params={"created": "false"}).json()["calls"][0]["status"] == 403


# -- GraphQL: addComment ------------------------------------------------------------------------
def test_add_comment_makes_the_same_comment_for_1_point_and_5_secondary(
    github: ServedDouble, alice: httpx.Client, pr: int
) -> None:
    gh = github.gh
    issue = gh.open_issue("o/r", "a bug")
    node = gh.pr("o/r", pr).node_id
    answer = alice.post("/graphql", json={"query": ADD_COMMENT, "variables": {"id": node, "body": "via graphql"}})
    assert answer.status_code == 200 and "errors" not in answer.json()
    data = answer.json()["data"]["addComment"]
    (made,) = gh.comments("o/r", pr)
    assert data == {
        "clientMutationId": "m1",
        "commentEdge": {"node": {"id": made.node_id, "databaseId": made.id, "body": "via graphql",
                                 "author": {"login": "alice"}}},
        "subject": {"__typename": "PullRequest", "id": node},
    }
    assert alice.get(f"/repos/o/r/issues/{pr}/comments").json()[0]["node_id"] == made.node_id
    issue_id = alice.post("/graphql", json={"query": ADD_COMMENT, "variables": {
        "id": gh.world.repos["o/r"].issues[issue].node_id, "body": "on the issue"}}).json()
    assert issue_id["data"]["addComment"]["subject"]["__typename"] == "Issue"
    calls = gh.calls(resource="graphql")
    assert [(c.cost, c.counted, c.mutation, c.content, c.created) for c in calls] == [(1, True, True, True, True)] * 2
    assert gh.used("user:alice", "graphql") == 2
    assert gh.busiest_minute(resource="graphql") == (10, "POST /graphql")  # 5 secondary points a mutation
    read = alice.post("/graphql", json={"query": f'{{ repository(owner: "o", name: "r") {{ pullRequest(number: {pr}) '
                                                  "{ comments(first: 5) { totalCount nodes { body } } } } }"})
    assert read.json()["data"]["repository"]["pullRequest"]["comments"] == {
        "totalCount": 1, "nodes": [{"body": "via graphql"}]}


def test_add_comment_errors_are_githubs_and_make_nothing(github: ServedDouble, alice: httpx.Client, pr: int) -> None:
    gh = github.gh
    gh.add_token("tok-reader", user="carol", write=False)
    node = gh.pr("o/r", pr).node_id

    def ask(token: str, subject: str, body: str) -> Any:
        answer = httpx.post(github.graphql_url, headers={"Authorization": f"token {token}"},
                            json={"query": ADD_COMMENT, "variables": {"id": subject, "body": body}})
        assert answer.status_code == 200
        return answer.json()

    missing = ask("tok-alice", "PR_nope", "x")
    assert missing["data"] == {"addComment": None}
    assert missing["errors"][0]["type"] == "NOT_FOUND"
    assert "Could not resolve to a node with the global id of 'PR_nope'." in str(missing["errors"])
    forbidden = ask("tok-reader", node, "x")
    assert forbidden["errors"][0]["type"] == "FORBIDDEN"
    blank = ask("tok-alice", node, "   ")
    assert blank["errors"][0]["type"] == "UNPROCESSABLE"
    assert gh.comments("o/r", pr) == []
    assert [c.created for c in gh.writes()] == [False, False, False]


def test_a_mutation_weighs_5_points_against_the_graphql_minute(github: ServedDouble, alice: httpx.Client,
                                                                 pr: int) -> None:
    gh = github.gh
    gh.secondary_points_per_minute = {"core": 900, "graphql": 9}
    node = gh.pr("o/r", pr).node_id
    ask = {"query": ADD_COMMENT, "variables": {"id": node, "body": "x"}}
    assert alice.post("/graphql", json=ask).status_code == 200  # 5 of 9
    second = alice.post("/graphql", json=ask)  # 5 + 1 at the door, + 4 is 10: over
    assert second.status_code == 403 and second.json()["message"] == SECONDARY_MESSAGE
    assert second.headers["retry-after"] == "60" and len(gh.comments("o/r", pr)) == 1
    assert alice.post("/graphql", json={"query": "{ viewer { login } }"}).status_code == 200  # 7 of 9


def test_a_scenario_declares_who_may_write_and_the_content_limits() -> None:
    from git_sluice.double.scenario import load_scenario

    gh = GitHubDouble(clock=FakeClock())
    load_scenario(gh, {
        "tokens": [{"token": "tok-reader", "user": "carol", "write": False}, {"token": "tok-alice", "user": "alice"}],
        "content_limits": [{"per_minute": 1, "per_hour": 5}],
        "repos": [{"name": "o/r", "issues": [{"title": "t"}]}],
    })
    assert _comment(gh, token="tok-reader").status == 403
    assert [_comment(gh).status for _ in range(2)] == [201, 403]


@pytest.fixture
def served() -> Iterator[tuple[GitHubDouble, str]]:
    gh = _double()
    with serve(gh) as server:
        yield gh, server.url


def test_a_served_double_answers_the_same(served: tuple[GitHubDouble, str]) -> None:
    gh, url = served
    answer = httpx.post(f"{url}/repos/o/r/issues/1/comments", headers={"Authorization": "token tok-alice"},
                        json={"body": "over the wire"})
    assert answer.status_code == 201 and answer.headers["content-type"].startswith("application/json")
    assert gh.comments("o/r", 1)[0].body == "over the wire"
