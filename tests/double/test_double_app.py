"""The GitHub App flow: an RS256 JWT for the App, an expiring token for the installation's pool."""

from __future__ import annotations

import functools

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from git_sluice.double.testing import ServedDouble


@functools.lru_cache(maxsize=2)
def _keys(which: int = 0) -> tuple[bytes, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    return private, public


def _jwt(now: float, app_id: int = 7, key: int = 0, lifetime: int = 540) -> str:
    private, _ = _keys(key)
    return jwt.encode({"iat": int(now) - 60, "exp": int(now) + lifetime, "iss": str(app_id)}, private, "RS256")


@pytest.fixture
def app(github: ServedDouble) -> ServedDouble:
    gh = github.gh
    gh.add_app(app_id=7, public_key_pem=_keys(0)[1])
    gh.add_installation(app_id=7, installation_id=42, repos=["o/r"])
    gh.add_repo("o/other")
    return github


def test_a_jwt_mints_an_installation_token_that_spends_the_installation_pool(
    app: ServedDouble, http: httpx.Client
) -> None:
    gh, clock = app.gh, app.clock
    bearer = {"Authorization": f"Bearer {_jwt(clock.time())}"}
    inst = http.get(f"{app.url}/app/installations/42", headers=bearer)
    assert inst.status_code == 200 and inst.json()["id"] == 42 and inst.json()["app_id"] == 7
    minted = http.post(f"{app.url}/app/installations/42/access_tokens", headers=bearer)
    assert minted.status_code == 201
    token = minted.json()["token"]
    assert token.startswith("ghs_") and minted.json()["expires_at"] == "2027-01-15T09:00:00Z"

    auth = {"Authorization": f"token {token}"}
    pulls = http.get(f"{app.url}/repos/o/r/pulls", headers=auth)
    assert pulls.status_code == 200
    assert gh.calls()[-1].pool == "installation:42"
    assert gh.counted(pool="installation:42") == 1 and gh.remaining("installation:42", "core") == 4999
    assert gh.counted(pool="user:alice") == 0
    assert http.get(f"{app.url}/repos/o/other", headers=auth).status_code == 404  # not installed there
    viewer = http.post(f"{app.url}/graphql", headers=auth, json={"query": "{ viewer { login } }"})
    assert viewer.json()["data"]["viewer"]["login"] == "app-7[bot]"
    assert gh.calls()[-1].token_sha != token and token not in repr(gh.ledger)

    clock.advance(3600)  # the token expires by the double's clock
    expired = http.get(f"{app.url}/repos/o/r/pulls", headers=auth)
    assert expired.status_code == 401 and expired.json()["message"] == "Bad credentials"


def test_a_jwt_is_checked_like_github_checks_it(app: ServedDouble, http: httpx.Client) -> None:
    now = app.clock.time()

    def status(token: str) -> tuple[int, str]:
        answer = http.post(
            f"{app.url}/app/installations/42/access_tokens", headers={"Authorization": f"Bearer {token}"}
        )
        return answer.status_code, answer.json()["message"] if answer.status_code != 201 else ""

    assert status(_jwt(now))[0] == 201
    assert status(_jwt(now, key=1)) == (401, "A JSON web token could not be decoded")  # another key
    assert status(_jwt(now, app_id=8))[1] == "Integration not found"
    assert "too far in the future" in status(_jwt(now, lifetime=3600))[1]
    assert "'Expiration time'" in status(_jwt(now - 1200))[1]  # expired
    assert status("not.a.jwt")[0] == 401
    # a JWT is no token for the REST API itself
    assert http.get(f"{app.url}/repos/o/r", headers={"Authorization": f"Bearer {_jwt(now)}"}).status_code == 401
    # and an installation token is no JWT
    assert http.get(f"{app.url}/app/installations/42", headers={"Authorization": "token tok-alice"}).status_code == 401


def test_a_token_can_be_narrowed_to_some_repositories(app: ServedDouble, http: httpx.Client) -> None:
    gh = app.gh
    gh.add_installation(app_id=7, installation_id=43, repos=["o/r", "o/other"])
    bearer = {"Authorization": f"Bearer {_jwt(app.clock.time())}"}
    minted = http.post(
        f"{app.url}/app/installations/43/access_tokens", headers=bearer, json={"repositories": ["other"]}
    )
    token = minted.json()["token"]
    assert [r["full_name"] for r in minted.json()["repositories"]] == ["o/other"]
    auth = {"Authorization": f"token {token}"}
    assert http.get(f"{app.url}/repos/o/other", headers=auth).status_code == 200
    assert http.get(f"{app.url}/repos/o/r", headers=auth).status_code == 404
    listed = http.get(f"{app.url}/installation/repositories", headers=auth).json()
    assert listed["total_count"] == 1


def test_a_jwt_may_expire_at_most_ten_minutes_ahead(app: ServedDouble, http: httpx.Client) -> None:
    now = app.clock.time()

    def minted(lifetime: int) -> int:
        token = _jwt(now, lifetime=lifetime)
        headers = {"Authorization": f"Bearer {token}"}
        return http.post(f"{app.url}/app/installations/42/access_tokens", headers=headers).status_code

    assert minted(600) == 201
    assert minted(630) == 401  # GitHub allows no drift on exp


def test_an_installation_token_lives_its_ttl_and_a_new_token_revalidates_nothing(
    app: ServedDouble, http: httpx.Client
) -> None:
    gh, clock = app.gh, app.clock
    gh.installation_token_ttl = 600

    def mint() -> dict[str, str]:
        bearer = {"Authorization": f"Bearer {_jwt(clock.time())}"}
        body = http.post(f"{app.url}/app/installations/42/access_tokens", headers=bearer).json()
        return {"Authorization": f"token {body['token']}"}

    first = mint()
    etag = http.get(f"{app.url}/repos/o/r/pulls", headers=first).headers["etag"]
    assert http.get(f"{app.url}/repos/o/r/pulls", headers={**first, "If-None-Match": etag}).status_code == 304
    clock.advance(599)
    assert http.get(f"{app.url}/repos/o/r/pulls", headers=first).status_code == 200
    clock.advance(1)
    refused = http.get(f"{app.url}/repos/o/r/pulls", headers=first)
    assert refused.status_code == 401 and refused.json()["message"] == "Bad credentials"
    graphql = http.post(f"{app.url}/graphql", headers=first, json={"query": "{ viewer { login } }"})
    assert graphql.status_code == 401

    second = mint()  # ETags belong to the token: the new one's first look is a counted 200
    mark = gh.mark()
    assert http.get(f"{app.url}/repos/o/r/pulls", headers={**second, "If-None-Match": etag}).status_code == 200
    assert [c.counted for c in gh.calls(since=mark)] == [True]
