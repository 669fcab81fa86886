"""GitHub's GraphQL point cost, computed from the query before it runs.

GitHub's rule: every connection field must say ``first`` or ``last`` (1–100);
a connection needs as many requests as it has parent nodes (the product of
its ancestors' ``first``/``last``); add up the requests, divide by 100, round
(half up), at least 1 point. The docs' example — 1 + 100 + 5,000 requests —
costs 51. The node count (the product including the connection's own
``first``) is capped at 500,000 a query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
)
from graphql.execution.values import get_argument_values

MAX_PAGE = 100
MAX_NODES = 500_000


@dataclass(frozen=True)
class Price:
    cost: int
    requests: int
    node_count: int
    dry_run: bool


class QueryLimitError(Exception):
    """A query GitHub refuses before running it (pagination bounds, node limit)."""

    def __init__(self, kind: str, message: str, node: Any = None, path: list[str] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.node = node
        self.path = path or []

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "path": self.path, "message": self.message}
        loc = getattr(self.node, "loc", None)
        if loc is not None and loc.source is not None:
            where = loc.source.get_location(loc.start)
            out["locations"] = [{"line": where.line, "column": where.column}]
        return out


def points(requests: int) -> int:
    """Requests to points: divide by 100, round half up, at least 1."""
    return max(1, (requests + 50) // 100)


def price(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: Any,  # graphql-core 3.2 coerces them to a dict, 3.3 to a VariableValues
) -> Price:
    """The cost of one validated operation; raises QueryLimitError where GitHub would refuse it."""
    walker = _Walker(schema, fragments, variables)
    root = schema.get_root_type(operation.operation)
    if root is None:
        return Price(cost=1, requests=0, node_count=0, dry_run=False)
    walker.walk(operation.selection_set, root, 1, [])
    if walker.nodes > MAX_NODES:
        raise QueryLimitError(
            "MAX_NODE_LIMIT_EXCEEDED",
            f"This query requests up to {walker.nodes:,} possible nodes which exceeds the maximum "
            f"allowed of {MAX_NODES:,}.",
        )
    return Price(cost=points(walker.requests), requests=walker.requests, node_count=walker.nodes,
                 dry_run=walker.dry_run)


class _Walker:
    def __init__(self, schema: GraphQLSchema, fragments: dict[str, FragmentDefinitionNode],
                 variables: Any) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.requests = 0
        self.nodes = 0
        self.dry_run = False

    def walk(self, selections: SelectionSetNode, parent: Any, multiplier: int, path: list[str]) -> None:
        for sel in selections.selections:
            if isinstance(sel, FieldNode):
                self._field(sel, parent, multiplier, path)
            elif isinstance(sel, InlineFragmentNode):
                cond = self.schema.get_type(sel.type_condition.name.value) if sel.type_condition else parent
                self.walk(sel.selection_set, cond or parent, multiplier, path)
            elif isinstance(sel, FragmentSpreadNode):
                frag = self.fragments.get(sel.name.value)
                if frag is not None:
                    cond = self.schema.get_type(frag.type_condition.name.value)
                    self.walk(frag.selection_set, cond or parent, multiplier, path)

    def _field(self, node: FieldNode, parent: Any, multiplier: int, path: list[str]) -> None:
        name = node.name.value
        if name.startswith("__") or not isinstance(parent, (GraphQLObjectType, GraphQLInterfaceType)):
            return
        field_def = parent.fields.get(name)
        if field_def is None:
            return
        here = path + [node.alias.value if node.alias else name]
        args = get_argument_values(field_def, node, self.variables)
        if name == "rateLimit" and args.get("dryRun"):
            self.dry_run = True
        named = get_named_type(field_def.type)
        child = multiplier
        if (
            isinstance(named, GraphQLObjectType)
            and named.name.endswith("Connection")
            and ("first" in field_def.args or "last" in field_def.args)
        ):
            size = self._page_size(name, args, node, here)
            self.requests += multiplier
            self.nodes += multiplier * size
            child = multiplier * size
        if node.selection_set is not None:
            self.walk(node.selection_set, named, child, here)

    @staticmethod
    def _page_size(name: str, args: dict[str, Any], node: FieldNode, path: list[str]) -> int:
        first, last = args.get("first"), args.get("last")
        if first is None and last is None:
            raise QueryLimitError(
                "MISSING_PAGINATION_BOUNDARIES",
                f"You must provide a `first` or `last` value to properly paginate the `{name}` connection.",
                node,
                path,
            )
        if first is not None and last is not None:
            raise QueryLimitError(
                "EXCESSIVE_PAGINATION",
                f"Passing both `first` and `last` to paginate the `{name}` connection is not supported.",
                node,
                path,
            )
        which, size = ("first", first) if first is not None else ("last", last)
        assert size is not None  # one of the two is given (checked above)
        if size > MAX_PAGE:
            raise QueryLimitError(
                "EXCESSIVE_PAGINATION",
                f"Requesting {size} records on the `{name}` connection exceeds the `{which}` limit of "
                f"{MAX_PAGE} records.",
                node,
                path,
            )
        if size < 1:
            raise QueryLimitError(
                "EXCESSIVE_PAGINATION",
                f"Requesting {size} records on the `{name}` connection is below the `{which}` minimum of "
                "1 record.",
                node,
                path,
            )
        return int(size)
