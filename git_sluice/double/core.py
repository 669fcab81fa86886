"""The GitHub double's Python face: the state a test drives and the ledger it reads.

Tests, the benchmark and ``git sluice demo`` build a GitHub with these methods
(users, tokens, apps, repositories, pull requests, checks, and the unrelated
activity — pushes, stars, forks, issues, comments — that changes the bodies
GitHub embeds a repository in), turn the knobs
that decide how its limits answer, switch faults on, and then assert on the
ledger of what reached it. The HTTP side (``server.py``) and the request
pipeline (``pipeline.py``) only read this object, under its lock.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from ..clock import Clock, SystemClock
from .faults import Faults
from .ledger import Arrival, Call, Ledger, busiest_minute
from .limits import CONTENT_PER_HOUR, CONTENT_PER_MINUTE, ContentLimits, Limits, Secondary, secondary_points
from .model import (
    CHECK_CONCLUSIONS,
    CHECK_STATUSES,
    MERGEABLE_STATES,
    REVIEW_STATES,
    STATUS_STATES,
    CheckRun,
    CommitStatus,
    DoubleError,
    Issue,
    IssueComment,
    PullRequest,
    Review,
    World,
    fake_sha,
)

if TYPE_CHECKING:
    from .pipeline import Request

RECEIVED_KEPT = 1000
"""How many arrived requests the double keeps for :meth:`GitHubDouble.received`."""


class GitHubDouble:
    """A GitHub that answers like GitHub for what git-sluice reads, and counts every call."""

    def __init__(
        self,
        clock: Clock | None = None,
        html_url: str = "https://github.com",
        enterprise: bool = False,
        rate_limits: bool | None = None,
    ) -> None:
        """``enterprise``: GitHub Enterprise Server's paths (``/api/v3``, ``/api/graphql``).

        ``rate_limits``: None is each product's default — on for github.com,
        off for Enterprise Server (no ``x-ratelimit-*``, ``/rate_limit`` 404,
        ``rateLimit`` null, nothing counted); True or False chooses.
        """
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.html_url = html_url.rstrip("/")
        self.enterprise: bool = bool(enterprise)
        self.rate_limits: bool = (not self.enterprise) if rate_limits is None else bool(rate_limits)
        self.lock = threading.RLock()
        self.world = World()
        self.limits = Limits()
        self.secondary = Secondary()
        self.content = ContentLimits()
        self._ledger = Ledger()
        self._faults = Faults()
        # the last requests as they arrived (method, path, query, headers, body): what a test of a
        # client asserts was *sent* (the ledger keeps what was answered and counted, not the bodies)
        self._received: deque[Request] = deque(maxlen=RECEIVED_KEPT)
        # Knobs: how a spent or abused allowance answers.
        self.primary_status: int = 403
        # "rotate": a window's first refusal says "API rate limit exceeded for …",
        # later ones "API rate limit already exceeded for …"; or always one of them.
        self.primary_message: str = "rotate"
        self.refused_windows: set[tuple[str, str, int]] = set()
        self.secondary_status: int = 403
        self.secondary_concurrency: int = 100
        self.secondary_points_per_minute: dict[str, int] = {"core": 900, "graphql": 2000}
        self.secondary_retry_after: int | str | None = 60
        self.installation_token_ttl: float = 3600.0
        # A GraphQL query over this many nodes "runs past GitHub's 10 s": 502, charged.
        self.graphql_timeout_nodes: int | None = None
        # GitHub's /rate_limit has been seen reporting a full GraphQL bucket while
        # the live headers said it was spent; switch this on to reproduce it.
        self.rate_limit_misreports_graphql: bool = False
        # A 304 has been seen carrying the ETag in strong form; on to reproduce it.
        self.etag_304_strong: bool = False

    def _now(self) -> int:
        return int(self.clock.time())

    def _later(self, then: int) -> int:
        """Now, or a second after ``then`` if the clock stood still: a change always shows."""
        return max(self._now(), then + 1)

    def _touch(self, pr: PullRequest | Issue) -> None:
        pr.updated_at = self._later(pr.updated_at)

    # -- people and credentials -------------------------------------------------
    def add_user(self, login: str) -> str:
        """Make a user; returns its pool name ("user:LOGIN"), which all its tokens share."""
        with self.lock:
            return self.world.add_user(login)

    def add_token(self, token: str, user: str, repos: list[str] | None = None, write: bool = True) -> str:
        """A user's token (made user if new); ``repos`` limits it like a fine-grained token.

        ``write=False`` is a token with read access only (a fine-grained token
        whose Issues and Pull requests permissions are read): GitHub answers
        its writes 403, so a proxy's tests can see a refused write.
        """
        with self.lock:
            return self.world.add_token(token, user, repos, write)

    def add_app(self, app_id: int, public_key_pem: str | bytes, slug: str | None = None) -> str:
        with self.lock:
            return self.world.add_app(app_id, public_key_pem, slug)

    def add_installation(
        self,
        app_id: int,
        installation_id: int,
        repos: list[str],
        account: str | None = None,
        permissions: dict[str, str] | None = None,
    ) -> str:
        """An App installation on ``repos``; returns its pool ("installation:ID").

        ``permissions`` (e.g. ``{"issues": "write"}``) is laid over the default
        read-only set (checks, metadata, pull_requests, statuses: read), as an
        App's settings decide what its installations may write.
        """
        with self.lock:
            return self.world.add_installation(app_id, installation_id, repos, account, permissions)

    def set_limit(self, pool: str, resource: str, limit: int, window: float | None = None) -> None:
        """Set a pool's allowance for one resource ("anon" is the unauthenticated pool)."""
        with self.lock:
            if window is None:
                window = self.limits.bucket(pool, resource, self.clock.time()).window
            self.limits.set_limit(pool, resource, limit, window)

    def set_content_limits(
        self, per_minute: int = CONTENT_PER_MINUTE, per_hour: int = CONTENT_PER_HOUR, pool: str | None = None
    ) -> None:
        """GitHub's content-creation secondary limits: at most ``per_minute`` comments a minute and
        ``per_hour`` an hour per pool (80 and 500 on GitHub); ``pool`` None sets every pool's."""
        if per_minute < 0 or per_hour < 0:
            raise DoubleError(f"content limits {per_minute}/min, {per_hour}/h: expected counts of 0 or more")
        with self.lock:
            self.content.set(per_minute, per_hour, pool)

    # -- repositories and pull requests ----------------------------------------
    def add_repo(self, full_name: str, default_branch: str = "main", private: bool = False) -> str:
        with self.lock:
            return self.world.add_repo(full_name, default_branch, private, self._now()).full_name

    def open_pr(
        self,
        repo: str,
        head_ref: str,
        base: str | None = None,
        title: str = "",
        author: str = "alice",
        draft: bool = False,
        head_sha: str | None = None,
        body: str = "",
    ) -> int:
        """Open a pull request; numbers run 1, 2, 3… per repository and are never reused."""
        with self.lock:
            r = self.world.repo(repo)
            self.world.add_user(author)
            number = r.next_number
            r.next_number += 1
            now = self._now()
            sha = head_sha or fake_sha(repo, number, 0)
            r.pulls[number] = PullRequest(
                repo=repo,
                number=number,
                id=self.world.next_id("pull"),
                title=title or f"Pull request {number}",
                author=author,
                head_ref=head_ref,
                base=base or r.default_branch,
                head_sha=sha,
                draft=bool(draft),
                created_at=now,
                updated_at=now,
                commits=[sha],
                body=body,
            )
            return number

    def push_pr(self, repo: str, number: int, sha: str | None = None) -> str:
        """A new head commit; returns its 40-hex sha and moves updated_at."""
        with self.lock:
            pr = self.world.pr(repo, number)
            new = sha or fake_sha(repo, number, len(pr.commits))
            pr.commits.append(new)
            pr.head_sha = new
            self._touch(pr)
            return new

    def edit_title(self, repo: str, number: int, title: str) -> None:
        with self.lock:
            pr = self.world.pr(repo, number)
            pr.title = title
            self._touch(pr)

    def set_draft(self, repo: str, number: int, draft: bool) -> None:
        with self.lock:
            pr = self.world.pr(repo, number)
            pr.draft = bool(draft)
            self._touch(pr)

    def add_label(self, repo: str, number: int, name: str) -> None:
        with self.lock:
            pr = self.world.pr(repo, number)
            if name not in pr.labels:
                pr.labels.append(name)
            self._touch(pr)

    def remove_label(self, repo: str, number: int, name: str) -> None:
        with self.lock:
            pr = self.world.pr(repo, number)
            if name in pr.labels:
                pr.labels.remove(name)
            self._touch(pr)

    def review(self, repo: str, number: int, author: str, state: str, body: str = "") -> int:
        """A submitted review (APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED); moves updated_at."""
        if state not in REVIEW_STATES:
            raise DoubleError(f"review state {state!r}: expected one of {', '.join(REVIEW_STATES)}")
        with self.lock:
            pr = self.world.pr(repo, number)
            self.world.add_user(author)
            review = Review(id=self.world.next_id("review"), author=author, state=state,
                            submitted_at=self._now(), body=body)
            pr.reviews.append(review)
            self._touch(pr)
            return review.id

    def add_check_run(
        self,
        repo: str,
        sha: str,
        name: str,
        status: str = "completed",
        conclusion: str | None = "success",
        *,
        finished_ago: int = 0,
    ) -> int:
        """A check run on a commit; replaces an earlier run of that name. Does NOT move updated_at.

        ``finished_ago``: a completed run finished that many seconds before now (a world set up with
        requests whose CI ran before the scenario starts, as open requests' CI did on GitHub)."""
        if status not in CHECK_STATUSES:
            raise DoubleError(f"check run status {status!r}: expected one of {', '.join(CHECK_STATUSES)}")
        if status == "completed" and conclusion not in CHECK_CONCLUSIONS:
            raise DoubleError(f"check run conclusion {conclusion!r}: expected one of {', '.join(CHECK_CONCLUSIONS)}")
        with self.lock:
            r = self.world.repo(repo)
            now = self._now()
            runs = r.check_runs.setdefault(sha, {})
            earlier = runs.get(name)
            run = CheckRun(
                id=self.world.next_id("check_run"),
                name=name,
                head_sha=sha,
                status=status,
                conclusion=conclusion if status == "completed" else None,
                started_at=earlier.started_at if earlier else now - max(0, finished_ago),
                completed_at=now - max(0, finished_ago) if status == "completed" else None,
                changed_at=now,
            )
            runs[name] = run
            return run.id

    def set_status(
        self,
        repo: str,
        sha: str,
        context: str,
        state: str,
        description: str | None = None,
        target_url: str | None = None,
    ) -> int:
        """A commit status (success, failure, pending, error). Does NOT move updated_at."""
        if state not in STATUS_STATES:
            raise DoubleError(f"status state {state!r}: expected one of {', '.join(STATUS_STATES)}")
        with self.lock:
            r = self.world.repo(repo)
            now = self._now()
            status = CommitStatus(id=self.world.next_id("status"), context=context, state=state,
                                  created_at=now, updated_at=now, description=description,
                                  target_url=target_url)
            r.statuses.setdefault(sha, {})[context] = status
            return status.id

    def set_mergeable(self, repo: str, number: int, mergeable: str) -> None:
        """MERGEABLE, CONFLICTING or UNKNOWN; does not move updated_at (GitHub computes it aside)."""
        if mergeable not in MERGEABLE_STATES:
            raise DoubleError(f"mergeable {mergeable!r}: expected one of {', '.join(MERGEABLE_STATES)}")
        with self.lock:
            self.world.pr(repo, number).mergeable = mergeable

    def merge_pr(self, repo: str, number: int) -> None:
        with self.lock:
            pr = self.world.pr(repo, number)
            self._touch(pr)
            pr.state, pr.merged = "closed", True
            pr.merged_at = pr.closed_at = pr.updated_at

    def close_pr(self, repo: str, number: int) -> None:
        with self.lock:
            pr = self.world.pr(repo, number)
            self._touch(pr)
            pr.state = "closed"
            pr.closed_at = pr.updated_at

    def reopen_pr(self, repo: str, number: int) -> None:
        with self.lock:
            pr = self.world.pr(repo, number)
            if pr.merged:
                raise DoubleError(f"#{number} in {repo} is merged: a merged pull request cannot reopen")
            self._touch(pr)
            pr.state, pr.closed_at = "open", None

    def delete_pr(self, repo: str, number: int) -> None:
        """Gone entirely: REST 404, GraphQL null with a NOT_FOUND error."""
        with self.lock:
            self.world.pr(repo, number)
            del self.world.repos[repo].pulls[int(number)]

    def set_branch(self, repo: str, branch: str, sha: str) -> None:
        """Where a branch points (a pull request's ``base.sha``); otherwise a stable made-up sha."""
        with self.lock:
            self.world.repo(repo).branches[branch] = sha

    # -- repository-level activity ----------------------------------------------
    # None of these moves a pull request, yet each changes the repository GitHub
    # embeds in every pull request item and in the combined status.
    def push_branch(self, repo: str, branch: str, sha: str | None = None) -> str:
        """A push to ``branch``; moves ``pushed_at``; returns the new 40-hex sha.

        Meant for a branch no request heads (unrelated activity). A push to an
        open request's head branch moves that request too, as on GitHub.
        """
        with self.lock:
            r = self.world.repo(repo)
            r.pushed_at = self._later(r.pushed_at)
            new = sha or fake_sha(repo, "push", branch, r.pushed_at, len(r.branches))
            r.branches[branch] = new
            for pr in r.pulls.values():
                if pr.state == "open" and pr.head_ref == branch:
                    pr.commits.append(new)
                    pr.head_sha = new
                    self._touch(pr)
            return new

    def star(self, repo: str, login: str | None = None) -> None:
        """``login`` stars the repository (again: no change); stargazers and watchers +1, updated_at moves."""
        with self.lock:
            r = self.world.repo(repo)
            who = login or f"stargazer-{len(r.stargazers) + 1}"
            if who in r.stargazers:
                return
            self.world.add_user(who)
            r.stargazers.append(who)
            r.updated_at = self._later(r.updated_at)

    def fork(self, repo: str, owner: str | None = None) -> str:
        """A fork under ``owner``; forks_count +1; returns the fork's full name."""
        with self.lock:
            r = self.world.repo(repo)
            who = owner or f"forker-{len(r.forks) + 1}"
            self.world.add_user(who)
            name, n = f"{who}/{r.name}", 1
            while name in self.world.repos:
                name, n = f"{who}/{r.name}-{n}", n + 1
            child = self.world.add_repo(name, r.default_branch, r.private, self._now())
            child.parent = r.full_name
            child.branches = dict(r.branches)
            r.forks.append(name)
            return name

    def open_issue(self, repo: str, title: str = "", author: str | None = None) -> int:
        """An issue; its number comes from the pull requests' sequence; open_issues_count +1."""
        with self.lock:
            r = self.world.repo(repo)
            login = author or "alice"
            self.world.add_user(login)
            number = r.next_number
            r.next_number += 1
            now = self._now()
            r.issues[number] = Issue(repo=repo, number=number, id=self.world.next_id("pull"),
                                     title=title or f"Issue {number}", author=login,
                                     created_at=now, updated_at=now)
            return number

    def close_issue(self, repo: str, number: int) -> None:
        """Closes an issue (open_issues_count -1); a pull request is closed with ``close_pr``."""
        with self.lock:
            issue = self.world.issue(repo, number)
            if issue.state == "closed":
                return
            self._touch(issue)
            issue.state, issue.closed_at = "closed", issue.updated_at

    def comment(self, repo: str, number: int, body: str = "", author: str | None = None) -> int:
        """An issue comment on #number; returns its id. On a pull request it moves updated_at; no
        repository counter moves. Made this way it is world-building, not a write: no pool spends
        a content-creation slot and the ledger holds nothing."""
        with self.lock:
            return self.add_comment(repo, number, body, author or "alice").id

    def add_comment(
        self, repo: str, number: int, body: str, author: str, pool: str | None = None, app_id: int | None = None
    ) -> IssueComment:
        """The one place a comment is made, by ``comment`` or by a write (REST POST, ``addComment``).

        ``pool``: the pool a write came from; it spends one of the pool's
        content-creation slots (``set_content_limits``).
        """
        with self.lock:
            target = self.world.commentable(repo, number)
            self.world.add_user(author)
            now = self._now()
            made = IssueComment(id=self.world.next_id("comment"), repo=repo, number=int(number), author=author,
                                body=body, created_at=now, updated_at=now, app_id=app_id)
            target.comment_list.append(made)
            target.comments += 1
            self._touch(target)
            if pool is not None:
                self.content.created(pool, self.clock.time())
            return made

    def comments(self, repo: str, number: int) -> list[IssueComment]:
        """The issue comments on #number (issue or pull request), oldest first, for assertions."""
        with self.lock:
            return list(self.world.commentable(repo, number).comment_list)

    def pr(self, repo: str, number: int) -> PullRequest:
        """The model object itself, for assertions (read it; change it through the methods)."""
        with self.lock:
            return self.world.pr(repo, number)

    # -- faults -----------------------------------------------------------------
    def fault(self, kind: str, path: str | None = None, times: int | None = None, **params: Any) -> int:
        """Switch a fault on (see faults.py for kinds and options); returns its id."""
        return self._faults.add(kind, path=path, times=times, **params)

    def clear_faults(self, fault_id: int | None = None) -> None:
        self._faults.clear(fault_id)

    @property
    def faults(self) -> Faults:
        return self._faults

    # -- the ledger -------------------------------------------------------------
    @property
    def ledger(self) -> list[Call]:
        return self._ledger.all()

    def arrive(self, pool: str | None, resource: str, method: str, path: str) -> int:
        """A call reached the double; returns the ticket its answer is recorded with."""
        return self._ledger.arrive(pool, resource, method, path)

    def record(self, call: Call, ticket: int | None = None) -> None:
        self._ledger.append(call, ticket)

    def mark(self) -> int:
        return self._ledger.mark()

    def receive(self, request: Request) -> None:
        """The server's note of a request as it arrived, before any answer (control calls are not noted)."""
        with self.lock:
            self._received.append(request)

    def received(self, path: str | None = None) -> list[Request]:
        """The last requests that arrived (at most ``RECEIVED_KEPT``), oldest first; ``path``: whose path contains it."""
        with self.lock:
            return [r for r in self._received if path is None or path in r.path]

    def forget_received(self) -> None:
        with self.lock:
            self._received.clear()

    def calls(
        self,
        since: int | None = None,
        pool: str | None = None,
        resource: str | None = None,
        method: str | None = None,
        path: str | None = None,
        status: int | None = None,
    ) -> list[Call]:
        return self._ledger.calls(since, pool, resource, method, path, status)

    def writes(
        self, pool: str | None = None, since: int | None = None, created: bool | None = None
    ) -> list[Call]:
        """The content-creating calls (``CONTENT_CREATING``: a comment POST, an ``addComment``
        mutation), oldest first; ``created`` True keeps those that made a comment, False those
        refused or failed (a secondary-limit 403, a 422, a GraphQL error), None both.

        What a test of a write-pacing proxy asserts on: ``time`` is the
        double's clock at arrival, so the spacing of a pool's writes is
        ``[c.time for c in gh.writes(pool="user:alice", created=True)]``. A
        GraphQL mutation answers 200 whether or not it made anything, which is
        why ``created`` and not the status tells.
        """
        return [
            c for c in self._ledger.calls(since, pool)
            if c.content and (created is None or c.created == created)
        ]

    def counted(self, pool: str | None = None, resource: str | None = None, since: int | None = None) -> int:
        """Sum of the cost of counted calls (REST 1 each, GraphQL its points)."""
        return sum(c.cost for c in self._ledger.calls(since, pool, resource) if c.counted)

    def requests(self, since: int | None = None, **filters: Any) -> int:
        """How many calls reached the double, counted or not — with those still on the wire (a hang).

        ``calls()`` lists answered calls only; a call held by a hang fault is
        counted here from its arrival, and listed by ``calls()`` once answered.
        """
        answered = len(self._ledger.calls(since, **filters))
        if filters.get("status") is not None:
            return answered
        waiting = {k: v for k, v in filters.items() if k != "status"}
        return answered + len(self._ledger.pending(since, **waiting))

    def on_the_wire(
        self, since: int | None = None, pool: str | None = None, resource: str | None = None,
        method: str | None = None, path: str | None = None,
    ) -> list[Arrival]:
        """The calls a hang fault holds right now (arrived, not answered), oldest first.

        What a test that stops a client mid-call needs: which call is on the wire
        (its ``path`` with the query, as ``calls()`` would list it once answered).
        Same filters as ``calls()`` but ``status``.
        """
        held = self._ledger.pending(since, pool=pool, resource=resource, method=method, path=path)
        return sorted(held, key=lambda a: a.ticket)

    def busiest_minute(
        self, since: int | None = None, pool: str | None = None, resource: str | None = None
    ) -> tuple[int, str | None]:
        """(points, endpoint): the most secondary-limit points one pool spent on one endpoint in 60 s.

        Set beside ``secondary_points_per_minute`` (900 a REST endpoint): how
        near a run came to GitHub's secondary limit, 304s included.
        """
        return busiest_minute(self._ledger.calls(since, pool, resource), secondary_points)

    # -- allowances -------------------------------------------------------------
    def remaining(self, pool: str, resource: str) -> int:
        with self.lock:
            return self.limits.bucket(pool, resource, self.clock.time()).remaining

    def used(self, pool: str, resource: str) -> int:
        with self.lock:
            return self.limits.bucket(pool, resource, self.clock.time()).used

    def reset_at(self, pool: str, resource: str) -> int:
        with self.lock:
            now = self.clock.time()
            return self.limits.bucket(pool, resource, now).reset_at(now)
