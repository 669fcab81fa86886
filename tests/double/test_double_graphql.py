"""GraphQL: GitHub's real schema, GitHub's point cost, GitHub's errors, and the answers themselves."""

from __future__ import annotations

from typing import Any

import graphql
import httpx
import pytest

from git_sluice.double.graphql_api import github_schema, price_only
from git_sluice.double.testing import ServedDouble

PR_FIELDS = """
  number title url isDraft state merged mergeable updatedAt createdAt
  headRefName headRefOid baseRefName author { login } reviewDecision id
  labels(first: 20) { nodes { name } }
  latestOpinionatedReviews(first: 20) { nodes { state author { login } } }
  reviews(first: 100) { totalCount nodes { state author { login } } }
  commits(last: 1) {
    nodes { commit { oid statusCheckRollup { state contexts(first: 100) {
      nodes { __typename ... on CheckRun { name status conclusion } ... on StatusContext { context state } }
    } } } }
  }
"""
OPEN_50 = f"""
query Open($owner: String!, $name: String!, $base: String!) {{
  repository(owner: $owner, name: $name) {{
    name nameWithOwner owner {{ login }} defaultBranchRef {{ name }}
    pullRequests(first: 50, states: [OPEN], baseRefName: $base, orderBy: {{field: CREATED_AT, direction: ASC}}) {{
      totalCount pageInfo {{ hasNextPage endCursor }}
      nodes {{ {PR_FIELDS} }}
    }}
  }}
  rateLimit {{ cost limit remaining used resetAt nodeCount }}
  viewer {{ login }}
}}
"""


