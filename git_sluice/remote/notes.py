"""Pause notes: a spent allowance stops every host that shares the pool (docs/design.md#the-pause).

Host first, then the fleet: the forge writes the pause into the host store,
then publishes it here as ``refs/sluice/pause/<pool-id>/<resource>``. Other
hosts adopt it at their next fetch of ``refs/sluice/*``. Writes are
compare-and-swap pushes; on a race the notes are merged (the later ``until``
wins, the epoch becomes the larger plus one) and the push is tried again a
bounded number of times. When the pause ends, exactly one host across the
fleet claims the probe on the note; after the pause closes, the note goes.

A note carries no token and no raw installation or user id: the pool is
named by its pool id only, and the message says nothing else about it.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
from collections.abc import Collection, Iterable
from typing import Protocol

from .. import __version__
from ..clock import Clock
from ..config import redact_url
from ..errors import PublishFailed as PublishFailed
from ..records import record
from ..repo import Repo
from .git import CasUpdate, RemoteGit, RemoteRefused
from .lease_record import check_host, check_name, format_seconds, parse_trailers
from .observe import ObservationStore

log = logging.getLogger("git_sluice")

PAUSE_PREFIX = "refs/sluice/pause/"
MAX_UNTIL = 253402300799.0
"""The last second of 9999: a later ``Until`` (1e300, say) is no time at all, and the note garbage.
Any earlier one is still bounded by the adopting host's horizon (:meth:`PauseNotes.adopt_into`)."""
MAX_EPOCH = 2**53
CLASSES = ("primary", "secondary", "unknown")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_component(kind: str, value: str) -> str:
    """Pool ids and resource names become ref components: keep them plain."""
    if not _NAME.match(value) or ".." in value or value.endswith(".lock"):
        raise ValueError(f"{kind} {value!r} cannot name a pause ref (letters, digits, '.', '_', '-')")
    return value


def pause_ref(pool: str, resource: str) -> str:
    return f"{PAUSE_PREFIX}{check_component('pool id', pool)}/{check_component('resource', resource)}"


@record(frozen=True)
class PauseNote:
    """One (pool, resource) pause as published: until when, why, which epoch, who saw it."""

    pool: str
    resource: str
    until: float
    cls: str
    epoch: int
    host: str
    probe: str | None = None
    lasting: float | None = dataclasses.field(default=None, compare=False)
    """How long the pause had left when the note was written, by its writer's clock (``For:``):
    a duration, not a time, so a host whose clock is off can still tell how long to pause
    (:func:`local_end`). Older notes have none."""

    @property
    def ref(self) -> str:
        return pause_ref(self.pool, self.resource)

    @property
    def identity(self) -> str:
        """The pause a note announces, whoever claimed its probe: a claim re-writes the note (a new
        object) but announces no new pause, so it must not start anyone's bound again (issue 33)."""
        return f"{self.cls}:{self.epoch}:{format_seconds(round(self.until, 3))}:{self.host}"

    def check(self) -> PauseNote:
        pause_ref(self.pool, self.resource)
        check_host("host", self.host)
        if self.probe is not None:
            check_host("probe host", self.probe)
        if self.cls not in CLASSES:
            raise ValueError(f"pause class {self.cls!r} is not one of {', '.join(CLASSES)}")
        if not math.isfinite(self.until) or not 0 <= self.until <= MAX_UNTIL:
            raise ValueError(f"pause until {self.until!r} is not a time")
        if not 0 <= self.epoch <= MAX_EPOCH:
            raise ValueError(f"epoch {self.epoch} is out of range")
        if self.lasting is not None and not (math.isfinite(self.lasting) and 0 <= self.lasting <= MAX_LASTING):
            raise ValueError(f"pause length {self.lasting!r} is out of range")
        return self

    def to_message(self, version: str = __version__) -> str:
        self.check()
        lines = [
            f"git-sluice pause of {self.resource} for pool {self.pool}",
            "",
            f"Until: {format_seconds(round(self.until, 3))}",
            *([f"For: {format_seconds(round(self.lasting, 3))}"] if self.lasting is not None else []),
            f"Class: {self.cls}",
            f"Epoch: {self.epoch}",
            f"Host: {self.host}",
        ]
        if self.probe is not None:
            lines.append(f"Probe: {self.probe}")
        lines.append(f"Sluice-Version: {check_name('version', version)}")
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, pool: str, resource: str, message: str) -> PauseNote | None:
        """The note at ``refs/sluice/pause/<pool>/<resource>``; None for anything else."""
        trailers = parse_trailers(message)
        try:
            note = cls(
                pool=pool,
                resource=resource,
                until=float(trailers["until"]),
                cls=trailers["class"],
                epoch=int(trailers["epoch"]),
                host=trailers["host"],
                probe=trailers.get("probe") or None,
                lasting=float(trailers["for"]) if trailers.get("for") else None,
            )
            if not trailers.get("sluice-version"):
                return None
            return note.check()
        except (KeyError, ValueError):
            return None

    def with_probe(self, host: str | None) -> PauseNote:
        return dataclasses.replace(self, probe=host)


