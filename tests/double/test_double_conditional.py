"""Conditional requests: per-token ETags, free 304s, Last-Modified, the cache headers."""

from __future__ import annotations

import httpx

from git_sluice.double.testing import ServedDouble

LIST = "/repos/o/r/pulls?state=open&base=main&per_page=100"


def test_a_304_is_free_and_a_200_is_counted(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.open_pr("o/r", head_ref="a")
    first = alice.get(LIST)
    assert first.status_code == 200
    etag = first.headers["etag"]
    assert etag.startswith('W/"') and first.headers["x-ratelimit-remaining"] == "4999"
    assert first.headers["cache-control"] == "private, max-age=60, s-maxage=60"
    assert first.headers["vary"] == "Accept, Authorization, Cookie, X-GitHub-OTP"

    mark = gh.mark()
    again = alice.get(LIST, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["x-ratelimit-remaining"] == "4999"  # not counted …
    assert again.headers["x-ratelimit-used"] == "1"
    assert again.headers["etag"] == etag and "last-modified" not in again.headers  # a list has none
    (call,) = gh.calls(since=mark)
    assert (call.status, call.counted, call.cost) == (304, False, 0)  # … but in the ledger
    assert gh.counted(pool="user:alice") == 1 and gh.requests() == 2

    gh.open_pr("o/r", head_ref="b")  # the set moved: the old ETag no longer matches
    moved = alice.get(LIST, headers={"If-None-Match": etag})
    assert moved.status_code == 200 and moved.headers["etag"] != etag
    assert moved.headers["x-ratelimit-remaining"] == "4998"
    assert gh.counted(pool="user:alice", resource="core") == 2


def test_another_tokens_etag_gets_a_200_and_a_new_etag(
    github: ServedDouble, alice: httpx.Client, http: httpx.Client
) -> None:
    gh = github.gh
    gh.add_token("tok-alice-2", user="alice")  # same user, same pool, another token
    gh.open_pr("o/r", head_ref="a")
    alices = alice.get(LIST).headers["etag"]
    other = http.get(
        f"{github.url}{LIST}", headers={"Authorization": "token tok-alice-2", "If-None-Match": alices}
    )
    assert other.status_code == 200 and other.headers["etag"] != alices
    assert gh.counted(pool="user:alice") == 2  # both counted against the one pool
    # each token's own ETag still earns its 304
    again = http.get(
        f"{github.url}{LIST}",
        headers={"Authorization": "token tok-alice-2", "If-None-Match": other.headers["etag"]},
    )
    assert again.status_code == 304


def test_a_weak_or_strong_or_listed_etag_all_match(github: ServedDouble, alice: httpx.Client) -> None:
    etag = alice.get(LIST).headers["etag"]
    strong = etag.removeprefix("W/")
    assert alice.get(LIST, headers={"If-None-Match": strong}).status_code == 304
    assert alice.get(LIST, headers={"If-None-Match": f'"nope", {etag}'}).status_code == 304
    assert alice.get(LIST, headers={"If-None-Match": '"nope"'}).status_code == 200


def test_a_304_can_carry_the_etag_in_strong_form(github: ServedDouble, alice: httpx.Client) -> None:
    github.gh.etag_304_strong = True
    etag = alice.get(LIST).headers["etag"]
    assert alice.get(LIST, headers={"If-None-Match": etag}).headers["etag"] == etag.removeprefix("W/")


def test_if_modified_since_alone(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    n = gh.open_pr("o/r", head_ref="a")
    single = f"/repos/o/r/pulls/{n}"
    first = alice.get(single)
    stamp = first.headers["last-modified"]
    assert stamp == "Fri, 15 Jan 2027 08:00:00 GMT"  # the request's updated_at
    assert alice.get(single, headers={"If-Modified-Since": stamp}).status_code == 304
    github.clock.advance(30)
    assert alice.get(single, headers={"If-Modified-Since": stamp}).status_code == 304  # time alone moves nothing
    gh.edit_title("o/r", n, "new title")
    changed = alice.get(single, headers={"If-Modified-Since": stamp})
    assert changed.status_code == 200 and changed.headers["last-modified"] == "Fri, 15 Jan 2027 08:00:30 GMT"
    # If-None-Match wins over If-Modified-Since when both are sent
    both = alice.get(single, headers={"If-Modified-Since": changed.headers["last-modified"], "If-None-Match": '"x"'})
    assert both.status_code == 200


def test_check_runs_answer_304_while_nothing_changes(github: ServedDouble, alice: httpx.Client) -> None:
    """What makes a quiet repository free even while requests wait on slow checks."""
    gh = github.gh
    n = gh.open_pr("o/r", head_ref="a")
    sha = gh.pr("o/r", n).head_sha
    gh.add_check_run("o/r", sha, "ci", status="in_progress")
    path = f"/repos/o/r/commits/{sha}/check-runs"
    etag = alice.get(path).headers["etag"]
    mark = gh.mark()
    for _ in range(5):
        github.clock.advance(60)
        assert alice.get(path, headers={"If-None-Match": etag}).status_code == 304
    assert gh.counted(since=mark) == 0
    gh.add_check_run("o/r", sha, "ci", conclusion="success")
    assert alice.get(path, headers={"If-None-Match": etag}).status_code == 200
    assert gh.counted(since=mark) == 1


def test_errors_carry_rate_headers_but_no_etag(github: ServedDouble, alice: httpx.Client) -> None:
    missing = alice.get("/repos/o/r/pulls/99")
    assert missing.status_code == 404
    assert "etag" not in missing.headers
    assert missing.headers["x-ratelimit-resource"] == "core"
    assert missing.headers["x-ratelimit-used"] == "1"  # GitHub counts an authenticated 404
