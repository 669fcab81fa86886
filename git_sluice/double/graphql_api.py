"""``POST /graphql``: parse, validate against GitHub's schema, price, charge, execute.

GitHub answers an invalid query with HTTP 200 and an ``errors`` list, prices a
valid one before running it (see graphql_cost.py), refuses one it cannot
afford with ``RATE_LIMITED`` (HTTP 200, not counted), and otherwise charges
the points and runs it. One mutation runs (``addComment``: a pacing proxy's
tests need a GraphQL write); :func:`prepare` and :func:`execute` are apart so
the pipeline can weigh a mutation's secondary price and content limits in
between. The schema is GitHub's real one, built once per process (it takes
most of a second).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    OperationDefinitionNode,
    GraphQLSchema,
    OperationType,
    build_schema,
    execute_sync,
    is_composite_type,
    is_non_null_type,
    parse,
    validate,
)
from graphql.execution.values import get_variable_values
from graphql.utilities import get_operation_ast

from .auth import Principal
from .graphql_cost import Price, QueryLimitError, price
from .graphql_resolvers import GqlContext, TypedError, rate_limit_values, root_value
from .limits import CONTENT_CREATING

if TYPE_CHECKING:
    from .core import GitHubDouble

GRAPHQL_DOCS = "https://docs.github.com/graphql"

_schema: GraphQLSchema | None = None
_schema_lock = threading.Lock()


def github_schema() -> GraphQLSchema:
    """GitHub's schema, built once per process and shared (read-only) by every double."""
    global _schema
    with _schema_lock:
        if _schema is None:
            text = resources.files(__package__).joinpath("schema.graphql").read_text(encoding="utf-8")
            built = build_schema(text, assume_valid_sdl=True)
            # GitHub's schema breaks a few interface-deprecation rules; queries still validate.
            built._validation_errors = []  # type: ignore[attr-defined]
            _schema = built
        return _schema


@dataclass
class GraphQLOutcome:
    status: int
    body: dict[str, Any]
    counted: bool = False
    cost: int = 0
    headers: dict[str, str] = field(default_factory=dict)


def _error_body(*errors: Mapping[str, object]) -> dict[str, Any]:
    return {"errors": list(errors)}


_UNDEFINED = re.compile(r"Cannot query field '(?P<field>[^']+)' on type '(?P<type>[^']+)'")


def _format_validation(error: GraphQLError) -> dict[str, Any]:
    out: dict[str, Any] = dict(error.formatted)
    hit = _UNDEFINED.search(error.message)
    if hit:
        out["extensions"] = {"code": "undefinedField", "typeName": hit["type"], "fieldName": hit["field"]}
    return out


def _format_execution(error: GraphQLError) -> dict[str, Any]:
    out: dict[str, Any] = dict(error.formatted)
    if isinstance(error.original_error, TypedError):
        out = {"type": error.original_error.kind, **out}
    elif isinstance(error.original_error, PartialFault):
        out = {"type": "SERVICE_UNAVAILABLE", **out}
    return out


def rate_limited(principal: Principal, kind: str = "RATE_LIMITED") -> dict[str, Any]:
    err: dict[str, Any] = {"type": kind, "message": f"API rate limit exceeded for {principal.limit_subject()}."}
    if kind == "RATE_LIMIT":
        err["code"] = "graphql_rate_limit"
    return _error_body(err)


TIMEOUT_MESSAGE = (
    "Something went wrong while executing your query. This may be the result of a timeout, or it could be "
    "a GitHub bug. Please try again or contact support."
)


MUTATIONS = ("addComment",)
"""The mutations the double runs; any other answers an error rather than a made-up null."""


@dataclass
class Prepared:
    """A request parsed, validated and priced: what the pipeline weighs before it runs."""

    document: DocumentNode
    operation: OperationDefinitionNode
    operation_name: str | None
    variables: dict[str, Any]
    cost: Price
    mutation: bool = False
    fields: tuple[str, ...] = ()  # the operation's top-level fields ("addComment")

    @property
    def content(self) -> bool:
        """Whether it creates content (``CONTENT_CREATING``): a pool's content limits apply."""
        return self.mutation and any(f"mutation {name}" in CONTENT_CREATING for name in self.fields)


