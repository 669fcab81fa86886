"""``<sluice dir>/follows.json``: what each wait of this clone last took in of its request.

A wait is often not one long process: an agent runs ``git sluice wait N
--timeout 60`` in a loop, a service restarts it. Kept here, a wait that
starts again resumes where the last left off — its request's branch, the
host watch's tick it last acted on, the request as it last read it — and
asks GitHub nothing already asked (docs/design.md#the-host-watch). A corrupt
file is discarded (the next look reads the request once more); an entry
untouched for a day is dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..jsonshape import field_map
from ..records import record
from ..statefile import JsonDocument
from .follow import Seen

FORGET = 86400.0
MAX_FOLLOWED = 500


@record
class Followed:
    """One wait's memory of its request (see the module)."""

    branch: str | None = None
    seen: Seen = Seen()
    head: dict[str, Any] | None = None
    """The request's head as last read: sha, ``updated_at``, checks state, draft."""
    outcome: dict[str, Any] | None = None
    """The last wait's outcome (ready or blocked) with the tick and request it was seen at: a wait run
    again on a request nothing has moved in since answers it without a call."""


class FollowStore:
    def __init__(self, sluice_dir: Path) -> None:
        self.doc = JsonDocument(Path(sluice_dir) / "follows.json", what="waits' follows")

    def get(self, number: int) -> Followed:
        raw = field_map(self.doc.read(), str(number))
        said_branch, said_epoch = raw.get("branch"), raw.get("epoch")
        branch = said_branch if isinstance(said_branch, str) and said_branch else None
        epoch = said_epoch if isinstance(said_epoch, str) else None
        raw_tick = raw.get("tick")
        tick = raw_tick if isinstance(raw_tick, int) and not isinstance(raw_tick, bool) else -1
        snap = raw.get("snapshot")
        snapshot = None
        if isinstance(snap, list) and len(snap) == 3 and isinstance(snap[0], str) and isinstance(snap[1], str):
            snapshot = (snap[0], snap[1], snap[2] is True)
        said_head, said_outcome = raw.get("head"), raw.get("outcome")
        head = said_head if isinstance(said_head, dict) else None
        outcome = said_outcome if isinstance(said_outcome, dict) else None
        return Followed(branch=branch, seen=Seen(epoch=epoch, tick=tick, snapshot=snapshot), head=head,
                        outcome=outcome)

    def put(self, number: int, followed: Followed, *, now: float) -> None:
        with self.doc.update() as data:
            data[str(number)] = {
                "branch": followed.branch, "epoch": followed.seen.epoch, "tick": followed.seen.tick,
                "snapshot": list(followed.seen.snapshot) if followed.seen.snapshot is not None else None,
                "head": followed.head, "outcome": followed.outcome, "at": now,
            }
            stale = [k for k, v in data.items() if not _recent(v, now)]
            for key in stale:
                del data[key]
            if len(data) > MAX_FOLLOWED:
                for key in sorted(data, key=lambda k: _at(data[k]))[: len(data) - MAX_FOLLOWED]:
                    del data[key]

    def drop(self, number: int) -> None:
        with self.doc.update() as data:
            data.pop(str(number), None)


def _at(value: Any) -> float:
    at = value.get("at") if isinstance(value, dict) else None
    return float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else 0.0


def _recent(value: Any, now: float) -> bool:
    at = _at(value)
    return now - FORGET <= at <= now + 3600
