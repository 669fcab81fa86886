"""The one GraphQL read per branch per round: build it, price it, read its answer.

REST answers "did anything move?" for free (conditional list, 304s); GraphQL
answers "what is its state now?" — reviews, the head commit's checks,
mergeability, labels — for every request that moved, in one query, for a few
points. This module is pure: it builds documents, prices them with GitHub's
published formula, and turns answers into :class:`Request` values. Sending is
the forge's job (:func:`read_all` takes the sender as an argument).

Two shapes, whichever GitHub prices lower (ties go to fewer queries, then to
reading fewer requests, then to the smaller document):

- aliases: ``pr123: pullRequest(number: 123) { ...SluicePR }``, at most
  :data:`MAX_ALIASES` per query — for a few moved requests;
- one ``pullRequests(states: OPEN, baseRefName: $base)`` connection, at most
  100 a page, followed page by page with ``endCursor`` — when (nearly) every
  open request needs reading, e.g. the first round.

Every query also asks ``rateLimit``, which GitHub answers at no extra cost, so
each round learns the pool's GraphQL budget for free.

An answer never raises: a deleted request (``null``), a partial error, a
missing field each skip that request with the reason, and the round goes on
with what it has.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, cast

from ..errors import MalformedNode as MalformedNode
from ..jsonshape import field_list, field_map
from ..records import record
from .request import Request

if TYPE_CHECKING:  # graphql-core is loaded only to price a query: a quiet round sends none (issue 15)
    from graphql.language import (
        FieldNode,
        FragmentDefinitionNode,
        FragmentSpreadNode,
        InlineFragmentNode,
        OperationDefinitionNode,
        SelectionSetNode,
    )

MAX_PAGE = 100
"""GitHub's ceiling for ``first``/``last`` on any connection."""
MAX_ALIASES = 100
"""Aliased requests per query: keeps a document small and well under 500,000 nodes."""
LABELS = 20
REVIEWS = 20
CONTEXTS = 50

FRAGMENT_NAME = "SluicePR"
PR_FRAGMENT = f"""fragment {FRAGMENT_NAME} on PullRequest {{
  number
  title
  url
  isDraft
  state
  merged
  mergeable
  updatedAt
  headRefName
  headRefOid
  baseRefName
  author {{ login }}
  reviewDecision
  labels(first: {LABELS}) {{ nodes {{ name }} }}
  latestOpinionatedReviews(first: {REVIEWS}) {{ nodes {{ state author {{ login }} }} }}
  commits(last: 1) {{
    nodes {{
      commit {{
        oid
        statusCheckRollup {{
          state
          contexts(first: {CONTEXTS}) {{
            nodes {{
              __typename
              ... on CheckRun {{ name status conclusion }}
              ... on StatusContext {{ context state }}
            }}
          }}
        }}
      }}
    }}
  }}
}}
"""
RATE_LIMIT = "rateLimit { cost limit remaining used resetAt nodeCount }"

ALIAS_PREFIX = "pr"
_ALIAS = re.compile(rf"\b{ALIAS_PREFIX}(\d+): pullRequest\(number: (\d+)\)")

# A check run concluded like this needs a person (or a re-run) before it can pass.
FAILING_CONCLUSIONS = frozenset(
    {"FAILURE", "TIMED_OUT", "CANCELLED", "ACTION_REQUIRED", "STARTUP_FAILURE", "STALE"}
)
FAILING_STATUSES = frozenset({"FAILURE", "ERROR"})
PENDING_STATUSES = frozenset({"PENDING", "EXPECTED"})

Query = tuple[str, dict[str, Any]]
Sender = Callable[[str, dict[str, Any]], Mapping[str, Any]]


# ------------------------------------------------------------------ documents


