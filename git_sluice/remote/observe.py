"""First-seen times of lease objects that outlive the processes that saw them.

A take-over waits until a mark has stood unchanged for a whole lease *by this
host's own observation* (docs/protocols.md#time-only-this-hosts-own-clock). Hook runs and steps live for seconds, so
the observation is kept in ``.git/sluice/observed.json`` (shared by every
process and worktree of the clone), with the boot id beside each monotonic
reading: monotonic clocks restart at boot, so a reading from another boot
means nothing and the observation starts again (docs/design.md#pitfalls-it-is-built-around). Every doubt —
unreadable file, other boot, another kind of clock (tests mix fake and
system clocks in one clone), a clock behind the reading — restarts an
observation, which can only delay a take-over, never hasten it.

Beside what was seen, the store keeps when this host last *wrote* each ref
(the monotonic time just before its push began), because "renew every third
of a lease" must count from the write, not from when a fetch happened to
bring the object back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..clock import Clock
from ..boot import boot_id as system_boot_id
from ..statefile import JsonDocument
from .lease import Observation

FILE_NAME = "observed.json"
_FORMAT = 1


class ObservationStore:
    """Per ref: the object id seen, when first seen (monotonic), on which boot; and own writes."""

    def __init__(self, directory: Path, clock: Clock, *, boot: str | None = None) -> None:
        self.path = Path(directory) / FILE_NAME
        self.clock = clock
        self.boot = boot if boot is not None else system_boot_id()
        # readings of different clocks are never compared (only one kind runs in production)
        self.clock_kind = type(clock).__qualname__
        self._doc = JsonDocument(self.path, what="lease observations")

    # --- file ----------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        data = self._doc.read()
        if data.get("format") != _FORMAT:
            return {"format": _FORMAT, "seen": {}, "wrote": {}}
        for section in ("seen", "wrote"):
            if not isinstance(data.get(section), dict):
                data[section] = {}
        return data

    def _save(self, data: dict[str, Any]) -> None:
        self._doc.write(data)

    def _valid(self, entry: object, oid: str, now: float, key: str) -> bool:
        return (
            isinstance(entry, dict)
            and entry.get("oid") == oid
            and entry.get("boot_id") == self.boot
            and entry.get("clock") == self.clock_kind
            and isinstance(entry.get(key), (int, float))
            and entry[key] <= now
        )

    # --- what was seen -------------------------------------------------------

    def observe(self, ref: str, oid: str | None) -> Observation | None:
        return self.observe_many({ref: oid})[ref]

    def observe_many(self, seen: Mapping[str, str | None]) -> dict[str, Observation | None]:
        """Record what each ref holds now; a new object id (or boot) starts a new observation.

        A ref seen absent forgets its entries.
        """
        result: dict[str, Observation | None] = {}
        with self._doc.locked():
            data = self._load()
            now = self.clock.monotonic()
            changed = False
            for ref, oid in seen.items():
                if oid is None:
                    changed |= data["seen"].pop(ref, None) is not None
                    changed |= data["wrote"].pop(ref, None) is not None
                    result[ref] = None
                    continue
                entry = data["seen"].get(ref)
                if not self._valid(entry, oid, now, "first_seen"):
                    entry = {"oid": oid, "first_seen": now, "boot_id": self.boot, "clock": self.clock_kind}
                    data["seen"][ref] = entry
                    changed = True
                result[ref] = Observation(oid, float(entry["first_seen"]), self.boot)
            if changed:
                self._save(data)
        return result

    def observed_for(self, observation: Observation | None) -> float | None:
        if observation is None or observation.boot_id != self.boot:
            return None
        return max(0.0, self.clock.monotonic() - observation.first_seen)

    # --- what this host wrote ------------------------------------------------

    def wrote(self, writes: Mapping[str, str | None], at: float) -> None:
        """This host's push, begun at monotonic ``at``, put these objects on the remote.

        The written object counts as seen from ``at`` too: it was on the remote
        no earlier than that.
        """
        with self._doc.locked():
            data = self._load()
            for ref, oid in writes.items():
                if oid is None:
                    data["seen"].pop(ref, None)
                    data["wrote"].pop(ref, None)
                    continue
                stamp = {"boot_id": self.boot, "clock": self.clock_kind}
                data["wrote"][ref] = {"oid": oid, "at": at, **stamp}
                data["seen"][ref] = {"oid": oid, "first_seen": at, **stamp}
            self._save(data)

    def written_at(self, ref: str, oid: str) -> float | None:
        """When this host began the push that wrote ``oid`` to ``ref`` (this boot), or None."""
        with self._doc.locked():
            data = self._load()
        entry = data["wrote"].get(ref)
        if not self._valid(entry, oid, self.clock.monotonic(), "at"):
            return None
        return float(entry["at"])  # type: ignore[index]

    def forget(self, refs: Iterable[str]) -> None:
        with self._doc.locked():
            data = self._load()
            for ref in refs:
                data["seen"].pop(ref, None)
                data["wrote"].pop(ref, None)
            self._save(data)
