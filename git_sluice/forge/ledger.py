"""Classification and the budget ledger: what each answer off the wire means and what it cost.

Every answer that came back from GitHub — a throttle, a failure, a 304 — is
classified (``rules.classify``: a JSON API that sends an HTML page or a cut
body has failed) and its rate headers, whether GitHub counted it and what it
cost (GraphQL's own ``rateLimit`` field, the truest word on that budget) go
to the host store's ledger. The verdict rides up in ``response.extensions``
for the gate to act on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx

from ..clock import Clock, parse_rfc3339
from ..statefile import parse_json
from . import rules, tally
from .hoststore import HostStore, Permit
from .layers import COST, COUNTED, PERMIT, VERDICT, Stats, call_of


class Ledger(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport, store: HostStore, clock: Clock, stats: Stats) -> None:
        self.inner = inner
        self.store = store
        self.clock = clock
        self.stats = stats

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        body = response.read()
        status, path, method = response.status_code, request.url.path, request.method
        headers = {k.lower(): v for k, v in response.headers.items()}
        self.stats.requests += 1
        self.stats.calls.append((call_of(request).address, status))
        verdict = rules.classify(status, headers, body, method=method, path=path, now=self.clock.time())
        if verdict.kind in ("ok", "spent_ok") and status != 304 and body and not _parses(body):
            # GitHub's API speaks JSON; an HTML "unicorn" page or a cut body is a failure
            verdict = replace(verdict, kind="failure", reason=f"unparsable answer body ({status})")
        counted, cost = cost_of(status, verdict, body, path)
        tally.note(tally.kind_of(method, path), status=status, counted=counted, cost=cost,
                   graphql=verdict.resource == "graphql")
        permit = request.extensions.get(PERMIT)
        if isinstance(permit, Permit):
            rate = rules.parse_rate_headers(headers)
            self.store.note_rate(permit.pool, verdict.resource, rate, counted=counted, cost=cost)
            graphql = graphql_rate(body) if path.endswith("/graphql") else None
            if graphql is not None:
                self.store.note_rate(permit.pool, "graphql", graphql, counted=False, cost=0)
        response.extensions = {**response.extensions, VERDICT: verdict, COUNTED: counted, COST: cost}
        return response

    def close(self) -> None:
        self.inner.close()


def cost_of(status: int, verdict: rules.Verdict, body: bytes, path: str) -> tuple[bool, int]:
    """Whether GitHub counted the call, and what it cost (points for GraphQL)."""
    if status == 304 or verdict.kind == "throttle" or status >= 500 or path.endswith("/rate_limit"):
        return False, 0  # GitHub counts neither a 304 nor GET /rate_limit
    if verdict.resource == "graphql":
        try:
            return True, int(parse_json(body)["data"]["rateLimit"]["cost"])
        except (ValueError, KeyError, TypeError):
            return True, 1
    return True, 1


def graphql_rate(body: bytes) -> rules.RateHeaders | None:
    """GraphQL's ``rateLimit`` field as rate headers; None when it is missing or garbage."""
    try:
        rate = parse_json(body)["data"]["rateLimit"]
        reset_at = rate.get("resetAt")
        reset = parse_rfc3339(str(reset_at)) if reset_at else None
        return rules.RateHeaders(
            limit=_int(rate.get("limit")),
            remaining=_int(rate.get("remaining")),
            used=_int(rate.get("used")),
            reset=reset,
            resource="graphql",
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _parses(body: bytes) -> bool:
    try:
        parse_json(body)
        return True
    except ValueError:
        return False


def _int(value: Any) -> int | None:  # Any: a field of GitHub's JSON, whatever it holds
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