def build_alias_queries(owner: str, name: str, numbers: Iterable[int]) -> list[Query]:
    """Aliased ``pullRequest(number:)`` reads, :data:`MAX_ALIASES` to a query."""
    wanted = sorted({int(n) for n in numbers if int(n) > 0})
    queries: list[Query] = []
    for start in range(0, len(wanted), MAX_ALIASES):
        chunk = wanted[start : start + MAX_ALIASES]
        fields = "\n".join(
            f"    {ALIAS_PREFIX}{n}: pullRequest(number: {n}) {{ ...{FRAGMENT_NAME} }}" for n in chunk
        )
        text = (
            "query SluiceRead($owner: String!, $name: String!) {\n"
            f"  {RATE_LIMIT}\n"
            "  repository(owner: $owner, name: $name) {\n"
            f"{fields}\n"
            "  }\n"
            "}\n" + PR_FRAGMENT
        )
        queries.append((text, {"owner": owner, "name": name}))
    return queries


CONNECTION_QUERY = (
    "query SluiceOpen($owner: String!, $name: String!, $base: String!, $first: Int!, $cursor: String) {\n"
    f"  {RATE_LIMIT}\n"
    "  repository(owner: $owner, name: $name) {\n"
    "    pullRequests(first: $first, after: $cursor, states: OPEN, baseRefName: $base,\n"
    "                 orderBy: {field: CREATED_AT, direction: ASC}) {\n"
    "      pageInfo { hasNextPage endCursor }\n"
    f"      nodes {{ ...{FRAGMENT_NAME} }}\n"
    "    }\n"
    "  }\n"
    "}\n" + PR_FRAGMENT
)


def build_connection_query(owner: str, name: str, base: str, open_count: int) -> Query:
    """The first page of the open-requests connection; later pages come from ``next_variables``."""
    first = max(1, min(MAX_PAGE, int(open_count)))
    return CONNECTION_QUERY, {"owner": owner, "name": name, "base": base, "first": first, "cursor": None}


def build_queries(
    owner: str,
    name: str,
    numbers: Sequence[int],
    *,
    base: str | None = None,
    open_count: int | None = None,
) -> list[Query]:
    """The cheapest set of queries that reads ``numbers`` (empty when nothing needs reading).

    The connection shape is considered only when ``base`` and ``open_count``
    (the number of open requests on ``base``, from the list just read) are
    given. It returns only its first page: the caller follows
    ``ParseResult.next_variables`` (or uses :func:`read_all`), which stops as
    soon as every wanted request has been seen.
    """
    wanted = sorted({int(n) for n in numbers if int(n) > 0})
    if not wanted:
        return []
    aliases = build_alias_queries(owner, name, wanted)
    best: tuple[tuple[int, int, int, int], list[Query]] = (_plan_key(aliases, len(wanted)), aliases)
    if base is not None and open_count is not None and open_count > 0:
        first_page = build_connection_query(owner, name, base, open_count)
        pages = math.ceil(max(open_count, len(wanted)) / MAX_PAGE)
        page_cost = query_cost(*first_page)
        key = (page_cost * pages, pages, max(open_count, len(wanted)), len(first_page[0]))
        if key < best[0]:
            best = (key, [first_page])
    return best[1]


def _plan_key(queries: list[Query], fetched: int) -> tuple[int, int, int, int]:
    return (
        sum(query_cost(q, v) for q, v in queries),
        len(queries),
        fetched,
        sum(len(q) for q, _ in queries),
    )


def plan_cost(queries: Sequence[Query], *, open_count: int | None = None) -> int:
    """Points a plan from :func:`build_queries` is expected to cost, every page included."""
    total = 0
    for text, variables in queries:
        cost = query_cost(text, variables)
        if "cursor" in variables and open_count:
            cost *= math.ceil(open_count / MAX_PAGE)
        total += cost
    return total


def numbers_in(query: str) -> list[int]:
    """The request numbers an aliased query asks for (none for the connection shape)."""
    return sorted({int(m.group(2)) for m in _ALIAS.finditer(query)})


# ----------------------------------------------------------------------- cost


def _argument(node: FieldNode, name: str, variables: Mapping[str, Any]) -> int | None:
    for arg in node.arguments or ():
        if arg.name.value != name:
            continue
        value = arg.value
        if value.kind == "int_value":
            return int(value.value)  # type: ignore[attr-defined]
        if value.kind == "variable":
            found = variables.get(value.name.value)  # type: ignore[attr-defined]
            return int(found) if isinstance(found, int) else None
    return None


