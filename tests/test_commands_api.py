"""commands/api.py: what counts as a failed ``git sluice api`` answer (exit 1), decided without I/O."""

from __future__ import annotations

import json

import pytest

from git_sluice.commands.api import failed, is_graphql
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
