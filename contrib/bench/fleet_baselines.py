"""The three baselines: what the fleets ran before git-sluice, implemented against the same double.

- :class:`NaivePoller` — the sluice incident before its fix (ADR 0071): every
  pass, every 3 s, lists the open requests and reads each one's reviews and
  checks by REST, no ETags; a spent limit is read as an error (the pass
  ends, the next starts 3 s later). *Paced to the incident's own figures*
  (issue 29): the fleet's calls are spread so that the allowance lasts 45
  minutes and the fleet is refused for the last 15 of every hour ("refused
  for about fifteen minutes of every hour"), and its refused passes are
  spaced so the fleet sends about 10,500 calls in the hour (the ADR's
  9,000–12,000), whatever its size and however many step passes its pushes
  add: one pace shared by the fleet's processes (:class:`FleetPacer`,
  :func:`adr_pacer`).
- :class:`GraphQLPoller` — a competent client a careful engineer would
  write without git-sluice (issue 29): one process per host, one GraphQL
  query a minute over all its repositories (per base, open requests' number,
  head oid, ``updatedAt``, ``isDraft``, ``reviewDecision``, ``mergeable`` and
  ``statusCheckRollup`` state, paged 100 at a time), waiting for the reset
  when limited.
- :class:`TowerFixPoller` — Tower's own fix (its issue's amended
  acceptance): the open-items overview kept 180 s, the two searches 600 s,
  a failure kept too; 52 counted points an hour per repository.
- :class:`DashboardPoller` — the Tower incident: per repository three
  GraphQL-backed reads, kept 30 s; a failed read is not kept, so the next poll
  (every 2.5 s) asks all three again; nothing reads the reset.
- :class:`ConditionalPoller` — a careful per-process client: ETags and
  If-None-Match per process, and octokit-style throttling on its own (wait
  ``retry-after`` or the reset, retry once); no shared pause, no
  single-flight, no lease.

They call the double's request pipeline in-process (:func:`pipeline.handle`,
the very code its HTTP server runs, minus the socket), because a baseline
makes tens of thousands of calls an hour and the socket would only add wall
time, never a different count. The double has no route for a request's
reviews, so the "reviews" read of a pass is ``GET /repos/{o}/{r}/pulls/{n}``:
one REST call, counted alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from git_sluice.double import GitHubDouble
from git_sluice.double.pipeline import Request, handle

from fleet_activity import Expectation, View, parse_time


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def throttled(self) -> bool:
        if self.status in (403, 429):
            text = self.body.decode("utf-8", "replace").lower()
            return (self.headers.get("x-ratelimit-remaining") == "0" or "retry-after" in self.headers
                    or "rate limit" in text)
        if self.status == 200 and self.headers.get("content-type", "").startswith("application/json"):
            try:
                data = self.json()
            except ValueError:
                return False
            return isinstance(data, dict) and any(
                isinstance(e, dict) and e.get("type") in ("RATE_LIMITED", "RATE_LIMIT") for e in data.get("errors", [])
            )
        return False

    def wait_hint(self, now: float) -> float:
        """How long octokit's throttling would wait: retry-after, else until the reset, else a minute."""
        retry = self.headers.get("retry-after")
        if retry is not None and retry.isdigit():
            return float(retry)
        if self.headers.get("x-ratelimit-remaining") == "0" and self.headers.get("x-ratelimit-reset", "").isdigit():
            return max(float(self.headers["x-ratelimit-reset"]) - now, 1.0)
        return 60.0


class AppMinter:
    """A GitHub App's key: mints an installation token as the product does (a JWT, then the exchange)."""

    def __init__(self, gh: GitHubDouble, app_id: int, installation_id: int, private_pem: bytes) -> None:
        self.gh, self.app_id, self.installation_id, self.private_pem = gh, app_id, installation_id, private_pem

    def mint(self) -> str:
        import jwt

        now = int(self.gh.clock.time())
        assertion = jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(self.app_id)}, self.private_pem,
                               algorithm="RS256")
        response = handle(self.gh, Request("POST", f"/app/installations/{self.installation_id}/access_tokens", "",
                                           {"authorization": f"Bearer {assertion}",
                                            "accept": "application/vnd.github+json"}, b""),
                          lambda seconds, released: released.wait(seconds))
        if response.status != 201:
            raise RuntimeError(f"the double refused an installation token: {response.status} {response.body[:200]!r}")
        return str(json.loads(response.body)["token"])


