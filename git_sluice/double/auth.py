"""Who is calling: a token's grant, an App's JWT, or nobody.

GitHub takes ``Authorization: token X`` and ``Bearer X`` alike. A user's
tokens all spend the user's pool; an installation token spends its
installation's pool and expires; an App's JWT (RS256, ``iss`` = app id) is
good only on the App's own routes, where it is checked with PyJWT against
the App's public key and the double's clock (GitHub: ``exp`` at most ten
minutes ahead of GitHub's clock, with no drift allowed there; ``iat`` not in
the future, 60 s of drift allowed, which is why clients back-date it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jwt

from .limits import ANON
from .model import Repo, token_sha

if TYPE_CHECKING:
    from .core import GitHubDouble

JWT_ROUTES = re.compile(r"^/app(/|$)|^/repos/[^/]+/[^/]+/installation$")
JWT_MAX_LIFETIME = 600.0
JWT_CLOCK_DRIFT = 60.0


@dataclass(frozen=True)
class Principal:
    kind: str  # "anon" | "user" | "installation" | "app"
    pool: str | None
    token_sha: str | None = None
    login: str | None = None
    user_id: int | None = None
    installation_id: int | None = None
    app_id: int | None = None
    repos: frozenset[str] | None = None
    writes: frozenset[str] | None = None  # write permissions held; None: all (a classic token)

    @property
    def pool_key(self) -> str:
        """The bucket the call spends: its pool, or the shared unauthenticated one."""
        return self.pool or ANON

    def can_read(self, repo: Repo) -> bool:
        if self.kind == "anon":
            return not repo.private
        if self.kind == "app":
            return False
        return self.repos is None or repo.full_name in self.repos

    def can_comment(self, repo: Repo, on_pull_request: bool) -> bool:
        """Whether this caller may write an issue comment there (GitHub: ``issues: write``, or on a
        pull request ``pull_requests: write`` too). A caller who cannot read the repository never
        gets this far: it is a 404 before it is a 403."""
        if self.kind not in ("user", "installation") or not self.can_read(repo):
            return False
        if self.writes is None:
            return True
        return "issues" in self.writes or (on_pull_request and "pull_requests" in self.writes)

    def refusal(self) -> str:
        """GitHub's words for a write this caller's permissions do not cover."""
        if self.kind == "installation":
            return "Resource not accessible by integration"
        return "Resource not accessible by personal access token"

    def limit_subject(self) -> str:
        """Who GitHub's "API rate limit exceeded for …" names."""
        if self.kind == "user":
            return f"user ID {self.user_id}"
        if self.kind == "installation":
            return f"installation ID {self.installation_id}"
        if self.kind == "app":
            return f"app ID {self.app_id}"
        return "127.0.0.1"


ANONYMOUS = Principal(kind="anon", pool=None)


@dataclass(frozen=True)
class AuthFailure:
    message: str
    token_sha: str | None


def actor_login(gh: "GitHubDouble", principal: Principal) -> str:
    """The login a caller reads and writes as: the user, or an installation's ``SLUG[bot]``."""
    if principal.kind == "installation":
        inst = gh.world.installations.get(principal.installation_id or 0)
        app = gh.world.apps.get(inst.app_id) if inst else None
        return f"{app.slug if app else 'app'}[bot]"
    return principal.login or "ghost"


def bearer(header: str | None) -> str | None:
    """The credential in an Authorization header ("token X" or "Bearer X"), if any."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip()
    return ""


def authenticate(gh: "GitHubDouble", header: str | None, path: str, now: float) -> Principal | AuthFailure:
    """The caller of one request; the caller holds ``gh.lock``."""
    credential = bearer(header)
    if credential is None:
        return ANONYMOUS
    sha = token_sha(credential) if credential else None
    grant = gh.world.grants.get(sha) if sha else None
    if grant is not None and (grant.expires_at is None or now < grant.expires_at):
        if grant.kind == "user":
            user = gh.world.users[grant.user or ""]
            return Principal(kind="user", pool=grant.pool, token_sha=sha, login=user.login,
                             user_id=user.id, repos=grant.repos, writes=grant.writes)
        return Principal(kind="installation", pool=grant.pool, token_sha=sha,
                         installation_id=grant.installation_id, repos=grant.repos, writes=grant.writes)
    if credential and credential.count(".") == 2 and JWT_ROUTES.search(path):
        return _app_from_jwt(gh, credential, sha, now)
    return AuthFailure("Bad credentials", sha)


def _app_from_jwt(gh: "GitHubDouble", token: str, sha: str | None, now: float) -> Principal | AuthFailure:
    undecodable = AuthFailure("A JSON web token could not be decoded", sha)
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return undecodable
    try:
        issuer: Any = claims.get("iss")  # whatever the JWT says: int() refuses what GitHub refuses
        app = gh.world.apps.get(int(issuer))
    except (TypeError, ValueError):
        return AuthFailure("'Issuer' claim ('iss') must be an Integer", sha)
    if app is None:
        return AuthFailure("Integration not found", sha)
    try:
        jwt.decode(
            token,
            app.public_key_pem,
            algorithms=["RS256"],
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False, "verify_aud": False},
        )
    except jwt.PyJWTError:
        return undecodable
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, (int, float)) or exp <= now:
        return AuthFailure(
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at "
            "which the assertion expires",
            sha,
        )
    if exp > now + JWT_MAX_LIFETIME:
        return AuthFailure("'Expiration time' claim ('exp') is too far in the future", sha)
    if not isinstance(iat, (int, float)) or iat > now + JWT_CLOCK_DRIFT:
        return AuthFailure(
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
            sha,
        )
    return Principal(kind="app", pool=f"app:{app.app_id}", token_sha=sha, app_id=app.app_id)
