"""``serve`` relays GitHub's API down the forge's road; what reached the double is read from its ledger."""

from __future__ import annotations

import json

from tests.serve.conftest import TOKEN, Served


def test_a_repeated_get_reaches_github_as_a_304(served: Served) -> None:
    gh = served.github.gh
    mark = gh.mark()
    with served.unix() as client:
        first = client.get("/repos/o/r/pulls", headers={"Authorization": f"token {TOKEN}"})
        second = client.get("/repos/o/r/pulls", headers={"Authorization": f"token {TOKEN}"})
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json() == []
    calls = [c for c in gh.ledger[mark:] if c.path.startswith("/repos/o/r/pulls")]
    assert [c.status for c in calls] == [200, 304] and [c.counted for c in calls] == [True, False]
    assert second.headers["x-sluice"] == "304"


def test_a_tcp_call_without_a_token_is_refused_and_reaches_nothing(served: Served) -> None:
    gh = served.github.gh
    mark = gh.mark()
    with served.tcp(token=None) as client:
        answer = client.get("/repos/o/r/pulls")
    assert answer.status_code == 401
    assert "Requires authentication" in answer.json()["message"]
    assert gh.ledger[mark:] == []


def test_the_socket_without_a_token_goes_with_the_hosts_credentials(served: Served) -> None:
    with served.unix() as client:
        answer = client.get("/user")
    assert answer.status_code == 200 and answer.json()["login"] == "alice"


def test_a_path_that_could_leave_the_api_is_refused(served: Served) -> None:
    gh = served.github.gh
    mark = gh.mark()
    import http.client

    for path in ("/api/v3/%2e%2e/%2e%2e/x", "/repos/o/../../x", "/repos/%252e%252e/x"):
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)  # sends the path as it is
        conn.request("GET", path, headers={"Authorization": f"token {TOKEN}"})
        assert conn.getresponse().status == 400, path
        conn.close()
    assert gh.ledger[mark:] == []


def test_identical_graphql_queries_are_answered_once_within_the_window(served: Served) -> None:
    gh = served.github.gh
    mark = gh.mark()
    body = {"query": "query { viewer { login } }"}
    with served.tcp() as client:
        answers = [client.post("/graphql", json=body) for _ in range(3)]
        enterprise = client.post("/api/graphql", json=body)
    assert all(a.status_code == 200 for a in answers + [enterprise])
    assert [a.json()["data"]["viewer"]["login"] for a in answers] == ["alice"] * 3
    assert len([c for c in gh.ledger[mark:] if c.resource == "graphql"]) == 1
    assert answers[1].headers["x-sluice"] == "kept" and "x-sluice-age" in answers[1].headers
    served.github.clock.advance(31)  # type: ignore[attr-defined]
    with served.tcp() as client:
        client.post("/graphql", json=body)
    assert len([c for c in gh.ledger[mark:] if c.resource == "graphql"]) == 2


def test_metrics_count_what_passed_and_name_no_token(served: Served) -> None:
    with served.tcp() as client:
        client.get("/repos/o/r")
        client.get("/repos/o/r")
        text = client.get("/metrics").text
    assert "sluice_serve_calls_total" in text and 'answer="not_modified"' in text
    assert TOKEN not in text
    json.dumps(text)


def test_ten_identical_concurrent_gets_make_one_call(served: Served) -> None:
    import threading

    gh = served.github.gh
    with served.tcp() as client:
        client.get("/repos/o/r/pulls")  # the token's pool is learned first (GET /user), as any first call does
    gh.fault("hang", path="/repos/o/r/pulls", times=1, seconds=0.5)  # the first call is held at "GitHub"
    mark = gh.mark()
    answers: list[int] = []

    def get() -> None:
        with served.tcp() as client:
            answers.append(client.get("/repos/o/r/pulls").status_code)

    threads = [threading.Thread(target=get) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert answers == [200] * 10
    assert len([c for c in gh.ledger[mark:] if c.path.startswith("/repos/o/r/pulls")]) == 1


def test_a_mutation_is_never_kept(served: Served) -> None:
    gh = served.github.gh
    mark = gh.mark()
    body = {"query": 'mutation { addStar(input: {starrableId: "R_1"}) { clientMutationId } }'}
    with served.tcp() as client:
        for _ in range(2):
            assert client.post("/graphql", json=body).headers.get("x-sluice") != "kept"
    assert len([c for c in gh.ledger[mark:] if c.resource == "graphql"]) == 2


def test_the_answer_names_serve_where_github_named_itself(served: Served) -> None:
    """``Link`` and the body's API addresses name the base the caller addressed, so a client that follows
    them comes back through serve: the port as its Host says, the socket as gh addresses it."""
    gh = served.github.gh
    for i in range(1, 4):
        gh.open_pr("o/r", head_ref=f"t-{i}", base="main", title=f"T {i}")
    upstream = served.github.url
    with served.tcp() as client:
        page = client.get("/repos/o/r/pulls", params={"per_page": 2})
        enterprise = client.get("/api/v3/repos/o/r/pulls", params={"per_page": 2})
    port = f"http://127.0.0.1:{served.port}"
    assert page.headers["link"] == (f'<{port}/repos/o/r/pulls?per_page=2&page=2>; rel="next", '
                                    f'<{port}/repos/o/r/pulls?per_page=2&page=2>; rel="last"')
    assert page.json()[0]["url"] == f"{port}/repos/o/r/pulls/3"
    assert page.json()[0]["html_url"].startswith("https://github.com/")  # not the API's: as GitHub wrote it
    assert upstream.encode() not in page.content
    assert enterprise.json()[0]["base"]["repo"]["url"] == f"{port}/api/v3/repos/o/r"
    with served.unix() as client:
        unix = client.get("/repos/o/r/pulls", params={"per_page": 2}, headers={"Authorization": f"token {TOKEN}"})
        odd = client.get("/repos/o/r", headers={"Authorization": f"token {TOKEN}", "Host": "a b"})
    assert unix.headers["link"].startswith("<http://api.github.com/repos/o/r/pulls?per_page=2&page=2>")
    assert unix.json()[0]["url"] == "http://api.github.com/repos/o/r/pulls/3"
    assert odd.json()["url"] == f"{upstream}/repos/o/r"  # a Host serve will not write: left as GitHub wrote it


def test_a_kept_graphql_answer_carries_the_rate_headers_as_the_host_last_heard_them(served: Served) -> None:
    body = {"query": "query { viewer { login } }"}
    with served.tcp() as client:
        first = client.post("/graphql", json=body)
        other = client.post("/graphql", json={"query": "query { viewer { id } }"})  # spends a point
        kept = client.post("/graphql", json=body)
    assert kept.headers["x-sluice"] == "kept"
    assert int(other.headers["x-ratelimit-remaining"]) < int(first.headers["x-ratelimit-remaining"])
    assert kept.headers["x-ratelimit-remaining"] == other.headers["x-ratelimit-remaining"]  # not the first's
    assert kept.headers["x-ratelimit-used"] == other.headers["x-ratelimit-used"]