class Direct:
    """One process's calls, straight into the double's pipeline (with an App: its own installation token)."""

    def __init__(self, gh: GitHubDouble, token: str | None, refusals: dict[str, int] | None = None,
                 minter: AppMinter | None = None) -> None:
        self.gh = gh
        self.minter = minter
        self.auth = f"token {token}" if token is not None else ""
        self.refusals = refusals if refusals is not None else {"primary": 0, "secondary": 0}

    def call(self, method: str, target: str, headers: dict[str, str] | None = None, body: bytes = b"") -> Answer:
        if self.minter is not None and not self.auth:
            self.auth = f"token {self.minter.mint()}"
        answer = self._send(method, target, headers, body)
        if answer.status == 401 and self.minter is not None:  # the hour's token expired: a new one, once
            self.auth = f"token {self.minter.mint()}"
            answer = self._send(method, target, headers, body)
        return answer

    def _send(self, method: str, target: str, headers: dict[str, str] | None, body: bytes) -> Answer:
        path, _, query = target.partition("?")
        sent = {"authorization": self.auth, "accept": "application/vnd.github+json"}
        sent.update({k.lower(): v for k, v in (headers or {}).items()})
        response = handle(self.gh, Request(method, path, query, sent, body),
                          lambda seconds, released: released.wait(seconds))
        answer = Answer(response.status, {k.lower(): v for k, v in response.headers}, response.body)
        if answer.status in (403, 429):
            kind = "secondary" if "retry-after" in answer.headers or b"secondary" in answer.body else "primary"
            self.refusals[kind] = self.refusals.get(kind, 0) + 1
        return answer


def _next_link(headers: dict[str, str]) -> str | None:
    for part in headers.get("link", "").split(","):
        if 'rel="next"' in part and "<" in part:
            url = part[part.find("<") + 1: part.find(">")]
            return url[url.find("/", url.find("//") + 2):]
    return None


@dataclass
class Observer:
    """Checks what a baseline process saw against the pending expectations of its repository."""

    expectations: list[Expectation]
    clock: Callable[[], float]

    def observe(self, repo: str, views: dict[int, View], complete_list: bool) -> None:
        now = self.clock()
        for exp in self.expectations:
            if exp.repo != repo or exp.seen_at is not None or exp.superseded:
                continue
            view = views.get(exp.number)
            if exp.kind == "merged" and not complete_list:
                continue
            if exp.met(view):
                exp.seen_at = now


def _checks_done(data: Any) -> bool:
    runs = data.get("check_runs", []) if isinstance(data, dict) else []
    return bool(runs) and all(r.get("status") == "completed" for r in runs)


Pass = Iterator[float]
"""A pass is a generator: it yields how long to sleep (octokit's wait), and ends with the pass."""


class PassActor:
    """Runs passes back to back: a pass, then ``period`` seconds, then the next (a poller's loop)."""

    def __init__(self, make_pass: Callable[[], Pass], period: float, *, once: bool = False) -> None:
        self.make_pass = make_pass
        self.period = period
        self.once = once
        self._gen: Pass | None = None
        self.passes = 0

    def step(self, now: float) -> float | None:
        if self._gen is None:
            self._gen = self.make_pass()
        try:
            return now + next(self._gen)
        except StopIteration:
            self._gen = None
            self.passes += 1
            return None if self.once else now + self.period


class FleetPacer:
    """The naive fleet's pace as the ADR measured it, shared by every process of the fleet (issue 29).

    Every call waits for the fleet's next slot: ``ok_interval`` apart while GitHub answers (the
    allowance lasts 45 minutes), ``refused_interval`` apart once it refuses (the refused passes, each
    a call, fill the hour to the ADR's ~10,500). Shared, so the fleet's calls stay at the incident's
    figures whatever its size and however many step passes a push or a fetch adds. Paced per process,
    S1's fleet spent the allowance in about 35 minutes (the step passes came on top) and its refused
    passes, every 3 s from each process, made 22,838 calls/h (the published S1 at 223f51c).
    """

    def __init__(self, ok_interval: float, refused_interval: float) -> None:
        self.ok_interval = ok_interval
        self.refused_interval = refused_interval
        self.refused = False
        self._next = float("-inf")

    def delay(self, now: float) -> float:
        """Seconds until this call's slot (reserved now)."""
        slot = max(self._next, now)
        self._next = slot + (self.refused_interval if self.refused else self.ok_interval)
        return slot - now

    def answered(self, status: int) -> None:
        self.refused = status in (403, 429)


