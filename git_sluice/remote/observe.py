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

And it keeps when the clone's last *successful* fetch of the leases began: a
mark is known unchanged only up to that moment (issue #14, point 11). A host
whose fetches fail sees nothing, so the mark it last saw cannot age into a
lapse while the remote is out of reach: an outage of the git service never
turns every host into a taker-in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..clock import Clock, clock_kind
from ..boot import boot_id as system_boot_id
from ..statefile import JsonDocument
from .lease_record import Observation

FILE_NAME = "observed.json"
_FORMAT = 1
CHURN_MEMORY = 3600.0
"""Garbage seen at a lease ref again within this long of the last garbage there continues one churn
(issue 33): a pusher who re-pushes garbage, whatever its object, costs the fleet one lease, once."""
_GARBAGE_NOTE_EVERY = 30.0


class ObservationStore:
    """Per ref: the object id seen, when first seen (monotonic), on which boot; and own writes."""

    def __init__(self, directory: Path, clock: Clock, *, boot: str | None = None) -> None:
        self.path = Path(directory) / FILE_NAME
        self.clock = clock
        self.boot = boot if boot is not None else system_boot_id()
        # readings of different clocks are never compared (only one kind runs in production)
        self.clock_kind = clock_kind(clock)
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

    def _confirmed(self, data: dict[str, Any], now: float) -> float | None:
        entry = data.get("fetched")
        if not (
            isinstance(entry, dict)
            and entry.get("boot_id") == self.boot
            and entry.get("clock") == self.clock_kind
            and isinstance(entry.get("at"), (int, float))
            and entry["at"] <= now
        ):
            return None
        return float(entry["at"])

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

        A ref seen absent forgets its entries. Most calls record nothing new (a
        round reads the same mark before each of its calls), so the file is read
        first without the lock (its writes are atomic) and the lock is taken
        only when something must be written: the answer is the one a locked
        read just before any concurrent writer would have given (issue 15).
        """
        found = self._observed(self._load(), seen, write=False)
        if found is not None:
            return found
        with self._doc.locked():
            data = self._load()
            result = self._observed(data, seen, write=True)
            assert result is not None
            return result

    def _observed(self, data: dict[str, Any], seen: Mapping[str, str | None], *,
                  write: bool) -> dict[str, Observation | None] | None:
        """Each ref's observation from ``data``; None if one must be written and ``write`` is False."""
        result: dict[str, Observation | None] = {}
        now = self.clock.monotonic()
        confirmed = self._confirmed(data, now)
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
            result[ref] = Observation(oid, float(entry["first_seen"]), self.boot, confirmed)
        if changed:
            if not write:
                return None
            self._save(data)
        return result

    def garbage_since(self, ref: str, oid: str) -> Observation:
        """Garbage stands at ``ref``: its observation from the first garbage of this churn (issue 33).

        A lease ref is aged by its object id, so a pusher who re-pushes new
        garbage every 50 s (each a new object) kept every host deferring to
        "an unknown holder" for as long as they went on. Garbage never comes
        from a live git-sluice holder of this version, so this host ages it by
        the churn instead: from the first garbage it saw at the ref, as long as
        garbage came back within :data:`CHURN_MEMORY` of the last (a lease
        record in between included). The first lease of garbage is waited out;
        the garbage after it is taken over at once.
        """
        now = self.clock.monotonic()
        data = self._load()
        entry = self._churn(data, ref, now)
        if entry is None or now - entry[1] >= _GARBAGE_NOTE_EVERY:
            with self._doc.locked():
                data = self._load()
                entry = self._churn(data, ref, now)
                first = entry[0] if entry is not None else now
                churns = data["garbage"] if isinstance(data.get("garbage"), dict) else {}
                churns[ref] = {"first": first, "last": now, "boot_id": self.boot, "clock": self.clock_kind}
                data["garbage"] = churns
                self._save(data)
            entry = (first, now)
        return Observation(oid, entry[0], self.boot, self._confirmed(data, now))

    def _churn(self, data: dict[str, Any], ref: str, now: float) -> tuple[float, float] | None:
        """(first, last) garbage sighting of the churn at ``ref`` still going on, by this boot's clock."""
        churns = data.get("garbage")
        entry = churns.get(ref) if isinstance(churns, dict) else None
        if not (isinstance(entry, dict) and entry.get("boot_id") == self.boot and entry.get("clock") == self.clock_kind
                and all(isinstance(entry.get(k), (int, float)) for k in ("first", "last"))):
            return None
        first, last = float(entry["first"]), float(entry["last"])
        if not first <= last <= now or now - last > CHURN_MEMORY:
            return None
        return first, last

    def last_written(self, ref: str) -> float | None:
        """When this host last began a push that wrote ``ref`` (monotonic, this boot), whatever
        stands there now: a holder whose live mark a pusher overwrote takes it back (issue 33)."""
        entry = self._load()["wrote"].get(ref)
        if not (isinstance(entry, dict) and entry.get("boot_id") == self.boot and entry.get("clock") == self.clock_kind
                and isinstance(entry.get("at"), (int, float)) and entry["at"] <= self.clock.monotonic()):
            return None
        return float(entry["at"])

    def observed_for(self, observation: Observation | None) -> float | None:
        """How long this host has *seen* the mark unchanged: from first sight to the start of
        the last successful fetch after it (None: never confirmed by a fetch this boot)."""
        if observation is None or observation.boot_id != self.boot or observation.confirmed_at is None:
            return None
        end = min(self.clock.monotonic(), observation.confirmed_at)
        return max(0.0, end - observation.first_seen)

    def fetched(self, at: float) -> None:
        """A fetch of the leases that began at monotonic ``at`` succeeded: the mirror is the
        remote's as of then."""
        previous = self._confirmed(self._load(), self.clock.monotonic())  # unlocked: most fetches are older news
        if previous is not None and previous >= at:
            return
        with self._doc.locked():
            data = self._load()
            previous = self._confirmed(data, self.clock.monotonic())
            if previous is not None and previous >= at:
                return
            data["fetched"] = {"at": at, "boot_id": self.boot, "clock": self.clock_kind}
            self._save(data)

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
