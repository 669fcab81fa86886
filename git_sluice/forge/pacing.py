"""When a write may go: GitHub's pacing of mutations, and a pool's own admission (pure, no I/O).

GitHub asks integrations to leave at least a second between mutating requests
and refuses more than 80 content-creating requests a minute and 500 an hour
per user or App ("secondary rate limits"); a refusal there is what gets an
integration banned, and it comes with no reset time to wait for. So a write
is given a *slot*: the first moment from now at which every rule holds,
counting the writes the host already gave slots to. The caller waits for the
slot (within its patience) or is told when to come back; it never goes early.

A pool may also set an *admission* (``sluice.writeRate``/``sluice.writeBurst``:
ClawSweeper's "300 publications an hour, burst 30"): at most ``burst``
content-creating writes in any span of ``burst`` writes' worth of the rate
(30 in 6 minutes at 300/h). The long-run rate is then the rate, and a burst
of ``burst`` goes at GitHub's own pace, after which the next write waits for
the oldest of them to leave the span.

The history is the host's, kept by the host store; times are this host's
clock only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..records import record

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
MIN_GAP = 1.0
"""Seconds between two mutating requests of one pool (GitHub: "at least one second")."""
PER_MINUTE = 80
PER_HOUR = 500
WINDOW_MARGIN = 1.0
"""Seconds a window's write waits past the exact edge: the rules are counted where GitHub receives the
calls, a moment after they leave this host, and in another clock's seconds."""
HISTORY_SPAN = 3600.0
"""The longest span a rule looks back over, unless an admission's is longer."""


@record(frozen=True)
class Admission:
    """A pool's own admission of content-creating writes: ``rate`` an hour, ``burst`` at once."""

    rate: float
    burst: int

    @property
    def span(self) -> float:
        """The span in which at most ``burst`` may go: ``burst`` writes' worth of the rate."""
        return self.burst * 3600.0 / self.rate


@record(frozen=True)
class WriteRules:
    min_gap: float = MIN_GAP
    per_minute: int = PER_MINUTE
    per_hour: int = PER_HOUR
    admission: Admission | None = None

    @property
    def span(self) -> float:
        """How far back the history must reach for these rules."""
        return max(HISTORY_SPAN, self.admission.span if self.admission is not None else 0.0)


@record(frozen=True)
class Written:
    """One write the host gave a slot to: its slot, whether it creates content, when it actually went
    (None until it does) and when its answer came (None while it is in flight)."""

    at: float
    creating: bool
    ended: float | None = None
    sent: float | None = None


IN_FLIGHT_LIMIT = 120.0
"""A write slotted this long ago that has not gone or not answered is taken as ended (a process killed
mid-call must not stop the pool)."""


def clear_from(earlier: Sequence[Written], now: float, rules: WriteRules, creating: bool = False) -> float | None:
    """When a write whose slot has come may go, given the writes slotted before it; None while one of
    them has not gone yet or is still in flight.

    The slots were given on slots; this holds the rules on what actually
    happened. GitHub's "at least one second between mutative requests" is kept
    from one answer to the next request, and a content-creating write's
    windows (80 a minute, 500 an hour, the admission) count the times the
    earlier writes went: a write slotted a second after a slow one, or a
    burst delayed behind its answers, cannot bring two writes closer at GitHub
    than the rules allow.
    """
    last = None
    sent: list[float] = []
    for w in earlier:
        if w.ended is None and now - w.at < IN_FLIGHT_LIMIT:
            return None  # not gone yet (it goes first), or in flight
        if w.ended is not None:
            last = w.ended if last is None else max(last, w.ended)
        if w.creating and w.sent is not None:
            sent.append(w.sent)
    clear = now if last is None else max(now, last + rules.min_gap)
    if creating:
        sent.sort()
        clear = _window(sent, clear, 60.0, rules.per_minute)
        clear = _window(sent, clear, 3600.0, rules.per_hour)
        if rules.admission is not None:
            clear = _window(sent, clear, rules.admission.span, rules.admission.burst)
    return clear


_MUTATION = re.compile(r"\bmutation\b")
_QUERY_START = re.compile(r"\A(?:\s|,|#[^\n]*\n)*(?:query\b|fragment\b|\{)")


def is_write(method: str) -> bool:
    return method.upper() in WRITE_METHODS


def is_mutation(query: object, operation_name: object = None) -> bool:
    """Whether a GraphQL document's operation (the named one, else the only one) mutates.

    A document that cannot be read is taken as a mutation: paced and never
    kept, the safe side of both.
    """
    if not isinstance(query, str):
        return True
    if _MUTATION.search(query) is None and _QUERY_START.match(query) is not None:
        return False  # no mutation anywhere in it: a query, known without loading graphql-core (~0.1 s)
    from graphql import GraphQLError, OperationDefinitionNode, OperationType, parse

    try:
        document = parse(query, no_location=True)
    except (GraphQLError, RecursionError):
        return True
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if isinstance(operation_name, str) and operation_name:
        operations = [o for o in operations if o.name is not None and o.name.value == operation_name]
    if len(operations) != 1:
        return True
    return operations[0].operation is not OperationType.QUERY


def creates_content(method: str, path: str) -> bool:
    """Whether GitHub counts a write as content-creating (issues, comments, pull requests, reviews, …).

    GitHub names no exact list; every POST is counted as one (the safe side),
    and so is a PUT that merges or adds a file. Edits (PATCH) and deletions pace
    by the one-second gap only.
    """
    method = method.upper()
    if method == "POST":
        return True
    return method == "PUT" and ("/merge" in path or "/contents/" in path)


def next_slot(history: Sequence[Written], now: float, creating: bool, rules: WriteRules) -> float:
    """The first moment at or after ``now`` when a write may go, given the host's slots so far.

    Slots go in order (a write never goes before one given a slot earlier, so
    no later slot ever breaks a rule an earlier one was checked against): at
    least ``min_gap`` after the latest slot, then, for a content-creating
    write, past every window that is full.
    """
    slot = now
    if history:
        slot = max(slot, max(w.at for w in history) + rules.min_gap)
    if creating:
        creators = sorted(w.at for w in history if w.creating)
        slot = _window(creators, slot, 60.0, rules.per_minute)
        slot = _window(creators, slot, 3600.0, rules.per_hour)
        if rules.admission is not None:
            slot = _window(creators, slot, rules.admission.span, rules.admission.burst)
    return slot


def _window(times: Sequence[float], slot: float, span: float, limit: int) -> float:
    """The first moment at or after ``slot`` with fewer than ``limit`` of ``times`` (sorted, all at or
    before ``slot``) in the span before it: when ``limit`` are there, when the oldest of them leaves."""
    if limit <= 0:
        return float("inf")
    inside = [t for t in times if slot - span - WINDOW_MARGIN < t]
    if len(inside) < limit:
        return slot
    return max(slot, inside[len(inside) - limit] + span + WINDOW_MARGIN)
