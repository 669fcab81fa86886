"""GraphQL answers from the double's world, as plain dicts.

graphql-core's default resolver reads a dict key and calls it when it is a
function (with the field's arguments), and resolves abstract types by the
dict's ``__typename``; so each object here is a dict whose fields that take
arguments are small functions. Only what git-sluice (and tools like it) ask
for is modelled: repositories, pull requests, their labels, reviews, commits,
check rollups, issue comments, issues and ``search`` as ``gh issue list`` /
``gh pr list`` ask for them, the viewer and ``rateLimit`` — and one mutation,
``addComment``, the write a pacing proxy's tests send. A field the double does not hold
answers null (or fails where the schema says non-null), never a made-up value.
"""

from __future__ import annotations

import base64
import datetime as _dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .auth import Principal, actor_login
from .graphql_cost import Price
from .limits import Bucket
from .model import (
    CheckRun,
    CommitStatus,
    Issue,
    IssueComment,
    PullRequest,
    Repo,
    Review,
    combined_state,
    node_id,
    rollup_state,
)
from .timefmt import rfc3339

if TYPE_CHECKING:
    from .core import GitHubDouble


class TypedError(Exception):
    """A field's failure as GitHub types it in ``errors[].type``; the field answers null."""

    kind = "INTERNAL"


class NotFound(TypedError):
    """GitHub's NOT_FOUND: the field is null and an error names what could not be resolved."""

    kind = "NOT_FOUND"


class Forbidden(TypedError):
    """GitHub's FORBIDDEN: the caller may read the subject but its permissions do not cover the write."""

    kind = "FORBIDDEN"


class Unprocessable(TypedError):
    """GitHub's UNPROCESSABLE: the write's input is refused (a blank comment)."""

    kind = "UNPROCESSABLE"


@dataclass
class GqlContext:
    gh: "GitHubDouble"
    principal: Principal
    price: Price
    bucket: Bucket
    now: float

    @property
    def html(self) -> str:
        return self.gh.html_url


def _t(epoch: int | None) -> str | None:
    return rfc3339(epoch) if epoch is not None else None


def cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _uncursor(text: str, arg: str) -> int:
    try:
        raw = base64.b64decode(text.encode(), validate=True).decode()
        if raw.startswith("cursor:v2:"):
            return int(raw[len("cursor:v2:") :])
    except (ValueError, UnicodeDecodeError):
        pass
    raise ValueError(f"`{arg}` does not appear to be a valid cursor.")


def connection(
    items: list[Any],
    node: Callable[[Any], dict[str, Any]],
    first: int | None = None,
    last: int | None = None,
    after: str | None = None,
    before: str | None = None,
    extra: dict[str, Any] | None = None,
    **_: Any,
) -> dict[str, Any]:
    """A Relay connection over ``items`` (nodes, edges, pageInfo, totalCount), cursors by index."""
    start, end = 0, len(items)
    if after is not None:
        start = min(len(items), _uncursor(after, "after") + 1)
    if before is not None:
        end = max(start, min(end, _uncursor(before, "before")))
    if first is not None:
        lo, hi = start, min(end, start + first)
    elif last is not None:
        lo, hi = max(start, end - last), end
    else:
        lo, hi = start, end
    nodes = [node(items[i]) for i in range(lo, hi)]
    out: dict[str, Any] = {
        "nodes": nodes,
        "edges": [{"node": n, "cursor": cursor(i)} for i, n in zip(range(lo, hi), nodes)],
        "pageInfo": {
            "hasNextPage": hi < len(items),
            "hasPreviousPage": lo > 0,
            "startCursor": cursor(lo) if hi > lo else None,
            "endCursor": cursor(hi - 1) if hi > lo else None,
        },
        "totalCount": len(items),
    }
    out.update(extra or {})
    return out


