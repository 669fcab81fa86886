"""The activity model: what people and CI do to the repositories while the fleet watches.

Per repository, requests are opened, pushed to (from one of the fleet's
hosts: a local push that fires the hooks), reviewed and merged at given
rates (Poisson arrivals from a seeded generator, so git-sluice and every
baseline see the same hour). CI follows a push or an opening: a pending check
run, completed minutes later (success or failure) — which moves no
``updated_at``, as on GitHub. A merge moves the base branch on the remote; one
host's ``git fetch`` then brings it (the hooks fire), and GitHub recomputes
every other request's mergeability a minute later.

Beside it, **unrelated activity** as production repositories have it (issue
11): a push to a branch no request heads every 2 minutes per repository, a
star or an issue every 10 minutes (a "busy" profile pushes every minute).
None of it moves a request, yet on GitHub each changes every list page's
ETag (the repository embedded in each item) and the combined status: a
conditional list then answers 200, counted. It leaves no expectation.

Each change leaves an :class:`Expectation`: what a reader of the queue (or a
baseline's own view) must show once it has seen the change. Freshness is the
time from the change to the first moment a view shows it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from git_sluice.double import GitHubDouble
from git_sluice.double.model import fake_sha

REVIEWERS = ("carol", "dave", "erin")
CHECK = "ci"
# What a later change makes impossible to see: an older head (and its checks), or anything of a
# request that has left the queue.
MOOT: dict[str, tuple[str, ...]] = {"pushed": ("pushed", "checks"), "merged": ("pushed", "checks", "reviewed", "opened")}


@dataclass(frozen=True)
class Rates:
    """Events per repository per hour."""

    opened: float = 2.0
    pushed: float = 4.0
    reviewed: float = 4.0
    merged: float = 2.0

    def total(self) -> float:
        return self.opened + self.pushed + self.reviewed + self.merged


MODERATE = Rates()
QUIET = Rates(0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Unrelated:
    """Repository activity no request sees: seconds between pushes to other branches, and between a
    star or an issue (alternating). Each repository keeps its own phase (seeded), as real ones do."""

    push_every: float = 120.0
    star_or_issue_every: float = 600.0
    name: str = "production"

    def describe(self) -> str:
        return (f"{self.name} unrelated activity (a push to another branch every {self.push_every / 60:g} min, "
                f"a star or an issue every {self.star_or_issue_every / 60:g} min, per repository)")


PRODUCTION = Unrelated()
BUSY = Unrelated(push_every=60.0, name="busy")


def unrelated_plan(repos: list[str], unrelated: Unrelated | None, duration: float, *, seed: int) -> list[Intent]:
    """The unrelated changes in ``duration`` seconds from the start of a run (deterministic for a seed)."""
    if unrelated is None:
        return []
    intents: list[Intent] = []
    for repo in repos:
        # one generator per kind, so a shorter run sees exactly the beginning of a longer one's changes
        rng = random.Random(f"{seed}/{repo}/unrelated-push")
        t = rng.uniform(0, unrelated.push_every)
        while t < duration:
            intents.append(Intent(t, "branch-push", repo, rng.randrange(1 << 30), 0))
            t += unrelated.push_every
        rng = random.Random(f"{seed}/{repo}/unrelated-star")
        t, star = rng.uniform(0, unrelated.star_or_issue_every), rng.random() < 0.5
        while t < duration:
            intents.append(Intent(t, "star" if star else "issue", repo, rng.randrange(1 << 30), 0))
            star = not star
            t += unrelated.star_or_issue_every
    intents.sort(key=lambda i: (i.at, i.repo, i.kind))
    return intents


@dataclass(frozen=True)
class Intent:
    """One change the model will make: kind, repository, when, and a seed for its choices."""

    at: float  # seconds from the start of the measured window
    kind: str  # opened | pushed | reviewed | merged
    repo: str
    seed: int
    host: int  # which host pushes or fetches (index into the fleet's hosts)


def plan(repos: list[str], rates: Rates, duration: float, *, hosts: int, seed: int) -> list[Intent]:
    """Every intended change in ``duration`` seconds, in time order (deterministic for a seed).

    Each (repository, kind) draws from its own generator, so a shorter run
    sees exactly the beginning of a longer one's changes.
    """
    intents: list[Intent] = []
    for repo in repos:
        for kind in ("opened", "pushed", "reviewed", "merged"):
            rate = getattr(rates, kind) / 3600.0
            if rate <= 0:
                continue
            rng = random.Random(f"{seed}/{repo}/{kind}")
            t = rng.expovariate(rate)
            while t < duration:
                intents.append(Intent(t, kind, repo, rng.randrange(1 << 30), rng.randrange(max(hosts, 1))))
                t += rng.expovariate(rate)
    intents.sort(key=lambda i: (i.at, i.repo, i.kind))
    return intents


@dataclass
class View:
    """What one reader knows of one request (a queue entry, or a baseline's last answers)."""

    exists: bool
    head_sha: str | None = None
    updated_at: int | None = None
    checks_done: bool = False


@dataclass
class Expectation:
    kind: str  # opened | pushed | reviewed | checks | merged
    cls: str  # discovery | local-push-holder | local-push-other | fetch
    repo: str
    number: int
    made_at: float
    sha: str | None = None
    updated_at: int | None = None
    host: int | None = None
    seen_at: float | None = None
    superseded: bool = False
    wall: float = 0.0  # real seconds the hook round took, when the change was made by a local git command

    def latency(self) -> float | None:
        """Simulated seconds to the first view that showed it; a change seen by its own hook round
        (same simulated instant) took the hook round's real seconds instead."""
        if self.seen_at is None:
            return None
        delay = self.seen_at - self.made_at
        return self.wall if delay == 0 else delay

    def met(self, view: View | None) -> bool:
        if self.kind == "merged":
            return view is None or not view.exists
        if view is None or not view.exists:
            return False
        if self.kind == "opened":
            return True
        if self.kind == "pushed":
            return view.head_sha == self.sha
        if self.kind == "checks":
            return view.head_sha == self.sha and view.checks_done
        if self.kind == "reviewed":
            return view.updated_at is not None and self.updated_at is not None and view.updated_at >= self.updated_at
        return False


class GitSide(Protocol):
    """What a change does outside the double (real git in git-sluice's world; nothing for baselines)."""

    def open_branch(self, repo: str, head_ref: str) -> str: ...

    def prepare_push(self, repo: str, host: int, head_ref: str) -> str: ...

    def push(self, repo: str, host: int, head_ref: str, sha: str) -> float: ...

    def merged(self, repo: str, host: int, number: int) -> float: ...

    def holder(self, repo: str) -> int | None: ...

    def other_push(self, repo: str, branch: str) -> str: ...


class NoGit:
    """The baselines' side: the double alone; a push or fetch runs a step pass if asked to."""

    def __init__(self, on_step: Callable[[str, int], None] | None = None) -> None:
        self.on_step = on_step
        self._n = 0

    def open_branch(self, repo: str, head_ref: str) -> str:
        self._n += 1
        return fake_sha(repo, 10_000 + self._n, 0)

    def prepare_push(self, repo: str, host: int, head_ref: str) -> str:
        self._n += 1
        return fake_sha(repo, 20_000 + self._n, 1)

    def push(self, repo: str, host: int, head_ref: str, sha: str) -> float:
        if self.on_step is not None:
            self.on_step(repo, host)
        return 0.0

    def merged(self, repo: str, host: int, number: int) -> float:
        if self.on_step is not None:
            self.on_step(repo, host)
        return 0.0

    def holder(self, repo: str) -> int | None:
        return None

    def other_push(self, repo: str, branch: str) -> str:
        self._n += 1
        return fake_sha(repo, 30_000 + self._n, 2)


@dataclass
class Activity:
    """Applies intents to the double (and the git side), schedules CI, and keeps expectations."""

    gh: GitHubDouble
    git: GitSide
    expectations: list[Expectation] = field(default_factory=list)
    applied: dict[str, int] = field(default_factory=dict)
    _later: list[tuple[float, Callable[[float], None]]] = field(default_factory=list)
    _branch_seq: int = 0

    # -- the initial state ---------------------------------------------------------
    def populate(self, repo: str, count: int, *, seed: int, drafts: float = 0.1, approved: float = 0.3) -> None:
        """``count`` open requests: CI finished (an hour to a day ago), mergeability known, some approved,
        a few drafts."""
        rng = random.Random(seed)
        ages = random.Random(seed ^ 0x5EED)  # its own stream: the rest of the world is drawn as before
        for _ in range(count):
            self._branch_seq += 1
            head = f"feat-{self._branch_seq}"
            sha = self.git.open_branch(repo, head)
            draft = rng.random() < drafts
            number = self.gh.open_pr(repo, head_ref=head, title=f"Change {self._branch_seq}",
                                     author=rng.choice(("alice", "bob")), draft=draft, head_sha=sha)
            # CI ran before the scenario starts: between an hour and a day ago, as for the open requests
            # a fleet meets when it starts (a check that failed a minute ago is a change, not a state)
            self.gh.add_check_run(repo, sha, CHECK, status="completed",
                                  conclusion="success" if rng.random() < 0.85 else "failure",
                                  finished_ago=ages.randint(3_600, 86_400))
            self.gh.set_mergeable(repo, number, "MERGEABLE")
            if not draft and rng.random() < approved:
                self.gh.review(repo, number, rng.choice(REVIEWERS), "APPROVED")

    # -- applying --------------------------------------------------------------------
    def open_numbers(self, repo: str) -> list[int]:
        with self.gh.lock:
            pulls = self.gh.world.repo(repo).pulls
            return sorted(n for n, pr in pulls.items() if pr.state == "open")

    def due(self, now: float) -> list[Callable[[float], None]]:
        """Follow-ups (CI completing, mergeability computed) whose time has come."""
        ready = [fn for when, fn in self._later if when <= now]
        self._later = [(when, fn) for when, fn in self._later if when > now]
        return ready

    def _expect(self, exp: Expectation) -> Expectation:
        """Keep ``exp``; earlier unseen expectations it makes impossible are set aside, not counted."""
        moot = MOOT.get(exp.kind, ())
        for other in self.expectations:
            if (other.seen_at is None and not other.superseded and other.kind in moot
                    and other.repo == exp.repo and other.number == exp.number):
                other.superseded = True
        self.expectations.append(exp)
        return exp

    def apply(self, intent: Intent, now: float) -> None:
        rng = random.Random(intent.seed)
        self.applied[intent.kind] = self.applied.get(intent.kind, 0) + 1
        getattr(self, "_" + intent.kind.replace("-", "_"))(intent, rng, now)

    # -- unrelated activity: no request moves, no expectation -------------------------------
    def _branch_push(self, intent: Intent, rng: random.Random, now: float) -> None:
        branch = f"wip-{rng.randrange(4)}"
        self.gh.push_branch(intent.repo, branch, self.git.other_push(intent.repo, branch))

    def _star(self, intent: Intent, rng: random.Random, now: float) -> None:
        self.gh.star(intent.repo)

    def _issue(self, intent: Intent, rng: random.Random, now: float) -> None:
        self.gh.open_issue(intent.repo, author=rng.choice(("alice", "bob")))

    def _ci(self, repo: str, sha: str, rng: random.Random, now: float, number: int) -> None:
        self.gh.add_check_run(repo, sha, CHECK, status="in_progress", conclusion=None)
        done_at = now + rng.uniform(240.0, 600.0)
        conclusion = "success" if rng.random() < 0.85 else "failure"

        def complete(when: float) -> None:
            pr = self.gh.pr(repo, number)
            if pr.state != "open" or pr.head_sha != sha:
                return
            self.gh.add_check_run(repo, sha, CHECK, status="completed", conclusion=conclusion)
            self._expect(Expectation(kind="checks", cls="discovery", repo=repo, number=number, made_at=when,
                                     sha=sha))

        self._later.append((done_at, complete))

    def _mergeable_later(self, repo: str, number: int, now: float) -> None:
        def compute(when: float) -> None:
            if self.gh.pr(repo, number).state == "open":
                self.gh.set_mergeable(repo, number, "MERGEABLE")

        self._later.append((now + 60.0, compute))

    def _opened(self, intent: Intent, rng: random.Random, now: float) -> None:
        self._branch_seq += 1
        head = f"feat-{self._branch_seq}"
        sha = self.git.open_branch(intent.repo, head)
        number = self.gh.open_pr(intent.repo, head_ref=head, title=f"Change {self._branch_seq}",
                                 author=rng.choice(("alice", "bob")), head_sha=sha)
        self.gh.set_mergeable(intent.repo, number, "UNKNOWN")
        self._mergeable_later(intent.repo, number, now)
        self._ci(intent.repo, sha, rng, now, number)
        self._expect(Expectation(kind="opened", cls="discovery", repo=intent.repo, number=number, made_at=now))

    def _pushed(self, intent: Intent, rng: random.Random, now: float) -> None:
        candidates = [n for n in self.open_numbers(intent.repo) if not self.gh.pr(intent.repo, n).draft]
        if not candidates:
            return
        number = rng.choice(candidates)
        head = self.gh.pr(intent.repo, number).head_ref
        sha = self.git.prepare_push(intent.repo, intent.host, head)
        self.gh.push_pr(intent.repo, number, sha)
        self.gh.set_mergeable(intent.repo, number, "UNKNOWN")
        self._mergeable_later(intent.repo, number, now)
        self._ci(intent.repo, sha, rng, now, number)
        holder = self.git.holder(intent.repo)
        cls = "local-push-holder" if holder == intent.host else "local-push-other"
        exp = self._expect(Expectation(kind="pushed", cls=cls, repo=intent.repo, number=number, made_at=now,
                                       sha=sha, host=intent.host))
        exp.wall = self.git.push(intent.repo, intent.host, head, sha)

    def _reviewed(self, intent: Intent, rng: random.Random, now: float) -> None:
        candidates = [n for n in self.open_numbers(intent.repo) if not self.gh.pr(intent.repo, n).draft]
        if not candidates:
            return
        number = rng.choice(candidates)
        state = "APPROVED" if rng.random() < 0.75 else "CHANGES_REQUESTED"
        self.gh.review(intent.repo, number, rng.choice(REVIEWERS), state)
        self._expect(Expectation(kind="reviewed", cls="discovery", repo=intent.repo, number=number, made_at=now,
                                 updated_at=self.gh.pr(intent.repo, number).updated_at))

    def _merged(self, intent: Intent, rng: random.Random, now: float) -> None:
        numbers = self.open_numbers(intent.repo)
        if not numbers:
            return

        def approved(n: int) -> bool:
            pr = self.gh.pr(intent.repo, n)
            return not pr.draft and any(r.state == "APPROVED" for r in pr.reviews)

        ready = [n for n in numbers if approved(n)]
        number = (ready or [n for n in numbers if not self.gh.pr(intent.repo, n).draft] or numbers)[0]
        self.gh.merge_pr(intent.repo, number)
        for other in self.open_numbers(intent.repo):
            self.gh.set_mergeable(intent.repo, other, "UNKNOWN")
            self._mergeable_later(intent.repo, other, now)
        exp = self._expect(Expectation(kind="merged", cls="fetch", repo=intent.repo, number=number, made_at=now,
                                       host=intent.host))
        exp.wall = self.git.merged(intent.repo, intent.host, number)


def parse_time(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def freshness(expectations: list[Expectation], cls: str | tuple[str, ...]) -> dict[str, object]:
    """p50/p99 of change-to-seen for one class; unseen changes are reported, not dropped."""
    classes = (cls,) if isinstance(cls, str) else cls
    chosen = [e for e in expectations if e.cls in classes and not e.superseded]
    seen = [lat for lat in (e.latency() for e in chosen) if lat is not None]
    return {
        "n": len(chosen),
        "seen": len(seen),
        "unseen": len(chosen) - len(seen),
        "p50": percentile(seen, 50),
        "p99": percentile(seen, 99),
    }
