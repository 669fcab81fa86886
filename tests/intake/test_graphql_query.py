"""The one GraphQL read: valid against GitHub's schema, priced right, answers read safely."""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Any

import graphql
import pytest
from graphql.execution.values import get_variable_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import git_sluice
from git_sluice.intake.request import Request
from git_sluice.intake.graphql import (
    CONNECTION_QUERY,
    MAX_ALIASES,
    ParseResult,
    build_alias_queries,
    build_connection_query,
    build_queries,
    node_count,
    numbers_in,
    parse_response,
    plan_cost,
    query_cost,
    read_all,
)

SCHEMA_PATH = Path(git_sluice.__file__).parent / "double" / "schema.graphql"


@functools.lru_cache(maxsize=1)
def schema() -> graphql.GraphQLSchema:
    built = graphql.build_schema(SCHEMA_PATH.read_text(), assume_valid_sdl=True)
    built._validation_errors = []  # GitHub's SDL is valid; skip the slow self-check
    return built


def assert_valid(query: str, variables: dict[str, Any]) -> None:
    document = graphql.parse(query)
    errors = graphql.validate(schema(), document)
    assert errors == [], errors
    (operation,) = [d for d in document.definitions if isinstance(d, graphql.OperationDefinitionNode)]
    coerced = get_variable_values(schema(), operation.variable_definitions or [], variables)
    assert not isinstance(coerced, list), coerced  # a list means variable errors


def first_last_values(query: str, variables: dict[str, Any]) -> list[int]:
    literal = [int(x) for x in re.findall(r"\b(?:first|last): (\d+)", query)]
    via_variables = [int(variables[v]) for v in re.findall(r"\b(?:first|last): \$(\w+)", query)]
    return literal + via_variables


# ------------------------------------------------------------ valid documents


@pytest.mark.parametrize("count", [1, 50, 150, 300])
def test_alias_documents_validate_against_the_schema(count: int) -> None:
    numbers = list(range(1000, 1000 + count))
    queries = build_alias_queries("octo", "widgets", numbers)
    assert len(queries) == math.ceil(count / MAX_ALIASES)
    asked: list[int] = []
    for query, variables in queries:
        assert_valid(query, variables)
        assert "rateLimit { cost limit remaining used resetAt nodeCount }" in query
        assert all(1 <= n <= 100 for n in first_last_values(query, variables))
        assert len(numbers_in(query)) <= MAX_ALIASES
        assert len(query) < 16_000
        assert node_count(query, variables) < 500_000
        asked += numbers_in(query)
    assert asked == numbers


@pytest.mark.parametrize("open_count", [1, 50, 150, 300])
def test_connection_document_validates_against_the_schema(open_count: int) -> None:
    query, variables = build_connection_query("octo", "widgets", "main", open_count)
    assert_valid(query, variables)
    assert_valid(query, {**variables, "cursor": "Y3Vyc29yOjEwMA=="})
    assert variables["first"] == min(100, open_count)
    assert all(1 <= n <= 100 for n in first_last_values(query, variables))
    assert "states: OPEN" in query and "baseRefName: $base" in query
    assert "pageInfo { hasNextPage endCursor }" in query


@pytest.mark.parametrize("count", [1, 50, 150, 300])
def test_build_queries_documents_validate_in_the_chosen_shape(count: int) -> None:
    for open_count in (count, count * 3):
        for query, variables in build_queries(
            "octo", "widgets", range(1, count + 1), base="main", open_count=open_count
        ):
            assert_valid(query, variables)


# ----------------------------------------------------------------------- cost


def test_github_documented_example_costs_51() -> None:
    # GitHub's docs: 1 + 100 + 5,000 requests = 5,101 -> 51 points
    query = """
    query {
      viewer {
        login
        repositories(first: 100) {
          edges { node { id
            issues(first: 50) { edges { node { id
              labels(first: 60) { edges { node { id name } } }
            } } }
          } }
        }
      }
    }"""
    assert query_cost(query) == 51
    assert node_count(query) == 100 + 5_000 + 300_000


