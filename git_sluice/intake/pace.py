"""Pace before the limit: project a pool's spend to its reset, and stretch the watch's tick (pure).

A refusal must never be the first sign (docs/design.md#the-host-watch). From the
rate headers the host already read (``x-ratelimit-limit``, ``-used``,
``-reset``, kept per pool and resource in the host store), the spend so far
in the window is projected to the reset at the same rate. Above
:data:`STRETCH_FROM` of the allowance the host watch stretches its tick,
linearly up to :data:`MAX_STRETCH` × at the whole allowance, so the host
slows down before GitHub says no; ``status`` and ``doctor`` show the
projection and the stretch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Protocol
from ..records import record

WINDOW = 3600.0
"""GitHub's primary windows last an hour (core and GraphQL alike)."""
STRETCH_FROM = 0.8
MAX_STRETCH = 4.0
MIN_ELAPSED = 300.0
"""A window's first minutes say little about its rate: the spend is spread over at least this long."""


@record(frozen=True)
class Pace:
    """A pool's projected spend at its reset, and how much the watch stretches its tick for it."""

    pool: str
    resource: str
    used: int
    limit: int
    reset: float
    projected: int
    share: float
    stretch: float

    @property
    def stretched(self) -> bool:
        return self.stretch > 1.0

    def describe(self) -> str:
        text = f"projected {self.projected:,} of {self.limit:,} {self.resource} by the reset ({self.share:.0%})"
        if self.stretched:
            text += f": the host watch stretches its tick ×{self.stretch:.1f}"
        return text


def stretch_for(share: float) -> float:
    """1 up to :data:`STRETCH_FROM` of the allowance, then linearly to :data:`MAX_STRETCH` at all of it."""
    if share <= STRETCH_FROM:
        return 1.0
    return min(MAX_STRETCH, 1.0 + (MAX_STRETCH - 1.0) * (share - STRETCH_FROM) / (1.0 - STRETCH_FROM))


def project(
    *, pool: str, resource: str, limit: Any, used: Any, reset: Any, observed_at: Any, now: float,
) -> Pace | None:
    """The spend projected to the reset at the window's rate so far; None when the headers say too little.

    Every number comes from GitHub's headers, so each is bounded: a limit
    that is not positive, a reset in the past or more than a window away, a
    ``used`` above the limit's tenfold — no projection.
    """
    numbers = (limit, used, reset, observed_at)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in numbers):
        return None
    if limit <= 0 or used < 0 or used > 10 * limit or reset <= now or reset - now > WINDOW + 300:
        return None
    if observed_at > now + 60 or observed_at < reset - WINDOW - 300:
        return None  # read in an earlier window (or from a clock that jumped): says nothing of this one
    # The rate runs to *now*, not to the reading: a host that read its headers during a burst (a
    # fresh host's first look at 5,000 requests) and has not called that resource since knows of no
    # later spend, and a rate frozen at the burst held its tick stretched ×4 for the rest of the hour.
    known = max(observed_at, min(now, reset))
    elapsed = max(MIN_ELAPSED, known - (reset - WINDOW))
    rate = used / elapsed
    projected = int(round(used + rate * max(0.0, reset - known)))
    share = projected / limit
    return Pace(pool, resource, int(used), int(limit), float(reset), projected, share, stretch_for(share))


class BudgetReading(Protocol):
    """What a pace is projected from: the host ledger's row (``HostStore.budget()``) or doctor's line.

    A protocol, not either class: the ledger's row lives in :mod:`git_sluice.forge` and doctor's in
    :mod:`git_sluice.commands`, and this pure module depends on neither.
    """

    @property
    def pool(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def limit(self) -> int | None: ...
    @property
    def used(self) -> int | None: ...
    @property
    def reset(self) -> float | None: ...
    @property
    def observed_at(self) -> float | None: ...


def paces(rows: Iterable[BudgetReading], now: float, *, pool: str | None = None) -> list[Pace]:
    """A :class:`Pace` per budget row (``HostStore.budget()``) that says enough, of ``pool`` when given."""
    out = []
    for row in rows:
        if pool is not None and row.pool != pool:
            continue
        found = project(
            pool=str(row.pool), resource=str(row.resource), limit=row.limit, used=row.used, reset=row.reset,
            observed_at=row.observed_at, now=now,
        )
        if found is not None:
            out.append(found)
    return out


def worst(found: Iterable[Pace]) -> Pace | None:
    """The pace that stretches most (the tick follows the pool's tightest resource)."""
    best: Pace | None = None
    for pace in found:
        if best is None or (pace.stretch, pace.share) > (best.stretch, best.share):
            best = pace
    return best


def reports_no_limit(limit: int | None, observed_at: float | None, counted_last_hour: int) -> bool:
    """Whether the server reports no rate limit for a pool's resource: calls were made and answered,
    yet none carried a rate header (GitHub Enterprise Server with rate limiting off, issue 31).

    github.com sends ``x-ratelimit-*`` on every counted answer, so a counted
    call with no limit ever seen is a server that has none to report; with
    nothing counted yet, nothing is known either way.
    """
    return limit is None and observed_at is None and counted_last_hour > 0


NO_LIMIT_WORDS = "no limit: this server reports none (rate limiting off)"
"""How ``status`` and ``doctor`` say :func:`reports_no_limit`."""
