"""The host watch's decisions (pure: no I/O, ``now`` passed in).

Discovery is a host's job (docs/design.md#the-host-watch): one watch per host per tick over every
repository, branch and waiting head any clone on the host takes in. What it
decides, each a plain function here, tested without I/O:

- **when it ticks** (:func:`phase_of`, :func:`next_tick_at`): on the host's
  clock — slots of the discovery interval shifted by a stable per-host jitter,
  so hosts started together do not fetch in the same second, and a round run
  between ticks (a hook's) never pushes the next tick back;
- **how it asks a repository** (:class:`RepoMode`, :func:`after_rest`,
  :func:`after_graphql`): by conditional REST while the lists answer 304; a
  repository whose list answered 200 though no request moved (GitHub embeds
  the repository's counters in every list item, so a star or a push to any
  branch changes every page) moves to the one GraphQL query of the tick, and
  comes back to REST once neither its activity fingerprint nor its list
  moved for :func:`quiet_ticks` ticks (more for a list of many pages);
- **when a waiting head is asked** (:class:`HeadRecord`, :func:`head_due`,
  :func:`after_head`): every tick, except heads whose checks failed and stay
  failed, asked less and less often (doubling up to 15 min), and again at
  once when their request moves;
- **the GraphQL query** (:func:`build_watch_query`, :func:`parse_watch_answer`):
  every churning repository's open requests on each watched base (number,
  head oid, ``updatedAt``, draft, the head's ``statusCheckRollup { state }``)
  and the repository's activity fingerprint, one connection per base, so 13
  repositories cost 1 point.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field, replace
from typing import Any

from ..clock import parse_rfc3339
from ..records import record
from .graphql import FRAGMENT_NAME, PR_FRAGMENT, MalformedNode, reading_from_node
from .request import Request

QUIET_TICKS = 5
"""GraphQL ticks a churning repository's fingerprint must stand still before REST is tried again."""
FAILED_BACKOFF_MAX = 900.0
"""A head whose checks failed and stay failed is asked at least this often (15 min)."""
FAILED_STATES = frozenset({"FAILURE", "ERROR"})
SLACK = 2.0
"""Seconds early a tick may start: a sleeper woken a little early must not skip its slot."""


# ------------------------------------------------------------------ the clock


def phase_of(host: str, interval: float) -> float:
    """A stable offset in [0, interval) from the host's name: its ticks' phase on the clock."""
    if interval <= 0:
        return 0.0
    digest = hashlib.sha256(f"git-sluice watch {host}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") / 2**64) * interval


def next_tick_at(now: float, interval: float, phase: float) -> float:
    """The first slot boundary strictly after ``now`` (slots of ``interval`` shifted by ``phase``)."""
    if interval <= 0:
        return now
    k = math.floor((now - phase) / interval) + 1
    return phase + k * interval


def slot_after_tick(now: float, interval: float, phase: float) -> float:
    """The next tick's slot, for a tick that ran at ``now``.

    A tick may run up to :data:`SLACK` early (a sleeper woken a little
    early); that tick is its slot's, so the next is the slot after — never
    one a second away, which :func:`due` would find due at once and tick
    twice (a driver's second offer after its rounds did exactly that).
    """
    return next_tick_at(now + SLACK, interval, phase)


def due(next_at: float | None, now: float) -> bool:
    """Whether the watch ticks now (never ticked yet, or its slot has come, give or take the slack)."""
    return next_at is None or now >= next_at - SLACK or next_at - now > 24 * 3600


# -------------------------------------------------------- a repository's mode


@record(frozen=True)
class RepoMode:
    """How the watch asks one repository (kept in the watch's answers between ticks)."""

    mode: str = "rest"  # rest | graphql
    still: int = 0
    """GraphQL ticks in a row its fingerprint stood still."""
    fingerprint: tuple[Any, ...] | None = None
    rebasing: bool = False
    """Back on REST after GraphQL: the next list 200 only renews the kept ETag, it is not churn."""


