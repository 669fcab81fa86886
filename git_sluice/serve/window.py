"""Identical GraphQL queries of one token within a window, answered once (``sluice.graphqlWindow``).

Tower's dashboard ran the same three GraphQL-backed ``gh`` calls per workspace
every 30 s; its own fix was to keep each answer 30 s. GraphQL answers have no
validator (a POST is never conditional), so the relay keeps the answer of a
query for the window and hands it to the same token's identical query —
same document, same variables, same operation — with its age in
``x-sluice-age``. One caller asks at a time per query (single flight): ten
identical ``gh`` calls at once make one call. Mutations never come here.

Kept in memory only, per token digest: a token's answer never reaches another
token, and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable

from ..clock import Clock
from ..records import record

MAX_KEPT = 1024
"""The most answers kept at once (oldest first out)."""
MAX_KEPT_BODY = 8 * 1024 * 1024


@record(frozen=True)
class Kept:
    status: int
    headers: dict[str, str]
    body: bytes
    at: float


def query_key(token_digest: str, body: bytes) -> str | None:
    """The identity of a GraphQL request for one token; None when the body is no GraphQL request."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("query"), str):
        return None
    try:
        canonical = json.dumps({"query": data["query"], "variables": data.get("variables") or {},
                                "operationName": data.get("operationName")}, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return None
    return hashlib.sha256(f"{token_digest}\0{canonical}".encode()).hexdigest()


def keepable(status: int, body: bytes) -> bool:
    """Only a whole answer is kept: 200, a JSON object with ``data`` and no ``errors`` (a RATE_LIMITED
    or partial answer is never handed to the next caller)."""
    if status != 200 or len(body) > MAX_KEPT_BODY:
        return False
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "data" in data and not data.get("errors")


class QueryWindow:
    """Answers kept for ``window`` seconds on ``clock``, one flight per key."""

    def __init__(self, clock: Clock, window: float) -> None:
        self.clock = clock
        self.window = window
        self._kept: OrderedDict[str, Kept] = OrderedDict()
        self._flights: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.hits = 0

    def answer(self, key: str, ask: Callable[[], tuple[int, dict[str, str], bytes]]) -> tuple[Kept, bool]:
        """The kept answer of ``key`` within the window (and True), or ``ask()``'s, kept when whole."""
        if self.window <= 0:
            status, headers, body = ask()
            return Kept(status, headers, body, self.clock.time()), False
        found = self._fresh(key)
        if found is not None:
            return found, True
        with self._lock:
            if len(self._flights) > 4 * MAX_KEPT:  # forget the flights no one is in
                self._flights = {k: v for k, v in self._flights.items() if v.locked()}
            flight = self._flights.setdefault(key, threading.Lock())
        with flight:
            found = self._fresh(key)  # the flight ahead of this caller answered it
            if found is not None:
                return found, True
            status, headers, body = ask()
            kept = Kept(status, headers, body, self.clock.time())
            if keepable(status, body):
                with self._lock:
                    self._kept[key] = kept
                    self._kept.move_to_end(key)
                    while len(self._kept) > MAX_KEPT:
                        self._kept.popitem(last=False)
            return kept, False

    def _fresh(self, key: str) -> Kept | None:
        now = self.clock.time()
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                return None
            if not kept.at <= now < kept.at + self.window:
                self._kept.pop(key, None)
                return None
            self.hits += 1
            return kept
