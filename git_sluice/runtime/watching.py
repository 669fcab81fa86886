"""Wiring the host watch into a session: which watch group a clone belongs to, and who may tick.

Every round of a clone reads the watch's answers (a reader needs no forge);
only a driver ticks it, with a forge of its own whose kept answers live in
the watch's folder of the host state dir, so whichever driver ticks next
revalidates what the last one asked (ETags are the pool's, not the clone's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import CredentialsRefused, Interrupted
from ..forge.auth import known_pool
from ..forge.kept_answers import KeptAnswers
from ..intake.hostwatch import HostWatch
from ..intake.queue import QueueStore
from ..intake.survey import Draft
from ..intake.watchstore import CloneRemote, group_of
from ..jsonshape import field_map
from ..remote.git import tracking_refspecs
from ..remote.looks import RemoteLooks
from ..remote.lease_keeper import LeaseKeeper
from ..remote.surveys import KeptBlob, SurveyRemote, survey_ref
from ..statefile import JsonDocument
from .session import Session, own_pools

log = logging.getLogger("git_sluice")

WATCH_DIR = "watch"


def watch_for(session: Session, *, ticking: bool = False) -> HostWatch | None:
    """The clone's host watch (a ticking one for a driver); None when it cannot be had (the old way then).

    A ticking watch learns the pool (one ``GET /user`` per token per host, if
    never learned); a reader only uses a pool already known, costing nothing.
    """
    existing = session.watch
    if isinstance(existing, HostWatch) and (existing.forge is not None or not ticking):
        return existing
    try:
        pool = session.forge.pool if ticking else known_pool(session.credentials)
        if pool is None:
            return None
        settings = session.settings
        group = group_of(settings.api, settings.graphql, pool)
        # beside the host store it shares this host's state with (the state dir, or a test host's own)
        watch_dir = session.store.path.parent / WATCH_DIR
        forge = None
        if ticking and session.forge_with is not None:
            forge = session.forge_with(KeptAnswers(watch_dir / group / "kept"))
            session.closers.append(forge.close)
        watch = HostWatch(
            watch_dir=watch_dir, group=group, clone=str(session.repo.sluice_dir.resolve()),
            repository=settings.repository, host=settings.host, discovery=settings.discovery,
            clock=session.clock, sluice_dir=session.repo.sluice_dir, forge=forge,
            budget=session.store.budget, pool=pool,
            surveys=_survey_places(session) if forge is not None else None,
        )
    except (Interrupted, CredentialsRefused):
        raise  # a stop, or a 401 when the pool is learned: the caller's to handle, not an optimisation's
    except Exception as exc:  # the watch is an optimisation: never a reason for a command to fail
        log.warning("no host watch for this clone (%s): its rounds ask for themselves", exc)
        return None
    session.watch = watch
    return watch


def _survey_places(session: Session) -> Callable[[CloneRemote], SurveyRemote]:
    """Where the ticking watch reads and writes each repository's survey: a clone of it on this host."""
    looks = session.looks or RemoteLooks(session.store.path.parent, session.clock)

    def place(clone: CloneRemote) -> SurveyRemote:
        return SurveyRemote(Path(clone.clone).parent, clone.remote, clock=session.clock, looks=looks,
                            pools=clone.pools, refspecs=clone.refspecs)

    return place


def clone_remote(session: Session, branches: Sequence[str]) -> CloneRemote:
    """How this clone's driver fetches: its remote, the branches it takes in, its pools' notes."""
    pools = own_pools(session.credentials)
    return CloneRemote(
        clone=str(session.repo.sluice_dir.resolve()), remote=session.settings.remote,
        refspecs=tuple(tracking_refspecs(session.settings.remote, branches)),
        pools=tuple(pools) if pools is not None else None,
    )


def mirrored(session: Session, branches: Sequence[str]) -> dict[str, str | None]:
    """Of ``branches``, those this host does not take in (another host holds them, or this host's own
    lease lapsed or could not be written), each with the holder the lease names, as last fetched (no
    network; leases that cannot be read are no one else's: the branches are asked, as before)."""
    try:
        keeper = LeaseKeeper.configured(session.repo, session.settings, role=session.role, clock=session.clock,
                                        remote=session.remote, call_deadline=session.forge.timeout)
        views = keeper.read_all(list(branches))
    except Exception as exc:
        log.info("could not read the leases (%s): the watch asks every branch", exc)
        return {}
    return {b: v.holder for b, v in views.items() if not v.takes_in}


def tick_watch(session: Session, branches: Sequence[str]) -> HostWatch | None:
    """A driver's part: say what it takes in, then tick the host watch if due (raises only ``Interrupted``).

    ``branches`` are all the clone follows. Those another host holds (by the
    leases as last fetched: :func:`mirrored`) the watch asks GitHub nothing
    for, and takes their holder's survey instead, so a round of such a branch shows the holder's
    queue without a call (:meth:`git_sluice.intake.round.Intake._mirrors`).
    """
    watch = watch_for(session, ticking=True)
    if watch is None:
        return None
    try:
        watch.register(branches, clone_remote(session, branches), mirrors=mirrored(session, branches))
        watch.tick()
    except (Interrupted, CredentialsRefused):
        raise  # a stop request ends the tick, as it ends any wait on the road; a 401 is the driver's to back off
    except Exception as exc:
        log.warning("the host watch could not tick (%s): rounds ask for themselves", exc)
    return watch


def follow_watch(session: Session, branch: str, number: int, head: Mapping[str, Any] | None) -> HostWatch | None:
    """A wait's part when another host takes its branch in: follow the request, tick the watch if due.

    Raises only ``Interrupted`` and ``CredentialsRefused``; None when there is
    no watch to be had (the wait then asks for the request itself, the old way).
    """
    watch = watch_for(session, ticking=True)
    if watch is None:
        return None
    try:
        watch.follow(branch, number, head)
        watch.tick()
    except (Interrupted, CredentialsRefused):
        raise
    except Exception as exc:
        log.warning("the host watch could not follow #%s (%s): the wait asks for itself", number, exc)
        return None
    return watch


