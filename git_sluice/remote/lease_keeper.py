"""The I/O side of the lease: read marks, push takes / renewals / take-overs, let go.

Decisions come from :func:`.lease.decide`; this module only gathers what it
needs (the local mirror of the remote's refs, this host's observations) and
carries out what it says, with one compare-and-swap push per call however
many branches are held (docs/design.md#the-lease: one connection per renewal, not one per
branch). A lost race is answered by fetching and reading again, never by
pushing again in the same call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import __version__
from ..clock import Clock
from ..errors import RemoteRefused
from ..records import record
from .lease_record import (
    MARK_ROLES,
    RECORD_TIME,
    ROLES,
    Decision,
    LeaseRecord,
    LeaseView,
    Mark,
    check_name,
    decide,
    lease_ref,
    lease_view,
)
from .observe import ObservationStore

if TYPE_CHECKING:
    from .git import CasUpdate, RefOutcome

if TYPE_CHECKING:
    from ..config import Settings
    from ..repo import Repo
    from .git import RemoteGit

def _not_a_race(remote: str, ref: str, said: str) -> str:
    """A refusal that re-reading showed was no race: say so, and what is likely in the way."""
    parent = ref.rsplit("/", 1)[0]
    return (
        f"{said}; no other writer moved {ref}, so this is no race: something on the remote stops "
        f"the update (a ref such as {parent} in the way of the refs under it, a hook or a protection); "
        f"look with `git ls-remote {remote} 'refs/sluice/*'` and delete what is in the way "
        f"(`git push {remote} :{parent}`)"
    )


_DONE = {"take": "took the lease", "renew": "renewed the lease", "take_over": "took the lease over"}


@record(frozen=True)
class _Assessment:
    branch: str
    mark: Mark | None
    view: LeaseView
    decision: Decision


def _sorted_outcomes(
    wanted: Sequence[_Assessment], updates: Sequence[CasUpdate], outcomes: Sequence[RefOutcome],
) -> tuple[dict[str, str], dict[str, str], list[str], list[tuple[str, CasUpdate, RefOutcome]]]:
    """A push's outcomes per branch: the notes to show, the refused, those to read again, the raced."""
    notes: dict[str, str] = {}
    blocked: dict[str, str] = {}
    reread: list[str] = []
    raced: list[tuple[str, CasUpdate, RefOutcome]] = []
    for assessment, update, outcome in zip(wanted, updates, outcomes):
        action = assessment.decision.action
        if outcome.won:
            notes[assessment.branch] = f"{_DONE[action]}: {assessment.decision.reason}"
        elif outcome.refused:
            blocked[assessment.branch] = outcome.reason or outcome.summary
        else:
            reread.append(assessment.branch)
            notes[assessment.branch] = f"lost the race to {action.replace('_', ' ')}; read again"
            if outcome.lost_race and not outcome.up_to_date:
                raced.append((assessment.branch, update, outcome))
    return notes, blocked, reread, raced


@record(frozen=True)
class Riders:
    """Lease renewals to push in another push; ``started`` is before it began (monotonic), as ensure's."""

    updates: list[CasUpdate]
    started: float


