"""The REST routes: GitHub's shapes, filters, pagination and Link headers, access."""

from __future__ import annotations

import re

import httpx

from git_sluice.double.testing import ServedDouble


def _links(header: str) -> dict[str, str]:
    return {rel: url for url, rel in re.findall(r'<([^>]+)>; rel="(\w+)"', header)}


def test_a_pull_request_is_shaped_like_githubs(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    n = gh.open_pr("o/r", head_ref="feat-1", base="main", title="Add a thing", author="bob", draft=True)
    gh.add_label("o/r", n, "bug")
    gh.set_mergeable("o/r", n, "CONFLICTING")
    pr = alice.get(f"/repos/o/r/pulls/{n}").json()
    assert pr["number"] == n == 1
    assert (pr["state"], pr["title"], pr["user"]["login"], pr["draft"]) == ("open", "Add a thing", "bob", True)
    assert pr["head"]["ref"] == "feat-1" and re.fullmatch(r"[0-9a-f]{40}", pr["head"]["sha"])
    assert pr["head"]["sha"] == gh.pr("o/r", n).head_sha
    assert pr["base"]["ref"] == "main"
    assert [label["name"] for label in pr["labels"]] == ["bug"]
    assert pr["mergeable"] is False and pr["merged"] is False
    assert pr["created_at"] == "2027-01-15T08:00:00Z"  # the FakeClock's start, RFC 3339
    assert pr["updated_at"] == "2027-01-15T08:00:01Z"  # the label moved it
    assert pr["closed_at"] is None and pr["merged_at"] is None
    assert pr["html_url"].endswith("/o/r/pull/1") and pr["node_id"].startswith("PR_")
    listed = alice.get("/repos/o/r/pulls").json()
    assert [p["number"] for p in listed] == [1]
    assert "mergeable" not in listed[0]  # as on GitHub: only the single request says it


def test_the_list_filters_by_state_base_and_head(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    a = gh.open_pr("o/r", head_ref="a", base="main")
    b = gh.open_pr("o/r", head_ref="b", base="release")
    c = gh.open_pr("o/r", head_ref="c", base="main")
    gh.merge_pr("o/r", c)
    d = gh.open_pr("o/r", head_ref="d", base="main")
    gh.close_pr("o/r", d)

    def numbers(**params: str) -> list[int]:
        answer = alice.get("/repos/o/r/pulls", params=params)
        assert answer.status_code == 200
        return [p["number"] for p in answer.json()]

    assert numbers() == [b, a]  # open, newest first
    assert numbers(base="main") == [a]
    assert numbers(state="closed") == [d, c]
    assert numbers(state="all", base="main", direction="asc") == [a, c, d]
    assert numbers(head="o:b") == [b]
    assert numbers(head="someone-else:b") == []
    assert alice.get("/repos/o/r/pulls", params={"state": "bogus"}).status_code == 422


def test_sort_by_updated_follows_the_last_change(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    first = gh.open_pr("o/r", head_ref="a")
    second = gh.open_pr("o/r", head_ref="b")
    github.clock.advance(10)
    gh.push_pr("o/r", first)
    got = [p["number"] for p in alice.get("/repos/o/r/pulls", params={"sort": "updated", "direction": "desc"}).json()]
    assert got == [first, second]


def test_250_requests_page_with_githubs_link_header(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    for i in range(250):
        gh.open_pr("o/r", head_ref=f"b{i}", base="main")
    first = alice.get("/repos/o/r/pulls", params={"state": "open", "base": "main", "per_page": 100})
    assert len(first.json()) == 100
    assert first.json()[0]["number"] == 250  # newest first by default
    links = _links(first.headers["link"])
    assert set(links) == {"next", "last"}
    assert links["next"] == f"{github.url}/repos/o/r/pulls?state=open&base=main&per_page=100&page=2"
    assert links["last"].endswith("page=3")

    seen: list[int] = []
    url: str | None = f"{github.url}/repos/o/r/pulls?state=open&base=main&per_page=100"
    pages = 0
    while url:
        page = alice.get(url)
        seen += [p["number"] for p in page.json()]
        url = _links(page.headers.get("link", "")).get("next")
        pages += 1
    assert pages == 3 and sorted(seen) == list(range(1, 251)) and len(seen) == 250

    middle = _links(alice.get("/repos/o/r/pulls", params={"per_page": 100, "page": 2}).headers["link"])
    assert set(middle) == {"prev", "next", "last", "first"}
    assert middle["prev"].endswith("page=1") and middle["first"].endswith("page=1")
    last = alice.get("/repos/o/r/pulls", params={"per_page": 100, "page": 3})
    assert len(last.json()) == 50 and set(_links(last.headers["link"])) == {"prev", "first"}
    # defaults: 30 a page; per_page above 100 is held to 100
    assert len(alice.get("/repos/o/r/pulls").json()) == 30
    assert len(alice.get("/repos/o/r/pulls", params={"per_page": 500}).json()) == 100
    assert alice.get("/repos/o/r/pulls", params={"per_page": 100, "page": 9}).json() == []


def test_a_deleted_request_is_gone(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    n = gh.open_pr("o/r", head_ref="x")
    assert alice.get(f"/repos/o/r/pulls/{n}").status_code == 200
    gh.delete_pr("o/r", n)
    gone = alice.get(f"/repos/o/r/pulls/{n}")
    assert gone.status_code == 404 and gone.json()["message"] == "Not Found"
    assert alice.get("/repos/o/r/pulls").json() == []


def test_check_runs_and_combined_status(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    n = gh.open_pr("o/r", head_ref="x")
    sha = gh.pr("o/r", n).head_sha
    empty = alice.get(f"/repos/o/r/commits/{sha}/status").json()
    assert empty["state"] == "pending" and empty["total_count"] == 0  # GitHub: no statuses is pending
    gh.add_check_run("o/r", sha, "ci", status="in_progress")
    gh.add_check_run("o/r", sha, "lint", conclusion="failure")
    gh.set_status("o/r", sha, "deploy", "success")
    runs = alice.get(f"/repos/o/r/commits/{sha}/check-runs").json()
    assert runs["total_count"] == 2
    by_name = {r["name"]: r for r in runs["check_runs"]}
    assert by_name["ci"]["status"] == "in_progress" and by_name["ci"]["conclusion"] is None
    assert by_name["lint"]["conclusion"] == "failure" and by_name["lint"]["head_sha"] == sha
    gh.add_check_run("o/r", sha, "ci", conclusion="success")  # the same name again replaces it
    runs = alice.get(f"/repos/o/r/commits/{sha}/check-runs").json()
    assert runs["total_count"] == 2
    assert {r["name"]: r["conclusion"] for r in runs["check_runs"]} == {"ci": "success", "lint": "failure"}
    status = alice.get(f"/repos/o/r/commits/{sha}/status").json()
    assert (status["state"], status["sha"], status["total_count"]) == ("success", sha, 1)
    assert status["statuses"][0]["context"] == "deploy"
    gh.set_status("o/r", sha, "security", "error")
    assert alice.get(f"/repos/o/r/commits/{sha}/status").json()["state"] == "failure"


def test_repository_user_and_unknown_routes(github: ServedDouble, alice: httpx.Client) -> None:
    repo = alice.get("/repos/o/r").json()
    assert (repo["full_name"], repo["default_branch"], repo["owner"]["login"]) == ("o/r", "main", "o")
    assert alice.get("/user").json()["login"] == "alice"
    missing = alice.get("/no/such/route")
    assert missing.status_code == 404
    assert missing.json() == {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
    assert alice.get("/repos/o/nothing").status_code == 404


def test_bad_token_no_access_and_anonymous(github: ServedDouble, alice: httpx.Client, http: httpx.Client) -> None:
    gh = github.gh
    gh.add_repo("o/private", private=True)
    gh.add_token("tok-narrow", user="bob", repos=["o/r"])
    bad = http.get(f"{github.url}/repos/o/r", headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401 and bad.json()["message"] == "Bad credentials"
    assert bad.headers["x-ratelimit-limit"] == "60"  # the unauthenticated allowance
    narrow = http.get(f"{github.url}/repos/o/private", headers={"Authorization": "token tok-narrow"})
    assert narrow.status_code == 404  # GitHub hides what a token may not see
    assert alice.get("/repos/o/private").status_code == 200
    anon = http.get(f"{github.url}/repos/o/r/pulls")
    assert anon.status_code == 200 and anon.headers["x-ratelimit-limit"] == "60"
    assert http.get(f"{github.url}/repos/o/private").status_code == 404
    pools = [(c.path, c.pool) for c in gh.ledger]
    assert ("/repos/o/r", None) in pools and ("/repos/o/r/pulls", None) in pools
    assert ("/repos/o/private", "user:bob") in pools


def test_search_issues_spends_the_search_resource(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    a = gh.open_pr("o/r", head_ref="a", title="Fix the widget", author="bob")
    gh.open_pr("o/r", head_ref="b", title="Other", draft=True)
    gh.add_label("o/r", a, "bug")
    found = alice.get("/search/issues", params={"q": "repo:o/r is:pr is:open label:bug widget"})
    assert found.headers["x-ratelimit-resource"] == "search"
    assert found.headers["x-ratelimit-limit"] == "30"
    body = found.json()
    assert body["total_count"] == 1 and body["items"][0]["number"] == a
    assert body["items"][0]["pull_request"]["merged_at"] is None
    assert alice.get("/search/issues", params={"q": "repo:o/r draft:true"}).json()["total_count"] == 1
    assert alice.get("/search/issues").status_code == 422
    assert gh.counted(pool="user:alice", resource="search") == 3