EVIDENCE_MARGIN = 60.0
"""An answer heard this long after a note was first seen was sent after it, too (no call's answer
lags its sending by more): only such an answer can disprove the note."""


def sighting(ref: str) -> str:
    """The observation key of the pause a note at ``ref`` announces (beside the ref's own object)."""
    return f"{ref}#pause"


def disproves(note: PauseNote, heard: tuple[int, float] | None, first_seen: float | None) -> bool:
    """Does what GitHub last said of the note's (pool, resource) outrank the note (issue 33)?

    Only a primary pause can be disproved by an answer: it says the window's
    allowance is spent, and an answer sent after the note was written that
    still had some left says it is not (or the window reset). A secondary or
    unknown pause is not in the rate headers; its short bound and the probe
    end it.
    """
    if note.cls != "primary" or heard is None or first_seen is None:
        return False
    remaining, at = heard
    return remaining > 0 and at > first_seen + EVIDENCE_MARGIN


MAX_LASTING = 86_400.0
"""A ``For:`` beyond a day is no pause length (adoption bounds it by the host's horizon anyway)."""


def local_end(until: float, lasting: float | None, first_seen: float) -> float:
    """When a note's pause ends by this host's clock, trusting no other host's time (issue #14, point 2).

    A note's ``Until`` is its writer's clock; ``For`` its length then, a
    duration. The pause ends at ``Until`` but never later than ``For`` after
    this host first saw the note: a host whose clock is behind the writer's
    (where a 60 s pause would read as hours) pauses for ``For``. A host whose
    clock is ahead reads the pause as over sooner — indistinguishable from a
    note first seen late, which must not start the pause afresh — and its one
    call that meets the throttle pauses it on its own. A note without ``For``
    (an older version) keeps its ``Until``; the host store still bounds it by
    its horizon.
    """
    if lasting is None:
        return until
    return min(until, first_seen + lasting)


def merge(a: PauseNote, b: PauseNote) -> PauseNote:
    """Two hosts published the same pause: the later ``until`` wins, the epoch moves past both.

    Ties break on epoch, then host name, so every host merges alike.
    """
    if (a.pool, a.resource) != (b.pool, b.resource):
        raise ValueError(f"cannot merge pauses of {a.pool}/{a.resource} and {b.pool}/{b.resource}")
    winner = max((a, b), key=lambda n: (n.until, n.epoch, n.host))
    return dataclasses.replace(winner, epoch=max(a.epoch, b.epoch) + 1)


class PauseStore(Protocol):
    """The part of the forge's host store that takes pauses in from other hosts."""

    def adopt(
        self, pool: str, resource: str, until: float, cls: str, *, source: str,
        seen_at: float | None = None, origin: str | None = None,
    ) -> object: ...

    def release_adopted(self, origin: str, pools: Collection[str], present: Collection[tuple[str, str]]) -> int: ...