def run(
    gh: "GitHubDouble", principal: Principal, raw: bytes, now: float, partial: bool = False, timeout: bool = False
) -> GraphQLOutcome:
    """One GraphQL request to its answer, with no limit but the primary one; the caller holds ``gh.lock``."""
    prepared = prepare(principal, raw)
    if isinstance(prepared, GraphQLOutcome):
        return prepared
    return execute(gh, principal, prepared, now, partial=partial, timeout=timeout)


def prepare(principal: Principal, raw: bytes) -> Prepared | GraphQLOutcome:
    """Parse, validate and price one request; an answer already when GitHub would answer it so.

    Split from :func:`execute` so the pipeline can weigh a mutation (5
    secondary points, content limits) before anything runs or is charged.
    """
    if principal.kind == "anon":
        return GraphQLOutcome(
            401,
            {
                "message": "This endpoint requires you to be authenticated.",
                "documentation_url": f"{GRAPHQL_DOCS}/guides/forming-calls-with-graphql#authenticating-with-graphql",
            },
        )
    try:
        request = json.loads(raw or b"null")
    except ValueError:
        return GraphQLOutcome(400, {"message": "Problems parsing JSON", "documentation_url": GRAPHQL_DOCS})
    query = request.get("query") if isinstance(request, dict) else None
    if not isinstance(query, str) or not query.strip():
        return GraphQLOutcome(
            200, _error_body({"message": "A query attribute must be specified and must be a string."})
        )
    variables = request.get("variables") or {}
    operation_name = request.get("operationName")
    if not isinstance(variables, dict):
        return GraphQLOutcome(200, _error_body({"message": "Variables are invalid JSON."}))

    schema = github_schema()
    try:
        document = parse(query)
    except GraphQLError as error:
        return GraphQLOutcome(200, _error_body(error.formatted))
    problems = validate(schema, document)
    if problems:
        return GraphQLOutcome(200, _error_body(*[_format_validation(e) for e in problems]))
    operation = get_operation_ast(document, operation_name)
    if operation is None:
        return GraphQLOutcome(200, _error_body({"message": "An operation name is required"}))
    mutation = operation.operation == OperationType.MUTATION
    fields: tuple[str, ...] = ()
    if mutation:
        fields = tuple(
            sel.name.value if isinstance(sel, FieldNode) else "…" for sel in operation.selection_set.selections
        )
        others = [f for f in fields if f not in MUTATIONS and f != "__typename"]
        if others:
            return GraphQLOutcome(200, _error_body({
                "message": f"The GitHub double runs queries and the {', '.join(MUTATIONS)} mutation only, "
                f"not {', '.join(others)}."
            }))
    elif operation.operation != OperationType.QUERY:
        return GraphQLOutcome(
            200, _error_body({"message": f"The GitHub double answers queries only, not a {operation.operation.value}."})
        )
    coerced = get_variable_values(schema, operation.variable_definitions or (), variables)
    if isinstance(coerced, list):
        return GraphQLOutcome(200, _error_body(*[e.formatted for e in coerced]))
    try:
        cost = price(schema, operation, _fragments(document), coerced)
    except QueryLimitError as refusal:
        return GraphQLOutcome(200, _error_body(refusal.to_json()))
    return Prepared(document, operation, operation_name, variables, cost, mutation, fields)


