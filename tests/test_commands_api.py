"""commands/api.py: gh api's rules (fields, methods, pages, messages) and what counts as failed, decided without I/O."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from git_sluice.commands.api import (
    build_params, end_cursor, error_message, failed, fill_placeholders, is_graphql, jq_text, method_for, query_pairs,
    with_per_page,
)
from git_sluice.errors import UsageError
from git_sluice.forge.client import Answer


def answer(status: int, body: object) -> Answer:
    return Answer(status=status, headers={}, body=json.dumps(body).encode(), url="https://api.github.com/x")


@pytest.mark.parametrize("path", ["graphql", "/graphql", "graphql/"])
def test_graphql_is_known_by_its_path(path: str) -> None:
    assert is_graphql(path)


def test_rest_paths_are_not_graphql() -> None:
    assert not is_graphql("repos/o/r/pulls") and not is_graphql("graphql/extra")


@pytest.mark.parametrize(
    ("path", "status", "body", "expected"),
    [
        ("repos/o/r", 200, {"errors": ["not graphql: a field like any other"]}, False),
        ("repos/o/r", 404, {"message": "Not Found"}, True),
        ("graphql", 200, {"data": {"viewer": {"login": "mona"}}}, False),
        ("graphql", 200, {"errors": [{"message": "Field 'x' doesn't exist"}]}, True),
        ("graphql", 200, ["not an object"], False),
        ("graphql", 502, {"message": "Bad Gateway"}, True),
    ],
)
def test_failed(path: str, status: int, body: object, expected: bool) -> None:
    assert failed(answer(status, body), path) is expected


def test_a_body_that_is_not_json_is_not_a_graphql_refusal() -> None:
    garbled = Answer(status=200, headers={}, body=b"<html>", url="https://api.github.com/graphql")
    assert failed(garbled, "graphql") is False


# ------------------------------------------------------------------ gh api's rules, as plain functions


KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)


def no_file(name: str) -> str:
    raise AssertionError(f"no file should be read: {name}")


@given(st.dictionaries(KEYS, st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12), max_size=5))
def test_raw_fields_are_strings_as_given(fields: dict[str, str]) -> None:
    raw = [f"{k}={v}" for k, v in fields.items()]
    assert build_params(raw, [], no_file, lambda s: s) == fields


@pytest.mark.parametrize(("given_value", "typed"), [
    ("true", True), ("false", False), ("null", None), ("12", 12), ("-3", -3), ("1.5", "1.5"), ("True", "True"),
    ("[1]", "[1]"), ("", ""),
])
def test_typed_fields_type_as_gh_does(given_value: str, typed: object) -> None:
    assert build_params([], [f"k={given_value}"], no_file, lambda s: s) == {"k": typed}


def test_nested_fields() -> None:
    params = build_params(["a[b][c]=1", "l[]=x", "l[]=y", "o[][k]=1", "o[][k]=2", "o[][j]=3", "e[]"], [],
                          no_file, lambda s: s)
    assert params == {"a": {"b": {"c": "1"}}, "l": ["x", "y"], "o": [{"k": "1"}, {"k": "2", "j": "3"}], "e": []}


@pytest.mark.parametrize("bad", [["k"], ["=v"], ["k=1", "k=2"], ["a=1", "a[b]=2"]])
def test_bad_fields_are_usage_errors(bad: list[str]) -> None:
    with pytest.raises(UsageError):
        build_params(bad, [], no_file, lambda s: s)


@given(st.text(max_size=30))
def test_placeholders_leave_other_text_alone(text: str) -> None:
    if not any(f"{{{name}}}" in text for name in ("owner", "repo", "branch")):
        assert fill_placeholders(text, lambda name: "X") == text


def test_placeholders_fill_the_three_names_only() -> None:
    values = {"owner": "o", "repo": "r", "branch": "main"}
    assert fill_placeholders("repos/{owner}/{repo}/git/ref/heads/{branch}/{sha}", values.__getitem__) == (
        "repos/o/r/git/ref/heads/main/{sha}")


def test_the_method_is_post_once_a_field_or_input_is_given_unless_named() -> None:
    assert method_for(None, {}, False) == "GET"
    assert method_for(None, {"a": "1"}, False) == "POST"
    assert method_for(None, {}, True) == "POST"
    assert method_for("get", {"a": "1"}, False) == "GET"


def test_query_pairs_and_page_size() -> None:
    assert query_pairs({"q": "x", "l": ["a", "b"], "b": True, "n": None}) == [
        ("q", "x"), ("l[]", "a"), ("l[]", "b"), ("b", "true"), ("n", "")]
    assert with_per_page("repos/o/r/pulls", {}) == "repos/o/r/pulls?per_page=100"
    assert with_per_page("repos/o/r/pulls?state=open", {}) == "repos/o/r/pulls?state=open&per_page=100"
    assert with_per_page("repos/o/r/pulls?per_page=5", {}) == "repos/o/r/pulls?per_page=5"
    assert with_per_page("repos/o/r/pulls", {"per_page": 5}) == "repos/o/r/pulls"


def test_end_cursor_is_the_first_page_info_with_a_next_page() -> None:
    page = {"data": {"a": {"pageInfo": {"hasNextPage": True, "endCursor": "C1"}}, "b": {"pageInfo": {}}}}
    assert end_cursor(page) == "C1"
    assert end_cursor({"data": {"a": {"pageInfo": {"hasNextPage": False, "endCursor": "C1"}}}}) is None
    assert end_cursor({"data": None}) is None


@pytest.mark.parametrize(("path", "status", "body", "said"), [
    ("repos/o/r", 404, {"message": "Not Found"}, "Not Found (HTTP 404)"),
    ("repos/o/r", 422, {"message": "Validation Failed", "errors": [{"message": "x"}]}, "Validation Failed (HTTP 422)"),
    ("repos/o/r", 500, "oops", "HTTP 500"),
    ("graphql", 200, {"errors": [{"message": "a"}, {"message": "b"}]}, "a\nb"),
    ("graphql", 200, {"data": {}}, None),
    ("repos/o/r", 200, {"message": "fine"}, None),
])
def test_error_messages_are_ghs(path: str, status: int, body: object, said: str | None) -> None:
    assert error_message(answer(status, body), path) == said


def test_jq_results_print_as_gh_prints_them() -> None:
    assert [jq_text(v, None) for v in ("a", 1, 1.0, 2.5, None, True, {"b": [1], "a": "<&>"})] == [
        "a", "1", "1", "2.50", "", "true", '{"a":"\\u003c\\u0026\\u003e","b":[1]}']
