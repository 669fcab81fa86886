"""GitHub's allowances as the double keeps them: primary buckets and secondary limits.

A primary bucket belongs to one (pool, resource). Its window opens at the
pool's first counted call and closes at ``reset`` — an integer epoch second,
as GitHub reports it — after which the next counted call opens a new one.
Until a window is open, ``reset`` reads "now + window", as GitHub shows a
fresh pool.

Secondary limits cannot be read in advance on GitHub, so the double keeps them
as plain knobs: requests in flight per pool and points per minute per (pool,
resource). No HTTP here; the pipeline asks and answers.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

ANON = "anon"
"""The key unauthenticated calls share (GitHub keys them by address; the double has one)."""

DEFAULT_LIMITS: dict[str, tuple[int, float]] = {
    "core": (5000, 3600.0),
    "graphql": (5000, 3600.0),
    "search": (30, 60.0),
}
ANON_LIMITS: dict[str, tuple[int, float]] = {
    "core": (60, 3600.0),
    "graphql": (0, 3600.0),
    "search": (10, 60.0),
}
FALLBACK_LIMIT: tuple[int, float] = (5000, 3600.0)


@dataclass
class Bucket:
    limit: int
    window: float
    used: int = 0
    start: float | None = None

    def roll(self, now: float) -> None:
        """Close a window whose reset has passed, so the next counted call opens a new one."""
        if self.start is not None and now >= self.reset_at(now):
            self.start = None
            self.used = 0

    def reset_at(self, now: float) -> int:
        start = self.start if self.start is not None else now
        return int(math.ceil(start + self.window))

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    def charge(self, now: float, cost: int) -> None:
        if self.start is None:
            self.start = now
        self.used += cost


class Limits:
    """Every primary bucket, made on first use with the defaults or ``set_limit``'s values."""

    def __init__(self) -> None:
        self._buckets: dict[tuple[str, str], Bucket] = {}
        self._settings: dict[tuple[str, str], tuple[int, float]] = {}

    def set_limit(self, pool: str, resource: str, limit: int, window: float) -> None:
        self._settings[(pool, resource)] = (int(limit), float(window))
        bucket = self._buckets.get((pool, resource))
        if bucket is not None:
            bucket.limit, bucket.window = int(limit), float(window)

    def bucket(self, pool: str, resource: str, now: float) -> Bucket:
        key = (pool, resource)
        bucket = self._buckets.get(key)
        if bucket is None:
            table = ANON_LIMITS if pool == ANON else DEFAULT_LIMITS
            limit, window = self._settings.get(key) or table.get(resource, FALLBACK_LIMIT)
            bucket = self._buckets[key] = Bucket(limit=limit, window=window)
        bucket.roll(now)
        return bucket


REST_WRITE_METHODS = ("POST", "PATCH", "PUT", "DELETE")


def secondary_points(method: str, resource: str) -> int:
    """GitHub's secondary-limit price: a GET (or a GraphQL query) 1, a write 5."""
    if resource == "graphql":
        return 1
    return 5 if method.upper() in REST_WRITE_METHODS else 1


@dataclass
class Secondary:
    """Requests in flight per pool and points spent in the last minute per (pool, resource)."""

    in_flight: dict[str, int] = field(default_factory=dict)
    _points: dict[tuple[str, str], deque[tuple[float, int]]] = field(default_factory=dict)

    def enter(self, pool: str) -> int:
        self.in_flight[pool] = self.in_flight.get(pool, 0) + 1
        return self.in_flight[pool]

    def leave(self, pool: str) -> None:
        self.in_flight[pool] = max(0, self.in_flight.get(pool, 0) - 1)

    def points_last_minute(self, pool: str, resource: str, now: float) -> int:
        spent = self._points.setdefault((pool, resource), deque())
        while spent and spent[0][0] <= now - 60.0:
            spent.popleft()
        return sum(p for _, p in spent)

    def spend(self, pool: str, resource: str, now: float, points: int) -> None:
        self._points.setdefault((pool, resource), deque()).append((now, points))