class LeaseKeeper:
    """Holds (or defers on) the intake lease of some branches for one host in one role."""

    def __init__(
        self,
        repo: Repo,
        remote: RemoteGit,
        *,
        host: str,
        role: str,
        lease: float,
        clock: Clock,
        observations: ObservationStore | None = None,
        version: str = __version__,
    ) -> None:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r} (one of {', '.join(ROLES)})")
        if not lease > 0:
            raise ValueError(f"lease must be positive, got {lease!r}")
        self.repo = repo
        self.remote = remote
        self.host = check_name("host", host)
        self.role = role
        self.lease = float(lease)
        self.clock = clock
        self.version = version
        self.observations = observations or ObservationStore(repo.sluice_dir, clock)
        self.margin = 0.0
        register = getattr(remote, "on_fetched", None)
        if register is not None:
            register(("observations", str(self.observations.path), self.observations.boot), self.observations.fetched)

    @classmethod
    def configured(
        cls,
        repo: Repo,
        settings: Settings,
        *,
        role: str,
        clock: Clock,
        remote: RemoteGit | None = None,
        call_deadline: float = 0.0,
    ) -> LeaseKeeper:
        """The keeper the clone's config describes (host, lease, remote): the one wiring every role uses.

        Without ``remote`` it only reads what was last fetched until asked to push (no token, no network).
        ``call_deadline`` is one forge call's whole deadline: a holder stops taking in that long
        before its own lease lapses (at most half the lease), so no call outlasts it.
        """
        if remote is None:
            from .git import RemoteGit  # a writer's: a reader (status) gets by without libgit2

            remote = RemoteGit(repo, settings.remote, clock=clock)
        keeper = cls(repo, remote, host=settings.host, role=role, lease=settings.lease, clock=clock)
        keeper.margin = max(0.0, min(call_deadline, settings.lease / 2))
        return keeper

    # --- reading -------------------------------------------------------------

    def _mark(self, oid: str | None) -> Mark | None:
        if oid is None:
            return None
        message = self.remote.read_message(oid)
        record = LeaseRecord.parse(message) if message is not None else None
        return Mark(oid, record)

    def _assess(self, branches: Sequence[str], *, defer: float = 0.0) -> dict[str, _Assessment]:
        oids = {lease_ref(b): self.repo.ref(lease_ref(b)) for b in branches}
        seen = self.observations.observe_many(oids)
        now = self.clock.monotonic()
        result: dict[str, _Assessment] = {}
        for branch in branches:
            ref = lease_ref(branch)
            mark = self._mark(oids[ref])
            observation, overwritten = seen[ref], False
            if mark is not None and mark.garbage:  # aged by the churn, not the object (issue 33)
                observation = self.observations.garbage_since(ref, mark.oid)
                wrote = self.observations.last_written(ref)
                overwritten = wrote is not None and now - wrote < self.lease
            observed_for = self.observations.observed_for(observation)
            written = None
            if mark is not None and mark.record is not None and mark.record.holder == self.host:
                written = self.observations.written_at(ref, mark.oid)
            decision = decide(
                me=self.host,
                role=self.role,
                mark=mark,
                observed_for=observed_for,
                now_mono=now,
                lease=self.lease,
                last_renewed=written,
                defer=defer,
                overwritten=overwritten,
            )
            view = lease_view(
                branch=branch,
                me=self.host,
                mark=mark,
                observed_for=observed_for,
                written_ago=None if written is None else max(0.0, now - written),
                lease=self.lease,
                note=decision.reason,
                writer=self.role in MARK_ROLES,
                margin=self.margin,
            )
            result[branch] = _Assessment(branch, mark, view, decision)
        return result

    def read(self, branch: str) -> LeaseView:
        """The branch's lease as last fetched (no network); records the observation."""
        return self._assess([branch])[branch].view

    def read_all(self, branches: Sequence[str]) -> dict[str, LeaseView]:
        return {b: a.view for b, a in self._assess(list(branches)).items()}

    # --- writing -------------------------------------------------------------

    def _record_for(self, assessment: _Assessment) -> LeaseRecord:
        decision = assessment.decision
        role = decision.write_role or self.role
        mark = assessment.mark
        if decision.action == "renew" and mark is not None and mark.record is not None:
            return mark.record.renewed(role=role, lease=self.lease, version=self.version)
        return LeaseRecord(self.host, role, self.lease, 0, self.version)

    def ensure(self, branches: Sequence[str], *, fetch: bool = True, defer: float = 0.0) -> dict[str, LeaseView]:
        """Take, renew or take over what the decisions say, in one push; return the views.

        ``fetch=False`` when the caller fetched ``refs/sluice/*`` just before. ``defer``:
        renewals due for less than that are left for the caller's push at the end of its tick
        (a driver's: :meth:`riders`, then ``ensure`` again).
        A lost race (or an unreported outcome) fetches once and reads again; the
        next call decides afresh. :class:`RemoteUnreachable` propagates with
        nothing assumed won; :class:`RemoteRefused` is raised after the wins of
        the same push are recorded.
        """
        from .git import CasUpdate

        branches = list(dict.fromkeys(branches))
        if fetch:
            self.remote.fetch()
        assessed = self._assess(branches, defer=defer)
        wanted = [a for a in assessed.values() if a.decision.writes and self.role in MARK_ROLES]
        if not wanted:
            return {b: a.view for b, a in assessed.items()}
        updates: list[CasUpdate] = []
        for assessment in wanted:
            record = self._record_for(assessment)
            oid = self.remote.write_record(record.to_message(assessment.branch), when=RECORD_TIME)
            expected = assessment.mark.oid if assessment.mark is not None else None
            updates.append(CasUpdate(lease_ref(assessment.branch), oid, expected))
        started = self.clock.monotonic()
        outcomes = self.remote.push_cas(updates)
        won = {o.ref: u.new for u, o in zip(updates, outcomes) if o.won}
        if won:
            self.observations.wrote(won, at=started)
        notes, blocked, reread, raced = _sorted_outcomes(wanted, updates, outcomes)
        if reread:
            self.remote.fetch()
            unknown = {
                u.ref: u.new
                for u, o in zip(updates, outcomes)
                if o.unknown and u.new is not None and self.repo.ref(u.ref) == u.new
            }
            if unknown:
                # the remote applied a push it failed to report: it is ours, from `started`
                self.observations.wrote(unknown, at=started)
            for branch, update, outcome in raced:
                if self.repo.ref(update.ref) == update.expected:
                    # No one moved the ref: the "lost race" was not one (issue #14, point 4) —
                    # e.g. a ref `refs/sluice/intake` in the way of every lease under it.
                    blocked[branch] = _not_a_race(self.remote.remote, update.ref, outcome.reason or outcome.summary)
        final = self._assess(branches)
        views = {b: a.view.with_note(notes.get(b, a.view.note)) for b, a in final.items()}
        for branch, reason in blocked.items():
            views[branch] = views[branch].with_block(reason)
        if blocked:
            branch = next(iter(blocked))
            raise RemoteRefused(self.remote.remote, lease_ref(branch), blocked[branch], views=views)
        return views

    def riders(self, branches: Sequence[str]) -> Riders:
        """The renewals of this host's own marks that are due, for a push going anyway (the survey's).

        Only renewals ride: a take or a take-over is the tick's own push, after its
        own look (issue 29: about one push a minute per repository for the fleet).
        """
        from .git import CasUpdate

        if self.role not in MARK_ROLES:
            return Riders([], self.clock.monotonic())
        started = self.clock.monotonic()
        updates = []
        for assessment in self._assess(list(dict.fromkeys(branches))).values():
            if assessment.decision.action != "renew" or assessment.mark is None:
                continue
            record = self._record_for(assessment)
            oid = self.remote.write_record(record.to_message(assessment.branch), when=RECORD_TIME)
            updates.append(CasUpdate(lease_ref(assessment.branch), oid, assessment.mark.oid))
        return Riders(updates, started)

    def rode(self, riders: Riders, outcomes: Sequence[RefOutcome]) -> None:
        """Record the renewals that won in another push, as :meth:`ensure` records its own."""
        won = {u.ref: u.new for u, o in zip(riders.updates, outcomes) if o.won}
        if won:
            self.observations.wrote(won, at=riders.started)

    def renew_due(self, branches: Sequence[str]) -> None:
        """Push the renewals still due (none rode a push this tick), nothing else: a driver's tick's end.

        A lost race or a refusal is left to the next tick's look and :meth:`ensure`, which decide afresh.
        """
        riders = self.riders(branches)
        if riders.updates:
            self.rode(riders, self.remote.push_cas(riders.updates))

    def release(self, branches: Sequence[str]) -> None:
        """Delete this host's marks of this role (CAS on the object id last seen).

        A mark renewed meanwhile by another process of the host, or taken by
        another host, is left alone: the lease is not ours to drop then.
        """
        from .git import CasUpdate

        updates: list[CasUpdate] = []
        for branch in dict.fromkeys(branches):
            ref = lease_ref(branch)
            mark = self._mark(self.repo.ref(ref))
            if mark is None or mark.record is None:
                continue
            if mark.record.holder != self.host or mark.record.role != self.role:
                continue
            updates.append(CasUpdate(ref, None, mark.oid))
        if not updates:
            return
        outcomes = self.remote.push_cas(updates)
        gone = {o.ref: None for o in outcomes if o.won}
        if gone:
            self.observations.wrote(gone, at=self.clock.monotonic())
        for outcome in outcomes:
            if outcome.refused:
                raise RemoteRefused(self.remote.remote, outcome.ref, outcome.reason or outcome.summary)