@dataclass
class NaivePoller:
    """The sluice incident: list, then each request's reviews and checks, by REST, no ETags."""

    direct: Direct
    repo: str
    observer: Observer | None = None
    views: dict[int, View] = field(default_factory=dict)
    pacer: FleetPacer | None = None  # the fleet's shared pace (None: back to back)
    clock: Callable[[], float] | None = None  # the pacer's time

    def _call(self, target: str) -> Iterator[float | Answer]:
        if self.pacer is not None and self.clock is not None:
            wait = self.pacer.delay(self.clock())
            if wait > 0:
                yield wait
        answer = self.direct.call("GET", target)
        if self.pacer is not None:
            self.pacer.answered(answer.status)
        yield answer

    def run_pass(self) -> Pass:
        owner_name = f"/repos/{self.repo}"
        target: str | None = f"{owner_name}/pulls?state=open&base=main&per_page=100"
        items: list[dict[str, Any]] = []
        while target is not None:
            answer = None
            for out in self._call(target):
                if isinstance(out, Answer):
                    answer = out
                else:
                    yield out
            assert answer is not None
            if answer.status != 200:
                return  # "a spent limit read as an error": this pass ends
            items.extend(answer.json())
            target = _next_link(answer.headers)
        seen: dict[int, View] = {}
        for item in items:
            seen[item["number"]] = View(True, item["head"]["sha"], parse_time(item.get("updated_at")))
        for number, view in self.views.items():
            if number not in seen:
                seen[number] = View(False)
            elif self.views[number].head_sha == seen[number].head_sha:
                seen[number].checks_done = self.views[number].checks_done
        self.views = seen
        self._observe(True)
        for item in items:
            number, sha = item["number"], item["head"]["sha"]
            for suffix in (f"pulls/{number}", f"commits/{sha}/check-runs", f"commits/{sha}/status"):
                answer = None
                for out in self._call(f"{owner_name}/{suffix}"):
                    if isinstance(out, Answer):
                        answer = out
                    else:
                        yield out
                assert answer is not None
                if answer.status != 200:
                    return
                if suffix.endswith("check-runs"):
                    self.views[number].checks_done = _checks_done(answer.json())
            self._observe(False)
        if False:  # pragma: no cover - makes this a generator even when it never sleeps
            yield 0.0

    def _observe(self, complete: bool) -> None:
        if self.observer is not None:
            self.observer.observe(self.repo, self.views, complete)


@dataclass
class ConditionalPoller:
    """ETags per process and octokit-style retry on its own; the same reads as the naive pass."""

    direct: Direct
    repo: str
    clock: Callable[[], float]
    observer: Observer | None = None
    views: dict[int, View] = field(default_factory=dict)
    kept: dict[str, tuple[str, bytes, dict[str, str]]] = field(default_factory=dict)
    slept: float = 0.0

    def _get(self, target: str) -> Iterator[float | Answer]:
        """One conditional GET with one octokit-style retry; yields sleeps, then the answer."""
        for attempt in (1, 2):
            headers = {}
            kept = self.kept.get(target)
            if kept is not None:
                headers["if-none-match"] = kept[0]
            answer = self.direct.call("GET", target, headers)
            if answer.status == 304 and kept is not None:
                yield Answer(200, kept[2], kept[1])
                return
            if answer.throttled and attempt == 1:
                wait = answer.wait_hint(self.clock())
                self.slept += wait
                yield wait
                continue
            if answer.status == 200 and "etag" in answer.headers:
                self.kept[target] = (answer.headers["etag"], answer.body, answer.headers)
            yield answer
            return

    def _fetch(self, target: str) -> Iterator[float]:
        self._last: Answer | None = None
        for out in self._get(target):
            if isinstance(out, Answer):
                self._last = out
            else:
                yield out

    def run_pass(self) -> Pass:
        base = f"/repos/{self.repo}"
        target: str | None = f"{base}/pulls?state=open&base=main&per_page=100"
        items: list[dict[str, Any]] = []
        while target is not None:
            yield from self._fetch(target)
            answer = self._last
            if answer is None or answer.status != 200:
                return
            items.extend(answer.json())
            target = _next_link(answer.headers)
        seen = {item["number"]: View(True, item["head"]["sha"], parse_time(item.get("updated_at"))) for item in items}
        for number, view in self.views.items():
            if number not in seen:
                seen[number] = View(False)
            elif view.head_sha == seen[number].head_sha:
                seen[number].checks_done = view.checks_done
        self.views = seen
        if self.observer is not None:
            self.observer.observe(self.repo, self.views, True)
        for item in items:
            number, sha = item["number"], item["head"]["sha"]
            for suffix in (f"pulls/{number}", f"commits/{sha}/check-runs", f"commits/{sha}/status"):
                yield from self._fetch(f"{base}/{suffix}")
                answer = self._last
                if answer is None or answer.status != 200:
                    return
                if suffix.endswith("check-runs"):
                    self.views[number].checks_done = _checks_done(answer.json())
            if self.observer is not None:
                self.observer.observe(self.repo, self.views, False)