def ask(client: httpx.Client, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _fifty_with_reviews_and_checks(github: ServedDouble) -> None:
    gh = github.gh
    for i in range(1, 61):
        n = gh.open_pr("o/r", head_ref=f"f{i}", base="main" if i <= 55 else "release", title=f"PR {i}")
        sha = gh.pr("o/r", n).head_sha
        gh.add_label("o/r", n, "sluice")
        if i % 3 == 0:
            gh.review("o/r", n, "bob", "APPROVED")
        if i % 5 == 0:
            gh.review("o/r", n, "carol", "CHANGES_REQUESTED")
        gh.add_check_run("o/r", sha, "ci", conclusion="failure" if i % 7 == 0 else "success")
        if i % 4 == 0:
            gh.set_status("o/r", sha, "deploy", "pending")
    gh.close_pr("o/r", 2)


def test_a_query_over_50_requests_validates_executes_and_costs_githubs_price(
    github: ServedDouble, alice: httpx.Client
) -> None:
    _fifty_with_reviews_and_checks(github)
    assert graphql.validate(github_schema(), graphql.parse(OPEN_50)) == []
    # GitHub's formula by hand: pullRequests 1 request; labels, latestOpinionatedReviews,
    # reviews and commits one request per pull request (50 each); contexts one per
    # commit node (50 × 1): 1 + 50 + 50 + 50 + 50 + 50 = 251 requests -> 2.51 -> 3 points.
    expected_cost = 3
    # nodes: 50 + 50×20 + 50×20 + 50×100 + 50×1 + 50×1×100 = 12,100
    expected_nodes = 50 + 1000 + 1000 + 5000 + 50 + 5000
    body = ask(alice, OPEN_50, {"owner": "o", "name": "r", "base": "main"})
    assert "errors" not in body
    data = body["data"]
    assert data["viewer"] == {"login": "alice"}
    assert data["rateLimit"]["cost"] == expected_cost
    assert data["rateLimit"]["nodeCount"] == expected_nodes
    assert data["rateLimit"]["remaining"] == 5000 - expected_cost and data["rateLimit"]["used"] == expected_cost
    assert data["rateLimit"]["resetAt"] == "2027-01-15T09:00:00Z"
    repo = data["repository"]
    assert (repo["nameWithOwner"], repo["owner"]["login"], repo["defaultBranchRef"]["name"]) == ("o/r", "o", "main")
    prs = repo["pullRequests"]
    assert prs["totalCount"] == 54  # 55 on main, one of them closed
    assert prs["pageInfo"]["hasNextPage"] is True
    nodes = {p["number"]: p for p in prs["nodes"]}
    assert len(nodes) == 50 and 2 not in nodes
    assert nodes[3]["reviewDecision"] == "APPROVED"
    assert nodes[15]["reviewDecision"] == "CHANGES_REQUESTED"  # bob approved, carol asked for changes
    assert nodes[1]["reviewDecision"] == "REVIEW_REQUIRED"
    assert nodes[15]["reviews"]["totalCount"] == 2
    assert nodes[1]["labels"]["nodes"] == [{"name": "sluice"}]

    def rollup(n: int) -> dict[str, Any]:
        return nodes[n]["commits"]["nodes"][0]["commit"]["statusCheckRollup"]

    assert rollup(1)["state"] == "SUCCESS"
    assert rollup(7)["state"] == "FAILURE"
    assert rollup(4)["state"] == "PENDING"
    assert rollup(4)["contexts"]["nodes"] == [
        {"__typename": "CheckRun", "name": "ci", "status": "COMPLETED", "conclusion": "SUCCESS"},
        {"__typename": "StatusContext", "context": "deploy", "state": "PENDING"},
    ]
    assert nodes[1]["commits"]["nodes"][0]["commit"]["oid"] == nodes[1]["headRefOid"]
    gh = github.gh
    assert gh.calls()[-1].cost == expected_cost and gh.calls()[-1].counted
    assert gh.counted(pool="user:alice", resource="graphql") == expected_cost


def test_the_next_page_follows_end_cursor(github: ServedDouble, alice: httpx.Client) -> None:
    _fifty_with_reviews_and_checks(github)
    variables = {"owner": "o", "name": "r", "base": "main"}
    first = ask(alice, OPEN_50, variables)["data"]["repository"]["pullRequests"]
    query = OPEN_50.replace("$base: String!)", "$base: String!, $after: String)").replace(
        "first: 50,", "first: 50, after: $after,"
    )
    second = ask(alice, query, {**variables, "after": first["pageInfo"]["endCursor"]})
    page = second["data"]["repository"]["pullRequests"]
    assert [p["number"] for p in page["nodes"]] == [52, 53, 54, 55]  # #2 is closed
    assert page["pageInfo"]["hasNextPage"] is False


def test_the_docs_example_costs_51_points() -> None:
    """GitHub's documented example: 1 + 100 + 5,000 = 5,101 requests -> 51 points."""
    query = """
    query {
      viewer {
        login
        repositories(first: 100) {
          edges { node { id issues(first: 50) {
            edges { node { id labels(first: 60) { edges { node { id name } } } } }
          } } }
        }
      }
    }"""
    price = price_only(query)
    assert (price.requests, price.cost, price.node_count) == (5101, 51, 100 + 5000 + 300000)


def test_aliases_and_fragments_are_priced_per_request(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    for i in range(30):
        gh.open_pr("o/r", head_ref=f"f{i}")
    aliases = "\n".join(f"pr{n}: pullRequest(number: {n}) {{ ...P }}" for n in range(1, 31))
    query = f"""query {{ repository(owner: "o", name: "r") {{ {aliases} }} rateLimit {{ cost }} }}
    fragment P on PullRequest {{ number labels(first: 10) {{ nodes {{ name }} }}
      commits(last: 1) {{ nodes {{ commit {{ statusCheckRollup {{ contexts(first: 50) {{ totalCount }} }} }} }} }} }}"""
    # per alias: labels 1, commits 1, contexts 1 -> 30 × 3 = 90 requests -> 0.9 -> 1 point
    body = ask(alice, query)
    assert body["data"]["rateLimit"]["cost"] == 1
    assert body["data"]["repository"]["pr30"]["number"] == 30
    assert body["data"]["repository"]["pr1"]["commits"]["nodes"][0]["commit"]["statusCheckRollup"] is None


def test_an_unknown_field_is_refused_as_github_does(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.open_pr("o/r", head_ref="a")
    query = '{ repository(owner: "o", name: "r") { pullRequest(number: 1) { number x } } }'
    answer = alice.post("/graphql", json={"query": query})
    assert answer.status_code == 200  # GitHub answers an invalid query with 200
    (error,) = answer.json()["errors"]
    assert "Cannot query field 'x' on type 'PullRequest'." in error["message"]
    assert error["locations"] == [{"line": 1, "column": query.index("x }") + 1}]
    assert error["extensions"] == {"code": "undefinedField", "typeName": "PullRequest", "fieldName": "x"}
    assert "data" not in answer.json()
    assert gh.calls()[-1].counted is False and gh.counted(resource="graphql") == 0


def test_syntax_errors_and_missing_queries(github: ServedDouble, alice: httpx.Client) -> None:
    assert ask(alice, "{ viewer { login }")["errors"][0]["message"].startswith("Syntax Error")
    empty = alice.post("/graphql", json={})
    assert empty.json() == {"errors": [{"message": "A query attribute must be specified and must be a string."}]}
    assert alice.post("/graphql", content=b"not json").status_code == 400
    mutation = 'mutation { addStar(input: {starrableId: "x"}) { clientMutationId } }'
    refused = ask(alice, mutation)  # a mutation the double does not run is refused, never a made-up null
    assert refused["errors"][0]["message"] == (
        "The GitHub double runs queries and the addComment mutation only, not addStar."
    )
    assert "data" not in refused


@pytest.mark.parametrize(
    ("args", "kind", "words"),
    [
        ("first: 101", "EXCESSIVE_PAGINATION", "Requesting 101 records on the `pullRequests` connection exceeds"),
        ("last: 0", "EXCESSIVE_PAGINATION", "Requesting 0 records on the `pullRequests` connection is below"),
        ("states: [OPEN]", "MISSING_PAGINATION_BOUNDARIES", "You must provide a `first` or `last` value"),
    ],
)
def test_pagination_bounds_are_githubs(
    github: ServedDouble, alice: httpx.Client, args: str, kind: str, words: str
) -> None:
    body = ask(alice, f'{{ repository(owner: "o", name: "r") {{ pullRequests({args}) {{ totalCount }} }} }}')
    (error,) = body["errors"]
    assert error["type"] == kind and words in error["message"]
    assert error["path"] == ["repository", "pullRequests"]
    assert github.gh.counted() == 0


def test_too_many_nodes_is_refused(github: ServedDouble, alice: httpx.Client) -> None:
    query = """{ repository(owner: "o", name: "r") { pullRequests(first: 100) { nodes {
      commits(first: 100) { nodes { commit { statusCheckRollup { contexts(first: 100) { totalCount } } } } } } } } }"""
    (error,) = ask(alice, query)["errors"]
    assert error["type"] == "MAX_NODE_LIMIT_EXCEEDED" and "1,010,100" in error["message"]


def test_rate_limited_when_the_points_are_spent(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.set_limit("user:alice", "graphql", limit=2)
    _fifty_with_reviews_and_checks(github)
    costly = alice.post("/graphql", json={"query": OPEN_50, "variables": {"owner": "o", "name": "r", "base": "main"}})
    assert costly.status_code == 200  # 3 points asked, 2 left
    assert costly.json() == {"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}]}
    assert costly.headers["x-ratelimit-remaining"] == "2"
    assert gh.calls()[-1].counted is False
    cheap = "{ viewer { login } }"
    assert ask(alice, cheap)["data"]["viewer"]["login"] == "alice"
    assert ask(alice, cheap)["data"]["viewer"]["login"] == "alice"
    spent = alice.post("/graphql", json={"query": cheap})
    assert spent.json()["errors"][0]["type"] == "RATE_LIMITED"
    assert spent.headers["x-ratelimit-remaining"] == "0" and spent.headers["x-ratelimit-resource"] == "graphql"
    assert gh.counted(resource="graphql") == 2
    github.clock.advance(3600)
    assert ask(alice, cheap)["data"]["viewer"]["login"] == "alice"


def test_dry_run_prices_without_charging(github: ServedDouble, alice: httpx.Client) -> None:
    _fifty_with_reviews_and_checks(github)
    query = OPEN_50.replace("rateLimit {", "rateLimit(dryRun: true) {")
    body = ask(alice, query, {"owner": "o", "name": "r", "base": "main"})
    assert body == {
        "data": {
            "rateLimit": {
                "cost": 3,
                "limit": 5000,
                "remaining": 5000,
                "used": 0,
                "resetAt": "2027-01-15T09:00:00Z",
                "nodeCount": 12100,
            }
        }
    }
    assert github.gh.counted() == 0


def test_a_deleted_request_is_null_with_not_found(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.open_pr("o/r", head_ref="a")
    gh.open_pr("o/r", head_ref="b")
    gh.delete_pr("o/r", 1)
    body = ask(alice, '{ repository(owner: "o", name: "r") { a: pullRequest(number: 1) { number } '
                      "b: pullRequest(number: 2) { number } } }")
    assert body["data"] == {"repository": {"a": None, "b": {"number": 2}}}
    (error,) = body["errors"]
    assert error["type"] == "NOT_FOUND" and error["path"] == ["repository", "a"]
    assert error["message"] == "Could not resolve to a PullRequest with the number of 1."
    missing = ask(alice, '{ repository(owner: "o", name: "nope") { name } }')
    assert missing["data"] == {"repository": None}
    assert missing["errors"][0]["message"] == "Could not resolve to a Repository with the name 'o/nope'."


def test_review_decision_reads_each_reviewers_latest_opinion(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    n = gh.open_pr("o/r", head_ref="a")
    gh.review("o/r", n, "bob", "CHANGES_REQUESTED")
    gh.review("o/r", n, "carol", "COMMENTED")
    query = """{ repository(owner: "o", name: "r") { pullRequest(number: 1) { reviewDecision
      latestOpinionatedReviews(first: 10) { nodes { state author { login } } }
      approvals: reviews(first: 10, states: [APPROVED]) { totalCount } } } }"""

    def read() -> dict[str, Any]:
        return ask(alice, query)["data"]["repository"]["pullRequest"]

    assert read()["reviewDecision"] == "CHANGES_REQUESTED"
    gh.review("o/r", n, "bob", "APPROVED")  # bob changed his mind
    pr = read()
    assert pr["reviewDecision"] == "APPROVED"
    assert pr["latestOpinionatedReviews"]["nodes"] == [{"state": "APPROVED", "author": {"login": "bob"}}]
    assert pr["approvals"]["totalCount"] == 1


@pytest.mark.parametrize(
    ("checks", "statuses", "state"),
    [
        ([], [], None),
        ([("a", "completed", "success")], [("s", "success")], "SUCCESS"),
        ([("a", "completed", "success"), ("b", "in_progress", None)], [], "PENDING"),
        ([("a", "completed", "success")], [("s", "pending")], "PENDING"),
        ([("a", "completed", "timed_out"), ("b", "queued", None)], [], "FAILURE"),
        ([], [("s", "error")], "ERROR"),
        ([("a", "completed", "neutral"), ("b", "completed", "skipped")], [], "SUCCESS"),
    ],
)
def test_rollup_state(
    github: ServedDouble,
    alice: httpx.Client,
    checks: list[tuple[str, str, str | None]],
    statuses: list[tuple[str, str]],
    state: str | None,
) -> None:
    gh = github.gh
    n = gh.open_pr("o/r", head_ref="a")
    sha = gh.pr("o/r", n).head_sha
    for name, status, conclusion in checks:
        gh.add_check_run("o/r", sha, name, status=status, conclusion=conclusion)
    for context, value in statuses:
        gh.set_status("o/r", sha, context, value)
    query = '{ repository(owner: "o", name: "r") { pullRequest(number: 1) { statusCheckRollup { state } } } }'
    body = ask(alice, query)
    rollup = body["data"]["repository"]["pullRequest"]["statusCheckRollup"]
    assert (rollup["state"] if rollup else None) == state


def test_states_labels_and_order(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    for ref in ("a", "b", "c"):
        gh.open_pr("o/r", head_ref=ref)
    gh.merge_pr("o/r", 1)
    gh.add_label("o/r", 3, "ready")
    github.clock.advance(5)
    gh.push_pr("o/r", 2)

    def numbers(args: str) -> list[int]:
        query = f'{{ repository(owner: "o", name: "r") {{ pullRequests({args}) {{ nodes {{ number }} }} }} }}'
        body = ask(alice, query)
        return [p["number"] for p in body["data"]["repository"]["pullRequests"]["nodes"]]

    assert numbers("first: 10") == [1, 2, 3]
    assert numbers("first: 10, states: MERGED") == [1]
    assert numbers("first: 10, labels: [\"ready\"]") == [3]
    assert numbers("last: 2, states: [OPEN, MERGED]") == [2, 3]
    assert numbers("first: 10, orderBy: {field: UPDATED_AT, direction: DESC}") == [2, 3, 1]


WATCHED = """
query Watch($o: String!, $n: String!, $b: String!, $q: String!) {
  repository(owner: $o, name: $n) {
    baseRef: ref(qualifiedName: $q) { target { oid } }
    missingRef: ref(qualifiedName: "refs/heads/nope") { name }
    open: pullRequests(first: 2, states: OPEN, baseRefName: $b, orderBy: {field: UPDATED_AT, direction: DESC}) {
      totalCount nodes { number updatedAt }
    }
    gone: pullRequests(first: 10, states: [CLOSED, MERGED], baseRefName: $b,
                       orderBy: {field: UPDATED_AT, direction: DESC}) { totalCount nodes { number state } }
    %s
    unknown: object(oid: "%s") { ... on Commit { oid } }
  }
}
"""


def test_what_the_host_watch_asks_answers_as_github_does(github: ServedDouble, alice: httpx.Client) -> None:
    """Most recently updated first, the count, closed and merged requests, a branch's commit, and a commit's
    check rollup by its oid (``object(oid:)``: null, with no error, for an oid the repository has not)."""
    gh = github.gh
    numbers = [gh.open_pr("o/r", head_ref=f"f{i}") for i in range(5)]
    shas = [gh.pr("o/r", n).head_sha for n in numbers]
    gh.add_check_run("o/r", shas[0], "ci", status="in_progress", conclusion=None)
    gh.add_check_run("o/r", shas[1], "ci", conclusion="failure")
    github.clock.advance(10)
    gh.review("o/r", numbers[2], "bob", "APPROVED")  # the most recently updated
    github.clock.advance(10)
    gh.merge_pr("o/r", numbers[3])
    github.clock.advance(10)
    gh.close_pr("o/r", numbers[4])
    main = gh.push_branch("o/r", "main")
    heads = "\n".join(
        f'h{i}: object(oid: "{sha}") {{ ... on Commit {{ oid statusCheckRollup {{ state }} }} }}'
        for i, sha in enumerate(shas[:3])
    )
    query = WATCHED % (heads, "f" * 40)
    assert graphql.validate(github_schema(), graphql.parse(query)) == []
    body = ask(alice, query, {"o": "o", "n": "r", "b": "main", "q": "refs/heads/main"})
    assert "errors" not in body, body
    repo = body["data"]["repository"]
    assert repo["baseRef"] == {"target": {"oid": main}} and repo["missingRef"] is None
    assert repo["open"]["totalCount"] == 3
    assert [p["number"] for p in repo["open"]["nodes"]] == [numbers[2], numbers[1]]
    assert [(p["number"], p["state"]) for p in repo["gone"]["nodes"]] == [(numbers[4], "CLOSED"), (numbers[3], "MERGED")]
    assert [repo[f"h{i}"]["statusCheckRollup"] for i in range(3)] == [{"state": "PENDING"}, {"state": "FAILURE"}, None]
    assert repo["h0"]["oid"] == shas[0] and repo["unknown"] is None
    # single objects add nothing to the price: the connections alone do (three of them: 1 point)
    assert body and gh.calls()[-1].cost == 1


def test_issues_and_search_as_gh_issue_list_and_gh_pr_list_ask(github: ServedDouble, alice: httpx.Client) -> None:
    """gh 2.23's own documents (captured from it): issue list by state and author, and ``search`` with the
    qualifiers ``gh issue list --search`` / ``gh pr list --search`` write."""
    gh = github.gh
    opened = [gh.open_issue("o/r", title=f"bug {k}", author="bob" if k % 2 else "alice") for k in range(4)]
    gh.close_issue("o/r", opened[0])
    merged = gh.open_pr("o/r", head_ref="f1", title="fix bug")
    gh.merge_pr("o/r", merged)
    listed = ask(alice, """query($owner: String!, $repo: String!, $limit: Int, $states: [IssueState!] = OPEN,
        $author: String) { repository(owner: $owner, name: $repo) { hasIssuesEnabled
        issues(first: $limit, orderBy: {field: CREATED_AT, direction: DESC}, states: $states,
               filterBy: {createdBy: $author}) { totalCount nodes { number title state updatedAt
               author { login } assignees(first: 100) { totalCount } labels(first: 100) { nodes { name } } } } } }""",
                 {"owner": "o", "repo": "r", "limit": 100, "states": ["OPEN"], "author": "bob"})["data"]["repository"]
    assert listed["hasIssuesEnabled"] is True
    assert [i["number"] for i in listed["issues"]["nodes"]] == [opened[3], opened[1]]
    assert {i["author"]["login"] for i in listed["issues"]["nodes"]} == {"bob"}
    search = """query($q: String!) { search(query: $q, type: ISSUE, first: 30) { issueCount
        nodes { __typename ... on Issue { number state } ... on PullRequest { number merged } } } }"""
    closed = ask(alice, search, {"q": "closed:>2020-01-01 repo:o/r state:closed type:issue"})["data"]["search"]
    assert closed["issueCount"] == 1 and closed["nodes"] == [{"__typename": "Issue", "number": opened[0],
                                                              "state": "CLOSED"}]
    prs = ask(alice, search, {"q": "merged:>2020-01-01 is:merged repo:o/r type:pr"})["data"]["search"]
    assert prs["nodes"] == [{"__typename": "PullRequest", "number": merged, "merged": True}]
    assert ask(alice, search, {"q": "merged:>2999-01-01 is:merged repo:o/r type:pr"})["data"]["search"]["issueCount"] == 0
    assert ask(alice, search, {"q": "repo:o/r bug"})["data"]["search"]["issueCount"] == 5  # 4 issues and the PR
