"""Writes as GitHub takes them: issue comments over REST and who may write them.

Time is the double's FakeClock throughout; nothing here sleeps. Some tests
call the pipeline directly (no sockets): the same answers a served double
gives, without a port.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from git_sluice.clock import FakeClock
from git_sluice.double import GitHubDouble, serve
from git_sluice.double.pipeline import Request, Response, handle
from git_sluice.double.testing import ServedDouble

T0 = 1_800_000_000  # the FakeClock's start


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
    # the ledger: each write counted once against core
    posts = gh.calls(method="POST")
    assert [(c.status, c.counted, c.cost) for c in posts] == [(201, True, 1)] * 2
    assert posts[0].endpoint == "POST /repos/{o}/{r}/issues/{n}/comments"
    assert gh.counted(pool="user:alice", resource="core") == 3


def test_the_comment_list_pages_and_is_free_to_revalidate_until_a_comment_lands(
    github: ServedDouble, fake_clock: FakeClock, alice: httpx.Client, pr: int
) -> None:
    gh = github.gh
    for word in ("one", "two", "three"):
        gh.comment("o/r", pr, word, author="bob")  # world-building: no write, no ledger entry
    assert gh.calls() == []
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
    assert [c.status for c in gh.calls(method="POST")] == [401, 404, 404, 404, 403, 403, 400] + [422] * 5


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
    writers = [c.pool for c in gh.calls(path="/comments$", status=201)]
    assert writers == ["installation:43", "installation:43", "installation:44"]


def test_a_scenario_declares_who_may_write() -> None:
    from git_sluice.double.scenario import load_scenario

    gh = GitHubDouble(clock=FakeClock())
    load_scenario(gh, {
        "tokens": [{"token": "tok-reader", "user": "carol", "write": False}, {"token": "tok-alice", "user": "alice"}],
        "repos": [{"name": "o/r", "issues": [{"title": "t"}]}],
    })
    assert _comment(gh, token="tok-reader").status == 403
    assert _comment(gh).status == 201


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