OVERVIEW_QUERIES = (
    # Tower's three gh commands per workspace (open items with their people and labels, recently
    # merged, recently closed), as GraphQL over pull requests: the double has no issues. The first
    # is a multi-hundred-node query, as the incident says gh's was (2 points).
    """query($owner: String!, $name: String!) { repository(owner: $owner, name: $name) {
      pullRequests(first: 100, states: OPEN) { nodes { number title updatedAt author { login }
        latestOpinionatedReviews(first: 10) { nodes { state author { login } } }
        labels(first: 20) { nodes { name } } } } } }""",
    """query($owner: String!, $name: String!) { repository(owner: $owner, name: $name) {
      pullRequests(last: 100, states: MERGED) { nodes { number title mergedAt author { login }
        labels(first: 20) { nodes { name } } } } } }""",
    """query($owner: String!, $name: String!) { repository(owner: $owner, name: $name) {
      pullRequests(last: 100, states: CLOSED) { nodes { number title closedAt author { login }
        labels(first: 20) { nodes { name } } } } } }""",
)


@dataclass
class DashboardPoller:
    """One dashboard client: every poll, each repository's overview; kept 30 s, failures not kept."""

    direct: Direct
    repos: list[str]
    ttl: float = 30.0
    cached_at: dict[str, float] = field(default_factory=dict)

    def poll(self, now: float) -> None:
        for repo in self.repos:
            at = self.cached_at.get(repo)
            if at is not None and now - at < self.ttl:
                continue
            owner, name = repo.split("/", 1)
            ok = True
            for query in OVERVIEW_QUERIES:
                body = json.dumps({"query": query, "variables": {"owner": owner, "name": name}}).encode()
                answer = self.direct.call("POST", "/graphql", {"content-type": "application/json"}, body)
                data = answer.json() if answer.body else None
                if answer.status != 200 or not isinstance(data, dict) or data.get("errors"):
                    ok = False  # executeForgeCommand returns null; the cache keeps only non-null
            if ok:
                self.cached_at[repo] = now


def adr_pace(processes: int, allowance: int, window: float = 3600.0, lasts: float = 0.75) -> float:
    """Seconds between one naive process's calls so that ``processes`` of them spend ``allowance`` in
    ``lasts`` of the window (the ADR: refused for about fifteen minutes of every hour)."""
    return processes * window * lasts / allowance


ADR_CALLS_PER_HOUR = 10_500  # the middle of the ADR's 9,000–12,000 REST calls an hour


def adr_pacer(allowance: int, window: float = 3600.0, lasts: float = 0.75,
              calls: int = ADR_CALLS_PER_HOUR) -> FleetPacer:
    """The naive fleet's shared pace: ``allowance`` calls in ``lasts`` of the window, then the refused
    calls that bring the hour to ``calls`` in the rest of it (the ADR: 9,000–12,000 calls an hour
    against 5,200, refused about fifteen minutes of every hour)."""
    return FleetPacer(window * lasts / allowance, window * (1.0 - lasts) / max(calls - allowance, 1))