def root_value(ctx: GqlContext) -> dict[str, Any]:
    return {
        "repository": lambda info, owner, name, **_: _repository(ctx, owner, name),
        "viewer": lambda info: _viewer(ctx),
        "search": lambda info, query, type, **kw: search(ctx, query, type, **kw),
        # Enterprise Server with rate limiting off answers rateLimit with null.
        "rateLimit": lambda info, **_: rate_limit_values(ctx) if ctx.gh.rate_limits else None,
        # Mutation fields share the root: graphql-core reads the same dict for either operation.
        "addComment": lambda info, input, **_: _add_comment(ctx, input),
    }


def rate_limit_values(ctx: GqlContext) -> dict[str, Any]:
    b = ctx.bucket
    return {
        "cost": ctx.price.cost,
        "limit": b.limit,
        "remaining": b.remaining,
        "used": b.used,
        "resetAt": rfc3339(b.reset_at(ctx.now)),
        "nodeCount": ctx.price.node_count,
    }


def _actor(ctx: GqlContext, login: str) -> dict[str, Any]:
    user = ctx.gh.world.users.get(login)
    bot = login.endswith("[bot]")
    return {
        "__typename": "Bot" if bot else "User",
        "login": login,
        "id": user.node_id if user else node_id("U", "user", login),
        "databaseId": user.id if user else None,
        "name": login,
        "url": f"{ctx.html}/{login}",
        "resourcePath": f"/{login}",
        "avatarUrl": lambda info, **_: f"https://avatars.githubusercontent.com/u/{user.id if user else 0}?v=4",
    }


def _viewer(ctx: GqlContext) -> dict[str, Any]:
    return _actor(ctx, actor_login(ctx.gh, ctx.principal))


# -- addComment ----------------------------------------------------------------------
def _subject(ctx: GqlContext, subject_id: str) -> tuple[Repo, PullRequest | Issue]:
    """The issue or pull request a global id names, among the repositories the caller may read."""
    for repo in ctx.gh.world.repos.values():
        if not ctx.principal.can_read(repo):
            continue
        items: list[PullRequest | Issue] = [*repo.pulls.values(), *repo.issues.values()]
        for item in items:
            if item.node_id == subject_id:
                return repo, item
    raise NotFound(f"Could not resolve to a node with the global id of '{subject_id}'.")


def _add_comment(ctx: GqlContext, given: dict[str, Any]) -> dict[str, Any]:
    """``addComment``: the same comment ``POST …/issues/{n}/comments`` makes, checked the same way."""
    repo, subject = _subject(ctx, given["subjectId"])
    pull = isinstance(subject, PullRequest)
    if not ctx.principal.can_comment(repo, on_pull_request=pull):
        raise Forbidden(f"{ctx.principal.refusal()} (addComment)")
    body = given["body"]
    if not body.strip():
        raise Unprocessable("Body cannot be blank")
    comment = ctx.gh.add_comment(repo.full_name, subject.number, body, actor_login(ctx.gh, ctx.principal),
                                 pool=ctx.principal.pool_key, app_id=_app_of(ctx))
    node = comment_node(ctx, repo, subject, comment)
    edge = {"cursor": cursor(len(subject.comment_list) - 1), "node": node}
    return {
        "clientMutationId": given.get("clientMutationId"),
        "commentEdge": edge,
        "timelineEdge": edge,
        "subject": pr_node(ctx, repo, subject) if isinstance(subject, PullRequest) else issue_node(ctx, repo, subject),
    }


def _app_of(ctx: GqlContext) -> int | None:
    inst = ctx.gh.world.installations.get(ctx.principal.installation_id or 0)
    return inst.app_id if inst is not None and ctx.principal.kind == "installation" else None


