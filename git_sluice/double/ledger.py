"""Every call that reached the double, so tests assert on what reached "GitHub".

The ledger keeps 304s, errors, faults and ``/rate_limit`` too: a test of "a
quiet repository costs nothing" needs to see the free calls as well as the
counted ones. It never keeps a token, only its SHA-256. A call enters the
ledger when it is answered; until then (a hang fault holds it) it is an
*arrival*, which ``requests()`` already counts — it has reached "GitHub".
"""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Call:
    time: float
    pool: str | None
    resource: str
    method: str
    path: str  # with the query string
    status: int  # 0 when the connection was dropped without an answer
    counted: bool
    cost: int
    token_sha: str | None
    endpoint: str = ""  # "GET /repos/{o}/{r}/pulls": what GitHub's secondary limit counts per
    mutation: bool = False  # a GraphQL mutation (5 secondary points, not 1)
    content: bool = False  # content-creating (limits.CONTENT_CREATING): what ``writes()`` lists
    created: bool = False  # it made content (a comment); a refused or failed write did not

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Arrival:
    """A call on the wire: it reached the double and has no answer yet (a hang holds it)."""

    ticket: int
    index: int  # the ledger's length when it arrived; its Call lands at or after it
    pool: str | None
    resource: str
    method: str
    path: str


class Ledger:
    def __init__(self) -> None:
        self._calls: list[Call] = []
        self._pending: dict[int, Arrival] = {}
        self._tickets = 0
        self._lock = threading.Lock()

    def arrive(self, pool: str | None, resource: str, method: str, path: str) -> int:
        with self._lock:
            self._tickets += 1
            self._pending[self._tickets] = Arrival(self._tickets, len(self._calls), pool, resource, method, path)
            return self._tickets

    def append(self, call: Call, ticket: int | None = None) -> None:
        """The answered call; with its arrival ticket, it stops counting as on the wire (atomically)."""
        with self._lock:
            self._calls.append(call)
            if ticket is not None:
                self._pending.pop(ticket, None)

    def pending(
        self,
        since: int | None = None,
        pool: str | None = None,
        resource: str | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> list[Arrival]:
        pattern = re.compile(path) if path is not None else None
        with self._lock:
            waiting = list(self._pending.values())
        return [a for a in waiting if a.index >= (since or 0) and _matches(a, pool, resource, method, pattern)]

    def all(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def mark(self) -> int:
        with self._lock:
            return len(self._calls)

    def calls(
        self,
        since: int | None = None,
        pool: str | None = None,
        resource: str | None = None,
        method: str | None = None,
        path: str | None = None,
        status: int | None = None,
    ) -> list[Call]:
        """Calls from index ``since`` on; each given filter must hold (``path`` is a regex, re.search)."""
        pattern = re.compile(path) if path is not None else None
        with self._lock:
            chosen = self._calls[since or 0 :]
        return [
            c
            for c in chosen
            if _matches(c, pool, resource, method, pattern) and (status is None or c.status == status)
        ]


def busiest_minute(calls: list[Call], price: Callable[[str, str, bool], int]) -> tuple[int, str | None]:
    """The most secondary-limit points one pool spent on one endpoint in any 60 s, and where.

    Every call counts, 304s and errors too: GitHub's secondary limits are
    about load, not about the primary allowance.
    """
    best: tuple[int, str | None] = (0, None)
    windows: dict[tuple[str | None, str], deque[tuple[float, int]]] = {}
    sums: dict[tuple[str | None, str], int] = {}
    for call in sorted(calls, key=lambda c: c.time):
        key = (call.pool, call.endpoint or f"{call.method} {call.path.split('?')[0]}")
        window = windows.setdefault(key, deque())
        points = price(call.method, call.resource, call.mutation)
        window.append((call.time, points))
        sums[key] = sums.get(key, 0) + points
        while window[0][0] <= call.time - 60.0:
            sums[key] -= window.popleft()[1]
        if sums[key] > best[0]:
            best = (sums[key], key[1])
    return best


def _matches(
    item: Call | Arrival, pool: str | None, resource: str | None, method: str | None, pattern: re.Pattern[str] | None
) -> bool:
    """One filter for answered calls and calls still on the wire alike."""
    return (
        (pool is None or item.pool == pool)
        and (resource is None or item.resource == resource)
        and (method is None or item.method == method.upper())
        and (pattern is None or pattern.search(item.path) is not None)
    )
