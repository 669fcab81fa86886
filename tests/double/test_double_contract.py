"""Every REST body the double serves validates against GitHub's own OpenAPI description.

The schemas come from ``tests/data/github/openapi-subset.json`` (GitHub's
description, cut down; MIT, ``openapi-LICENSE`` beside it). The test walks
every route the double registers: a route with no sample here fails the
test, so a new route cannot skip the contract. A route whose operation is
not in the subset borrows the schema GitHub gives the same object elsewhere
in it (a public user, an issue, the App); the installation routes have none
and are named as such.
"""

from __future__ import annotations

import functools
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from git_sluice.double import GitHubDouble, pipeline, rest, serve
from git_sluice.double.testing import ServedDouble

from tests.double.openapi_schema import openapi, problems, response_schema


@functools.cache
def _key() -> tuple[bytes, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    return private, public


def _wrapped(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": list(properties), "properties": properties}


def _schemas() -> dict[str, dict[str, Any] | None]:
    """What each sample's body must validate against (None: no schema in the subset)."""
    paths = openapi()["paths"]
    issue = paths["/repos/{owner}/{repo}/issues"]["get"]["responses"]["200"]["content"]["application/json"][
        "schema"
    ]["items"]
    runs = response_schema("/repos/{owner}/{repo}/commits/{ref}/check-runs", "get", 200)
    comments = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
    token = response_schema("/app/installations/{installation_id}/access_tokens", "post", 201)
    integer, boolean = {"type": "integer"}, {"type": "boolean"}
    return {
        "user": response_schema("/user", "get", 200),
        "a_user": response_schema("/user", "get", 200)["oneOf"][1],  # Public User
        "repo": response_schema("/repos/{owner}/{repo}", "get", 200),
        "fork": response_schema("/repos/{owner}/{repo}", "get", 200),
        "pulls": response_schema("/repos/{owner}/{repo}/pulls", "get", 200),
        "pulls_closed": response_schema("/repos/{owner}/{repo}/pulls", "get", 200),
        "pull": response_schema("/repos/{owner}/{repo}/pulls/{pull_number}", "get", 200),
        "pull_merged": response_schema("/repos/{owner}/{repo}/pulls/{pull_number}", "get", 200),
        "check_runs": runs,
        "status": response_schema("/repos/{owner}/{repo}/commits/{ref}/status", "get", 200),
        "search": _wrapped(total_count=integer, incomplete_results=boolean,
                           items={"type": "array", "items": issue}),
        "rate_limit": response_schema("/rate_limit", "get", 200),
        "comments": response_schema(comments, "get", 200),
        "comment": response_schema(comments, "post", 201),
        "comment_on_issue": response_schema(comments, "post", 201),
        "comment_by_app": response_schema(comments, "post", 201),
        "app": runs["properties"]["check_runs"]["items"]["properties"]["app"],
        "access_tokens": token,
        "installation_repositories": _wrapped(
            total_count=integer, repositories={"type": "array", "items": token["properties"]["repositories"]["items"]}
        ),
        # GitHub's "installation" object is not in the subset: these are served unchecked.
        "installations": None,
        "installation": None,
        "repo_installation": None,
    }


@pytest.fixture
def world(github: ServedDouble) -> dict[str, tuple[str, str, dict[str, str]]]:
    """A repository with every kind of thing on it, and one sample request per route."""
    gh, now = github.gh, github.clock.time()
    gh.add_user("bob")
    n = gh.open_pr("o/r", head_ref="feat", title="A feature", author="bob", body="why")
    gh.add_label("o/r", n, "bug")
    gh.review("o/r", n, "alice", "APPROVED")
    gh.comment("o/r", n, "nice")
    sha = gh.pr("o/r", n).head_sha
    gh.add_check_run("o/r", sha, "ci")
    gh.add_check_run("o/r", sha, "lint", status="in_progress", conclusion=None)
    gh.set_status("o/r", sha, "deploy", "pending", description="waiting", target_url="https://ci.example/1")
    gh.set_status("o/r", sha, "build", "success")
    merged = gh.open_pr("o/r", head_ref="done", draft=True)
    gh.merge_pr("o/r", merged)
    issue = gh.open_issue("o/r", "a bug")
    gh.star("o/r", "bob")
    gh.fork("o/r", "bob")
    gh.push_branch("o/r", "dev")
    gh.add_app(app_id=7, public_key_pem=_key()[1])
    gh.add_installation(app_id=7, installation_id=42, repos=["o/r"], permissions={"issues": "write"})
    bearer = jwt.encode({"iat": int(now) - 60, "exp": int(now) + 540, "iss": "7"}, _key()[0], "RS256")
    app = {"Authorization": f"Bearer {bearer}"}
    minted = httpx.post(f"{github.url}/app/installations/42/access_tokens", headers=app)
    assert minted.status_code == 201, minted.text
    inst = {"Authorization": f"token {minted.json()['token']}"}
    user = {"Authorization": "token tok-alice"}
    return {
        "user": ("GET", "/user", user),
        "a_user": ("GET", "/users/bob", user),
        "repo": ("GET", "/repos/o/r", user),
        "fork": ("GET", "/repos/bob/r", user),
        "pulls": ("GET", "/repos/o/r/pulls", user),
        "pulls_closed": ("GET", "/repos/o/r/pulls?state=closed", user),
        "pull": ("GET", f"/repos/o/r/pulls/{n}", user),
        "pull_merged": ("GET", f"/repos/o/r/pulls/{merged}", user),
        "check_runs": ("GET", f"/repos/o/r/commits/{sha}/check-runs", user),
        "status": ("GET", f"/repos/o/r/commits/{sha}/status", user),
        "search": ("GET", "/search/issues?q=repo:o/r+is:pr", user),
        "rate_limit": ("GET", "/rate_limit", user),
        "comments": ("GET", f"/repos/o/r/issues/{n}/comments", user),
        "comment": ("POST", f"/repos/o/r/issues/{n}/comments", user),
        "comment_on_issue": ("POST", f"/repos/o/r/issues/{issue}/comments", user),
        "comment_by_app": ("POST", f"/repos/o/r/issues/{n}/comments", inst),
        "app": ("GET", "/app", app),
        "installations": ("GET", "/app/installations", app),
        "installation": ("GET", "/app/installations/42", app),
        "repo_installation": ("GET", "/repos/o/r/installation", app),
        "access_tokens": ("POST", "/app/installations/42/access_tokens", app),
        "installation_repositories": ("GET", "/installation/repositories", inst),
    }


def test_every_route_has_a_sample_and_a_schema(world: dict[str, tuple[str, str, dict[str, str]]]) -> None:
    assert pipeline  # the pipeline's import registers the App's routes too
    schemas = _schemas()
    assert set(world) == set(schemas)
    untried = [
        f"{verb} {pattern.pattern}"
        for verb, pattern, _ in rest._ROUTES
        if not any(m == verb and pattern.match(p.split("?")[0]) for m, p, _ in world.values())
    ]
    assert untried == [], "routes with no contract sample"


def test_every_body_validates_against_githubs_openapi(
    github: ServedDouble, world: dict[str, tuple[str, str, dict[str, str]]]
) -> None:
    schemas = _schemas()
    failures: dict[str, list[str]] = {}
    with httpx.Client(base_url=github.url) as client:
        for name, (verb, path, headers) in world.items():
            sent = {"body": f"a {name} for the contract"} if verb == "POST" and "comment" in name else None
            answer = client.request(verb, path, headers=headers, json=sent)
            assert answer.status_code in (200, 201), f"{name}: {answer.status_code} {answer.text[:200]}"
            schema = schemas[name]
            if schema is not None:
                found = problems(answer.json(), schema)
                if found:
                    failures[name] = found[:12]
    assert not failures, "\n".join(f"{k}: {v}" for k, vs in failures.items() for v in vs)


def test_the_validator_catches_what_it_must() -> None:
    """A contract test that cannot fail is no test: the validator refuses the usual mistakes."""
    schema = response_schema("/repos/{owner}/{repo}/pulls", "get", 200)
    assert problems([{"number": 1}], schema)  # required fields missing
    item_repo = schema["items"]["properties"]["base"]["properties"]["repo"]
    assert any("stargazers_count" in p for p in problems({"id": 1}, item_repo))
    runs = response_schema("/repos/{owner}/{repo}/commits/{ref}/check-runs", "get", 200)
    run = runs["properties"]["check_runs"]["items"]
    assert problems("nope", run["properties"]["status"])  # wrong type
    assert problems("bogus", run["properties"]["conclusion"])  # outside the enum
    assert problems(None, run["properties"]["conclusion"]) == []  # nullable enum: the known false alarm
    assert problems("yesterday", {"type": "string", "format": "date-time"})
    public = response_schema("/user", "get", 200)["oneOf"][1]
    assert any("not allowed" in p for p in problems({"two_factor_authentication": True}, public))
    assert problems({"a": 1}, {"$ref": "#/info"}) == []  # local $ref resolves


ERRORS = [
    ("GET", "/repos/o/missing", "tok-alice", "/repos/{owner}/{repo}", 404),
    ("GET", "/repos/o/r/pulls/99", "tok-alice", "/repos/{owner}/{repo}/pulls/{pull_number}", 404),
    ("GET", "/repos/o/r/pulls?state=bogus", "tok-alice", "/repos/{owner}/{repo}/pulls", 422),
    ("GET", "/user", "nope", "/user", 401),
    ("GET", f"/repos/o/r/commits/{'0' * 40}/status", "tok-bob", "/repos/{owner}/{repo}/commits/{ref}/status", 404),
    ("POST", "/app/installations/42/access_tokens", "not.a.jwt", "/app/installations/{installation_id}/access_tokens",
     401),
    ("POST", "/repos/o/r/issues/1/comments", "tok-alice", "/repos/{owner}/{repo}/issues/{issue_number}/comments", 422),
    ("POST", "/repos/o/r/issues/9/comments", "tok-alice", "/repos/{owner}/{repo}/issues/{issue_number}/comments", 404),
    ("POST", "/repos/o/r/issues/1/comments", "tok-carol", "/repos/{owner}/{repo}/issues/{issue_number}/comments", 403),
    ("GET", "/repos/o/r/issues/9/comments", "tok-alice", "/repos/{owner}/{repo}/issues/{issue_number}/comments", 404),
]


@pytest.mark.parametrize(("verb", "path", "token", "operation", "status"), ERRORS)
def test_error_bodies_are_githubs_too(
    github: ServedDouble, verb: str, path: str, token: str, operation: str, status: int
) -> None:
    github.gh.add_token("tok-bob", user="bob", repos=[])  # a token that may read nothing
    github.gh.add_token("tok-carol", user="carol", write=False)  # a token that may read everything, write nothing
    github.gh.open_issue("o/r", "something to comment on")  # #1
    answer = httpx.request(verb, f"{github.url}{path}", headers={"Authorization": f"token {token}"})
    assert answer.status_code == status
    assert problems(answer.json(), response_schema(operation, verb, status)) == []
    assert isinstance(answer.json()["message"], str) and answer.json()["documentation_url"].startswith("https://")


def test_enterprise_rate_limit_404_is_githubs() -> None:
    gh = GitHubDouble(enterprise=True)
    gh.add_token("tok-alice", user="alice")
    with serve(gh) as server:
        answer = httpx.get(f"{server.url}/rate_limit", headers={"Authorization": "token tok-alice"})
    assert answer.status_code == 404
    assert problems(answer.json(), response_schema("/rate_limit", "get", 404)) == []
