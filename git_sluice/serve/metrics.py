"""``GET /metrics``: what passed through ``serve``, in Prometheus's text format (prometheus-client).

Counted as calls are answered: calls by resource, status, pool and how they
were answered (counted by GitHub, a free 304, a kept GraphQL answer, shared
with another caller, refused, deferred). Read from the host store when
scraped: what remains of each pool's allowance and which pauses stand, so a
dashboard sees the same budget ``git sluice status`` does. No token, no URL.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from ..forge.hoststore import HostStore


class _StoreCollector(Collector):
    """The host store's budget and pauses, read at each scrape."""

    def __init__(self, store: HostStore) -> None:
        self.store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        remaining = GaugeMetricFamily("sluice_rate_remaining", "What GitHub last said remains of the allowance",
                                      labels=["pool", "resource"])
        limit = GaugeMetricFamily("sluice_rate_limit", "The allowance GitHub last named", labels=["pool", "resource"])
        paused = GaugeMetricFamily("sluice_pause_until_seconds",
                                   "When a standing pause ends (epoch seconds, this host's clock)",
                                   labels=["pool", "resource"])
        try:
            for row in self.store.budget():
                if row.remaining is not None:
                    remaining.add_metric([row.pool, row.resource], row.remaining)
                if row.limit is not None:
                    limit.add_metric([row.pool, row.resource], row.limit)
            for pause in self.store.pauses():
                paused.add_metric([pause.pool, pause.resource], pause.until)
        except Exception:  # a scrape never fails for the store: it shows what it could read
            pass
        yield remaining
        yield limit
        yield paused


class Metrics:
    """The counters of one ``serve`` and the store's gauges, in a registry of their own."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, store: HostStore) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter("sluice_serve_calls", "Calls answered by serve",
                             ["resource", "status", "pool", "answer"], registry=self.registry)
        self.window_hits = Counter("sluice_serve_graphql_kept", "GraphQL queries answered from the window",
                                   registry=self.registry)
        self.deferrals = Counter("sluice_serve_deferred_writes", "Writes answered 'retry after' (past patience)",
                                 ["pool"], registry=self.registry)
        self.registry.register(_StoreCollector(store))

    def call(self, resource: str, status: int, pool: str, answer: str) -> None:
        self.calls.labels(resource=resource, status=str(status), pool=pool, answer=answer).inc()

    def window_hit(self) -> None:
        self.window_hits.inc()

    def deferred(self, pool: str) -> None:
        self.deferrals.labels(pool=pool).inc()

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))

    def totals(self) -> dict[str, int]:
        """Calls per answer kind so far (for the state file ``status`` reads)."""
        out: dict[str, int] = {}
        for metric in self.registry.collect():
            if metric.name != "sluice_serve_calls":
                continue
            for sample in metric.samples:
                if sample.name.endswith("_total"):
                    kind = sample.labels.get("answer", "")
                    out[kind] = out.get(kind, 0) + int(sample.value)
        return out