def after_rest(mode: RepoMode, *, answered_200: bool, moved: bool) -> RepoMode:
    """A REST tick's lesson: a 200 with nothing moved is churn (go to GraphQL), a 304 keeps REST.

    ``moved``: some request on a watched base moved (or the repository is new
    to the watch, which only takes its baseline).
    """
    if not answered_200:
        return replace(mode, mode="rest", rebasing=False)
    if mode.rebasing or moved:
        return replace(mode, mode="rest", rebasing=False)
    return RepoMode(mode="graphql", still=0, fingerprint=None)


def quiet_ticks(pages: int) -> int:
    """Still ticks before a GraphQL repository tries REST again: :data:`QUIET_TICKS`, or its list's
    pages when that is more.

    Going back to REST walks the list once, a counted call a page, to renew
    its first page's ETag: at 5,000 requests that is 50 calls, where staying
    costs the query's 1 point a tick. So a long list pays the walk only
    after it has stood still as many ticks as the walk costs (rent or buy:
    never more than twice what either alone would have cost).
    """
    return max(QUIET_TICKS, pages)


@record(frozen=True)
class GraphqlTick:
    """What one GraphQL tick said of a repository, for :func:`after_graphql`."""

    mode: RepoMode
    fingerprint: tuple[Any, ...] | None
    moved: bool = False
    """Some listed request on a watched base moved (or came or went) in this tick."""
    pages: int = 1
    """Its longest watched list, in REST pages (of 100)."""


def after_graphql(mode: RepoMode, fingerprint: tuple[Any, ...] | None, *, moved: bool = False,
                  pages: int = 1) -> RepoMode:
    """A GraphQL tick's lesson: after :func:`quiet_ticks` ticks in a row where neither the fingerprint
    nor the list moved, try REST again (a list whose requests keep moving would answer REST's first
    page 200 at each move, and come straight back)."""
    if fingerprint is None:
        return replace(mode, mode="graphql", still=0, fingerprint=None)
    still = mode.still + 1 if mode.fingerprint == fingerprint and not moved else 0
    if still >= quiet_ticks(pages):
        return RepoMode(mode="rest", still=0, fingerprint=None, rebasing=True)
    return RepoMode(mode="graphql", still=still, fingerprint=fingerprint)


def after_graphql_tick(ticks: Mapping[str, GraphqlTick], *, query_goes_anyway: bool) -> dict[str, RepoMode]:
    """Every GraphQL repository's lesson from one tick, together: a repository whose fingerprint stood
    still long enough goes back to REST only when the tick's query would no longer be sent for it.

    While the query goes anyway — another repository is still busy, or waiting heads ride in it —
    a quiet repository rides along for nothing (a repository adds nothing to the query's point),
    where going back to REST would cost a 200 to renew its list's ETag, and another each time the
    next push or star in it sends it back: at 10 repositories with production activity, about
    one counted call a tick (issue 29). When every repository stood still and nothing rides, they
    go back to REST together.
    """
    afters = {r: after_graphql(t.mode, t.fingerprint, moved=t.moved, pages=t.pages) for r, t in ticks.items()}
    if not query_goes_anyway and all(a.mode == "rest" for a in afters.values()):
        return afters
    return {
        r: RepoMode(mode="graphql", still=quiet_ticks(ticks[r].pages) - 1, fingerprint=ticks[r].fingerprint)
        if a.mode == "rest" else a
        for r, a in afters.items()
    }


# ------------------------------------------------------------- waiting heads


@record(frozen=True)
class HeadRecord:
    """What the watch knows of one waiting head."""

    state: str | None = None
    """The checks' state as the watch last saw it (None: not asked yet, or no checks)."""
    seen: bool = False
    changed_tick: int = 0
    streak: int = 0
    """Probes in a row that found its failed checks still failed."""
    next_at: float = 0.0
    updated_at: str = ""
    """Its request's ``updated_at`` when last asked: a move asks again at once."""


def head_due(record: HeadRecord, *, now: float, updated_at: str) -> bool:
    """Asked this tick? Always, unless failed-and-still-failed and its back-off runs, with the request unmoved."""
    if updated_at and record.updated_at and updated_at != record.updated_at:
        return True
    return now >= record.next_at - SLACK