def _walk(
    selection_set: SelectionSetNode | None,
    multiplier: int,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any],
    seen: frozenset[str],
) -> tuple[int, int]:
    """(requests, nodes) below a selection set, each connection reached ``multiplier`` times."""
    if selection_set is None:
        return 0, 0
    requests = nodes = 0
    for selection in selection_set.selections:
        # by kind, not isinstance: the node classes would import graphql-core with this module
        kind = selection.kind
        if kind == "field":
            node = cast("FieldNode", selection)
            size = _argument(node, "first", variables)
            if size is None:
                size = _argument(node, "last", variables)
            if size is None:
                r, n = _walk(node.selection_set, multiplier, fragments, variables, seen)
            else:
                r, n = _walk(node.selection_set, multiplier * size, fragments, variables, seen)
                r += multiplier
                n += multiplier * size
        elif kind == "inline_fragment":
            r, n = _walk(cast("InlineFragmentNode", selection).selection_set, multiplier, fragments, variables, seen)
        elif kind == "fragment_spread":
            name = cast("FragmentSpreadNode", selection).name.value
            fragment = fragments.get(name)
            if fragment is None or name in seen:
                continue
            r, n = _walk(fragment.selection_set, multiplier, fragments, variables, seen | {name})
        else:  # pragma: no cover - graphql-core has no other selection kinds
            continue
        requests += r
        nodes += n
    return requests, nodes


def _measure(query: str, variables: Mapping[str, Any] | None) -> tuple[int, int]:
    from graphql import parse  # ~95 ms of imports, paid only by a round that reads (issue 15)

    document = parse(query, no_location=True)
    fragments = {
        d.name.value: d for d in (cast("FragmentDefinitionNode", d) for d in document.definitions
                                  if d.kind == "fragment_definition")
    }
    requests = nodes = 0
    for definition in document.definitions:
        if definition.kind == "operation_definition":
            operation = cast("OperationDefinitionNode", definition)
            r, n = _walk(operation.selection_set, 1, fragments, variables or {}, frozenset())
            requests += r
            nodes += n
    return requests, nodes


def query_cost(query: str, variables: Mapping[str, Any] | None = None) -> int:
    """GitHub's price of a query in points, from the document alone (no schema).

    GitHub's formula: add up the requests each connection needs, assuming every
    ``first``/``last`` is reached (a connection under a ``first: 100`` is asked
    100 times), divide by 100, round; at least 1. ``rateLimit`` is free.
    """
    requests, _ = _measure(query, variables)
    return max(1, math.floor(requests / 100 + 0.5))


def node_count(query: str, variables: Mapping[str, Any] | None = None) -> int:
    """The most nodes the query can return (GitHub refuses a call above 500,000)."""
    return _measure(query, variables)[1]


# ------------------------------------------------------------------- answers


@record
class ParseResult:
    """What one answer (or several merged) gave: readings, what was skipped and why, the budget."""

    readings: dict[int, Request] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)
    rate_limit: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    """Errors not tied to one request (e.g. the whole query refused)."""
    others: dict[int, Request] = field(default_factory=dict)
    """Requests the connection shape returned though not asked for (fresh, usable)."""
    next_variables: dict[str, Any] | None = None
    """Connection shape only: variables for the next page while wanted requests are unseen."""
    cost: int = 0
    """Points GitHub says these answers cost (sum of ``rateLimit.cost``)."""

    def merge(self, other: ParseResult) -> ParseResult:
        """Both answers together; a later reading or budget wins, a reading beats a skip."""
        readings = {**self.readings, **other.readings}
        skipped = {n: why for n, why in {**self.skipped, **other.skipped}.items() if n not in readings}
        others = {n: r for n, r in {**self.others, **other.others}.items() if n not in readings}
        return ParseResult(
            readings=readings,
            skipped=skipped,
            rate_limit=other.rate_limit if other.rate_limit is not None else self.rate_limit,
            errors=[*self.errors, *other.errors],
            others=others,
            next_variables=other.next_variables,
            cost=self.cost + other.cost,
        )


_Missing = MalformedNode


_REQUIRED = ("number", "title", "headRefName", "headRefOid", "baseRefName", "isDraft", "state", "updatedAt")
_PRESENT = ("mergeable", "reviewDecision", "commits", "labels")


