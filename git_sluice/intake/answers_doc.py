"""answers.json's records: the host watch's last tick as it writes it, and as it is read back.

The file lives in the host state dir, where any process of the user could
have left anything; so what is read back goes through :func:`repo_record`
and :func:`base_part`, which keep a field only when it is of its kind and
drop the rest. Past that point the types are true and the watch's code reads
fields, not guesses. Only one level of a base is checked here: its items
and readings stay ``object`` until :func:`~.watchstore.item_of` /
:func:`~.watchstore.reading_of` read each (a round reads one base, the
watch rewrites what moved: walking thousands of items on every read would
cost a quiet round what issue 15 took out of it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict


class BasePart(TypedDict, total=False):
    """One base's part of a repository's record: its open list as of ``asked_tick``."""

    items: Sequence[object]
    """``item_json`` records, each read back through ``item_of`` / ``inputs_of`` (which check it)."""
    asked_tick: int
    changed_tick: int
    newest: str
    """The newest ``updatedAt`` of the list (the GraphQL listing stops there next tick)."""
    base_oid: str | None
    moved: list[int]
    """What the GraphQL listing found new or moved: the batched reading reads these."""
    readings: dict[str, object]
    """number -> ``reading_json`` record, read back through ``reading_of``."""


class RepoRecord(TypedDict, total=False):
    """One repository in the tick: how the watch asks it, and each base's part."""

    mode: str
    still: int
    fingerprint: list[object] | None
    rebasing: bool
    active_tick: int
    adopted: dict[str, str]
    """base -> the oid of the holder's survey last adopted for it."""
    uses_statuses: bool
    statuses_at: float
    bases: dict[str, BasePart]


class HeadDoc(TypedDict):
    """One waiting head's checks as the watch last saw them (``watch.HeadRecord`` as JSON)."""

    state: str | None
    seen: bool
    changed_tick: int
    streak: int
    next_at: float
    updated_at: str


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def base_part(raw: object) -> BasePart | None:
    """A stored base part with every field of its kind, or None when it is no object at all."""
    if not isinstance(raw, Mapping):
        return None
    part: BasePart = {}
    items = raw.get("items")
    if isinstance(items, list):
        part["items"] = items
    asked, changed = _int(raw.get("asked_tick")), _int(raw.get("changed_tick"))
    if asked is not None:
        part["asked_tick"] = asked
    if changed is not None:
        part["changed_tick"] = changed
    newest = raw.get("newest")
    if isinstance(newest, str):
        part["newest"] = newest
    oid = raw.get("base_oid")
    if "base_oid" in raw and (oid is None or isinstance(oid, str)):
        part["base_oid"] = oid
    moved = raw.get("moved")
    if isinstance(moved, list):
        part["moved"] = [n for n in moved if isinstance(n, int) and not isinstance(n, bool)]
    readings = raw.get("readings")
    if isinstance(readings, Mapping):
        part["readings"] = {str(k): v for k, v in readings.items()}
    return part


def repo_record(raw: object) -> RepoRecord:
    """A stored repository record with every field of its kind (empty when it is no object)."""
    record: RepoRecord = {"bases": {}}
    if not isinstance(raw, Mapping):
        return record
    mode = raw.get("mode")
    if isinstance(mode, str):
        record["mode"] = mode
    still, active = _int(raw.get("still")), _int(raw.get("active_tick"))
    if still is not None:
        record["still"] = still
    if active is not None:
        record["active_tick"] = active
    fingerprint = raw.get("fingerprint")
    if "fingerprint" in raw and (fingerprint is None or isinstance(fingerprint, list)):
        record["fingerprint"] = fingerprint
    rebasing, statuses = raw.get("rebasing"), raw.get("uses_statuses")
    if isinstance(rebasing, bool):
        record["rebasing"] = rebasing
    if isinstance(statuses, bool):
        record["uses_statuses"] = statuses
    at = raw.get("statuses_at")
    if isinstance(at, (int, float)) and not isinstance(at, bool):
        record["statuses_at"] = float(at)
    adopted = raw.get("adopted")
    if isinstance(adopted, Mapping):
        record["adopted"] = {str(k): v for k, v in adopted.items() if isinstance(v, str)}
    bases = raw.get("bases")
    if isinstance(bases, Mapping):
        for name, value in bases.items():
            part = base_part(value)
            if part is not None:
                record["bases"][str(name)] = part
    return record
