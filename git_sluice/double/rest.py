"""The REST routes git-sluice reads, answered from the double's world.

Each route turns a request into a :class:`RestAnswer`: status, JSON body, the
newest time in it (for Last-Modified), a Link header when paginated. The
pipeline around it does authentication, limits, ETags and counting, so a
route only decides what GitHub would say. A repository the caller may not
read is a 404, as on GitHub.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import parse_qsl, urlencode

from . import rest_shapes as shapes
from .auth import Principal
from .model import PullRequest, Repo, combined_state

if TYPE_CHECKING:
    from .core import GitHubDouble

DOCS = "https://docs.github.com/rest"


@dataclass
class RestContext:
    gh: "GitHubDouble"
    principal: Principal
    now: float
    method: str
    path: str
    query: str
    base_url: str
    body: bytes = b""
    params: dict[str, str] = field(default_factory=dict)

    @property
    def api(self) -> str:
        return self.base_url

    @property
    def html(self) -> str:
        return self.gh.html_url


@dataclass
class RestAnswer:
    status: int
    body: Any
    modified: float | None = None  # newest updated_at in the body; None: the clock
    link: str | None = None
    cacheable: bool = True  # carries ETag (and Last-Modified if single) and may answer 304
    counted: bool = True
    single: bool = False  # a single object: GitHub sends Last-Modified on these, not on lists
    headers: dict[str, str] = field(default_factory=dict)  # more headers (a created object's Location)


def not_found() -> RestAnswer:
    return RestAnswer(404, {"message": "Not Found", "documentation_url": DOCS}, cacheable=False)


def invalid(resource: str, field_name: str, code: str = "invalid") -> RestAnswer:
    return RestAnswer(
        422,
        {
            "message": "Validation Failed",
            "errors": [{"resource": resource, "field": field_name, "code": code}],
            "documentation_url": DOCS,
        },
        cacheable=False,
    )


Handler = Callable[[RestContext, "re.Match[str]"], RestAnswer]
_ROUTES: list[tuple[str, re.Pattern[str], Handler]] = []


def route(method: str, pattern: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _ROUTES.append((method, re.compile(f"^{pattern}$"), handler))
        return handler

    return register


def answer(ctx: RestContext) -> RestAnswer:
    method = "GET" if ctx.method == "HEAD" else ctx.method
    for verb, pattern, handler in _ROUTES:
        match = pattern.match(ctx.path)
        if match and verb == method:
            return handler(ctx, match)
    return not_found()


def endpoint(method: str, path: str) -> str:
    """The endpoint a call is on ("GET /repos/{o}/{r}/pulls"), as secondary limits count them."""
    verb = "GET" if method == "HEAD" else method
    for registered, pattern, _ in _ROUTES:
        if registered == verb and pattern.match(path):
            return f"{verb} {_template(pattern.pattern)}"
    return f"{verb} {path}"


def _template(pattern: str) -> str:
    """``^/repos/(?P<o>[^/]+)/pulls$`` → ``/repos/{o}/pulls``."""
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern.strip("^$"))


# -- helpers ------------------------------------------------------------------
def readable_repo(ctx: RestContext, owner: str, name: str) -> Repo | None:
    repo = ctx.gh.world.repos.get(f"{owner}/{name}")
    if repo is None or not ctx.principal.can_read(repo):
        return None
    return repo


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def paginate(ctx: RestContext, items: list[Any], limit: int | None = None) -> tuple[list[Any], str | None]:
    """One page and GitHub's Link header (next/last/first/prev), keeping the caller's query."""
    per_page = _int(ctx.params.get("per_page"), 30)
    per_page = 30 if per_page < 1 else min(per_page, 100)
    page = max(1, _int(ctx.params.get("page"), 1))
    total = len(items) if limit is None else min(len(items), limit)
    last = max(1, math.ceil(total / per_page))
    chosen = items[(page - 1) * per_page : min(page * per_page, total)]
    if last <= 1 and page <= 1:
        return chosen, None
    pairs = [(k, v) for k, v in parse_qsl(ctx.query, keep_blank_values=True) if k != "page"]

    def url(n: int) -> str:
        return f"{ctx.base_url}{ctx.path}?{urlencode(pairs + [('page', str(n))])}"

    rels: list[str] = []
    if page > 1:
        rels.append(f'<{url(min(page - 1, last))}>; rel="prev"')
    if page < last:
        rels.append(f'<{url(page + 1)}>; rel="next"')
        rels.append(f'<{url(last)}>; rel="last"')
    if page > 1:
        rels.append(f'<{url(1)}>; rel="first"')
    return chosen, ", ".join(rels)


def newest(times: list[int | None]) -> float | None:
    real = [t for t in times if t is not None]
    return float(max(real)) if real else None


# -- users and repositories -----------------------------------------------------
@route("GET", r"/user")
def get_user(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    p = ctx.principal
    if p.kind == "anon":
        return RestAnswer(401, {"message": "Requires authentication", "documentation_url": DOCS}, cacheable=False)
    if p.kind != "user":
        return RestAnswer(403, {"message": "Resource not accessible by integration", "documentation_url": DOCS},
                          cacheable=False)
    user = ctx.gh.world.users[p.login or ""]
    return RestAnswer(200, shapes.private_user_json(ctx.api, ctx.html, user), modified=0, single=True)


@route("GET", r"/users/(?P<login>[^/]+)")
def get_a_user(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    user = ctx.gh.world.users.get(m["login"])
    if user is None:
        return not_found()
    return RestAnswer(200, shapes.public_user_json(ctx.api, ctx.html, user), modified=0, single=True)


@route("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)")
def get_repo(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    repo = readable_repo(ctx, m["o"], m["r"])
    if repo is None:
        return not_found()
    world = ctx.gh.world
    parent = world.repos.get(repo.parent) if repo.parent else None
    body = shapes.full_repo_json(ctx.api, ctx.html, repo, world.users.get(repo.owner), parent,
                                 world.users.get(parent.owner) if parent else None)
    return RestAnswer(200, body, modified=max(repo.updated_at, repo.pushed_at), single=True)


# -- pull requests --------------------------------------------------------------
_SORTS = ("created", "updated", "popularity", "long-running")
_MONTH = 30 * 86400


def _sorted_pulls(ctx: RestContext, pulls: list[PullRequest]) -> list[PullRequest] | RestAnswer:
    sort = ctx.params.get("sort", "created")
    if sort not in _SORTS:
        return invalid("PullRequest", "sort")
    direction = ctx.params.get("direction", "desc" if sort == "created" else "asc")
    if direction not in ("asc", "desc"):
        return invalid("PullRequest", "direction")
    if sort == "long-running":
        pulls = [
            p for p in pulls if p.created_at <= ctx.now - _MONTH and p.updated_at >= ctx.now - _MONTH
        ]
    key: Callable[[PullRequest], Any] = {
        "created": lambda p: (p.created_at, p.number),
        "updated": lambda p: (p.updated_at, p.number),
        "popularity": lambda p: (len(p.reviews), p.number),
        "long-running": lambda p: (p.created_at, p.number),
    }[sort]
    return sorted(pulls, key=key, reverse=direction == "desc")


@route("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls")
def list_pulls(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    repo = readable_repo(ctx, m["o"], m["r"])
    if repo is None:
        return not_found()
    state = ctx.params.get("state", "open")
    if state not in ("open", "closed", "all"):
        return invalid("PullRequest", "state")
    pulls = [p for p in repo.pulls.values() if state == "all" or p.state == state]
    if "base" in ctx.params:
        pulls = [p for p in pulls if p.base == ctx.params["base"]]
    if "head" in ctx.params:
        owner, _, ref = ctx.params["head"].rpartition(":")
        pulls = [p for p in pulls if p.head_ref == ref and (not owner or owner == repo.owner)]
    ordered = _sorted_pulls(ctx, pulls)
    if isinstance(ordered, RestAnswer):
        return ordered
    page, link = paginate(ctx, ordered)
    users = ctx.gh.world.users
    body = [shapes.pr_json(ctx.api, ctx.html, repo, p, users, full=False) for p in page]
    return RestAnswer(200, body, modified=newest([p.updated_at for p in page]), link=link)


@route("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls/(?P<n>\d+)")
def get_pull(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    repo = readable_repo(ctx, m["o"], m["r"])
    pr = repo.pulls.get(int(m["n"])) if repo else None
    if repo is None or pr is None:
        return not_found()
    body = shapes.pr_json(ctx.api, ctx.html, repo, pr, ctx.gh.world.users, full=True)
    return RestAnswer(200, body, modified=pr.updated_at, single=True)


# -- checks and statuses --------------------------------------------------------
def _commit_sha(repo: Repo, ref: str) -> str:
    if re.fullmatch(r"[0-9a-f]{40}", ref):
        return ref
    return repo.branch_sha(ref)


@route("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/commits/(?P<ref>.+)/check-runs")
def list_check_runs(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    repo = readable_repo(ctx, m["o"], m["r"])
    if repo is None:
        return not_found()
    runs = repo.runs_for(_commit_sha(repo, m["ref"]))
    if "check_name" in ctx.params:
        runs = [r for r in runs if r.name == ctx.params["check_name"]]
    if "status" in ctx.params:
        runs = [r for r in runs if r.status == ctx.params["status"]]
    page, link = paginate(ctx, runs)
    body = {
        "total_count": len(runs),
        "check_runs": [shapes.check_run_json(ctx.api, ctx.html, repo, r) for r in page],
    }
    return RestAnswer(200, body, modified=newest([r.changed_at for r in runs]), link=link)


@route("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/commits/(?P<ref>.+)/status")
def combined_status(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    repo = readable_repo(ctx, m["o"], m["r"])
    if repo is None:
        return not_found()
    sha = _commit_sha(repo, m["ref"])
    statuses = repo.statuses_for(sha)
    page, link = paginate(ctx, statuses)
    body = {
        "state": combined_state(statuses),
        "statuses": [shapes.status_json(ctx.api, repo, sha, s) for s in page],
        "sha": sha,
        "total_count": len(statuses),
        "repository": shapes.repo_json(ctx.api, ctx.html, repo, ctx.gh.world.users.get(repo.owner)),
        "commit_url": f"{ctx.api}/repos/{repo.full_name}/commits/{sha}",
        "url": f"{ctx.api}/repos/{repo.full_name}/commits/{sha}/status",
    }
    return RestAnswer(200, body, modified=newest([s.updated_at for s in statuses]), link=link)


# -- search -------------------------------------------------------------------
_QUALIFIER = re.compile(r'(?P<key>[a-z-]+):(?P<value>"[^"]*"|\S+)')


_Test = Callable[[Repo, PullRequest], bool]

_STATES: dict[str, _Test] = {
    "open": lambda r, p: p.state == "open",
    "closed": lambda r, p: p.state == "closed",
    "merged": lambda r, p: p.merged,
    "unmerged": lambda r, p: not p.merged,
    "draft": lambda r, p: p.draft,
    "issue": lambda r, p: False,
}


def _qualifier_test(key: str, value: str) -> _Test | None:
    """One ``key:value`` of a search query as a test; None for a key the double does not model."""
    if key == "repo":
        return lambda r, p: r.full_name == value
    if key in ("is", "state", "type"):
        return _STATES.get(value, lambda r, p: True)
    if key == "draft":
        return lambda r, p: p.draft == (value == "true")
    if key == "base":
        return lambda r, p: p.base == value
    if key == "head":
        return lambda r, p: p.head_ref == value
    if key == "author":
        return lambda r, p: p.author == value
    if key == "label":
        return lambda r, p: value in p.labels
    return None


def _word_test(word: str) -> _Test:
    return lambda r, p: word in p.title.lower()


def _search_filter(ctx: RestContext, query: str) -> _Test:
    tests: list[_Test] = []
    for match in _QUALIFIER.finditer(query):
        test = _qualifier_test(match["key"], match["value"].strip('"'))
        if test is not None:
            tests.append(test)
    tests.extend(_word_test(w.lower()) for w in _QUALIFIER.sub(" ", query).split())
    return lambda r, p: all(t(r, p) for t in tests)


@route("GET", r"/search/issues")
def search_issues(ctx: RestContext, m: re.Match[str]) -> RestAnswer:
    query = ctx.params.get("q", "").strip()
    if not query:
        return invalid("Search", "q", "missing")
    keep = _search_filter(ctx, query)
    found = [
        (repo, pr)
        for repo in ctx.gh.world.repos.values()
        if ctx.principal.can_read(repo)
        for pr in repo.pulls.values()
        if keep(repo, pr)
    ]
    sort = ctx.params.get("sort")
    reverse = ctx.params.get("order", "desc") != "asc"
    if sort == "updated":
        found.sort(key=lambda rp: rp[1].updated_at, reverse=reverse)
    else:
        found.sort(key=lambda rp: (rp[1].created_at, rp[1].number), reverse=reverse)
    page, link = paginate(ctx, found, limit=1000)
    users = ctx.gh.world.users
    body = {
        "total_count": len(found),
        "incomplete_results": False,
        "items": [shapes.issue_json(ctx.api, ctx.html, repo, pr, users) for repo, pr in page],
    }
    return RestAnswer(200, body, modified=newest([pr.updated_at for _, pr in page]), link=link)