def _need(node: Mapping[str, Any], key: str) -> Any:
    value = node.get(key)
    if value is None:
        raise _Missing(key)
    return value


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for n in names if n))


def _checks(commits: Any) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    if not isinstance(commits, Mapping):
        raise _Missing("commits")
    nodes = commits.get("nodes") or []
    last = nodes[-1] if nodes else None
    commit = last.get("commit") if isinstance(last, Mapping) else None
    rollup = commit.get("statusCheckRollup") if isinstance(commit, Mapping) else None
    if not isinstance(rollup, Mapping):
        return None, (), ()
    state = rollup.get("state")
    failing: list[str] = []
    pending: list[str] = []
    contexts = rollup.get("contexts") or {}
    for ctx in (contexts.get("nodes") if isinstance(contexts, Mapping) else None) or []:
        if not isinstance(ctx, Mapping):
            continue
        kind = ctx.get("__typename") or ("CheckRun" if "conclusion" in ctx or "status" in ctx else "StatusContext")
        if kind == "CheckRun":
            name = str(ctx.get("name") or "")
            if ctx.get("status") not in (None, "COMPLETED"):
                pending.append(name)
            elif ctx.get("conclusion") in FAILING_CONCLUSIONS:
                failing.append(name)
        else:
            name = str(ctx.get("context") or "")
            if ctx.get("state") in FAILING_STATUSES:
                failing.append(name)
            elif ctx.get("state") in PENDING_STATUSES:
                pending.append(name)
    return (str(state) if state else None), _unique(failing), _unique(pending)


def reading_from_node(node: Mapping[str, Any]) -> Request:
    """A :class:`Request` from one ``SluicePR`` object; raises ``_Missing`` naming the field."""
    values = {key: _need(node, key) for key in _REQUIRED}
    for key in _PRESENT:
        if key not in node:
            raise _Missing(key)
    if node.get("mergeable") is None:
        raise _Missing("mergeable")
    author = node.get("author")
    labels = node.get("labels") or {}
    reviews = node.get("latestOpinionatedReviews") or {}
    checks_state, failing, pending = _checks(node.get("commits"))
    state = str(values["state"])
    if node.get("merged") is True:
        state = "MERGED"
    return Request(
        number=int(values["number"]),
        title=str(values["title"]),
        author=author.get("login") if isinstance(author, Mapping) else None,
        head_ref=str(values["headRefName"]),
        head_sha=str(values["headRefOid"]),
        base=str(values["baseRefName"]),
        draft=bool(values["isDraft"]),
        github_state=state,
        updated_at=str(values["updatedAt"]),
        review_decision=node.get("reviewDecision"),
        checks_state=checks_state,
        failing=failing,
        pending=pending,
        mergeable=str(node["mergeable"]),
        labels=_unique(
            str(label.get("name") or "")
            for label in (labels.get("nodes") or [])
            if isinstance(label, Mapping)
        ),
        url=str(node.get("url") or ""),
        reviews=tuple(
            (
                (review.get("author") or {}).get("login") if isinstance(review.get("author"), Mapping) else None,
                str(review.get("state") or ""),
            )
            for review in (reviews.get("nodes") or [])
            if isinstance(review, Mapping)
        ),
    )


def _error_text(error: Any) -> str:
    if not isinstance(error, Mapping):
        return str(error)
    extensions = field_map(error, "extensions")
    kind = error.get("type") or extensions.get("code")
    message = str(error.get("message") or "error")
    return f"{kind}: {message}" if kind else message