@dataclass
class TowerFixPoller:
    """Tower after its own fix: the open-items overview kept 180 s, the two searches 600 s, failures kept.

    Counted per repository and hour: 20 × 2 points (the open items, a multi-hundred-node query) + 6 + 6
    = 52, the issue's own "52 calls/h per watched workspace".
    """

    direct: Direct
    repos: list[str]
    ttls: tuple[float, float, float] = (180.0, 600.0, 600.0)
    asked_at: dict[tuple[str, int], float] = field(default_factory=dict)
    suspended_until: float = 0.0

    def poll(self, now: float) -> None:
        if now < self.suspended_until:
            return  # item 2 of the fix: nothing until the reset once rate-limited
        for repo in self.repos:
            owner, name = repo.split("/", 1)
            for index, (query, ttl) in enumerate(zip(OVERVIEW_QUERIES, self.ttls)):
                at = self.asked_at.get((repo, index))
                if at is not None and now - at < ttl:
                    continue
                body = json.dumps({"query": query, "variables": {"owner": owner, "name": name}}).encode()
                answer = self.direct.call("POST", "/graphql", {"content-type": "application/json"}, body)
                self.asked_at[(repo, index)] = now  # a failure is kept too (item 1: a negative cache)
                if answer.throttled:
                    reset = answer.headers.get("x-ratelimit-reset", "")
                    self.suspended_until = float(reset) if reset.isdigit() else now + 60.0
                    return


# --------------------------------------------------------------------------- the competent client
GRAPHQL_PAGE = 100
GRAPHQL_FIELDS = ("number headRefOid updatedAt isDraft reviewDecision mergeable statusCheckRollup { state }")


def graphql_query(pages: list[tuple[str, str, str | None]]) -> str:
    """One query over several (repository, base, cursor) pages, one alias each."""
    parts = []
    for index, (repo, base, after) in enumerate(pages):
        owner, name = repo.split("/", 1)
        cursor = f', after: "{after}"' if after else ""
        parts.append(f'r{index}: repository(owner: "{owner}", name: "{name}") {{ pullRequests(first: {GRAPHQL_PAGE}, '
                     f'states: OPEN, baseRefName: "{base}"{cursor}) {{ pageInfo {{ hasNextPage endCursor }} '
                     f"nodes {{ {GRAPHQL_FIELDS} }} }} }}")
    return "query { " + " ".join(parts) + " }"


@dataclass
class GraphQLPoller:
    """A careful engineer's poller, without git-sluice: one process per host, a pass a minute.

    A pass asks the first page of every repository in one query (aliases), then, while any has more,
    one query for the next page of each that has (``after`` its cursor), 100 a page. Rate-limited, it
    waits for the reset (``x-ratelimit-reset``) before the next query. No ETags: GraphQL has none.
    """

    direct: Direct
    repos: list[str]
    clock: Callable[[], float]
    observer: Observer | None = None
    base: str = "main"
    views: dict[str, dict[int, View]] = field(default_factory=dict)
    queries: int = 0

    def _ask(self, pages: list[tuple[str, str, str | None]]) -> Iterator[float | Any]:
        body = json.dumps({"query": graphql_query(pages)}).encode()
        while True:
            answer = self.direct.call("POST", "/graphql", {"content-type": "application/json"}, body)
            self.queries += 1
            if answer.throttled:
                yield answer.wait_hint(self.clock())
                continue
            data = answer.json() if answer.body else None
            if answer.status != 200 or not isinstance(data, dict) or not isinstance(data.get("data"), dict):
                yield None
                return
            yield data["data"]
            return

    def run_pass(self) -> Pass:
        pending: list[tuple[str, str, str | None]] = [(repo, self.base, None) for repo in self.repos]
        nodes: dict[str, list[dict[str, Any]]] = {repo: [] for repo in self.repos}
        complete: set[str] = set()
        while pending:
            data = None
            for out in self._ask(pending):
                if isinstance(out, float):
                    yield out
                else:
                    data = out
            if data is None:
                break  # a failed query: this pass ends; the next comes a minute later
            following = []
            for index, (repo, base, _after) in enumerate(pending):
                conn = ((data.get(f"r{index}") or {}).get("pullRequests")) or {}
                nodes[repo].extend(conn.get("nodes") or [])
                info = conn.get("pageInfo") or {}
                if info.get("hasNextPage") and info.get("endCursor"):
                    following.append((repo, base, info["endCursor"]))
                else:
                    complete.add(repo)
            pending = following
        for repo in complete:
            seen: dict[int, View] = {}
            for node in nodes[repo]:
                rollup = (node.get("statusCheckRollup") or {}).get("state")
                seen[node["number"]] = View(True, node["headRefOid"], parse_time(node.get("updatedAt")),
                                            rollup in ("SUCCESS", "FAILURE", "ERROR"))
            for number in self.views.get(repo, {}):
                seen.setdefault(number, View(False))
            self.views[repo] = seen
            if self.observer is not None:
                self.observer.observe(repo, seen, True)
        if False:  # pragma: no cover - a generator even when it never sleeps
            yield 0.0
