"""The road's write pace: every mutating call of the host waits for its slot (forge/pacing.py).

A layer between revalidation and the host's gate, so a write that waits for
its slot takes its permit only when it goes. Reads pass straight through;
a GraphQL POST is a write only when its operation is a mutation. The slot is
given by the host store, so every process of the host (``serve``'s callers,
``git sluice api``, a bot using the Python API) shares one pace per pool.

A slot within the call's patience is waited for (on the injected clock); a
later one raises :class:`~git_sluice.errors.WriteDeferred` and nothing is
sent or kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

from ..errors import WriteDeferred
from ..records import record
from . import pacing
from .hoststore import HostStore, WriteSlot
from .layers import Stats, Waits, call_of


IN_FLIGHT_POLL = 0.01
"""Real seconds between two looks at whether the write before this one has its answer."""


@record(eq=False)
class WritePace(httpx.BaseTransport):
    inner: httpx.BaseTransport
    store: HostStore
    waits: Waits
    stats: Stats
    rules: pacing.WriteRules
    patience: float
    graphql_url: str
    pool_for: Callable[[str], str]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        kind = self.write_kind(request)
        if kind is None:
            return self.inner.handle_request(request)
        resource, creating = kind
        pool = self.pool_for(resource)
        call = call_of(request)
        patience = self.patience
        now = self.waits.clock.time()
        if call.wait:
            patience = max(patience, (call.deadline - now) if call.deadline is not None else float("inf"))
        elif call.deadline is not None:
            patience = min(patience, max(call.deadline - now, 0.0))
        slot = self.store.reserve_write(pool, creating=creating, rules=self.rules, patience=patience)
        if not slot.granted:
            raise WriteDeferred(pool, slot.at, slot.wait)
        try:
            if slot.wait > 0:
                self.stats.paced_writes += 1
                self.waits.sleep(slot.wait)
            self._clear(pool, slot, creating)
            self.store.write_went(slot)
            return self.inner.handle_request(request)
        finally:
            self.store.write_ended(slot)

    def _clear(self, pool: str, slot: WriteSlot, creating: bool) -> None:
        """Wait for the writes slotted before this one to have gone and answered, then for the rules."""
        while True:
            clear = self.store.write_clear(pool, slot, self.rules, creating=creating)
            now = self.waits.clock.time()
            if clear is None:
                self.waits.poll(IN_FLIGHT_POLL)
            elif clear > now:
                self.waits.sleep(clear - now)
            else:
                return

    def write_kind(self, request: httpx.Request) -> tuple[str, bool] | None:
        """(resource, content-creating) of a write; None for a read."""
        if not pacing.is_write(request.method):
            return None
        url = str(request.url)
        if url.split("?", 1)[0].rstrip("/") == self.graphql_url.rstrip("/"):
            query, name = graphql_operation(request.content)
            if not pacing.is_mutation(query, name):
                return None
            return "graphql", True
        return "core", pacing.creates_content(request.method, request.url.path)


def graphql_operation(body: bytes) -> tuple[object, object]:
    """The query text and operation name of a GraphQL request body (None, None when unreadable)."""
    try:
        data = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    return data.get("query"), data.get("operationName")
