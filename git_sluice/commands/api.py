"""``git sluice api``: one call to GitHub through the clone's forge (conditional, budgeted, ledgered)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..forge.client import Answer
from ..runtime.session import Session


def is_graphql(path: str) -> bool:
    return path.strip("/") == "graphql"


def call_github(
    session: Session,
    path: str,
    *,
    method: str,
    fields: Mapping[str, Any],
    query: str | None = None,
    wait: bool,
    deadline: float | None,
) -> Answer:
    """GraphQL (``query`` with ``fields`` as its variables) or REST (``fields`` as a GET's query or a body)."""
    forge = session.forge
    if is_graphql(path):
        body = {"query": query, "variables": dict(fields)}
        return forge.request("POST", session.settings.graphql, json_body=body, wait=wait, deadline=deadline)
    if method.upper() == "GET":
        return forge.get(path, params=dict(fields) or None, wait=wait, deadline=deadline)
    return forge.request(method, path, json_body=dict(fields) or None, wait=wait, deadline=deadline)


def failed(answer: Answer, path: str) -> bool:
    """An error status, or GraphQL's refusal (200 with ``errors[]``, which ``gh api`` also exits 1 on)."""
    if answer.status >= 400:
        return True
    if not is_graphql(path):
        return False
    try:
        return bool(json.loads(answer.body).get("errors"))
    except (ValueError, AttributeError):
        return False