def test_cost_reads_variables_and_has_a_floor_of_one() -> None:
    query = "query($n: Int!) { viewer { repositories(first: $n) { nodes { issues(last: 100) { nodes { id } } } } } }"
    assert query_cost(query, {"n": 100}) == 101 // 100  # 1 + 100 requests -> 1.01 -> 1
    assert query_cost(query, {"n": 60}) == 1  # 61 -> 0.61 -> 1
    assert query_cost(query, {"n": 40}) == 1  # 41 -> floor of 1
    assert query_cost("{ rateLimit { cost } viewer { login } }") == 1


# Per aliased request: labels, latestOpinionatedReviews, commits and (1 commit x)
# contexts are one request each -> 4 requests. The connection adds 1 for itself
# and 4 per request it may return.
@pytest.mark.parametrize(
    ("count", "costs"),
    [
        (1, [1]),  # 4 requests -> 0.04 -> at least 1
        (12, [1]),  # 48 -> 0.48 -> 1 (floor)
        (50, [2]),  # 200 -> 2
        (63, [3]),  # 252 -> 2.52 -> 3
        (100, [4]),  # 400 -> 4
        (150, [4, 2]),
        (300, [4, 4, 4]),
    ],
)
def test_alias_query_costs_by_hand(count: int, costs: list[int]) -> None:
    queries = build_alias_queries("o", "r", range(1, count + 1))
    assert [query_cost(q, v) for q, v in queries] == costs


@pytest.mark.parametrize(("first", "cost"), [(1, 1), (50, 2), (62, 2), (63, 3), (100, 4)])
def test_connection_costs_by_hand(first: int, cost: int) -> None:
    # 1 + 4 * first requests
    query, variables = build_connection_query("o", "r", "main", first)
    assert query_cost(query, variables) == cost


def test_a_few_moved_requests_are_read_by_alias() -> None:
    queries = build_queries("o", "r", [7, 3, 7], base="main", open_count=300)
    assert len(queries) == 1
    assert numbers_in(queries[0][0]) == [3, 7]
    assert query_cost(*queries[0]) == 1


def test_fifty_moved_of_three_hundred_cost_two_points() -> None:
    queries = build_queries("o", "r", range(1, 51), base="main", open_count=300)
    assert [query_cost(q, v) for q, v in queries] == [2]
    assert plan_cost(queries, open_count=300) == 2


def test_everything_moved_reads_the_connection_when_it_costs_no_more() -> None:
    # aliases: 3 queries x 4 = 12; connection: 3 pages x 4 = 12, one small document
    queries = build_queries("o", "r", range(1, 301), base="main", open_count=300)
    assert [q for q, _ in queries] == [CONNECTION_QUERY]
    assert plan_cost(queries, open_count=300) == 12
    # 40 of 40: aliases 160 -> 2, connection 161 -> 2: a tie, the connection's document is smaller
    queries = build_queries("o", "r", range(1, 41), base="main", open_count=40)
    assert queries[0][1]["first"] == 40


def test_cheaper_aliases_win_over_the_connection() -> None:
    # 150 of 150: aliases 4 + 2 = 6 points; connection 2 pages x 4 = 8 points
    queries = build_queries("o", "r", range(1, 151), base="main", open_count=150)
    assert len(queries) == 2 and all(numbers_in(q) for q, _ in queries)
    assert plan_cost(queries) == 6
    # 99 of 300: connection would read all 300 for 12 points
    queries = build_queries("o", "r", range(1, 100), base="main", open_count=300)
    assert plan_cost(queries) == 4 and numbers_in(queries[0][0])


def test_no_base_or_nothing_to_read() -> None:
    assert build_queries("o", "r", []) == []
    queries = build_queries("o", "r", range(1, 301))
    assert len(queries) == 3 and all(numbers_in(q) for q, _ in queries)


# -------------------------------------------------------------------- answers