def after_head(
    record: HeadRecord, *, state: str | None, moved: bool, tick: int, now: float, interval: float, updated_at: str,
    failed_for: float | None = None,
) -> HeadRecord:
    """The head's record after it was asked: ``moved`` (its checks changed) or not.

    A failed head that stays failed waits ``interval × 2^streak`` (at most
    :data:`FAILED_BACKOFF_MAX`) before it is asked again; anything else is
    asked at every tick. ``failed_for`` — how long ago its checks finished, by
    the check runs' own ``completed_at`` — places a failure this host sees for
    the first time (a process started, a head newly waited on) where its
    doubling would stand had it been watched since it failed: an hour-old
    failure is asked every 15 minutes from the first look, not 1, 2, 4, 8
    minutes later again. A move of its request asks at once and starts the
    doubling again from the interval, as before.
    """
    request_moved = bool(updated_at and record.updated_at and updated_at != record.updated_at)
    failed = state in FAILED_STATES
    streak = 0
    wait = 0.0
    if failed and not moved and not request_moved and record.seen:
        streak = record.streak + 1
        wait = interval * (2**streak)
    elif failed and not record.seen and interval > 0:
        wait = failure_age(failed_for)
        while interval * (2**streak) < wait and streak < 32:  # the doubling that has reached its age
            streak += 1
        if wait < interval:
            streak = 0
    wait = min(FAILED_BACKOFF_MAX, wait)
    next_at = now + wait if wait >= interval else 0.0
    return HeadRecord(
        state=state, seen=True, changed_tick=tick if moved else record.changed_tick, streak=streak,
        next_at=next_at, updated_at=updated_at or record.updated_at,
    )


def failure_age(failed_for: float | None) -> float:
    """The age of a failure, bounded to [0, :data:`FAILED_BACKOFF_MAX`]: it comes from GitHub's
    ``completed_at`` read against this host's clock, so a skewed clock or a time in the future can
    shift one head's probe interval within its bounds, never stop it being asked."""
    if failed_for is None or failed_for != failed_for or failed_for <= 0:  # None, NaN, the future
        return 0.0
    return min(FAILED_BACKOFF_MAX, float(failed_for))


def finished_at(check_runs: Any) -> float | None:
    """When the newest completed check run of a REST ``check-runs`` answer finished (None: none did,
    or no time could be read)."""
    runs = check_runs.get("check_runs") if isinstance(check_runs, Mapping) else None
    newest: float | None = None
    for run in runs if isinstance(runs, list) else []:
        text = run.get("completed_at") if isinstance(run, Mapping) else None
        if not isinstance(text, str) or not text:
            continue
        try:
            when = parse_rfc3339(text)
        except (ValueError, OverflowError):
            continue
        newest = when if newest is None else max(newest, when)
    return newest


def first_look_moved(registered: str | None, observed: str | None) -> bool:
    """A head the watch sees for the first time moved if its checks differ from the clone's last reading."""
    return (registered or None) != (observed or None)


def rest_rollup(check_runs: Any, status: Any) -> str | None:
    """A coarse rollup state from the REST check runs (and the combined status, when asked)."""
    states: list[str] = []
    runs = check_runs.get("check_runs") if isinstance(check_runs, Mapping) else None
    for run in runs if isinstance(runs, list) else []:
        if not isinstance(run, Mapping):
            continue
        if run.get("status") not in (None, "completed"):
            states.append("PENDING")
        elif str(run.get("conclusion") or "").upper() in {
            "FAILURE", "TIMED_OUT", "CANCELLED", "ACTION_REQUIRED", "STARTUP_FAILURE", "STALE",
        }:
            states.append("FAILURE")
        else:
            states.append("SUCCESS")
    if isinstance(status, Mapping) and (status.get("total_count") or status.get("statuses")):
        combined = str(status.get("state") or "").upper()
        states.append({"FAILURE": "FAILURE", "ERROR": "ERROR", "PENDING": "PENDING"}.get(combined, "SUCCESS"))
    for verdict in ("ERROR", "FAILURE", "PENDING"):
        if verdict in states:
            return verdict
    return "SUCCESS" if states else None


def uses_statuses(status: Any) -> bool:
    """Whether a combined status answer shows the repository uses commit statuses at all."""
    return isinstance(status, Mapping) and bool(status.get("total_count") or status.get("statuses"))