def parse_response(
    payload: Mapping[str, Any],
    numbers: Sequence[int],
    *,
    variables: Mapping[str, Any] | None = None,
) -> ParseResult:
    """Readings for ``numbers`` from one GraphQL answer, in either shape; never raises.

    ``variables`` (the ones sent) let a connection-shaped answer say which page
    comes next; pass them when following pages yourself.
    """
    wanted = {int(n) for n in numbers}
    result = ParseResult()
    if not isinstance(payload, Mapping):
        result.errors.append("the answer is not a JSON object")
        result.skipped = {n: "no answer" for n in sorted(wanted)}
        return result
    data = payload.get("data") if isinstance(payload.get("data"), Mapping) else None
    if data is not None and isinstance(data.get("rateLimit"), Mapping):
        result.rate_limit = dict(data["rateLimit"])
        cost = result.rate_limit.get("cost")
        result.cost = int(cost) if isinstance(cost, int) else 0
    repository = data.get("repository") if data is not None else None

    errors = field_list(payload, "errors")
    by_alias: dict[str, list[str]] = {}
    by_index: dict[int, list[str]] = {}
    for error in errors:
        path = error.get("path") if isinstance(error, Mapping) else None
        text = _error_text(error)
        if isinstance(path, list) and len(path) >= 2 and path[0] == "repository":
            if path[1] == "pullRequests" and len(path) >= 4 and path[2] == "nodes" and isinstance(path[3], int):
                by_index.setdefault(path[3], []).append(text)
                continue
            if isinstance(path[1], str) and path[1].startswith(ALIAS_PREFIX):
                by_alias.setdefault(path[1], []).append(text)
                continue
        result.errors.append(text)

    if not isinstance(repository, Mapping):
        why = "; ".join(result.errors) or "the answer has no repository"
        result.skipped = {n: why for n in sorted(wanted)}
        return result

    if "pullRequests" in repository:
        _parse_connection(repository.get("pullRequests"), wanted, by_index, result, variables)
    else:
        _parse_aliases(repository, wanted, by_alias, result)
    return result


def _parse_aliases(
    repository: Mapping[str, Any],
    wanted: set[int],
    by_alias: Mapping[str, list[str]],
    result: ParseResult,
) -> None:
    for number in sorted(wanted):
        alias = f"{ALIAS_PREFIX}{number}"
        if alias in by_alias:
            result.skipped[number] = "partial error: " + "; ".join(by_alias[alias])
            continue
        if alias not in repository:
            result.skipped[number] = "not in the answer"
            continue
        node = repository[alias]
        if node is None:
            result.skipped[number] = "deleted or not visible (null pullRequest)"
            continue
        try:
            reading = reading_from_node(node)
        except _Missing as missing:
            result.skipped[number] = f"missing field {missing.args[0]}"
            continue
        except (TypeError, ValueError, AttributeError) as exc:
            result.skipped[number] = f"malformed answer ({type(exc).__name__})"
            continue
        result.readings[number] = reading


def _parse_connection(
    connection: Any,
    wanted: set[int],
    by_index: Mapping[int, list[str]],
    result: ParseResult,
    variables: Mapping[str, Any] | None,
) -> None:
    if not isinstance(connection, Mapping):
        why = "; ".join(result.errors) or "the answer has no pullRequests"
        result.skipped = {n: why for n in sorted(wanted)}
        return
    nodes = connection.get("nodes") or []
    for index, node in enumerate(nodes):
        if not isinstance(node, Mapping):
            continue
        number = node.get("number")
        if not isinstance(number, int):
            continue
        if index in by_index:
            if number in wanted:
                result.skipped[number] = "partial error: " + "; ".join(by_index[index])
            continue
        try:
            reading = reading_from_node(node)
        except _Missing as missing:
            if number in wanted:
                result.skipped[number] = f"missing field {missing.args[0]}"
            continue
        except (TypeError, ValueError, AttributeError) as exc:
            if number in wanted:
                result.skipped[number] = f"malformed answer ({type(exc).__name__})"
            continue
        if number in wanted:
            result.readings[number] = reading
        else:
            result.others[number] = reading

    unseen = wanted - set(result.readings) - set(result.skipped)
    info = field_map(connection, "pageInfo")
    cursor = info.get("endCursor")
    if unseen and info.get("hasNextPage") and cursor and variables is not None and cursor != variables.get("cursor"):
        result.next_variables = {**variables, "cursor": cursor}
        return
    for number in sorted(unseen):
        result.skipped[number] = "not among the open requests on this base (closed, merged or retargeted)"