def pr_node(number: int, **over: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "number": number,
        "title": f"Request {number}",
        "url": f"https://github.com/o/r/pull/{number}",
        "isDraft": False,
        "state": "OPEN",
        "merged": False,
        "mergeable": "MERGEABLE",
        "updatedAt": "2026-11-29T18:00:00Z",
        "headRefName": f"topic-{number}",
        "headRefOid": f"{number:040x}",
        "baseRefName": "main",
        "author": {"__typename": "User", "login": "mona"},
        "reviewDecision": "APPROVED",
        "labels": {"nodes": [{"name": "ready"}, {"name": "bug"}]},
        "latestOpinionatedReviews": {"nodes": [{"state": "APPROVED", "author": {"__typename": "User", "login": "hubot"}}]},
        "commits": {
            "nodes": [
                {
                    "commit": {
                        "oid": f"{number:040x}",
                        "statusCheckRollup": {
                            "state": "FAILURE",
                            "contexts": {
                                "nodes": [
                                    {"__typename": "CheckRun", "name": "build", "status": "COMPLETED", "conclusion": "SUCCESS"},
                                    {"__typename": "CheckRun", "name": "test", "status": "COMPLETED", "conclusion": "FAILURE"},
                                    {"__typename": "CheckRun", "name": "test", "status": "COMPLETED", "conclusion": "TIMED_OUT"},
                                    {"__typename": "CheckRun", "name": "lint", "status": "IN_PROGRESS", "conclusion": None},
                                    {"__typename": "CheckRun", "name": "docs", "status": "COMPLETED", "conclusion": "NEUTRAL"},
                                    {"__typename": "StatusContext", "context": "ci/legacy", "state": "ERROR"},
                                    {"__typename": "StatusContext", "context": "deploy", "state": "PENDING"},
                                    {"__typename": "StatusContext", "context": "cla", "state": "SUCCESS"},
                                ]
                            },
                        },
                    }
                }
            ]
        },
    }
    node.update(over)
    return node


def rate() -> dict[str, Any]:
    return {"cost": 1, "limit": 5000, "remaining": 4990, "used": 10, "resetAt": "2026-11-29T19:00:00Z", "nodeCount": 91}


def test_a_full_reading() -> None:
    payload = {"data": {"rateLimit": rate(), "repository": {"pr5": pr_node(5)}}}
    result = parse_response(payload, [5])
    assert result.skipped == {} and result.errors == []
    assert result.rate_limit == rate() and result.cost == 1
    assert result.readings[5] == Request(
        number=5,
        title="Request 5",
        author="mona",
        head_ref="topic-5",
        head_sha=f"{5:040x}",
        base="main",
        draft=False,
        github_state="OPEN",
        updated_at="2026-11-29T18:00:00Z",
        review_decision="APPROVED",
        checks_state="FAILURE",
        failing=("test", "ci/legacy"),
        pending=("lint", "deploy"),
        mergeable="MERGEABLE",
        labels=("ready", "bug"),
        url="https://github.com/o/r/pull/5",
        reviews=(("hubot", "APPROVED"),),
    )


def test_no_checks_ghost_author_no_review_required_merged() -> None:
    node = pr_node(
        8,
        author=None,
        reviewDecision=None,
        merged=True,
        state="MERGED",
        labels=None,
        commits={"nodes": [{"commit": {"oid": "a" * 40, "statusCheckRollup": None}}]},
    )
    reading = parse_response({"data": {"repository": {"pr8": node}}}, [8]).readings[8]
    assert (reading.author, reading.review_decision, reading.github_state) == (None, None, "MERGED")
    assert (reading.checks_state, reading.failing, reading.pending, reading.labels) == (None, (), (), ())


def test_deleted_partial_error_and_missing_field_are_skipped_not_raised() -> None:
    missing = pr_node(3)
    del missing["headRefOid"]
    payload = {
        "data": {
            "rateLimit": rate(),
            "repository": {"pr1": pr_node(1), "pr2": None, "pr3": missing, "pr4": pr_node(4, commits=None)},
        },
        "errors": [
            {"type": "NOT_FOUND", "path": ["repository", "pr2"], "message": "Could not resolve to a PullRequest with the number of 2."},
            {"path": ["repository", "pr4", "commits"], "message": "Something went wrong", "extensions": {"code": "INTERNAL"}},
        ],
    }
    result = parse_response(payload, [1, 2, 3, 4, 6])
    assert set(result.readings) == {1}
    assert result.skipped[2].startswith("partial error: NOT_FOUND: Could not resolve")
    assert result.skipped[3] == "missing field headRefOid"
    assert result.skipped[4] == "partial error: INTERNAL: Something went wrong"
    assert result.skipped[6] == "not in the answer"
    assert result.errors == []


