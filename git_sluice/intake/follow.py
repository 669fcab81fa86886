"""Following one request alone, on the host watch's answers (pure: no I/O).

A wait whose request's branch another host takes in used to ask GitHub for
the request itself every quarter of the discovery interval: a conditional
``GET /pulls/{n}`` (a 200, counted, whenever anything happens in the
repository, since the request embeds it) and two check probes. Under the
host watch it asks nothing of its own while nothing moved: it follows the
request, the watch lists its base for the host once a tick (or in its one
GraphQL query when the list churns) and watches its head's checks, and the
wait reads its part of the answers. What the wait does with a tick's answer
is decided here:

- ``same``: the wait already took this tick in;
- ``draft``: the request is a draft (no reading needed to say so);
- ``gone``: it is no longer open on its base — merged, closed or retargeted:
  one conditional GET of the request says which;
- ``read``: new to the wait, or its head, ``updated_at``, draft flag or checks
  moved: one GraphQL read of it;
- ``still``: a new tick in which nothing of it moved: no call.
"""

from __future__ import annotations

from typing import Literal

from .request import Request
from ..records import record

Step = Literal["same", "draft", "gone", "read", "still"]


@record(frozen=True)
class Seen:
    """What the wait last took in: the answers' epoch and tick, and the request as it was then."""

    epoch: str | None = None
    tick: int = -1
    snapshot: tuple[str, str, bool] | None = None
    """(head sha, ``updated_at``, draft) at the last reading; None before the first."""


def snapshot_of(item: Request) -> tuple[str, str, bool]:
    return (item.head_sha, item.updated_at, item.draft)


def step(seen: Seen, *, epoch: str, tick: int, item: Request | None, checks_moved: bool) -> Step:
    """What this tick's answer asks of the wait (see the module)."""
    if seen.epoch == epoch and seen.tick >= tick:
        return "same"
    if item is None:
        return "gone"
    if item.draft:
        return "draft"
    if seen.snapshot is None or seen.snapshot != snapshot_of(item) or checks_moved:
        return "read"
    return "still"


def after(seen: Seen, what: Step, *, epoch: str, tick: int, item: Request | None, read: bool) -> Seen:
    """The wait's memory after acting on ``what`` (``read``: its reading arrived; a failed one is tried again)."""
    if what == "same":
        return seen
    if what == "read" and not read:
        return seen
    if what == "still":
        return Seen(epoch=epoch, tick=tick, snapshot=seen.snapshot)
    if what == "read" and item is not None:
        return Seen(epoch=epoch, tick=tick, snapshot=snapshot_of(item))
    return Seen(epoch=epoch, tick=tick, snapshot=None)  # draft or gone: read afresh when it shows again


STANDING = frozenset({"ready", "blocked"})


def outcome_record(state: str, *, epoch: str, tick: int, item: Request, checks: str | None) -> dict[str, object] | None:
    """What a wait keeps of its outcome for the next wait on the same request (ready or blocked only)."""
    if state not in STANDING:
        return None
    return {"state": state, "epoch": epoch, "tick": tick, "snapshot": list(snapshot_of(item)), "checks": checks}


def standing_outcome(
    record: object, *, epoch: str, item: Request, active_tick: int, head_moved_after: int | None
) -> str | None:
    """The last wait's outcome, when it still stands: same answers, the request as it was, its
    repository without any activity since (no list 200: no push, no close, no review), and its checks
    passed or absent (a failed check may be re-run, and nothing watches it once the wait ended)."""
    if not isinstance(record, dict) or record.get("epoch") != epoch or record.get("state") not in STANDING:
        return None
    tick = record.get("tick")
    if not isinstance(tick, int) or isinstance(tick, bool) or active_tick > tick:
        return None
    if head_moved_after is not None and head_moved_after > tick:
        return None
    if record.get("checks") not in ("SUCCESS", None) or record.get("snapshot") != list(snapshot_of(item)):
        return None
    return str(record["state"])
