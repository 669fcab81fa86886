"""What a round needs to ask about each open request (pure: no I/O, no clock).

The list of open requests is the free question "did anything move?" (every
page conditional). Comparing it with the queue decides, per request, whether
the round spends anything on it:

- ``to_read`` — one GraphQL read: the request is new, its head sha or
  ``updated_at`` moved, it came out of draft, or (at a discovery tick) its
  mergeability was still UNKNOWN (GitHub computes it in the background after
  a read, and it moves no ``updated_at``).
- ``to_check`` — at a discovery tick only: an entry whose checks may still
  change (pending, failing, or none yet while it waits). Another system's
  check, or a re-run, moves no ``updated_at``, so the round asks
  the head's check runs and combined status by conditional REST GET, free
  while nothing changed; only a request whose checks answered 200 joins the
  GraphQL read (:meth:`ReadingPlan.query_numbers`).
- ``drafts`` — entries built from the list alone: a draft is never read by
  GraphQL (review, checks and mergeability stay null).
- ``left`` — queued but no longer open: closed, merged, or moved to another
  base. They leave the queue.
- ``unchanged`` — nothing moved; the entry stands as it is.

Every open request is in exactly one of ``to_read``, ``to_check``,
``drafts`` and ``unchanged``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Any

from ..jsonshape import field_list, field_map
from ..records import record
from .queue import Entry
from .request import Request

_CHECKS_STILL_RUNNING = frozenset({"PENDING", "EXPECTED"})
_CHECKS_FAILED = frozenset({"FAILURE", "ERROR"})


def list_item(raw: Mapping[str, Any]) -> Request | None:
    """What one item of ``GET /repos/{o}/{r}/pulls`` says (the fields a round compares); None without a number."""
    number = raw.get("number")
    if not isinstance(number, int) or isinstance(number, bool):
        return None
    user = field_map(raw, "user")
    head = field_map(raw, "head")
    base = field_map(raw, "base")
    labels = field_list(raw, "labels")
    return Request(
        number=number,
        title=str(raw.get("title") or ""),
        author=login if isinstance(login := user.get("login"), str) else None,
        head_ref=str(head.get("ref") or ""),
        head_sha=str(head.get("sha") or ""),
        base=str(base.get("ref") or ""),
        draft=raw.get("draft") is True,
        updated_at=str(raw.get("updated_at") or ""),
        labels=tuple(
            dict.fromkeys(
                str(label.get("name")) for label in labels if isinstance(label, Mapping) and label.get("name")
            )
        ),
    )


def needs_recheck(entry: Entry) -> bool:
    """Whether a queued request's checks may still change without moving ``updated_at``.

    Out of draft, and its checks pending or expected; or failing (a re-run can
    turn them green, and another system's re-run moves no ``updated_at``); or
    none yet while it waits (CI not started; :func:`~git_sluice.intake.queue.
    derive_state` calls that waiting only where checks are expected). Each such
    recheck is two conditional GETs, free while nothing changed.
    """
    if entry.draft:
        return False
    if entry.checks_state in _CHECKS_STILL_RUNNING or entry.checks_state in _CHECKS_FAILED:
        return True
    return entry.checks_state is None and entry.state == "waiting"


def draft_entry(item: Request, previous: Entry | None, now: float) -> Entry:
    """A draft's entry from the list alone; the previous one as is when nothing moved."""
    if (
        previous is not None
        and previous.draft
        and previous.state == "draft"
        and previous.head_sha == item.head_sha
        and previous.updated_at == item.updated_at
        and previous.title == item.title
        and previous.head_ref == item.head_ref
        and previous.base == item.base
        and previous.labels == item.labels
    ):
        return previous
    return Entry.of(
        item, state="draft", taken_in_at=previous.taken_in_at if previous is not None else now, read_at=now
    )


@record
class ReadingPlan:
    """What this round asks about each request (see the module docstring)."""

    to_read: list[int] = field(default_factory=list)
    to_check: list[int] = field(default_factory=list)
    drafts: dict[int, Entry] = field(default_factory=dict)
    left: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    reasons: dict[int, str] = field(default_factory=dict)
    """Why each request in ``to_read``/``to_check`` is asked (for the round's report and log)."""
    items: dict[int, Request] = field(default_factory=dict)
    """Every open request as the list showed it."""

    @property
    def open_count(self) -> int:
        return len(self.items)

    def query_numbers(self, checked: Iterable[int] = ()) -> list[int]:
        """The GraphQL read: every request to read, plus the checked ones whose checks answered 200."""
        changed = {int(n) for n in checked} & set(self.to_check)
        return sorted(set(self.to_read) | changed)


def plan_readings(
    items: Iterable[Mapping[str, Any] | Request],
    previous: Mapping[int, Entry],
    *,
    discovery: bool,
    now: float,
    base_moved: bool = False,
) -> ReadingPlan:
    """Compare the open list with the queue and decide what this round asks.

    ``discovery`` is true when this round is the discovery clock's tick (not
    only local movement): then waiting entries are re-checked. ``base_moved``
    (the branch's own revision moved) re-reads every open non-draft request,
    because mergeability follows the base and moves no ``updated_at``; the
    round decides whether that is worth its points.
    """
    plan = ReadingPlan()
    for raw in items:
        item = raw if isinstance(raw, Request) else list_item(raw)
        if item is None:
            continue
        plan.items[item.number] = item

    for number in sorted(plan.items):
        item = plan.items[number]
        entry = previous.get(number)
        if item.draft:
            plan.drafts[number] = draft_entry(item, entry, now)
            continue
        reason = _why_read(item, entry, discovery=discovery, base_moved=base_moved)
        if reason is not None:
            plan.to_read.append(number)
            plan.reasons[number] = reason
        elif discovery and entry is not None and needs_recheck(entry):
            plan.to_check.append(number)
            plan.reasons[number] = "checks may still change"
        else:
            plan.unchanged.append(number)

    plan.left = sorted(n for n in previous if n not in plan.items)
    return plan


def _why_read(item: Request, entry: Entry | None, *, discovery: bool, base_moved: bool) -> str | None:
    if entry is None:
        return "new"
    if entry.draft or entry.state == "draft":
        return "out of draft"
    if entry.head_sha != item.head_sha:
        return "head moved"
    if entry.updated_at != item.updated_at:
        return "updated"
    if base_moved:
        return "base moved"
    if discovery and entry.mergeable in (None, "UNKNOWN"):
        return "mergeability unknown"
    return None
