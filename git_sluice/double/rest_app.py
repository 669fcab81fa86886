"""The GitHub App's REST routes: a JWT for the App, an expiring token for an installation.

An App authenticates with an RS256 JWT (checked in auth.py) and trades it
for an installation token (``ghs_…``) that spends the installation's pool
and expires an hour later by the double's clock. Routes register themselves
on rest.py's table when this module is imported.
"""

from __future__ import annotations

import json
import re
import secrets
import string

from . import rest_shapes as shapes
from .rest import DOCS, RestAnswer, RestContext, not_found, paginate, route
from .timefmt import rfc3339


def _app_only(ctx: RestContext) -> RestAnswer | None:
    if ctx.principal.kind != "app":
        return RestAnswer(
            401,
            {"message": "A JSON web token could not be decoded", "documentation_url": DOCS},
            cacheable=False,
        )
    return None


@route("GET", r"/app")
def get_app(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    refused = _app_only(ctx)
    if refused:
        return refused
    app = ctx.gh.world.apps[ctx.principal.app_id or 0]
    owner = next((i.account for i in ctx.gh.world.installations.values() if i.app_id == app.app_id), app.slug)
    return RestAnswer(200, shapes.app_json(ctx.api, ctx.html, app.app_id, app.slug, app.slug, owner),
                      cacheable=False)


@route("GET", r"/app/installations")
def list_installations(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    refused = _app_only(ctx)
    if refused:
        return refused
    mine = [i for i in ctx.gh.world.installations.values() if i.app_id == ctx.principal.app_id]
    page, link = paginate(ctx, mine)
    return RestAnswer(200, [shapes.installation_json(ctx.api, i) for i in page], link=link, cacheable=False)


@route("GET", r"/app/installations/(?P<id>\d+)")
def get_installation(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    refused = _app_only(ctx)
    if refused:
        return refused
    inst = ctx.gh.world.installations.get(int(m["id"]))
    if inst is None or inst.app_id != ctx.principal.app_id:
        return not_found()
    return RestAnswer(200, shapes.installation_json(ctx.api, inst), cacheable=False)


@route("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/installation")
def get_repo_installation(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    refused = _app_only(ctx)
    if refused:
        return refused
    full = f"{m['o']}/{m['r']}"
    for inst in ctx.gh.world.installations.values():
        if inst.app_id == ctx.principal.app_id and full in inst.repos:
            return RestAnswer(200, shapes.installation_json(ctx.api, inst), cacheable=False)
    return not_found()


_TOKEN_ALPHABET = string.ascii_letters + string.digits


@route("POST", r"/app/installations/(?P<id>\d+)/access_tokens")
def create_installation_token(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    refused = _app_only(ctx)
    if refused:
        return refused
    inst = ctx.gh.world.installations.get(int(m["id"]))
    if inst is None or inst.app_id != ctx.principal.app_id:
        return not_found()
    wanted: list[str] | None = None
    narrowed: dict[str, str] | None = None
    if ctx.body.strip():
        try:
            request = json.loads(ctx.body)
        except ValueError:
            return RestAnswer(400, {"message": "Problems parsing JSON", "documentation_url": DOCS}, cacheable=False)
        names = request.get("repositories") if isinstance(request, dict) else None
        if isinstance(names, list):
            wanted = [n if "/" in n else f"{inst.account}/{n}" for n in names]
        asked = request.get("permissions") if isinstance(request, dict) else None
        if isinstance(asked, dict):
            # A token may be narrowed, never widened: what the installation lacks stays lacking.
            narrowed = {k: str(v) for k, v in asked.items() if k in inst.permissions}
    world = ctx.gh.world
    token = "ghs_" + "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(36))
    expires = int(ctx.now + ctx.gh.installation_token_ttl)
    grant = ctx.gh.world.mint_installation_token(inst.installation_id, token, expires, wanted, narrowed)
    permissions = dict(inst.permissions) if narrowed is None else {
        k: "write" if v == "write" and inst.permissions[k] == "write" else "read" for k, v in narrowed.items()
    }
    body = {
        "token": token,
        "expires_at": rfc3339(expires),
        "permissions": permissions,
        "repository_selection": "selected",
        "repositories": [
            shapes.repo_json(ctx.api, ctx.html, world.repos[r], world.users.get(world.repos[r].owner))
            for r in sorted(grant.repos or ())
            if r in world.repos
        ],
    }
    return RestAnswer(201, body, cacheable=False)


@route("GET", r"/installation/repositories")
def installation_repositories(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    if ctx.principal.kind != "installation":
        return RestAnswer(403, {"message": "Resource not accessible by integration", "documentation_url": DOCS},
                          cacheable=False)
    world = ctx.gh.world
    repos = [world.repos[r] for r in sorted(ctx.principal.repos or ()) if r in world.repos]
    page, link = paginate(ctx, repos)
    body = {
        "total_count": len(repos),
        "repository_selection": "selected",
        "repositories": [shapes.repo_json(ctx.api, ctx.html, r, world.users.get(r.owner)) for r in page],
    }
    return RestAnswer(200, body, link=link)