# ------------------------------------------------------------ what moved


def snapshot(items: Iterable[Request]) -> dict[int, tuple[str, str, bool]]:
    """What the watch compares between two lists: each open request's head, ``updated_at`` and draft."""
    return {item.number: (item.head_sha, item.updated_at, item.draft) for item in items}


# ---------------------------------------------------------- the GraphQL query

WATCH_PAGE = 100
PR_FIELDS = (
    "number title headRefName headRefOid baseRefName isDraft updatedAt author { login } "
    "reviewDecision mergeable state statusCheckRollup { state }"
)
"""Scalars and one plain object per request: no connection, so they add nothing to the query's cost.
``reviewDecision``, ``mergeable`` and the rollup's state are what a request's state is derived from
(:func:`~git_sluice.intake.queue.derive_state`): a wait, and a round whose only question is the
mergeability (it moves no ``updated_at``), read them here instead of paying a reading."""
FINGERPRINT = "pushedAt updatedAt stargazerCount forkCount diskUsage openIssues: issues(first: 1, states: OPEN) { totalCount }"


RECENT_MAX = 10
"""At most this many most recently updated requests of a base are read in full by the watch's query."""
QUERY_BUDGET = 149
"""Requests one query holds for one point (GitHub: requests / 100, rounded half up, at least 1)."""
REQUESTS_PER_READING = 4
"""The connections a full reading nests per request (labels, reviews, the last commit, its contexts)."""
GONE_PAGE = 20
"""A base's most recently updated closed and merged requests asked beside its open ones (what left it)."""
ASKED_MAX = 100
"""At most this many requests asked by number ride in one target of the query."""
HEADS_MAX = 300
"""At most this many heads' rollups ride in one target of the query (single objects: no points, a few
dozen bytes of answer each); a head past them is asked in a later tick (its record stands meanwhile)."""
_OID = re.compile(r"[0-9a-f]{40}")


def target_requests(target: Target) -> int:
    """The requests (GitHub's pricing unit) a target adds to the query, its recent readings aside.

    A listing page is one (a connection of ``first: 100`` with nothing nested under its requests);
    on a base's first incremental page the fingerprint's open-issues count and the gone list add
    one each. Heads' rollups and requests asked by number are single objects: they add nothing.
    """
    if not target.lists:
        return 0
    if target.cursor is not None:
        return 1
    return 2 if target.walk else 3