def issue_node(ctx: GqlContext, repo: Repo, issue: PullRequest | Issue) -> dict[str, Any]:
    """An ``Issue``; for a pull request, the issue GitHub keeps beside every one (a comment's ``issue``)."""
    url = f"{ctx.html}/{repo.full_name}/issues/{issue.number}"
    return {
        "__typename": "Issue",
        "id": node_id("I", repo.full_name, issue.number),
        "databaseId": issue.id,
        "number": issue.number,
        "title": issue.title,
        "state": issue.state.upper(),
        "closed": issue.state == "closed",
        "url": url,
        "resourcePath": f"/{repo.full_name}/issues/{issue.number}",
        "author": _actor(ctx, issue.author),
        "createdAt": _t(issue.created_at),
        "updatedAt": _t(issue.updated_at),
        "closedAt": _t(issue.closed_at),
        "body": "",
        "stateReason": "COMPLETED" if issue.state == "closed" else None,
        "locked": False,
        # an issue of the double has no assignee and no label (gh issue list asks for both)
        "assignees": lambda info, **kw: connection([], lambda x: x, **kw),
        "labels": lambda info, **kw: connection([], lambda x: x, **kw),
        "repository": lambda info: repo_node(ctx, repo),
        "comments": lambda info, **kw: connection(
            issue.comment_list, lambda c: comment_node(ctx, repo, issue, c), **kw
        ),
    }


def comment_node(ctx: GqlContext, repo: Repo, subject: PullRequest | Issue, comment: IssueComment) -> dict[str, Any]:
    """An ``IssueComment``: what ``addComment`` answers and a subject's ``comments`` list."""
    kind = "pull" if isinstance(subject, PullRequest) else "issues"
    url = f"{ctx.html}/{repo.full_name}/{kind}/{subject.number}#issuecomment-{comment.id}"
    mine = comment.author == actor_login(ctx.gh, ctx.principal)
    return {
        "__typename": "IssueComment",
        "id": comment.node_id,
        "databaseId": comment.id,
        "fullDatabaseId": comment.id,
        "body": comment.body,
        "bodyText": comment.body,
        "author": _actor(ctx, comment.author),
        "authorAssociation": "OWNER" if comment.author == repo.owner else "CONTRIBUTOR",
        "createdAt": _t(comment.created_at),
        "updatedAt": _t(comment.updated_at),
        "publishedAt": _t(comment.created_at),
        "lastEditedAt": None,
        "createdViaEmail": False,
        "includesCreatedEdit": False,
        "isMinimized": False,
        "minimizedReason": None,
        "url": url,
        "resourcePath": url.removeprefix(ctx.html),
        "viewerDidAuthor": mine,
        "viewerCanUpdate": mine,
        "viewerCanDelete": mine,
        "viewerCanReact": True,
        "viewerCanMinimize": False,
        "viewerCannotUpdateReasons": [] if mine else ["INSUFFICIENT_ACCESS"],
        "repository": lambda info: repo_node(ctx, repo),
        "issue": lambda info: issue_node(ctx, repo, subject),
        "pullRequest": lambda info: pr_node(ctx, repo, subject) if isinstance(subject, PullRequest) else None,
    }


def _repository(ctx: GqlContext, owner: str, name: str) -> dict[str, Any]:
    repo = ctx.gh.world.repos.get(f"{owner}/{name}")
    if repo is None or not ctx.principal.can_read(repo):
        raise NotFound(f"Could not resolve to a Repository with the name '{owner}/{name}'.")
    return repo_node(ctx, repo)


def repo_node(ctx: GqlContext, repo: Repo) -> dict[str, Any]:
    owner_user = ctx.gh.world.users.get(repo.owner)
    return {
        "__typename": "Repository",
        "id": repo.node_id,
        "databaseId": repo.id,
        "name": repo.name,
        "nameWithOwner": repo.full_name,
        "owner": {
            "__typename": "User" if owner_user else "Organization",
            "login": repo.owner,
            "id": owner_user.node_id if owner_user else node_id("O", "org", repo.owner),
            "url": f"{ctx.html}/{repo.owner}",
            "resourcePath": f"/{repo.owner}",
            "avatarUrl": lambda info, **_: "https://avatars.githubusercontent.com/u/0?v=4",
        },
        "defaultBranchRef": {
            "__typename": "Ref",
            "id": node_id("REF", repo.full_name, repo.default_branch),
            "name": repo.default_branch,
            "prefix": "refs/heads/",
        },
        "isPrivate": repo.private,
        "visibility": "PRIVATE" if repo.private else "PUBLIC",
        "url": f"{ctx.html}/{repo.full_name}",
        "resourcePath": f"/{repo.full_name}",
        "createdAt": _t(repo.created_at),
        "updatedAt": _t(repo.updated_at),
        "pushedAt": _t(repo.pushed_at),
        "stargazerCount": len(repo.stargazers),
        "forkCount": len(repo.forks),
        "diskUsage": repo.size,
        "issues": lambda info, **kw: _issues(ctx, repo, **kw),
        "hasIssuesEnabled": True,
        "isFork": repo.parent is not None,
        "pullRequest": lambda info, number, **_: _pull_request(ctx, repo, number),
        "object": lambda info, oid=None, expression=None, **_: _object(ctx, repo, oid, expression),
        "ref": lambda info, qualifiedName, **_: _ref(ctx, repo, qualifiedName),
        "pullRequests": lambda info, **kw: _pull_requests(ctx, repo, **kw),
    }


