"""Issue comments over REST: the one write a pacing proxy's tests need, and its read-back.

``POST /repos/{o}/{r}/issues/{n}/comments`` makes a comment on an issue or a
pull request (every pull request is an issue on GitHub) and answers 201 with
GitHub's comment and its ``Location``; ``GET`` on the same path lists them,
paginated, with per-token ETags and free 304s like every list. The checks run
in GitHub's order: who (401), what may be read (404), what may be written
(403), what was sent (400, 422). Content-creation limits are the pipeline's
business: a refused request never reaches this module. Routes register
themselves on rest.py's table when this module is imported.
"""

from __future__ import annotations

import json
import re

from . import rest_shapes as shapes
from .auth import actor_login
from .model import Issue, PullRequest, Repo
from .rest import DOCS, RestAnswer, RestContext, newest, invalid, not_found, paginate, readable_repo, route

COMMENTS_DOCS = "https://docs.github.com/rest/issues/comments#create-an-issue-comment"
_ISSUE = r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/(?P<n>\d+)"


def _target(ctx: RestContext, m: re.Match[str]) -> tuple[Repo, PullRequest | Issue] | None:
    """The repository and the issue or pull request #n, when the caller may read them."""
    repo = readable_repo(ctx, m["o"], m["r"])
    if repo is None:
        return None
    number = int(m["n"])
    found = repo.pulls.get(number) or repo.issues.get(number)
    return (repo, found) if found is not None else None


@route("POST", _ISSUE + "/comments")
def create_comment(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    p = ctx.principal
    if p.kind == "anon":
        return RestAnswer(401, {"message": "Requires authentication", "documentation_url": COMMENTS_DOCS},
                          cacheable=False)
    found = _target(ctx, m)
    if found is None:
        return not_found()
    repo, target = found
    if not p.can_comment(repo, on_pull_request=isinstance(target, PullRequest)):
        return RestAnswer(403, {"message": p.refusal(), "documentation_url": COMMENTS_DOCS, "status": "403"},
                          cacheable=False)
    try:
        sent = json.loads(ctx.body or b"null")
    except ValueError:
        return RestAnswer(400, {"message": "Problems parsing JSON", "documentation_url": DOCS}, cacheable=False)
    text = sent.get("body") if isinstance(sent, dict) else None
    if not isinstance(text, str) or not text.strip():
        return invalid("IssueComment", "body", "missing_field")
    inst = ctx.gh.world.installations.get(p.installation_id or 0) if p.kind == "installation" else None
    comment = ctx.gh.add_comment(repo.full_name, target.number, text, actor_login(ctx.gh, p), pool=p.pool_key,
                                 app_id=inst.app_id if inst else None)
    body = shapes.comment_json(ctx.api, ctx.html, repo, target, comment, ctx.gh.world)
    return RestAnswer(201, body, cacheable=False, headers={"Location": body["url"]})


@route("GET", _ISSUE + "/comments")
def list_comments(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    found = _target(ctx, m)
    if found is None:
        return not_found()
    repo, target = found
    page, link = paginate(ctx, target.comment_list)
    body = [shapes.comment_json(ctx.api, ctx.html, repo, target, c, ctx.gh.world) for c in page]
    return RestAnswer(200, body, modified=newest([c.updated_at for c in page]), link=link)