class PauseNotes:
    """This host's view of, and writes to, the fleet's pause notes."""

    def __init__(
        self,
        repo: Repo,
        remote: RemoteGit,
        *,
        host: str,
        clock: Clock,
        attempts: int = 5,
        probe_timeout: float = 120.0,
        observations: ObservationStore | None = None,
        version: str = __version__,
        url: str | None = None,
    ) -> None:
        self.repo = repo
        self._url = url  # the remote's URL as the settings read it (None: ask the config when needed)
        self.remote = remote
        self.host = check_name("host", host)
        self.clock = clock
        self.attempts = max(1, attempts)
        # A host that claimed the probe and died must not hold the fleet paused forever.
        self.probe_timeout = probe_timeout
        self.version = version
        self.observations = observations or ObservationStore(repo.sluice_dir, clock)
        self.claimed: dict[tuple[str, str], str] = {}
        """The pause (its :attr:`PauseNote.identity`) whose probe this process claimed, per (pool,
        resource): a probe that goes well disproves that pause, and only that one."""
        register = getattr(remote, "on_fetched", None)
        if register is not None:
            register(("observations", str(self.observations.path), self.observations.boot), self.observations.fetched)

    # --- reading -------------------------------------------------------------

    def _note_at(self, pool: str, resource: str, oid: str | None) -> PauseNote | None:
        if oid is None:
            return None
        message = self.remote.read_message(oid)
        if message is None:
            return None
        return PauseNote.parse(pool, resource, message)

    def read(self, pool: str, resource: str) -> PauseNote | None:
        """The note for (pool, resource) in the local mirror, as last fetched."""
        return self._note_at(pool, resource, self.repo.ref(pause_ref(pool, resource)))

    def local(self) -> list[PauseNote]:
        """Every readable note in the local mirror (garbage is skipped)."""
        notes: list[PauseNote] = []
        for ref, oid in sorted(self.repo.refs_under(PAUSE_PREFIX).items()):
            parts = ref[len(PAUSE_PREFIX) :].split("/")
            if len(parts) != 2:
                continue
            try:
                pause_ref(*parts)
            except ValueError:
                continue
            note = self._note_at(parts[0], parts[1], oid)
            if note is not None:
                notes.append(note)
        return notes

    def check_remote(self, pool: str) -> bool:
        """Look at the remote's pause notes of ``pool`` (``ls-remote``); fetch them if they moved.

        True if the mirror changed. Costs one connection, and a fetch only when
        a note was published, changed or removed since the last fetch.
        """
        check_component("pool id", pool)
        prefix = f"{PAUSE_PREFIX}{pool}/"
        there = self.remote.list_remote(prefix + "*")
        here = self.repo.refs_under(prefix)
        if there == here:
            return False
        self.remote.fetch()
        return True

    # --- writing -------------------------------------------------------------

    def _push(self, ref: str, new: str | None, expected: str | None) -> bool:
        """One CAS; True if won, False if the race was lost (the mirror is then re-fetched)."""
        outcome = self.remote.push_cas([CasUpdate(ref, new, expected)])[0]
        if outcome.won:
            return True
        if outcome.refused:
            raise RemoteRefused(self.remote.remote, ref, outcome.reason or outcome.summary)
        self.remote.fetch()
        return False

    def publish(self, note: PauseNote) -> PauseNote:
        """Put ``note`` on the remote, merged with whatever is there; return what stands.

        A note already there that lasts at least as long is left as it is and
        returned: the fleet already knows.
        """
        note.check()
        ref = note.ref
        for _ in range(self.attempts):
            oid = self.repo.ref(ref)
            current = self._note_at(note.pool, note.resource, oid)
            if current is not None and current.until >= note.until:
                return current
            to_write = merge(current, note) if current is not None else note
            to_write = dataclasses.replace(  # as the record says; For: its length by this host's clock
                to_write, until=round(to_write.until, 3),
                lasting=round(min(max(0.0, to_write.until - self.clock.time()), MAX_LASTING), 3),
            )
            new = self.remote.write_record(to_write.to_message(self.version))
            if self._push(ref, new, oid):
                return to_write
        raise PublishFailed(ref, self.attempts)

    def claim_probe(self, pool: str, resource: str) -> bool:
        """Claim the one probe across hosts for this pause; True if this host may probe.

        Fetches first, so a claim another host already made costs no push. No
        note (the pause was closed, or never published) means nothing to share:
        this host may probe. A claim left standing unchanged for
        ``probe_timeout`` by this host's own observation is taken over.
        """
        ref = pause_ref(pool, resource)
        self.remote.fetch()
        for _ in range(self.attempts):
            oid = self.repo.ref(ref)
            seen = self.observations.observe(ref, oid)
            note = self._note_at(pool, resource, oid)
            if oid is None:
                return True
            if note is not None:
                self.claimed[(pool, resource)] = note.identity
            if note is not None and note.probe == self.host:
                return True
            if note is not None and note.probe is not None:
                stood = self.observations.observed_for(seen)
                if stood is None or stood < self.probe_timeout:
                    return False
            if note is None:
                # garbage where a note should be: replace it with a note this host can claim
                note = PauseNote(pool, resource, self.clock.time(), "unknown", 0, self.host)
            new = self.remote.write_record(note.with_probe(self.host).to_message(self.version))
            if self._push(ref, new, oid):
                return True
        return False

    def close(self, pool: str, resource: str, *, disproved: str | None = None) -> None:
        """Delete the note once its pause has closed, or once GitHub's answer ``disproved`` the pause
        it announces (an identity): a note for a later pause stays, and a disproved note is never
        published again — its probe claim included (issue 33)."""
        ref = pause_ref(pool, resource)
        for _ in range(self.attempts):
            oid = self.repo.ref(ref)
            if oid is None:
                return
            note = self._note_at(pool, resource, oid)
            if note is not None and note.until > self.clock.time() and (
                disproved is None or note.identity != disproved
            ):
                return
            if self._push(ref, None, oid):
                self.observations.forget([ref, sighting(ref)])
                return

    # --- adoption ------------------------------------------------------------

    @property
    def url(self) -> str:
        """The remote's URL without credentials (it names the remote in this host's state), or its name."""
        if not self._url:
            self._url = redact_url(self.repo.config_get(f"remote.{self.remote.remote}.url") or "")
        return self._url or self.remote.remote

    @property
    def remote_key(self) -> str:
        """The remote these notes live on, whichever clone of it this is (the look's rate is per host)."""
        return self.url

    @property
    def origin(self) -> str:
        """Where these notes live, as the host store remembers an adopted pause's source."""
        return f"{self.url}#{self.repo.common_dir}"

    def first_seen(self, notes: Iterable[PauseNote]) -> dict[str, float]:
        """When this host first saw each note's pause, as a wall time of its own clock.

        Kept by the pause's :attr:`~PauseNote.identity` in the observation store
        (monotonic, per boot), so a note re-written with a later ``Until`` is a
        new sighting, while the same pause seen for hours — or re-written only
        to claim its probe — is the same one: its ceiling does not move on.
        """
        listed = list(notes)
        seen = self.observations.observe_many({sighting(n.ref): n.identity for n in listed})
        now_wall, now_mono = self.clock.time(), self.clock.monotonic()
        result: dict[str, float] = {}
        for note in listed:
            obs = seen.get(sighting(note.ref))
            if obs is not None and obs.first_seen <= now_mono:
                result[note.ref] = now_wall - (now_mono - obs.first_seen)
        return result

    def adopt_into(
        self, store: PauseStore, notes: Iterable[PauseNote] | None = None, *, pools: Collection[str] | None = None
    ) -> int:
        """Hand every note still running to the host store; returns how many were handed.

        Notes whose end by this host's clock (:func:`local_end`) has passed are
        skipped: there is nothing left to pause. The store bounds each by its horizon from when this host first
        saw it, and treats a pause it already has as a no-op. A note GitHub's own
        answer has disproved since (:func:`disproves`) is not obeyed, and goes
        from the remote. With ``pools`` (the pools these notes concern), a pause
        adopted from here whose note has gone, or was disproved, is ended (no
        local answer confirmed it).
        """
        now = self.clock.time()
        listed = list(self.local() if notes is None else notes)
        seen = self.first_seen(listed)
        heard = getattr(store, "heard", None)
        adopted, standing, false = 0, [], []
        for note in listed:
            first = seen.get(note.ref)
            if heard is not None and disproves(note, heard(note.pool, note.resource), first):
                false.append(note)
                continue
            standing.append(note)
            end = local_end(note.until, note.lasting, first if first is not None else now)
            if end <= now:
                continue
            store.adopt(
                note.pool, note.resource, end, note.cls, source=note.host,
                seen_at=first, origin=self.origin,
            )
            adopted += 1
        if pools is not None:
            store.release_adopted(self.origin, pools, {(n.pool, n.resource) for n in standing})
        for note in false:
            try:
                self.close(note.pool, note.resource, disproved=note.identity)
            except Exception as exc:  # the next look tries again; the note is not obeyed meanwhile
                log.debug("could not remove the disproved pause note %s: %s", note.ref, exc)
        return adopted
