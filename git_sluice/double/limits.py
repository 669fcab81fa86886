"""GitHub's allowances as the double keeps them: primary buckets and secondary limits.

A primary bucket belongs to one (pool, resource). Its window opens at the
pool's first counted call and closes at ``reset`` — an integer epoch second,
as GitHub reports it — after which the next counted call opens a new one.
Until a window is open, ``reset`` reads "now + window", as GitHub shows a
fresh pool.

Secondary limits cannot be read in advance on GitHub, so the double keeps them
as plain knobs: requests in flight per pool, points per minute per (pool,
resource), and content created per minute and per hour per pool. No HTTP
here; the pipeline asks and answers.
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
READ_POINTS = 1
WRITE_POINTS = 5


def secondary_points(method: str, resource: str, mutation: bool = False) -> int:
    """GitHub's secondary-limit price: a GET or a GraphQL query 1, a REST write or a mutation 5."""
    if resource == "graphql":
        return WRITE_POINTS if mutation else READ_POINTS
    return WRITE_POINTS if method.upper() in REST_WRITE_METHODS else READ_POINTS


CONTENT_CREATING = frozenset({
    "POST /repos/{o}/{r}/issues/{n}/comments",
    "mutation addComment",
})
"""What GitHub's content-creation limits count, as the double serves it: an issue comment made
over REST (the endpoint, as ``rest.endpoint`` names it) or by the GraphQL mutation."""

CONTENT_PER_MINUTE = 80
CONTENT_PER_HOUR = 500


class ContentLimits:
    """GitHub's content-creation secondary limit: per pool, at most so many creations a minute and
    an hour (80 and 500). Only content actually made counts; a refused request makes none.

    Kept apart from the points a minute because GitHub keeps it apart: a pool
    far under 900 points may still be refused its 81st comment of the minute.
    """

    def __init__(self) -> None:
        self.per_minute = CONTENT_PER_MINUTE
        self.per_hour = CONTENT_PER_HOUR
        self._pools: dict[str, tuple[int, int]] = {}
        self._made: dict[str, deque[float]] = {}
        self.total = 0  # creations ever, every pool: the pipeline's "did this call make something"

    def set(self, per_minute: int, per_hour: int, pool: str | None = None) -> None:
        if pool is None:
            self.per_minute, self.per_hour = int(per_minute), int(per_hour)
            self._pools.clear()
        else:
            self._pools[pool] = (int(per_minute), int(per_hour))

    def limits(self, pool: str) -> tuple[int, int]:
        return self._pools.get(pool, (self.per_minute, self.per_hour))

    def created(self, pool: str, now: float) -> None:
        self._made.setdefault(pool, deque()).append(now)
        self.total += 1

    def wait(self, pool: str, now: float) -> float | None:
        """Seconds until ``pool`` may create once more; None when it may now.

        A creation counts in a window while it is less than the window old
        (the one at ``now - 60`` has left the minute), so the wait is exactly
        when enough of the oldest have left.
        """
        made = self._made.setdefault(pool, deque())
        while made and made[0] <= now - 3600.0:
            made.popleft()
        waits: list[float] = []
        for limit, window in zip(self.limits(pool), (60.0, 3600.0)):
            inside = [t for t in made if t > now - window]
            if len(inside) >= limit:
                waits.append(inside[-limit] + window - now if limit > 0 else window)
        return max(waits) if waits else None


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