def test_null_pull_request_without_error() -> None:
    result = parse_response({"data": {"repository": {"pr9": None}}}, [9])
    assert result.skipped == {9: "deleted or not visible (null pullRequest)"}


def test_whole_query_refused() -> None:
    payload = {"data": None, "errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for installation"}]}
    result = parse_response(payload, [1, 2])
    assert result.readings == {}
    assert result.errors == ["RATE_LIMITED: API rate limit exceeded for installation"]
    assert set(result.skipped) == {1, 2} and "RATE_LIMITED" in result.skipped[1]
    assert result.rate_limit is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(
        st.sampled_from(["data", "errors", "repository", "pr1", "pr2", "pullRequests", "nodes", "pageInfo",
                         "number", "commits", "path", "rateLimit", "cost", "mergeable", "state"]),
        inner,
        max_size=5,
    ),
    max_leaves=25,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=json_values)
def test_parse_response_never_raises(payload: Any) -> None:
    result = parse_response(payload, [1, 2], variables={"cursor": None})
    assert set(result.readings) | set(result.skipped) <= {1, 2}
    assert set(result.readings).isdisjoint(result.skipped)


@settings(max_examples=80, deadline=None)
@given(node=st.fixed_dictionaries({}, optional={k: st.none() | st.integers() | st.text(max_size=3) | st.booleans()
                                                for k in pr_node(1)}))
def test_a_mangled_node_is_skipped_or_read(node: dict[str, Any]) -> None:
    result = parse_response({"data": {"repository": {"pr1": node}}}, [1])
    assert (1 in result.readings) != (1 in result.skipped)


# ------------------------------------------------------------ connection shape


def page(numbers: list[int], *, cursor: str | None, more: bool) -> dict[str, Any]:
    return {
        "data": {
            "rateLimit": rate(),
            "repository": {
                "pullRequests": {
                    "pageInfo": {"hasNextPage": more, "endCursor": cursor},
                    "nodes": [pr_node(n) for n in numbers],
                }
            },
        }
    }


def test_connection_answer_pages_until_every_wanted_request_is_seen() -> None:
    query, variables = build_connection_query("o", "r", "main", 250)
    first = parse_response(page(list(range(1, 101)), cursor="c100", more=True), [5, 150, 999], variables=variables)
    assert set(first.readings) == {5}
    assert first.next_variables == {**variables, "cursor": "c100"}
    assert first.skipped == {}
    second = parse_response(page(list(range(101, 201)), cursor="c200", more=True), [150, 999], variables=first.next_variables)
    third = parse_response(page(list(range(201, 251)), cursor="c250", more=False), [999], variables=second.next_variables)
    assert third.next_variables is None
    assert "not among the open requests" in third.skipped[999]
    total = first.merge(second).merge(third)
    assert set(total.readings) == {5, 150}
    assert set(total.skipped) == {999}
    assert total.cost == 3
    assert len(total.others) == 250 - 2  # fresh readings not asked for, kept apart


def test_connection_partial_error_on_one_node() -> None:
    payload = page([1, 2], cursor="c", more=False)
    payload["errors"] = [{"path": ["repository", "pullRequests", "nodes", 1, "commits"], "message": "timeout"}]
    result = parse_response(payload, [1, 2], variables={"cursor": None})
    assert set(result.readings) == {1}
    assert result.skipped == {2: "partial error: timeout"}


