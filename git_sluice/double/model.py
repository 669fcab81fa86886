"""What the double's GitHub holds: users, tokens, apps, repositories, pull requests.

No HTTP here. The REST and GraphQL layers read these objects and the
:class:`~git_sluice.double.core.GitHubDouble` facade mutates them, always
under the facade's lock. Tokens are kept by their SHA-256 only, so not even
the double's memory dumps hold a secret.

Which changes move a pull request's ``updated_at`` follows GitHub: a push, a
review, a label, a title, the draft flag, a merge, a close or an issue comment
do; a check run, a commit status or a change of mergeability do not (that is
why git-sluice asks check runs separately). A change always moves
``updated_at`` forward by at least one second, so "it moved" holds even when a
test's clock stood still.

Repository-level activity lives on :class:`Repo`: ``pushed_at``, stars,
forks and issues. GitHub embeds the whole repository in every pull request
item (``base.repo``, ``head.repo``) and in the combined status, so this
activity changes those bodies (and their ETags) though no request moved.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

from ..errors import SluiceError


class DoubleError(SluiceError):
    """The double was asked for something it does not hold (a test's mistake, named plainly)."""


def token_sha(token: str) -> str:
    """How the double (and its ledger) names a token without keeping it."""
    return hashlib.sha256(token.encode()).hexdigest()


def node_id(prefix: str, *parts: object) -> str:
    """A GitHub-style global node id ("PR_kwDO…"): opaque, stable, distinct per object."""
    raw = ":".join(str(p) for p in parts).encode()
    return f"{prefix}_kwDO{base64.urlsafe_b64encode(hashlib.sha1(raw).digest()[:12]).decode().rstrip('=')}"


def fake_sha(*parts: object) -> str:
    """A deterministic 40-hex commit id, so runs of a test see the same shas."""
    return hashlib.sha1(":".join(str(p) for p in parts).encode()).hexdigest()


MERGEABLE_STATES = ("MERGEABLE", "CONFLICTING", "UNKNOWN")
REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING")
CHECK_STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
CHECK_CONCLUSIONS = (
    "success",
    "failure",
    "neutral",
    "cancelled",
    "skipped",
    "timed_out",
    "action_required",
    "stale",
    "startup_failure",
)
STATUS_STATES = ("success", "failure", "pending", "error")


@dataclass
class User:
    login: str
    id: int

    @property
    def node_id(self) -> str:
        return node_id("U", "user", self.id)


@dataclass
class TokenGrant:
    """What a token may do; kept under the token's SHA-256, never the token."""

    sha: str
    pool: str
    kind: str  # "user" | "installation"
    user: str | None = None
    installation_id: int | None = None
    repos: frozenset[str] | None = None  # None: every repository
    expires_at: float | None = None
    # Which write permissions it holds ("issues", "pull_requests"); None: every one (a classic token).
    writes: frozenset[str] | None = None


@dataclass
class App:
    app_id: int
    public_key_pem: str
    slug: str


INSTALLATION_PERMISSIONS: dict[str, str] = {
    "checks": "read",
    "metadata": "read",
    "pull_requests": "read",
    "statuses": "read",
}
"""What an installation may do unless told otherwise: read what git-sluice reads, write nothing."""

@dataclass
class Installation:
    installation_id: int
    app_id: int
    repos: list[str]
    account: str
    permissions: dict[str, str] = field(default_factory=lambda: dict(INSTALLATION_PERMISSIONS))

    @property
    def writes(self) -> frozenset[str]:
        return frozenset(k for k, v in self.permissions.items() if v == "write")


@dataclass
class Review:
    id: int
    author: str
    state: str
    submitted_at: int
    body: str = ""


@dataclass
class IssueComment:
    """One issue comment (on an issue or a pull request): what a write leaves for a test to read back."""

    id: int
    repo: str
    number: int  # the issue's or pull request's number
    author: str
    body: str
    created_at: int
    updated_at: int
    app_id: int | None = None  # the App whose installation wrote it (``performed_via_github_app``)

    @property
    def node_id(self) -> str:
        return node_id("IC", self.repo, self.id)


@dataclass
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    started_at: int
    completed_at: int | None
    changed_at: int  # internal: when this run last changed (its answer's Last-Modified)


@dataclass
class CommitStatus:
    id: int
    context: str
    state: str
    created_at: int
    updated_at: int
    description: str | None = None
    target_url: str | None = None


@dataclass
class PullRequest:
    repo: str
    number: int
    id: int
    title: str
    author: str
    head_ref: str
    base: str
    head_sha: str
    draft: bool
    created_at: int
    updated_at: int
    state: str = "open"  # "open" | "closed" (REST words)
    merged: bool = False
    mergeable: str = "MERGEABLE"
    labels: list[str] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)  # head shas, oldest first
    closed_at: int | None = None
    merged_at: int | None = None
    body: str = ""
    comments: int = 0  # issue comments (the single pull request's ``comments``)
    comment_list: list[IssueComment] = field(default_factory=list)  # the comments themselves, oldest first

    @property
    def node_id(self) -> str:
        return node_id("PR", self.repo, self.number)

    @property
    def graphql_state(self) -> str:
        if self.merged:
            return "MERGED"
        return "OPEN" if self.state == "open" else "CLOSED"

    def latest_opinionated_reviews(self) -> list[Review]:
        """Each reviewer's latest approval or change request, as GitHub's decision reads them."""
        latest: dict[str, Review] = {}
        for review in self.reviews:
            if review.state in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
                latest[review.author] = review
        return [r for r in latest.values() if r.state != "DISMISSED"]

    def review_decision(self) -> str:
        opinions = self.latest_opinionated_reviews()
        if any(r.state == "CHANGES_REQUESTED" for r in opinions):
            return "CHANGES_REQUESTED"
        if any(r.state == "APPROVED" for r in opinions):
            return "APPROVED"
        return "REVIEW_REQUIRED"


