"""One process's wiring: settings, the host store, the forge client and the remote.

Every command builds its world here, so the rules hold for all of them the
same way: the host pause store is consulted before any call, a pause the
forge opens is published to the fleet through a pause note, the pause notes
last fetched are adopted before the first call, and the one probe at a
pause's end is claimed on the note so one host probes for the whole fleet.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import field
from pathlib import Path
from typing import Callable

import httpx

from ..clock import Clock, default_clock
from ..config import Settings, load_settings
from ..forge.auth import Credentials, api_host, credentials_from_settings, known_pool
from ..forge.client import Forge
from ..forge.gate_machine import PauseView
from ..forge.hoststore import HostStore, Outcome, Permit, Wait
from ..forge import pacing
from ..forge.kept_answers import KeptAnswers
from ..forge.poolguard import PoolHosts
from ..paths import host_state_dir
from ..records import record
from ..remote.git import RemoteGit
from ..remote.looks import RemoteLooks, look_key
from ..remote.notes import PauseNote, PauseNotes
from ..repo import Repo
from .pausecheck import PauseChecks
from .poolfile import record_pools

log = logging.getLogger("git_sluice")

# After losing the fleet's probe claim, look again this much later: the winner's
# probe is on the wire now, and its outcome reaches us with the next fetch.
PROBE_LOST_BACKOFF = 30.0


@record
class Session:
    repo: Repo
    settings: Settings
    clock: Clock
    store: HostStore
    forge: Forge
    remote: RemoteGit
    notes: PauseNotes
    credentials: Credentials
    pool_hosts: PoolHosts | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    forge_with: Callable[..., Forge] | None = None
    """Another forge on the same road with kept answers elsewhere (the host watch's), and other
    credentials where given (``serve``'s callers' own tokens)."""
    watch: object | None = None
    """The host watch this session ticks, once built (:func:`git_sluice.runtime.watching.watch_for`)."""
    role: str = "step"
    """How this session's rounds read the leases (``driver``, ``wait``, ``step``): set by
    :func:`git_sluice.runtime.rounds.intake_for`; the watch's registration reads them the same way."""
    looks: RemoteLooks | None = None
    """When this host's processes last fetched this clone's remote: a look begun a moment ago is this
    session's own (one look at a remote per host per tick, issue 29)."""

    @property
    def owner_name(self) -> tuple[str, str]:
        owner, name = self.settings.repository.split("/", 1)
        return owner, name

    def close(self) -> None:
        for close in reversed(self.closers):
            try:
                close()
            except Exception as exc:  # closing must not mask the command's own outcome
                log.debug("closing: %s", exc)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FleetPauses:
    """The forge's link to the fleet: publish a pause, claim the probe, close the note, look for notes."""

    def __init__(self, notes: PauseNotes, store: HostStore, host: str, clock: Clock,
                 on_pool: Callable[[str], None] | None = None, checks: PauseChecks | None = None) -> None:
        self.notes = notes
        self.store = store
        self.host = host
        self.clock = clock
        self.on_pool = on_pool
        self.checks = checks

    def look(self, pool: str) -> None:
        """Before a call: at most once per interval per host, see whether the pool's notes moved
        on the remote, and adopt what did (issue #14, point 14). Never raises."""
        if self.checks is None:
            return
        try:
            if not self.checks.claim(self.notes.remote_key, self.clock.time()):
                return
            if self.notes.check_remote(pool):
                notes = [n for n in self.notes.local() if n.pool == pool]
                self.notes.adopt_into(self.store, notes, pools=[pool])
        except Exception as exc:  # the remote out of reach costs the look, never the call
            log.debug("could not look at the pause notes on the remote: %s", exc)

    def fetched(self, started: float) -> None:
        """A fetch that began at monotonic ``started`` brought the pool's notes: it counts as a look.

        The call right after a round's fetch then sends no ``ls-remote`` of the
        notes it just fetched (issue 15). Never raises: the fetch has succeeded.
        """
        if self.checks is None:
            return
        try:
            began = self.clock.time() - max(0.0, self.clock.monotonic() - started)
            self.checks.looked(self.notes.remote_key, began)
        except Exception as exc:
            log.debug("could not record the fetch as a look at the pause notes: %s", exc)

    def published(self, pause: PauseView) -> None:
        """Host first (already written), then the fleet: a failure here keeps the host's pause."""
        if self.on_pool is not None:
            self.on_pool(pause.pool)
        note = PauseNote(
            pool=pause.pool,
            resource=pause.resource,
            until=pause.until,
            cls=pause.cls or "unknown",
            epoch=pause.epoch,
            host=self.host,
            probe=None,
        )
        try:
            self.notes.publish(note)
        except Exception as exc:
            log.warning("pause kept on this host only: could not publish it to the remote (%s)", exc)

    def claim(self, permit: Permit) -> bool:
        """One probe across hosts: the note names who probes. Unreachable remote: probe locally."""
        try:
            won = self.notes.claim_probe(permit.pool, permit.resource)
        except Exception as exc:
            log.warning("could not claim the probe on the remote (%s): probing for this host alone", exc)
            return True
        if not won:
            note = self.notes.read(permit.pool, permit.resource)
            holder = note.probe if note is not None else "another host"
            log.info("%s probes %s/%s for the fleet; waiting for its outcome", holder, permit.pool, permit.resource)
            self.store.finish(permit, Outcome("not_attempted"))
            self.store.adopt(
                permit.pool,
                permit.resource,
                self.clock.time() + PROBE_LOST_BACKOFF,
                note.cls if note is not None else "unknown",
                source=holder or "another host",
            )
        return won

    def probed(self, permit: Permit) -> None:
        """The probe succeeded: the allowance answers again, so the fleet's note goes — the note whose
        probe this host claimed even if it claims a later ``Until``: GitHub's answer outranks it."""
        try:
            self.notes.close(permit.pool, permit.resource, disproved=self.notes.claimed.pop(
                (permit.pool, permit.resource), None))
        except Exception as exc:
            log.warning("could not delete the pause note on the remote (%s)", exc)


def open_session(
    path: str | Path = ".",
    *,
    clock: Clock | None = None,
    need_branches: bool = True,
    on_wait: Callable[[Wait], None] | None = None,
    transport: httpx.BaseTransport | None = None,
    store: HostStore | None = None,
    cancel: threading.Event | None = None,
) -> Session:
    """Everything one command needs; raises ConfigError / NoCredentials before any call.

    ``cancel``, once set (a SIGTERM handler's job), ends the forge's waits with ``Interrupted`` and gives
    up a call on the wire with ``CallCancelled`` (the credentials' own calls included).
    """
    clock = clock or default_clock()
    repo = Repo.discover(path)
    settings = load_settings(repo.workdir or repo.git_dir, need_branches=need_branches, refs=repo.refs)
    state_dir = host_state_dir()
    credentials = credentials_from_settings(
        api=settings.api,
        app_id=settings.app_id,
        app_key_file=settings.app_key_file,
        installation=settings.installation,
        state_dir=state_dir,
        clock=clock,
        transport=transport,
        cancel=cancel,
    )
    if log.isEnabledFor(logging.DEBUG):
        log.debug("GitHub API %s (%s), GraphQL %s; token from %s", settings.api,
                  settings.origins.get("sluice.api", ("", "default"))[1], settings.graphql, credentials.source)
    own_store = store is None
    store = store or HostStore(clock=clock)
    remote = RemoteGit(repo, settings.remote, clock=clock, pools=lambda: own_pools(credentials, repo.sluice_dir))
    notes = PauseNotes(repo, remote, host=settings.host, clock=clock, url=settings.remote_url)
    pool_hosts = PoolHosts(state_dir)
    fleet = FleetPauses(notes, store, settings.host, clock,
                        on_pool=lambda pool: pool_hosts.remember(pool, api_host(settings.api)),
                        checks=PauseChecks(state_dir) if settings.enforce else None)
    if fleet.checks is not None:
        remote.on_fetched(("pause-look", state_dir), fleet.fetched)
    forge_with = _forge_maker(settings, credentials, store, clock, fleet, pool_hosts,
                              on_wait=on_wait, transport=transport, cancel=cancel)
    forge = forge_with(KeptAnswers(repo.sluice_dir / "kept"))
    # beside the host store it shares this host's state with (the state dir, or a test host's own)
    looks = RemoteLooks(store.path.parent, clock)
    key = look_key(repo.common_dir, settings.remote)
    remote.on_fetched(("looks", key), lambda started: looks.noted(key, started, remote.last_refspecs))
    session = Session(repo, settings, clock, store, forge, remote, notes, credentials, pool_hosts,
                      forge_with=forge_with, looks=looks)
    session.closers.append(forge.close)
    if own_store:
        session.closers.append(store.close)
    adopt_notes(session)
    return session


def _forge_maker(
    settings: Settings, credentials: Credentials, store: HostStore, clock: Clock, fleet: FleetPauses,
    pool_hosts: PoolHosts, *, on_wait: Callable[[Wait], None] | None, transport: httpx.BaseTransport | None,
    cancel: threading.Event | None,
) -> Callable[..., Forge]:
    """How the session makes a forge: its road and credentials, its answers kept where the caller says.

    An observe-only host (``sluice.enforce`` false) claims no probe and looks at
    no pause note before a call: it only notes what it would have done.
    """

    rules = pacing.WriteRules(admission=pacing.Admission(settings.write_rate, settings.write_burst)
                              if settings.write_rate is not None and settings.write_burst is not None else None)

    def forge_with(kept: KeptAnswers, caller: Credentials | None = None) -> Forge:
        return Forge(
            api=settings.api,
            graphql_url=settings.graphql,
            credentials=caller or credentials,
            store=store,
            kept=kept,
            clock=clock,
            enforce=settings.enforce,
            on_pause=fleet.published,
            on_wait=on_wait,
            probe_claim=fleet.claim if settings.enforce else None,
            before_call=fleet.look if settings.enforce else None,
            on_probed=fleet.probed,
            transport=transport,
            cancel=cancel,
            pool_hosts=pool_hosts,
            write_rules=rules,
            write_patience=settings.write_patience,
        )

    return forge_with


def own_pools(credentials: Credentials, sluice_dir: Path | None = None) -> list[str] | None:
    """The pools whose notes concern this clone (None: not known without a call yet).

    With ``sluice_dir``, the pool is also kept for ``status`` (:mod:`.poolfile`).
    """
    pool = known_pool(credentials)
    if pool is None:
        return None
    if sluice_dir is not None:
        record_pools(sluice_dir, [pool])
    return [pool]


def adopt_notes(session: Session) -> int:
    """Hand this clone's pools' pause notes as last fetched to the host store (no network).

    Notes of other teams' pools (a mirror an older setup filled) are not this
    host's business: they are neither adopted nor shown.
    """
    if not session.settings.enforce:
        return 0
    try:
        pools = own_pools(session.credentials, session.repo.sluice_dir)
        notes = [n for n in session.notes.local() if pools is None or n.pool in pools]
        if session.pool_hosts is not None:  # this remote's notes are pools of this clone's API host
            for note in notes:
                session.pool_hosts.remember(note.pool, api_host(session.settings.api))
        # an unknown pool (a token not yet named) obeys every note: asking whose it is would spend.
        # A pause adopted from this remote whose note has gone ends too: of this clone's pools, or
        # of every pool while its own is unknown (it then fetches every pool's notes)
        concerned = pools if pools is not None else {n.pool for n in notes} | {p.pool for p in session.store.pauses()}
        return session.notes.adopt_into(session.store, notes, pools=concerned)
    except Exception as exc:  # a garbage note must never crash a round
        log.warning("could not read the pause notes: %s", exc)
        return 0


def fetch_and_adopt(session: Session, *extra_refspecs: str, share: float | None = None) -> str | None:
    """Fetch the leases and this clone's pause notes (and extras), adopt the notes; returns
    an error text or None. With ``share`` (seconds: a driver's tick, a wait's look), a fetch of
    all that by any process of this host within that long (the host watch's look at the
    fleet's surveys, usually) stands for this one (:mod:`git_sluice.remote.looks`).

    A host that cannot reach the remote keeps its own pauses and keeps working:
    nothing waits on the remote to stop a call.
    """
    error = None
    try:
        if share is not None and session.looks is not None:
            key = look_key(session.repo.common_dir, session.settings.remote)
            shared = session.looks.share_or_fetch(
                key, [*session.remote.sluice_refspecs(), *extra_refspecs], share,
                lambda riders: session.remote.fetch(*extra_refspecs, *riders),
            )
            if shared is not None:  # the host watch, or another process, fetched all this a moment ago
                session.remote.fetched_elsewhere(shared)
        else:
            session.remote.fetch(*extra_refspecs)
    except Exception as exc:
        error = str(exc)
        log.warning("could not fetch refs/sluice/* from %s: %s", session.settings.remote, exc)
    adopt_notes(session)
    return error


def reread_credentials(session: Session) -> None:
    """Read the credentials again (after GitHub refused them): a replaced token is used from now on.

    The forge asks its credentials at every call, so swapping them is enough;
    a source that no longer yields any keeps the old ones (the next call says 401 again).
    """
    try:
        fresh = credentials_from_settings(
            api=session.settings.api,
            app_id=session.settings.app_id,
            app_key_file=session.settings.app_key_file,
            installation=session.settings.installation,
            state_dir=host_state_dir(),
            clock=session.clock,
            cancel=session.forge.waits.cancel,
        )
    except Exception as exc:
        log.warning("could not read the credentials again: %s", exc)
        return
    session.credentials = fresh
    session.forge.set_credentials(fresh)