def execute(
    gh: "GitHubDouble",
    principal: Principal,
    prepared: Prepared,
    now: float,
    partial: bool = False,
    timeout: bool = False,
) -> GraphQLOutcome:
    """Charge and run a prepared request; the caller holds ``gh.lock``.

    ``timeout`` (the ``graphql_timeout`` fault), or a query over the knob
    ``graphql_timeout_nodes`` nodes, stands for a query that ran past GitHub's
    10 s: 502, no data, and its points charged all the same. A mutation costs
    its primary points like a query (1 for ``addComment``).
    """
    cost, operation, document = prepared.cost, prepared.operation, prepared.document
    schema = github_schema()
    bucket = gh.limits.bucket(principal.pool_key, "graphql", now)
    if not cost.dry_run:
        if gh.rate_limits:
            if cost.cost > bucket.remaining:
                return GraphQLOutcome(200, rate_limited(principal))
            bucket.charge(now, cost.cost)
        limit = gh.graphql_timeout_nodes
        if timeout or (limit is not None and cost.node_count > limit):
            return GraphQLOutcome(502, {"data": None, "errors": [{"message": TIMEOUT_MESSAGE}]},
                                  counted=gh.rate_limits, cost=cost.cost)
    ctx = GqlContext(gh=gh, principal=principal, price=cost, bucket=bucket, now=now)
    if cost.dry_run:
        # GitHub prices a dry run without running it: only rateLimit answers.
        return GraphQLOutcome(200, {"data": _dry_run_data(operation, ctx)})
    counted = gh.rate_limits  # Enterprise Server with limits off counts nothing
    middleware = [_FailOneField(depth) for depth in (2, 1)] if partial else [None]
    for failing in middleware:
        # The partial fault prefers failing a field two deep (a pull request, not the repository).
        result = execute_sync(
            schema,
            document,
            root_value=root_value(ctx),
            variable_values=prepared.variables,
            operation_name=prepared.operation_name,
            middleware=[failing] if failing else None,
        )
        if failing is None or failing.fired:
            break
    body: dict[str, Any] = {}
    if result.errors:
        body["errors"] = [_format_execution(e) for e in result.errors]
    body["data"] = result.data
    return GraphQLOutcome(200, body, counted=counted, cost=cost.cost)


def _dry_run_data(operation: Any, ctx: GqlContext) -> dict[str, Any]:
    numbers = rate_limit_values(ctx)
    data: dict[str, Any] = {}
    for sel in operation.selection_set.selections:
        if isinstance(sel, FieldNode) and sel.name.value == "rateLimit" and not ctx.gh.rate_limits:
            data[sel.alias.value if sel.alias else "rateLimit"] = None
        elif isinstance(sel, FieldNode) and sel.name.value == "rateLimit":
            fields = sel.selection_set.selections if sel.selection_set else []
            data[sel.alias.value if sel.alias else "rateLimit"] = {
                (f.alias.value if f.alias else f.name.value): (
                    "RateLimit" if f.name.value == "__typename" else numbers.get(f.name.value)
                )
                for f in fields
                if isinstance(f, FieldNode)
            }
    return data


def _fragments(document: DocumentNode) -> dict[str, FragmentDefinitionNode]:
    return {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}


class PartialFault(Exception):
    """The graphql_partial fault: one field fails, the rest of the answer stands."""


PARTIAL_MESSAGE = (
    "Something went wrong while executing your query. This may be the result of a timeout, or it could be "
    "a GitHub bug. Please try again. (the GitHub double's graphql_partial fault)"
)


class _FailOneField:
    """Middleware that fails the first nullable object field at least ``depth`` deep.

    Letting graphql-core null it keeps the answer true to the schema: the null
    lands where the schema allows one, and the error carries path and locations.
    """

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.fired = False

    def resolve(self, next_: Any, root: Any, info: Any, **args: Any) -> Any:
        if not self.fired and len(info.path.as_list()) >= self.depth and info.field_name != "rateLimit":
            rtype = info.return_type
            if not is_non_null_type(rtype) and is_composite_type(rtype):
                self.fired = True
                raise PartialFault(PARTIAL_MESSAGE)
        return next_(root, info, **args)


def price_only(query: str, variables: dict[str, Any] | None = None) -> Price:
    """The point cost GitHub would charge for a query (for tests and benchmarks); raises on refusal."""
    schema = github_schema()
    document = parse(query)
    problems = validate(schema, document)
    if problems:
        raise problems[0]
    operation = get_operation_ast(document, None)
    if operation is None:
        raise GraphQLError("An operation name is required")
    coerced = get_variable_values(schema, operation.variable_definitions or (), variables or {})
    if isinstance(coerced, list):
        raise coerced[0]
    return price(schema, operation, _fragments(document), coerced)
