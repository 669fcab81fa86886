"""Wiring the host watch into a session: which watch group a clone belongs to, and who may tick.

Every round of a clone reads the watch's answers (a reader needs no forge);
only a driver ticks it, with a forge of its own whose kept answers live in
the watch's folder of the host state dir, so whichever driver ticks next
revalidates what the last one asked (ETags are the pool's, not the clone's).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import CredentialsRefused, Interrupted
from ..forge.auth import known_pool
from ..forge.kept import KeptAnswers
from ..intake.hostwatch import HostWatch
from ..intake.watchstore import group_of
from .session import Session

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
        )
    except (Interrupted, CredentialsRefused):
        raise  # a stop, or a 401 when the pool is learned: the caller's to handle, not an optimisation's
    except Exception as exc:  # the watch is an optimisation: never a reason for a command to fail
        log.warning("no host watch for this clone (%s): its rounds ask for themselves", exc)
        return None
    session.watch = watch
    return watch


def tick_watch(session: Session, branches: Sequence[str]) -> HostWatch | None:
    """A driver's part: say what it takes in, then tick the host watch if due (raises only ``Interrupted``)."""
    watch = watch_for(session, ticking=True)
    if watch is None:
        return None
    try:
        watch.register(branches)
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
    round), or its own tick's end for the lease renewals, whichever comes first."""
    own = started + tick
    if watch is None:
        return own
    try:
        at = watch.next_at()
    except Exception:
        return own
    if at is None or at <= session.clock.time():
        return own
    return min(own, at)