def read_all(
    send: Sender,
    owner: str,
    name: str,
    numbers: Sequence[int],
    *,
    base: str | None = None,
    open_count: int | None = None,
) -> ParseResult:
    """Read ``numbers`` with the cheapest plan, following connection pages; one result.

    ``send(query, variables)`` posts one query and returns the decoded answer
    (the forge client does that, with pauses and budget). Its exceptions
    (a spent allowance, a failure) propagate: use :func:`build_queries` and
    :func:`parse_response` directly to keep the readings of earlier queries.
    """
    wanted = sorted({int(n) for n in numbers if int(n) > 0})
    total = ParseResult()
    pages_left = math.ceil(max(open_count or 0, len(wanted)) / MAX_PAGE) + 2
    for text, variables in build_queries(owner, name, wanted, base=base, open_count=open_count):
        asked = numbers_in(text) or wanted
        current: dict[str, Any] | None = dict(variables)
        while current is not None:
            part = parse_response(send(text, current), asked, variables=current)
            if "cursor" in current:
                pages_left -= 1
                if part.next_variables is not None and pages_left <= 0:
                    for number in sorted(set(asked) - set(part.readings) - set(part.skipped)):
                        part.skipped[number] = "not found within the expected pages"
                    part.next_variables = None
                if part.next_variables is not None:
                    # the next page answers for what this page has not seen
                    asked = sorted(set(asked) - set(part.readings) - set(part.skipped))
            total = total.merge(part)
            current = part.next_variables
    total.next_variables = None
    return total


# ------------------------------------------------- the host watch's batched read

HOST_READ_PREFIX = "r"


def build_host_read(wanted: Mapping[str, Sequence[int]]) -> list[tuple[str, dict[str, Any], list[str]]]:
    """One aliased read over several repositories (``rN: repository(…) { prM: pullRequest(…) }``).

    The host watch reads in one query what moved in a tick across every
    repository it watches, instead of one query per clone (each at least a
    point). Returns (text, variables, the repositories in alias order) per
    query, at most :data:`MAX_ALIASES` requests to a query.
    """
    pairs = [(repo, n) for repo in sorted(wanted) for n in sorted({int(x) for x in wanted[repo] if int(x) > 0})]
    out: list[tuple[str, dict[str, Any], list[str]]] = []
    for start in range(0, len(pairs), MAX_ALIASES):
        chunk = pairs[start : start + MAX_ALIASES]
        repos = sorted({repo for repo, _ in chunk})
        params, fields, variables = [], [], {}
        for i, repo in enumerate(repos):
            owner, name = repo.split("/", 1)
            params += [f"$o{i}: String!", f"$n{i}: String!"]
            variables.update({f"o{i}": owner, f"n{i}": name})
            body = "\n".join(
                f"    {ALIAS_PREFIX}{n}: pullRequest(number: {n}) {{ ...{FRAGMENT_NAME} }}"
                for r, n in chunk if r == repo
            )
            fields.append(f"  {HOST_READ_PREFIX}{i}: repository(owner: $o{i}, name: $n{i}) {{\n{body}\n  }}")
        text = (
            f"query SluiceHostRead({', '.join(params)}) {{\n  {RATE_LIMIT}\n" + "\n".join(fields) + "\n}\n" + PR_FRAGMENT
        )
        out.append((text, variables, repos))
    return out


def parse_host_read(payload: Any, repos: Sequence[str], wanted: Mapping[str, Sequence[int]]) -> dict[str, ParseResult]:
    """Each repository's readings from one :func:`build_host_read` answer; never raises."""
    data = payload.get("data") if isinstance(payload, Mapping) else None
    errors = payload.get("errors") if isinstance(payload, Mapping) else None
    out: dict[str, ParseResult] = {}
    for i, repo in enumerate(repos):
        alias = f"{HOST_READ_PREFIX}{i}"
        mine = [
            {**error, "path": ["repository", *error["path"][1:]]}
            for error in (errors if isinstance(errors, list) else [])
            if isinstance(error, Mapping) and isinstance(error.get("path"), list) and error["path"][:1] == [alias]
        ]
        part: dict[str, Any] = {"data": {"repository": data.get(alias) if isinstance(data, Mapping) else None}}
        if mine:
            part["errors"] = mine
        out[repo] = parse_response(part, list(wanted.get(repo, ())))
    return out