def _issues(
    ctx: GqlContext,
    repo: Repo,
    states: list[str] | None = None,
    filterBy: dict[str, Any] | None = None,
    orderBy: dict[str, Any] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """``repository.issues``: the states, ``filterBy`` (createdBy; an issue here has no assignee and
    mentions no one) and ``orderBy`` that ``gh issue list`` asks with."""
    issues = [i for i in repo.issues.values() if not states or i.state.upper() in states]
    wanted = filterBy or {}
    if wanted.get("createdBy"):
        issues = [i for i in issues if i.author == wanted["createdBy"]]
    if wanted.get("assignee") or wanted.get("mentioned"):
        issues = []
    field = (orderBy or {}).get("field", "CREATED_AT")
    key: Callable[[Issue], Any] = {
        "UPDATED_AT": lambda i: (i.updated_at, i.number),
        "COMMENTS": lambda i: (i.comments, i.number),
    }.get(field, lambda i: (i.created_at, i.number))
    issues.sort(key=key, reverse=(orderBy or {}).get("direction", "ASC") == "DESC")
    return connection(issues, lambda i: issue_node(ctx, repo, i), **kw)


_SEARCH_DATE = re.compile(r"^(closed|merged|created|updated):(>=|<=|>|<)?(\d{4}-\d{2}-\d{2})(?:T[0-9:]+Z?)?$")


def search(ctx: GqlContext, query: str, type: str, **kw: Any) -> dict[str, Any]:  # noqa: A002 (GitHub's name)
    """``search(type: ISSUE)`` over the double's issues and pull requests, for the qualifiers ``gh`` writes:
    ``repo:``, ``is:``/``type:`` issue or pr, ``is:``/``state:`` open, closed or merged, and
    ``closed:``/``merged:``/``created:``/``updated:`` with ``>``, ``>=``, ``<``, ``<=`` a date. Free words
    must appear in the title. Newest first (GitHub's best match, for a date-only search)."""
    if type != "ISSUE":
        return connection([], lambda x: x, extra={"issueCount": 0, "repositoryCount": 0, "userCount": 0}, **kw)
    repos: list[str] = []
    kinds: set[str] = set()
    states: set[str] = set()
    dates: list[tuple[str, str, int]] = []
    words: list[str] = []
    for token in query.split():
        key, _, value = token.partition(":")
        date = _SEARCH_DATE.match(token)
        if key == "repo" and value:
            repos.append(value.lower())
        elif key in ("is", "type") and value in ("issue", "pr", "pull-request"):
            kinds.add("pr" if value != "issue" else "issue")
        elif key in ("is", "state") and value in ("open", "closed", "merged"):
            states.add(value)
        elif date is not None:
            stamp = int(_dt.datetime.strptime(date.group(3), "%Y-%m-%d").replace(tzinfo=_dt.timezone.utc).timestamp())
            dates.append((date.group(1), date.group(2) or "=", stamp))
        elif ":" not in token:
            words.append(token.lower())
    found: list[tuple[Repo, Any]] = []
    for repo in ctx.gh.world.repos.values():
        if repos and repo.full_name.lower() not in repos or not ctx.principal.can_read(repo):
            continue
        if not kinds or "issue" in kinds:
            found += [(repo, i) for i in repo.issues.values()]
        if not kinds or "pr" in kinds:
            found += [(repo, p) for p in repo.pulls.values()]

    def keep(item: Any) -> bool:
        merged = getattr(item, "merged_at", None)
        if states and not any(
                (s == "open" and item.state == "open") or (s == "closed" and item.state == "closed")
                or (s == "merged" and merged is not None) for s in states):
            return False
        for which, op, stamp in dates:
            at = {"closed": item.closed_at, "merged": merged, "created": item.created_at,
                  "updated": item.updated_at}[which]
            day_end = stamp + 86_400
            if at is None or not {">": at >= day_end, ">=": at >= stamp, "<": at < stamp, "<=": at < day_end,
                                  "=": stamp <= at < day_end}[op]:
                return False
        return all(word in item.title.lower() for word in words)

    found = sorted((f for f in found if keep(f[1])), key=lambda f: (f[1].updated_at, f[1].number), reverse=True)

    def node(pair: tuple[Repo, Any]) -> dict[str, Any]:
        repo, item = pair
        return issue_node(ctx, repo, item) if isinstance(item, Issue) else pr_node(ctx, repo, item)

    return connection(found, node, extra={"issueCount": len(found), "repositoryCount": 0, "userCount": 0}, **kw)


def _known_commit(repo: Repo, sha: str) -> bool:
    """Whether the double holds ``sha`` as a commit of ``repo`` (a branch's, a request's, or one with checks)."""
    return (
        sha in repo.branches.values()
        or sha in repo.check_runs
        or sha in repo.statuses
        or any(sha in pr.commits or sha == pr.head_sha for pr in repo.pulls.values())
    )


def _object(ctx: GqlContext, repo: Repo, oid: str | None, expression: str | None) -> dict[str, Any] | None:
    """``Repository.object(oid:)``: the commit with that id, null when the repository has none (as GitHub:
    no error). Only commits are modelled; ``expression`` resolves a branch name."""
    if oid is None and expression is not None:
        oid = repo.branches.get(expression) or (repo.branch_sha(expression) if expression == repo.default_branch
                                                 else None)
    if oid is None or not _known_commit(repo, oid) and oid != repo.branch_sha(repo.default_branch):
        return None
    return commit_node(ctx, repo, oid)


def _ref(ctx: GqlContext, repo: Repo, qualified: str) -> dict[str, Any] | None:
    """``Repository.ref(qualifiedName:)``: a branch (``refs/heads/NAME`` or ``NAME``), null when absent."""
    name = qualified[len("refs/heads/"):] if qualified.startswith("refs/heads/") else qualified
    if name not in repo.branches and name != repo.default_branch:
        return None
    return {
        "__typename": "Ref",
        "id": node_id("REF", repo.full_name, name),
        "name": name,
        "prefix": "refs/heads/",
        "target": commit_node(ctx, repo, repo.branch_sha(name)),
    }


def _pull_request(ctx: GqlContext, repo: Repo, number: int) -> dict[str, Any]:
    pr = repo.pulls.get(number)
    if pr is None:
        raise NotFound(f"Could not resolve to a PullRequest with the number of {number}.")
    return pr_node(ctx, repo, pr)


def _pull_requests(
    ctx: GqlContext,
    repo: Repo,
    states: list[str] | None = None,
    labels: list[str] | None = None,
    headRefName: str | None = None,
    baseRefName: str | None = None,
    orderBy: dict[str, Any] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    pulls = list(repo.pulls.values())
    if states:
        pulls = [p for p in pulls if p.graphql_state in states]
    if labels:
        pulls = [p for p in pulls if set(labels) & set(p.labels)]
    if headRefName is not None:
        pulls = [p for p in pulls if p.head_ref == headRefName]
    if baseRefName is not None:
        pulls = [p for p in pulls if p.base == baseRefName]
    field = (orderBy or {}).get("field", "CREATED_AT")
    key: Callable[[PullRequest], Any] = {
        "UPDATED_AT": lambda p: (p.updated_at, p.number),
        "COMMENTS": lambda p: (0, p.number),
    }.get(field, lambda p: (p.created_at, p.number))
    pulls.sort(key=key, reverse=(orderBy or {}).get("direction") == "DESC")
    return connection(pulls, lambda p: pr_node(ctx, repo, p), **kw)


def _merge_state_status(pr: PullRequest) -> str:
    if pr.draft:
        return "DRAFT"
    return {"CONFLICTING": "DIRTY", "UNKNOWN": "UNKNOWN"}.get(pr.mergeable, "CLEAN")


def pr_node(ctx: GqlContext, repo: Repo, pr: PullRequest) -> dict[str, Any]:
    url = f"{ctx.html}/{repo.full_name}/pull/{pr.number}"

    def reviews(states: list[str] | None = None, author: str | None = None, **kw: Any) -> dict[str, Any]:
        chosen = [r for r in pr.reviews if (not states or r.state in states) and (author is None or r.author == author)]
        return connection(chosen, lambda r: _review_node(ctx, repo, pr, r), **kw)

    def latest_reviews(**kw: Any) -> dict[str, Any]:
        latest: dict[str, Review] = {}
        for r in pr.reviews:
            if r.state != "PENDING":
                latest[r.author] = r
        return connection(list(latest.values()), lambda r: _review_node(ctx, repo, pr, r), **kw)

    return {
        "__typename": "PullRequest",
        "id": pr.node_id,
        "databaseId": pr.id,
        "fullDatabaseId": pr.id,
        "number": pr.number,
        "title": pr.title,
        "body": pr.body,
        "url": url,
        "permalink": url,
        "resourcePath": f"/{repo.full_name}/pull/{pr.number}",
        "author": _actor(ctx, pr.author),
        "headRefName": pr.head_ref,
        "headRefOid": pr.head_sha,
        "baseRefName": pr.base,
        "baseRefOid": repo.branch_sha(pr.base),
        "isCrossRepository": False,
        "isDraft": pr.draft,
        "state": pr.graphql_state,
        "closed": pr.state == "closed",
        "merged": pr.merged,
        "mergeable": pr.mergeable,
        "mergeStateStatus": _merge_state_status(pr),
        "locked": False,
        "isInMergeQueue": False,
        "createdAt": _t(pr.created_at),
        "updatedAt": _t(pr.updated_at),
        "closedAt": _t(pr.closed_at),
        "mergedAt": _t(pr.merged_at),
        "additions": 0,
        "deletions": 0,
        "changedFiles": 0,
        "totalCommentsCount": 0,
        "reviewDecision": pr.review_decision(),
        "repository": lambda info: repo_node(ctx, repo),
        "baseRepository": lambda info: repo_node(ctx, repo),
        "headRepository": lambda info: repo_node(ctx, repo),
        "labels": lambda info, **kw: connection(pr.labels, lambda n: _label_node(ctx, repo, n), **kw),
        "latestOpinionatedReviews": lambda info, **kw: connection(
            pr.latest_opinionated_reviews(), lambda r: _review_node(ctx, repo, pr, r), **kw
        ),
        "latestReviews": lambda info, **kw: latest_reviews(**kw),
        "reviews": lambda info, **kw: reviews(**kw),
        "commits": lambda info, **kw: connection(
            pr.commits, lambda sha: _pr_commit_node(ctx, repo, pr, sha), **kw
        ),
        "statusCheckRollup": lambda info: rollup_node(ctx, repo, pr.head_sha),
        "comments": lambda info, **kw: connection(pr.comment_list, lambda c: comment_node(ctx, repo, pr, c), **kw),
    }


def _label_node(ctx: GqlContext, repo: Repo, name: str) -> dict[str, Any]:
    return {
        "__typename": "Label",
        "id": node_id("LA", repo.full_name, name),
        "name": name,
        "color": "ededed",
        "description": None,
        "isDefault": False,
        "url": f"{ctx.html}/{repo.full_name}/labels/{name}",
    }


def _review_node(ctx: GqlContext, repo: Repo, pr: PullRequest, review: Review) -> dict[str, Any]:
    return {
        "__typename": "PullRequestReview",
        "id": node_id("PRR", repo.full_name, review.id),
        "databaseId": review.id,
        "fullDatabaseId": review.id,
        "state": review.state,
        "author": _actor(ctx, review.author),
        "body": review.body,
        "submittedAt": _t(review.submitted_at),
        "createdAt": _t(review.submitted_at),
        "publishedAt": _t(review.submitted_at),
        "authorAssociation": "CONTRIBUTOR",
        "url": f"{ctx.html}/{repo.full_name}/pull/{pr.number}#pullrequestreview-{review.id}",
    }


def _pr_commit_node(ctx: GqlContext, repo: Repo, pr: PullRequest, sha: str) -> dict[str, Any]:
    return {
        "__typename": "PullRequestCommit",
        "id": node_id("PURC", repo.full_name, pr.number, sha),
        "url": f"{ctx.html}/{repo.full_name}/pull/{pr.number}/commits/{sha}",
        "resourcePath": f"/{repo.full_name}/pull/{pr.number}/commits/{sha}",
        "commit": commit_node(ctx, repo, sha),
    }


def commit_node(ctx: GqlContext, repo: Repo, sha: str) -> dict[str, Any]:
    return {
        "__typename": "Commit",
        "id": node_id("C", repo.full_name, sha),
        "oid": sha,
        "abbreviatedOid": sha[:7],
        "url": f"{ctx.html}/{repo.full_name}/commit/{sha}",
        "resourcePath": f"/{repo.full_name}/commit/{sha}",
        "statusCheckRollup": lambda info: rollup_node(ctx, repo, sha),
        "status": lambda info: _status_node(ctx, repo, sha),
    }


def rollup_node(ctx: GqlContext, repo: Repo, sha: str) -> dict[str, Any] | None:
    runs, statuses = repo.runs_for(sha), repo.statuses_for(sha)
    state = rollup_state(runs, statuses)
    if state is None:
        return None
    contexts: list[CheckRun | CommitStatus] = [*runs, *statuses]
    extra = {"checkRunCount": len(runs), "statusContextCount": len(statuses)}
    return {
        "__typename": "StatusCheckRollup",
        "id": node_id("SCR", repo.full_name, sha),
        "state": state,
        "commit": lambda info: commit_node(ctx, repo, sha),
        "contexts": lambda info, **kw: connection(contexts, lambda c: _context_node(ctx, repo, c), extra=extra, **kw),
    }


def _context_node(ctx: GqlContext, repo: Repo, item: CheckRun | CommitStatus) -> dict[str, Any]:
    if isinstance(item, CheckRun):
        return {
            "__typename": "CheckRun",
            "id": node_id("CR", repo.full_name, item.id),
            "databaseId": item.id,
            "name": item.name,
            "status": item.status.upper(),
            "conclusion": item.conclusion.upper() if item.conclusion else None,
            "startedAt": _t(item.started_at),
            "completedAt": _t(item.completed_at),
            "detailsUrl": f"{ctx.html}/{repo.full_name}/runs/{item.id}",
            "url": f"{ctx.html}/{repo.full_name}/runs/{item.id}",
            "permalink": f"{ctx.html}/{repo.full_name}/runs/{item.id}",
            "isRequired": lambda info, **_: False,
        }
    return {
        "__typename": "StatusContext",
        "id": node_id("SC", repo.full_name, item.id),
        "context": item.context,
        "state": item.state.upper(),
        "description": item.description,
        "targetUrl": item.target_url,
        "createdAt": _t(item.created_at),
        "isRequired": lambda info, **_: False,
        "avatarUrl": lambda info, **_: None,
    }


def _status_node(ctx: GqlContext, repo: Repo, sha: str) -> dict[str, Any] | None:
    statuses = repo.statuses_for(sha)
    if not statuses:
        return None
    nodes = [_context_node(ctx, repo, s) for s in statuses]
    by_name = {s.context: n for s, n in zip(statuses, nodes)}
    return {
        "__typename": "Status",
        "id": node_id("S", repo.full_name, sha),
        "state": combined_state(statuses).upper(),
        "contexts": nodes,
        "context": lambda info, name, **_: by_name.get(name),
    }