def test_read_all_follows_pages_and_stops_early() -> None:
    sent: list[dict[str, Any]] = []

    def send(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        sent.append(dict(variables))
        start = 1 if variables["cursor"] is None else int(variables["cursor"]) + 1
        end = min(start + 99, 300)
        return page(list(range(start, end + 1)), cursor=str(end), more=end < 300)

    result = read_all(send, "o", "r", range(1, 301), base="main", open_count=300)
    assert len(sent) == 3 and set(result.readings) == set(range(1, 301)) and result.skipped == {}
    assert result.next_variables is None

    sent.clear()
    # everything on the first two pages wanted, but the list is stale by one: stop after page 2
    result = read_all(send, "o", "r", range(1, 201), base="main", open_count=200)
    assert [v["cursor"] for v in sent] == [None, "100"]
    assert set(result.readings) == set(range(1, 201))


def test_read_all_alias_chunks() -> None:
    asked: list[list[int]] = []

    def send(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        numbers = numbers_in(query)
        asked.append(numbers)
        return {"data": {"rateLimit": rate(), "repository": {f"pr{n}": (None if n == 7 else pr_node(n)) for n in numbers}}}

    result = read_all(send, "o", "r", range(1, 151))
    assert [len(a) for a in asked] == [100, 50]
    assert set(result.readings) == set(range(1, 151)) - {7}
    assert result.skipped == {7: "deleted or not visible (null pullRequest)"}
    assert result.cost == 2


def test_merge_prefers_a_reading_over_a_skip() -> None:
    a = ParseResult(skipped={1: "partial error: x"})
    b = ParseResult(readings={1: parse_response({"data": {"repository": {"pr1": pr_node(1)}}}, [1]).readings[1]})
    assert set(a.merge(b).readings) == {1} and a.merge(b).skipped == {}


# -------------------------------------- executed against the real schema


def _execute(query: str, variables: dict[str, Any], repository: Any) -> dict[str, Any]:
    def pull_request(_source: Any, _info: Any, number: int) -> Any:
        return pr_node(number) if number != 404 else None

    def pull_requests(_source: Any, _info: Any, **kwargs: Any) -> Any:
        return {"pageInfo": {"hasNextPage": False, "endCursor": "end"}, "nodes": [pr_node(1), pr_node(2)]}

    repo_type = schema().type_map["Repository"]
    saved = (repo_type.fields["pullRequest"].resolve, repo_type.fields["pullRequests"].resolve)
    repo_type.fields["pullRequest"].resolve = pull_request
    repo_type.fields["pullRequests"].resolve = pull_requests
    try:
        result = graphql.graphql_sync(
            schema(), query, root_value={"rateLimit": rate(), "repository": repository}, variable_values=variables
        )
    finally:
        repo_type.fields["pullRequest"].resolve, repo_type.fields["pullRequests"].resolve = saved
    return result.formatted


def test_parse_reads_what_graphql_core_executes() -> None:
    (query, variables), = build_alias_queries("o", "r", [3, 404, 12])
    payload = _execute(query, variables, {})
    result = parse_response(payload, numbers_in(query))
    assert set(result.readings) == {3, 12}
    assert result.readings[12].failing == ("test", "ci/legacy")
    assert result.skipped == {404: "deleted or not visible (null pullRequest)"}

    query, variables = build_connection_query("o", "r", "main", 2)
    payload = _execute(query, variables, {})
    result = parse_response(payload, [1, 2], variables=variables)
    assert set(result.readings) == {1, 2} and result.next_variables is None


# ------------------------------------------------------- against the double


def test_the_reads_run_against_the_github_double() -> None:
    import httpx

    from git_sluice.double.testing import running_double
    from git_sluice.intake.readings import plan_readings

    with running_double() as (gh, server):
        a = gh.open_pr("o/r", "topic-a")
        draft = gh.open_pr("o/r", "topic-b", draft=True)
        c = gh.open_pr("o/r", "topic-c")
        gone = gh.open_pr("o/r", "topic-d")
        gh.delete_pr("o/r", gone)
        sha = gh.pr("o/r", a).head_sha
        gh.add_check_run("o/r", sha, "build", status="completed", conclusion="failure")
        gh.set_status("o/r", sha, "ci/legacy", "pending")
        gh.review("o/r", a, "bob", "CHANGES_REQUESTED")
        gh.add_label("o/r", a, "bug")
        headers = {"Authorization": "Bearer tok-alice"}
        listed = httpx.get(f"{server.url}/repos/o/r/pulls?state=open&base=main&per_page=100", headers=headers, timeout=60)
        plan = plan_readings(listed.json(), {}, discovery=True, now=0.0)
        assert plan.to_read == [a, c] and list(plan.drafts) == [draft]

        def send(query: str, variables: dict[str, Any]) -> dict[str, Any]:
            answer = httpx.post(server.graphql_url, json={"query": query, "variables": variables}, headers=headers, timeout=60)
            assert answer.status_code == 200
            return answer.json()

        result = read_all(send, "o", "r", [*plan.to_read, gone])
        assert result.errors == [] and result.cost == 1 and result.rate_limit is not None
        first = result.readings[a]
        assert (first.review_decision, first.checks_state, first.failing, first.pending, first.labels) == (
            "CHANGES_REQUESTED", "FAILURE", ("build",), ("ci/legacy",), ("bug",)
        )
        assert first.head_sha == sha and first.updated_at == plan.items[a].updated_at
        assert set(result.skipped) == {gone} and "NOT_FOUND" in result.skipped[gone]

        query, variables = build_connection_query("o", "r", "main", plan.open_count)
        connection = parse_response(send(query, variables), plan.to_read, variables=variables)
        assert sorted(connection.readings) == [a, c] and connection.skipped == {}
        assert connection.readings[a] == first
        assert list(connection.others) == [draft] and connection.others[draft].draft
        assert connection.next_variables is None


def test_our_price_agrees_with_the_doubles_schema_aware_price() -> None:
    from git_sluice.double.graphql_api import price_only

    documents = [q for n in (1, 50, 63, 150) for q in build_alias_queries("o", "r", range(1, n + 1))]
    documents += [build_connection_query("o", "r", "main", n) for n in (1, 63, 100)]
    for query, variables in documents:
        price = price_only(query, variables)
        assert (price.cost, price.node_count) == (query_cost(query, variables), node_count(query, variables))


# ------------------------------------------------- the host watch's batched read


@pytest.mark.parametrize("spread", [{"o/a": [1]}, {"o/a": [1, 2, 3], "o/b": [7], "x/c": [4, 9]},
                                    {f"o/r{i}": list(range(1, 11)) for i in range(15)}])
def test_host_read_documents_validate_and_cost_a_point_per_25_requests(spread: dict[str, list[int]]) -> None:
    from git_sluice.intake.graphql import build_host_read

    built = build_host_read(spread)
    total = sum(len(v) for v in spread.values())
    assert len(built) == math.ceil(total / MAX_ALIASES)
    for text, variables, repos in built:
        assert_valid(text, variables)
        n_here = len(re.findall(r": pullRequest\(number: \d+\)", text))
        # four connections a request (labels, reviews, the head commit, its contexts): 25 to a point
        assert query_cost(text, variables) == max(1, math.ceil(4 * n_here / 100))


def test_host_read_answers_are_split_by_repository_with_their_own_errors() -> None:
    from git_sluice.intake.graphql import build_host_read, parse_host_read

    wanted = {"o/a": [1, 2], "o/b": [3]}
    ((_text, _variables, repos),) = build_host_read(wanted)
    assert repos == ["o/a", "o/b"]
    payload = {
        "data": {"rateLimit": rate(), "r0": {"pr1": pr_node(1), "pr2": None}, "r1": {"pr3": pr_node(3, baseRefName="dev")}},
        "errors": [{"path": ["r0", "pr2"], "message": "Could not resolve to a PullRequest with the number of 2."}],
    }
    parts = parse_host_read(payload, repos, wanted)
    assert sorted(parts["o/a"].readings) == [1] and 2 in parts["o/a"].skipped
    assert "resolve" in parts["o/a"].skipped[2]
    assert sorted(parts["o/b"].readings) == [3] and parts["o/b"].readings[3].base == "dev"
    assert parse_host_read({"errors": [{"message": "boom"}]}, repos, wanted)["o/b"].readings == {}
    assert parse_host_read("garbage", repos, wanted)["o/a"].readings == {}
