"""Faults on demand: the ways GitHub (or the road to it) misbehaves, switched on by tests.

A fault matches a request when its ``path`` regex is found (``re.search``) in
"METHOD /path?query" (``None`` matches every address), and it lasts ``times``
matches (``None``: until cleared). Faults come in three roles, applied in this
order by the pipeline:

- *delay*: ``hang`` holds the request for real seconds (or until the fault is
  cleared), then it goes on;
- *answer*: ``status``, ``drop``, ``not_json``, ``primary``, ``secondary``,
  ``graphql_rate_limited`` replace the answer (the first that matches wins);
- *mangle*: ``truncate``, ``reset``, ``graphql_partial`` alter a normal answer;
  ``graphql_timeout`` turns a priced, charged query into GitHub's 502.
"""

from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from .model import DoubleError

DELAY = ("hang",)
ANSWER = ("status", "drop", "not_json", "primary", "secondary", "graphql_rate_limited")
MANGLE = ("truncate", "reset", "graphql_partial", "graphql_timeout")
KINDS = DELAY + ANSWER + MANGLE
GRAPHQL_ONLY = ("graphql_rate_limited", "graphql_partial", "graphql_timeout")

_PARAMS: dict[str, dict[str, Any]] = {
    "hang": {"seconds": 2.0},
    "status": {"code": 502, "message": None},
    "drop": {},
    "not_json": {},
    "truncate": {},
    "reset": {"value": "past"},
    "primary": {"status": 403},
    "secondary": {"status": 403, "retry_after": 60},
    "graphql_rate_limited": {"type": "RATE_LIMITED"},
    "graphql_partial": {},
    "graphql_timeout": {},
}


@dataclass
class Fault:
    id: int
    kind: str
    path: str | None
    times: int | None
    params: dict[str, Any] = field(default_factory=dict)
    # Set when the fault is cleared: requests a ``hang`` holds go on at once.
    released: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    def matches(self, line: str, is_graphql: bool) -> bool:
        if self.kind in GRAPHQL_ONLY and not is_graphql:
            return False
        return self.path is None or re.search(self.path, line) is not None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "path": self.path, "times": self.times, **self.params}


class Faults:
    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._used_delays: list[Fault] = []  # used-up hangs that may still hold a request
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def add(self, kind: str, path: str | None = None, times: int | None = None, **params: Any) -> int:
        if kind not in KINDS:
            raise DoubleError(f"fault kind {kind!r}: expected one of {', '.join(KINDS)}")
        allowed = _PARAMS[kind]
        unknown = set(params) - set(allowed)
        if unknown:
            raise DoubleError(f"fault {kind!r} takes {sorted(allowed) or 'no options'}, not {sorted(unknown)}")
        if path is not None:
            re.compile(path)
        if kind == "graphql_rate_limited" and params.get("type", "RATE_LIMITED") not in ("RATE_LIMITED", "RATE_LIMIT"):
            raise DoubleError("graphql_rate_limited type: expected RATE_LIMITED or RATE_LIMIT")
        if kind in ("primary", "secondary") and int(params.get("status", 403)) not in (403, 429):
            raise DoubleError(f"{kind} fault status: expected 403 or 429")
        if kind == "reset" and params.get("value", "past") not in ("past", "absurd", "garbage"):
            try:
                float(params["value"])
            except (TypeError, ValueError):
                raise DoubleError("reset fault value: expected past, absurd, garbage or an epoch number") from None
        if times is not None and int(times) < 1:
            raise DoubleError("fault times: expected a positive number, or None for until cleared")
        fault = Fault(
            id=next(self._ids),
            kind=kind,
            path=path,
            times=None if times is None else int(times),
            params={**allowed, **params},
        )
        with self._lock:
            self._faults.append(fault)
        return fault.id

    def clear(self, fault_id: int | None = None) -> None:
        """Switch faults off; a hang already holding requests lets them go, even if used up."""
        with self._lock:
            gone = [f for f in self._faults if fault_id is None or f.id == fault_id]
            self._faults = [f for f in self._faults if f not in gone]
            holding = [f for f in self._used_delays if fault_id is None or f.id == fault_id]
            self._used_delays = [f for f in self._used_delays if f not in holding]
        for fault in gone + holding:
            fault.released.set()

    def active(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def take(self, kinds: tuple[str, ...], line: str, is_graphql: bool) -> Fault | None:
        """The first live fault of these kinds that matches, using up one of its times."""
        with self._lock:
            for fault in self._faults:
                if fault.kind in kinds and fault.matches(line, is_graphql):
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times <= 0:
                            self._faults.remove(fault)
                            if fault.kind in DELAY:
                                # still holding the request it matched: clear() must reach it
                                self._used_delays.append(fault)
                    return fault
        return None
