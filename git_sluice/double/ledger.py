"""Every call that reached the double, so tests assert on what reached "GitHub".

The ledger keeps 304s, errors, faults and ``/rate_limit`` too: a test of "a
quiet repository costs nothing" needs to see the free calls as well as the
counted ones. It never keeps a token, only its SHA-256.
"""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass
from typing import Any


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Ledger:
    def __init__(self) -> None:
        self._calls: list[Call] = []
        self._lock = threading.Lock()

    def append(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

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
            if (pool is None or c.pool == pool)
            and (resource is None or c.resource == resource)
            and (method is None or c.method == method.upper())
            and (pattern is None or pattern.search(c.path))
            and (status is None or c.status == status)
        ]