@dataclass
class Issue:
    """An issue (not a pull request); it shares the repository's numbers with pull requests."""

    repo: str
    number: int
    id: int
    title: str
    author: str
    created_at: int
    updated_at: int
    state: str = "open"  # "open" | "closed"
    closed_at: int | None = None
    comments: int = 0
    comment_list: list[IssueComment] = field(default_factory=list)  # the comments themselves, oldest first

    @property
    def node_id(self) -> str:
        return node_id("I", self.repo, self.number)


@dataclass
class Repo:
    full_name: str
    id: int
    default_branch: str
    private: bool
    created_at: int
    updated_at: int
    pushed_at: int = 0
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    next_number: int = 1
    stargazers: list[str] = field(default_factory=list)
    forks: list[str] = field(default_factory=list)  # full names of its forks
    parent: str | None = None  # the repository this one is a fork of
    size: int = 0  # KB, as GitHub reports it
    check_runs: dict[str, dict[str, CheckRun]] = field(default_factory=dict)
    statuses: dict[str, dict[str, CommitStatus]] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)

    @property
    def owner(self) -> str:
        return self.full_name.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.split("/", 1)[1]

    @property
    def node_id(self) -> str:
        return node_id("R", "repo", self.id)

    @property
    def open_issues_count(self) -> int:
        """GitHub's count: open issues *and* open pull requests."""
        return sum(1 for i in self.issues.values() if i.state == "open") + sum(
            1 for p in self.pulls.values() if p.state == "open"
        )

    def branch_sha(self, branch: str) -> str:
        return self.branches.get(branch) or fake_sha(self.full_name, "branch", branch)

    def runs_for(self, sha: str) -> list[CheckRun]:
        return sorted(self.check_runs.get(sha, {}).values(), key=lambda r: r.id)

    def statuses_for(self, sha: str) -> list[CommitStatus]:
        return sorted(self.statuses.get(sha, {}).values(), key=lambda s: s.id, reverse=True)


FAILING_CONCLUSIONS = ("failure", "timed_out", "cancelled", "action_required", "startup_failure", "stale")


def rollup_state(runs: list[CheckRun], statuses: list[CommitStatus]) -> str | None:
    """GitHub's statusCheckRollup.state: bad beats waiting beats good; nothing at all is null."""
    if not runs and not statuses:
        return None
    if any(r.status == "completed" and r.conclusion in FAILING_CONCLUSIONS for r in runs) or any(
        s.state == "failure" for s in statuses
    ):
        return "FAILURE"
    if any(s.state == "error" for s in statuses):
        return "ERROR"
    if any(r.status != "completed" for r in runs) or any(s.state == "pending" for s in statuses):
        return "PENDING"
    return "SUCCESS"


def combined_state(statuses: list[CommitStatus]) -> str:
    """REST combined status: failure on any failure or error, pending on any pending or none at all."""
    states = {s.state for s in statuses}
    if states & {"failure", "error"}:
        return "failure"
    if not states or "pending" in states:
        return "pending"
    return "success"