def next_wake(session: Session, watch: HostWatch | None, started: float, tick: float) -> float:
    """When a driver wakes next: the host watch's next tick (the host's clock, not a sleep after each
    round), or its own tick's end for the lease renewals when that comes first by more than half a
    tick. A driver woken a few seconds before the watch's tick would look at the remote twice in one
    tick (its own fetch, then the watch's look): it wakes with the watch instead, and takes its look
    (the lease is renewed every third of it: a few seconds later is nothing to it)."""
    own = started + tick
    if watch is None:
        return own
    try:
        at = watch.next_at()
    except Exception:
        return own
    if at is None or at <= session.clock.time():
        return own
    return at if at <= own + tick / 2 else own


SURVEYED_FILE = "surveyed.json"
"""Per base this clone surveys for the fleet: what it last pushed, and what that was built from."""


def publish_surveys(session: Session, branches: Sequence[str], *, keeper: LeaseKeeper | None = None) -> list[str]:
    """After this clone's rounds: push the surveys of the branches it holds, where they changed.

    A survey is built from the host watch's answers and the queue the rounds
    just wrote (:meth:`HostWatch.survey_drafts`), so every request a mirror
    lists comes with its reading. Nothing is built while neither moved since
    the last push (the watch's list and heads, the queue file, the survey on
    the remote), and an unchanged survey is not pushed again: a quiet branch
    costs the remote nothing. Where the remote holds this clone's own last
    survey, a shard whose key did not move is not encoded again: its blob is
    taken from that survey's tree (:class:`~git_sluice.intake.survey.Draft`),
    and the push carries the shards that moved. One push for all of them,
    carrying ``keeper``'s lease renewals that are due (a driver holds them to
    its tick's end for this push); returns the bases pushed.
    """
    watch = session.watch
    if not isinstance(watch, HostWatch) or watch.surveys is None or watch.pool is None:
        return []
    pool = watch.pool
    try:
        others = mirrored(session, branches)
        held = [b for b in dict.fromkeys(branches) if b not in others]
        memory = JsonDocument(session.repo.sluice_dir / SURVEYED_FILE, what="surveys pushed")
        said = memory.read()
        queue = QueueStore(session.repo.sluice_dir)
        due = _due(session, watch, pool, held, said, queue)
        if not due:
            return []
        drafts = watch.survey_drafts(due, {b: queue.load(b).entries for b in due})
        place = _survey_places(session)(clone_remote(session, branches))
        keys = {b: d.keys() for b, d in drafts.items()}
        digests = {b: d.digest(keys[b]) for b, d in drafts.items()}
        fresh = {b: _survey_files(place, d, keys[b], field_map(said, b), due[b][1]) for b, d in drafts.items()
                 if not (field_map(said, b).get("digest") == digests[b] and field_map(said, b).get("oid") == due[b][1])}
        pushed: dict[str, str] = {}
        if fresh:
            riders = keeper.riders(held) if keeper is not None else None
            own = {b: oid for b in fresh if isinstance(oid := field_map(said, b).get("oid"), str)}
            done = place.publish(pool, fresh, expected={b: due[b][1] for b in fresh},
                                 repository=session.settings.repository, host=session.settings.host, own=own,
                                 riders=riders.updates if riders is not None else ())
            pushed = done.stands
            if keeper is not None and riders is not None:
                keeper.rode(riders, done.riders)
        with memory.update() as data:
            for base in drafts:
                oid = pushed.get(base) if base in fresh else due[base][1]
                if oid is not None:
                    data[base] = {"basis": due[base][0], "digest": digests[base], "oid": oid, "shards": keys[base]}
        return sorted(pushed)
    except (Interrupted, CredentialsRefused):
        raise
    except Exception as exc:  # the fleet's survey is an optimisation: the mirrors go stale, nothing breaks
        log.warning("could not publish the fleet's survey (%s)", exc)
        return []


def _due(session: Session, watch: HostWatch, pool: str, held: Sequence[str], said: Mapping[str, object],
         queue: QueueStore) -> dict[str, tuple[str, str | None]]:
    """The held bases whose survey may have moved: (what it is built from, the survey on the remote)."""
    due: dict[str, tuple[str, str | None]] = {}
    for base in held:
        header = watch.header(base)
        if header is None:
            continue  # no fresh answers for it: no survey that would say it was read
        basis = f"{header.epoch} {header.changed_tick} {header.heads_tick} {queue.fingerprint(base)}"
        remote = session.repo.ref(survey_ref(pool, base))
        last = field_map(said, base)
        if last.get("basis") == basis and last.get("oid") == remote:
            continue  # nothing it is built from moved, and the remote holds this clone's own
        due[base] = (basis, remote)
    return due


def _survey_files(place: SurveyRemote, draft: Draft, keys: Mapping[str, str], last: Mapping[str, object],
                  remote: str | None) -> dict[str, bytes | KeptBlob]:
    """A survey's blobs for its push: the shards whose key stands as in the survey this clone last
    pushed — when the remote still holds that very survey — are its blobs, not encoded again."""
    before = last.get("shards")
    kept: dict[str, KeptBlob] = {}
    if remote is not None and last.get("oid") == remote and isinstance(before, dict):
        on_remote = place.blob_ids(remote)
        kept = {name: KeptBlob(on_remote[name]) for name, key in keys.items()
                if before.get(name) == key and name in on_remote}
    return {**draft.files(kept=kept), **kept}