def recent_size(targets: Sequence[Target]) -> int:
    """How many of each base's most recently updated requests the query can read in full and stay one point.

    A request that moves (a review, a push, a label, a new one) comes to the
    top of its base by ``updatedAt``: read in full in the same query, it
    needs no batched reading after the tick — the reading that used to cost
    the host a second point in every tick in which anything moved. The size
    is what the point has room for beside the watch's own requests
    (:func:`target_requests`): 8 a base at 4 bases, 2 at 13, none past ~37
    (the query then costs more than one point anyway).
    """
    firsts = sum(1 for t in targets if t.cursor is None and t.lists)
    if firsts == 0:
        return 0
    room = QUERY_BUDGET - sum(target_requests(t) for t in targets) - firsts  # each adds the recent connection
    return max(0, min(RECENT_MAX, room // (REQUESTS_PER_READING * firsts)))


@record(frozen=True)
class Target:
    """One repository's base the query reads.

    ``cursor``: a later page. ``walk``: the whole open list, oldest first
    (no list known, or the count disagrees with it); otherwise the base's
    requests most recently updated first, as far as the last tick's newest.
    ``heads``: head oids whose check rollup is asked; ``refresh``: requests
    asked by number (their mergeability, still unknown). ``lists=False``: a
    repository whose list is asked by REST: only its heads ride in the query.
    """

    repository: str
    base: str
    cursor: str | None = None
    walk: bool = False
    heads: tuple[str, ...] = ()
    refresh: tuple[int, ...] = ()
    lists: bool = True


def build_watch_query(targets: Sequence[Target], *, recent: int | None = None) -> tuple[str, dict[str, Any]]:
    """One document over every target: ``rN: repository(…) { …fingerprint, pullRequests(first: 100, …) }``.

    A base's first page asks its open requests most recently updated first
    (``orderBy: UPDATED_AT DESC``) with their count (``totalCount``), the
    most recently updated closed and merged ones (``gone``), the base
    branch's commit and the repository's fingerprint; the watch stops paging
    at the last tick's newest ``updatedAt``. No connection is nested under
    the listed requests (labels, reviews, commits each would cost 100
    requests a base). Beside it, on a base's first page, ``recent``: its
    ``recent`` (default: :func:`recent_size`) most recently updated requests
    read in full, which the point has room for. Waiting heads' rollups
    (``hN: object(oid:)``) and requests asked by number (``qN:
    pullRequest(number:)``) are single objects: free. The whole query costs
    one point while it holds at most :data:`QUERY_BUDGET` requests.
    ``rateLimit`` is free.
    """
    size = recent_size(targets) if recent is None else max(0, min(RECENT_MAX, recent))
    params: list[str] = []
    fields = []
    variables: dict[str, Any] = {}
    full = False
    for i, target in enumerate(targets):
        owner, name = target.repository.split("/", 1)
        params += [f"$o{i}: String!", f"$n{i}: String!"]
        variables.update({f"o{i}": owner, f"n{i}": name})
        body: list[str] = []
        if target.lists:
            full = _list_fields(i, target, size, params, variables, body) or full
        if target.cursor is None:
            body += _object_fields(target)
        if not body:
            body.append("    id")
        fields.append(f"  r{i}: repository(owner: $o{i}, name: $n{i}) {{\n" + "\n".join(body) + "\n  }")
    text = (
        f"query SluiceWatch({', '.join(params)}) {{\n"
        "  rateLimit { cost limit remaining used resetAt }\n" + "\n".join(fields) + "\n}\n"
    )
    if full:
        text += PR_FRAGMENT
    return text, variables


def _list_fields(i: int, target: Target, size: int, params: list[str], variables: dict[str, Any],
                 body: list[str]) -> bool:
    """A listing target's fields (its page; on the first, the fingerprint, base, gone and recent);
    True if it asks ``recent`` requests read in full (the document then needs the fragment)."""
    first = target.cursor is None
    params += [f"$b{i}: String!", f"$c{i}: String"]
    variables.update({f"b{i}": target.base, f"c{i}": target.cursor})
    order = "CREATED_AT, direction: ASC" if target.walk else "UPDATED_AT, direction: DESC"
    if first:
        params.append(f"$q{i}: String!")
        variables[f"q{i}"] = f"refs/heads/{target.base}"
        body.append(f"    {FINGERPRINT}\n    baseRef: ref(qualifiedName: $q{i}) {{ target {{ oid }} }}")
    body.append(
        f"    pullRequests(first: {WATCH_PAGE}, after: $c{i}, states: OPEN, baseRefName: $b{i},\n"
        f"                 orderBy: {{field: {order}}}) {{\n"
        "      totalCount\n"
        "      pageInfo { hasNextPage endCursor }\n"
        f"      nodes {{ {PR_FIELDS} }}\n"
        "    }"
    )
    if first and not target.walk:
        body.append(
            f"    gone: pullRequests(first: {GONE_PAGE}, states: [CLOSED, MERGED], baseRefName: $b{i},\n"
            "                       orderBy: {field: UPDATED_AT, direction: DESC}) {\n"
            "      nodes { number updatedAt }\n"
            "    }"
        )
    if not (size and first):
        return False
    body.append(
        f"    recent: pullRequests(first: {size}, states: OPEN, baseRefName: $b{i},\n"
        "                         orderBy: {field: UPDATED_AT, direction: DESC}) {\n"
        f"      nodes {{ ...{FRAGMENT_NAME} }}\n"
        "    }"
    )
    return True


def _object_fields(target: Target) -> list[str]:
    """A target's single objects on its first page: waiting heads' rollups, requests asked by number."""
    body = [f'    h{k}: object(oid: "{oid}") {{ ... on Commit {{ oid statusCheckRollup {{ state }} }} }}'
            for k, oid in enumerate(h for h in target.heads[:HEADS_MAX] if _OID.fullmatch(h))]
    body += [f"    n{int(number)}: pullRequest(number: {int(number)}) {{ {PR_FIELDS} }}"
             for number in target.refresh[:ASKED_MAX]]
    return body


@record
class TargetAnswer:
    """One target's part of the answer."""

    items: list[Request] = field(default_factory=list)
    rollups: dict[str, str | None] = field(default_factory=dict)
    """head oid -> its ``statusCheckRollup.state`` (None: no checks), from the listed requests and the
    heads asked by oid (an oid GitHub does not know is left out)."""
    fingerprint: tuple[Any, ...] | None = None
    next_cursor: str | None = None
    error: str | None = None
    readings: dict[int, Request] = field(default_factory=dict)
    """The base's most recently updated requests, read in full by the same query (number -> reading)."""
    total: int | None = None
    """The base's open requests (``totalCount``), as the first page said."""
    gone: dict[int, str] = field(default_factory=dict)
    """The base's most recently updated closed or merged requests: number -> ``updatedAt``."""
    refreshed: list[Request] = field(default_factory=list)
    """The requests asked by number that are still open on this base."""
    base_oid: str | None = None
    """The base branch's commit (its requests' mergeability follows it)."""


def parse_watch_answer(payload: Any, targets: Sequence[Target]) -> list[TargetAnswer]:
    """Each target's requests, rollups and fingerprint; a target the answer lacks gets ``error`` (never raises)."""
    data = payload.get("data") if isinstance(payload, Mapping) else None
    errors = payload.get("errors") if isinstance(payload, Mapping) else None
    failed: dict[str, str] = {}
    for error in errors if isinstance(errors, list) else []:
        if isinstance(error, Mapping) and isinstance(error.get("path"), list) and error["path"]:
            if len(error["path"]) == 1 or error["path"][1] in ("pullRequests", "gone"):  # not a head's or refresh's
                failed.setdefault(str(error["path"][0]), str(error.get("message") or "error"))
    out: list[TargetAnswer] = []
    for i, target in enumerate(targets):
        answer = TargetAnswer()
        node = data.get(f"r{i}") if isinstance(data, Mapping) else None
        connection = node.get("pullRequests") if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping) or (target.lists and not isinstance(connection, Mapping)) \
                or f"r{i}" in failed:
            answer.error = failed.get(f"r{i}") or "not in the answer"
        else:
            _take_objects(node, target, answer)
            if isinstance(connection, Mapping):
                _take_listing(node, connection, target, answer)
        out.append(answer)
    return out


def _take_objects(node: Mapping[str, Any], target: Target, answer: TargetAnswer) -> None:
    """Heads asked by oid (their rollups) and requests asked by number (still open on the base)."""
    for key, value in node.items():
        if not isinstance(key, str) or not isinstance(value, Mapping):
            continue
        if key[:1] == "h" and key[1:].isdigit() and isinstance(value.get("oid"), str):
            rollup = value.get("statusCheckRollup")
            state = rollup.get("state") if isinstance(rollup, Mapping) else None
            answer.rollups[value["oid"]] = str(state) if state else None
        elif key[:1] == "n" and key[1:].isdigit():
            item = _item(value)
            if item is not None and value.get("state", "OPEN") == "OPEN" and item.base == target.base:
                answer.refreshed.append(item)
                answer.rollups[item.head_sha] = item.checks_state


def _take_listing(node: Mapping[str, Any], connection: Mapping[str, Any], target: Target,
                  answer: TargetAnswer) -> None:
    """A listing page: on the first, the fingerprint and the base's commit; the requests, the gone,
    the recent readings and where the next page starts."""
    if target.cursor is None:
        issues = node.get("openIssues")
        answer.fingerprint = (
            node.get("pushedAt"), node.get("updatedAt"), node.get("stargazerCount"), node.get("forkCount"),
            node.get("diskUsage"), issues.get("totalCount") if isinstance(issues, Mapping) else None,
        )
        ref = node.get("baseRef")
        ref_target = ref.get("target") if isinstance(ref, Mapping) else None
        oid = ref_target.get("oid") if isinstance(ref_target, Mapping) else None
        answer.base_oid = oid if isinstance(oid, str) else None
    total = connection.get("totalCount")
    answer.total = total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None
    for pr in connection.get("nodes") or []:
        item = _item(pr)
        if item is None:
            continue
        answer.items.append(item)
        answer.rollups[item.head_sha] = item.checks_state
    gone = node.get("gone")
    for pr in (gone.get("nodes") if isinstance(gone, Mapping) else None) or []:
        if isinstance(pr, Mapping) and isinstance(pr.get("number"), int) and not isinstance(pr["number"], bool):
            answer.gone[pr["number"]] = str(pr.get("updatedAt") or "")
    answer.readings = _recent_readings(node.get("recent"))
    info = connection.get("pageInfo")
    if isinstance(info, Mapping) and info.get("hasNextPage") and isinstance(info.get("endCursor"), str):
        answer.next_cursor = info["endCursor"]


# ------------------------------------------------------- what moved, by recency


def newest(items: Iterable[Request]) -> str:
    """The newest ``updatedAt`` of a list (empty: none): where the next tick's listing may stop."""
    return max((i.updated_at for i in items if i.updated_at), default="")


def more_recent(mark: str, page: Sequence[Request], has_next: bool) -> bool:
    """Whether the listing, most recently updated first, must ask its next page.

    It stops once a page reaches a request no newer than ``mark`` (the
    newest ``updatedAt`` the watch knew before): everything after it is
    older still, so unmoved. With no mark (nothing known) it never stops
    here: the caller walks the whole list instead.
    """
    if not has_next or not page or not mark:
        return bool(has_next and page and not mark)
    return min(i.updated_at for i in page) > mark


def merge_listing(
    known: Mapping[int, object], moved: Iterable[Request], gone: Iterable[int], total: int | None,
) -> tuple[dict[int, object], bool]:
    """The open list after this tick: the known one with what the recent pages listed (new or moved)
    and without what they list as closed or merged; and whether it agrees with GitHub's count.

    A request retargeted away, deleted, or closed beyond the gone list's
    reach leaves the count short: the caller then walks the whole list, so
    nothing is kept open that is not.
    """
    out: dict[int, object] = dict(known)
    listed = set()
    for item in moved:
        out[item.number] = item
        listed.add(item.number)
    for number in gone:
        if number not in listed:
            out.pop(number, None)
    return out, total is not None and total == len(out)


def rollup_heads(due: int, *, threshold: int) -> bool:
    """A repository on REST asks its waiting heads' checks by GraphQL rollup (one point a tick, one call)
    once more than ``threshold`` are due this tick; up to it, by conditional REST (free, a call each)."""
    return due > threshold


def _recent_readings(connection: Any) -> dict[int, Request]:
    """The full readings of a base's ``recent`` connection; a node that does not parse is left out
    (its request is then read by the batched reading, as before)."""
    nodes = connection.get("nodes") if isinstance(connection, Mapping) else None
    out: dict[int, Request] = {}
    for node in nodes if isinstance(nodes, list) else []:
        if not isinstance(node, Mapping):
            continue
        try:
            reading = reading_from_node(node)
        except (MalformedNode, TypeError, ValueError, AttributeError):  # not a reading: read in the batch
            continue
        out[reading.number] = reading
    return out


def _item(pr: Any) -> Request | None:
    if not isinstance(pr, Mapping):
        return None
    number = pr.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or not isinstance(pr.get("headRefOid"), str):
        return None
    author = pr.get("author")
    rollup = pr.get("statusCheckRollup")
    state = rollup.get("state") if isinstance(rollup, Mapping) else None
    return Request(
        review_decision=_text(pr.get("reviewDecision")),
        mergeable=_text(pr.get("mergeable")),
        checks_state=_text(state),
        number=number,
        title=str(pr.get("title") or ""),
        author=author.get("login") if isinstance(author, Mapping) and isinstance(author.get("login"), str) else None,
        head_ref=str(pr.get("headRefName") or ""),
        head_sha=str(pr["headRefOid"]),
        base=str(pr.get("baseRefName") or ""),
        draft=pr.get("isDraft") is True,
        updated_at=str(pr.get("updatedAt") or ""),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