class World:
    """Everything the double's GitHub holds, with the mutations the tests drive.

    Not thread-safe by itself: the facade holds its lock around every call.
    """

    def __init__(self) -> None:
        self.users: dict[str, User] = {}
        self.grants: dict[str, TokenGrant] = {}
        self.apps: dict[int, App] = {}
        self.installations: dict[int, Installation] = {}
        self.repos: dict[str, Repo] = {}
        self._ids: dict[str, int] = {}

    def next_id(self, kind: str) -> int:
        self._ids[kind] = self._ids.get(kind, 0) + 1
        return self._ids[kind]

    # -- people and credentials -------------------------------------------------
    def add_user(self, login: str) -> str:
        if login not in self.users:
            self.users[login] = User(login=login, id=self.next_id("user"))
        return f"user:{login}"

    def add_token(self, token: str, user: str, repos: list[str] | None = None, write: bool = True) -> str:
        pool = self.add_user(user)
        sha = token_sha(token)
        self.grants[sha] = TokenGrant(
            sha=sha, pool=pool, kind="user", user=user, repos=frozenset(repos) if repos is not None else None,
            writes=None if write else frozenset(),
        )
        return pool

    def add_app(self, app_id: int, public_key_pem: str | bytes, slug: str | None = None) -> str:
        pem = public_key_pem.decode() if isinstance(public_key_pem, bytes) else public_key_pem
        self.apps[int(app_id)] = App(app_id=int(app_id), public_key_pem=pem, slug=slug or f"app-{app_id}")
        return f"app:{app_id}"

    def add_installation(
        self,
        app_id: int,
        installation_id: int,
        repos: list[str],
        account: str | None = None,
        permissions: dict[str, str] | None = None,
    ) -> str:
        if int(app_id) not in self.apps:
            raise DoubleError(f"no app {app_id}: add_app(app_id={app_id}, public_key_pem=…) first")
        granted = {**INSTALLATION_PERMISSIONS, **(permissions or {})}
        bad = {k: v for k, v in granted.items() if v not in ("read", "write")}
        if bad:
            raise DoubleError(f"installation permissions {bad}: each is 'read' or 'write'")
        owner = account or (repos[0].split("/", 1)[0] if repos else "owner")
        self.installations[int(installation_id)] = Installation(
            installation_id=int(installation_id), app_id=int(app_id), repos=list(repos), account=owner,
            permissions=granted,
        )
        return f"installation:{installation_id}"

    def mint_installation_token(
        self,
        installation_id: int,
        token: str,
        expires_at: float,
        repos: list[str] | None = None,
        permissions: dict[str, str] | None = None,
    ) -> TokenGrant:
        """A token for the installation, narrowed (never widened) to ``repos`` and ``permissions``."""
        inst = self.installations[installation_id]
        allowed = frozenset(inst.repos if repos is None else [r for r in inst.repos if r in repos])
        writes = inst.writes
        if permissions is not None:
            writes = writes & frozenset(k for k, v in permissions.items() if v == "write")
        grant = TokenGrant(
            sha=token_sha(token),
            pool=f"installation:{installation_id}",
            kind="installation",
            installation_id=installation_id,
            repos=allowed,
            expires_at=expires_at,
            writes=writes,
        )
        self.grants[grant.sha] = grant
        return grant

    # -- repositories and pull requests ----------------------------------------
    def add_repo(self, full_name: str, default_branch: str, private: bool, now: int) -> Repo:
        if full_name.count("/") != 1:
            raise DoubleError(f"repository {full_name!r}: expected owner/name")
        if full_name not in self.repos:
            self.repos[full_name] = Repo(
                full_name=full_name,
                id=self.next_id("repo"),
                default_branch=default_branch,
                private=private,
                created_at=now,
                updated_at=now,
                pushed_at=now,
            )
        return self.repos[full_name]

    def repo(self, full_name: str) -> Repo:
        try:
            return self.repos[full_name]
        except KeyError:
            raise DoubleError(f"no repository {full_name!r}: add_repo({full_name!r}) first") from None

    def pr(self, full_name: str, number: int) -> PullRequest:
        repo = self.repo(full_name)
        try:
            return repo.pulls[int(number)]
        except KeyError:
            raise DoubleError(f"no pull request #{number} in {full_name}") from None

    def commentable(self, full_name: str, number: int) -> PullRequest | Issue:
        """The pull request or issue #number, which issue comments go on (GitHub: every PR is an issue)."""
        repo = self.repo(full_name)
        if int(number) in repo.pulls:
            return repo.pulls[int(number)]
        return self.issue(full_name, number)

    def issue(self, full_name: str, number: int) -> Issue:
        repo = self.repo(full_name)
        try:
            return repo.issues[int(number)]
        except KeyError:
            kind = "a pull request" if int(number) in repo.pulls else "no issue"
            raise DoubleError(f"#{number} in {full_name} is {kind}, not an issue") from None
