"""One round: take one branch's open pull requests in, asking only what could have moved.

The order is the product's rule (docs/design.md#one-round):

1. the lease as last fetched — another host's live mark means no call at all,
   and this host's entries for the branch are withdrawn, naming the holder;
2. the host watch's answers, when fresh (:mod:`.hostwatch`): they stand for
   steps 3 and 4, for the whole host at once; else the discovery clock —
   within the interval, with nothing moved locally, no call;
3. the conditional list of open requests (every page; a 304 costs nothing);
4. cheap conditional GETs of the checks of requests still waiting on them
   (another system's check moves no ``updated_at``);
5. ONE GraphQL read (paged) of the requests that moved;
6. the queue.

Rounds of one branch are serialised per clone by a file lock, so ten
processes starting at once make one list call and one query in total: the
nine that wait find the discovery clock already wound.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ..clock import Clock
from ..remote.words import lease_words
from ..errors import AllowanceSpent, CredentialsRefused, Interrupted, LeaseLapsed, SluiceError, local_time
from ..forge.client import Forge
from ..remote.lease_record import LeaseView
from ..statefile import file_lock, held
from . import graphql as gq
from .discovery import LOCAL_MOVEMENT_REASONS, DiscoveryLog, due
from .hostwatch import BaseView, HostWatch
from .report import RoundReport, RoundsLog
from .queue import Entry, QueueDoc, QueueStore, checks_expected, derive_state, entry_from_reading
from .readings import ReadingPlan, needs_recheck, plan_readings
from . import standing as standings
from .standing import Standing

log = logging.getLogger("git_sluice")

LeaseReader = Callable[[str], LeaseView | None]

OWN_LIST_REASONS = frozenset({"push", "opened"})
"""Local movement the host watch's last tick cannot have seen: the round asks its own list at once."""

ROUND_LOCK_TIMEOUT = 600.0
"""A round (not a document) is held for its whole run, GitHub's answers included, so it waits longer."""


def _safe(branch: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else f"%{ord(c):02x}" for c in branch)


class Intake:
    """Rounds for one clone; the forge and the lease reader are handed in (tests inject them)."""

    def __init__(
        self,
        *,
        sluice_dir: Path,
        repository: str,
        host: str,
        discovery: float,
        forge: Forge,
        clock: Clock,
        lease_reader: LeaseReader,
        branch_rev: Callable[[str], str | None],
        watch: HostWatch | None = None,
        head_rev: Callable[[str], str | None] | None = None,
        ticker: Callable[[str], HostWatch | None] | None = None,
    ) -> None:
        self.sluice_dir = Path(sluice_dir)
        self.owner, self.name = repository.split("/", 1)
        self.repository = repository
        self.host = host
        self.discovery = discovery
        self.forge = forge
        self.clock = clock
        self.lease_reader = lease_reader
        self.branch_rev = branch_rev
        self.queue = QueueStore(self.sluice_dir)
        self.discovery_log = DiscoveryLog(self.sluice_dir)
        self.rounds = RoundsLog(self.sluice_dir)
        self.watch = watch
        """The host watch (None: this clone asks for itself, the old way)."""
        self.head_rev = head_rev
        """A request head branch as this clone's last push or fetch left it on the remote (its
        remote-tracking ref); None: unknown, and a push's round reads the pushed requests instead."""
        self.ticker = ticker
        """For a one-shot ``intake``: ticks the host watch for a branch (None: the rounds only read it)."""
        self._guarding: str | None = None

    # -- the round ---------------------------------------------------------
    def round(
        self, branch: str, *, reason: str = "discovery", wait: bool = False, deadline: float | None = None,
        pushed: frozenset[str] = frozenset(),
    ) -> RoundReport:
        """One round of ``branch`` (see the module); ``pushed``: request heads a push from here just moved."""
        started = self.clock.time()
        lease = self.lease_reader(branch)
        holder = lease.holder if lease is not None and lease.oid is not None else None
        mirror = False
        if lease is not None and not lease.takes_in:
            if _own_failure(lease):
                report = self._unleased(branch, lease, started)
            elif self._mirrors(branch, reason):
                mirror = True  # on the host watch's answers alone, below: no call of its own
            else:
                log.debug("%s: %s holds the lease: no call, this clone's entries withdrawn", branch, lease.holder or "a foreign mark")
                report = self._defer(branch, lease, started)
            if not mirror:
                self.rounds.record(report)
                return report
        lock = file_lock(self.sluice_dir / f"round-{_safe(branch)}.lock", timeout=ROUND_LOCK_TIMEOUT)
        with held(lock, busy=f"the round lock of {branch}"):
            now = self.clock.time()
            rev = self.branch_rev(branch)
            self._tick_if_due(branch, reason, now, rev)
            standing = self._standing_round(branch, reason, holder, rev, started)
            if standing is not None:
                return standing
            watched, forced = self._watched(branch, reason, pushed)
            if watched is not None:
                return self._watched_round(branch, watched, holder, rev, started, wait=wait, deadline=deadline,
                                           forced=frozenset() if mirror else forced, calls=not mirror)
            if mirror and lease is not None:  # the answers went stale while this round waited: as before the fleet
                report = self._defer(branch, lease, started)
                self.rounds.record(report)
                return report
            decision = due(self.discovery_log.last(branch), now=now, interval=self.discovery, rev=rev, reason=reason)
            log.debug("%s: %s: %s", branch, "asking GitHub" if decision.ask else "no call", decision.why)
            if not decision.ask:
                report = RoundReport(
                    branch, "within-interval", f"{decision.why}; next discovery at {local_time(decision.next_at or now)}",
                    holder=holder, started_at=started, finished_at=now, next_discovery=decision.next_at,
                )
                return report
            before = _snapshot(self.forge)
            report = RoundReport(branch, "taken-in", decision.why, holder=holder, started_at=started)
            last = self.discovery_log.last(branch)
            base_moved = self._base_moved(branch, rev)
            with self._taking_in(branch, report, before):
                self._take_in(branch, report, holder, base_moved=base_moved, wait=wait, deadline=deadline)
                # Local movement asks at once but does not wind the discovery clock: a hook's round
                # between ticks must not push the driver's next tick back (issue 12).
                wound = last.asked_at if reason in LOCAL_MOVEMENT_REASONS and last is not None else now
                self.discovery_log.record(branch, asked_at=wound, rev=rev)
                report.next_discovery = now + self.discovery
            return report

    def _mirrors(self, branch: str, reason: str) -> bool:
        """Whether a round of a branch another host holds takes the host watch's answers in, with no call.

        The host watch's answers for the base are the fleet's (its survey, or
        this host's own read when its tick found none): the lease holder's
        rounds read the same lists, readings and head states. Taking them in
        here shows every host the same queue (issue 29) for nothing; what the
        answers leave unread — a request no reading of the fleet covers yet —
        keeps the entry this clone had, and a request never queued here waits
        for the next survey. Without fresh answers the round withdraws, as
        before (a host that runs no watch).
        """
        if self.watch is None or reason in OWN_LIST_REASONS:
            return False
        return self.watch.header(branch) is not None

    def _tick_if_due(self, branch: str, reason: str, now: float, rev: str | None) -> None:
        """A one-shot ``intake`` whose round would ask GitHub ticks the host watch first (if the watch is
        due), as a wait does: a host may run no driver, and the watch's tick — one conditional list,
        the waiting heads on their back-off — is what the round then reads, instead of every list page
        and every waiting head's probes. Decided under the round lock, on this clone's own discovery
        clock: of ten intakes started at once the first ticks, and the nine that wait for the lock find
        the clock wound, and tick nothing."""
        if self.ticker is None or reason != "intake":
            return
        decision = due(self.discovery_log.last(branch), now=now, interval=self.discovery, rev=rev, reason=reason)
        if not decision.ask:
            return
        log.debug("%s: asking GitHub: %s (the host watch first, if it is due)", branch, decision.why)
        try:
            watch = self.ticker(branch)
        except (AllowanceSpent, Interrupted, CredentialsRefused):
            # a pause, a stop, or a refused token: the round's own answer too (asking again would
            # send the refused token a second time, and print the same 401 twice: issue 31)
            raise
        except SluiceError as exc:  # the watch is an optimisation: the round asks for itself
            log.warning("the host watch could not tick for %s (%s): the round asks for itself", branch, exc)
            return
        if watch is not None:
            self.watch = watch

    @contextmanager
    def _taking_in(self, branch: str, report: RoundReport, before: tuple[int, int, int, int]) -> Iterator[None]:
        """One round's calls, guarded by the lease between them, and its report whatever the end."""
        try:
            self._guarding = branch
            yield
        except LeaseLapsed as exc:
            # this host's own lease ran out mid-round: it stops here, its successor goes on
            report.outcome, report.why = "unleased", str(exc)
        except AllowanceSpent as exc:
            report.outcome, report.why, report.paused_until = "paused", str(exc), exc.until
            raise
        except Exception as exc:
            report.outcome, report.why = "failed", str(exc) or type(exc).__name__
            raise
        finally:
            self._guarding = None
            self._settle()
            _account(report, before, self.forge)
            report.finished_at = self.clock.time()
            self.rounds.record(report)

    def _settle(self) -> None:
        """The round's permits handed back and its ledger written, once (never masking the round's own end)."""
        try:
            self.forge.settle()
        except SluiceError as exc:
            log.warning("could not write the round's permits and ledger to the host store: %s", exc)

    def _base_moved(self, branch: str, rev: str | None) -> bool:
        """Whether the base branch moved since this clone's last discovery (its mergeabilities then move)."""
        last = self.discovery_log.last(branch)
        return last is not None and last.rev is not None and rev is not None and last.rev != rev

    def _standing_round(
        self, branch: str, reason: str, holder: str | None, rev: str | None, started: float
    ) -> RoundReport | None:
        """A round on the header of the watch's newest tick alone, when that says all; None: compare.

        Nothing new since the clone's cursor: no call, nothing read. Ticks
        that moved nothing of this base since the queue was taken in
        (:mod:`.standing`): the queue stands, confirmed as read now, without
        one entry parsed or written — the same end a full comparison would
        reach, at a cost that does not grow with the queue (issue 15).
        """
        if self.watch is None or reason in OWN_LIST_REASONS:
            return None
        header = self.watch.header(branch)
        if header is None:
            return None
        epoch, seen = self.watch.cursor.get(branch)
        base_moved = self._base_moved(branch, rev)
        now = self.clock.time()
        if not standings.unseen(header, epoch=epoch, seen=seen, base_moved=base_moved):
            return RoundReport(
                branch, "within-interval",
                f"the host watch found nothing new since its tick {header.tick}; "
                f"next tick at {local_time(header.next_at)}",
                holder=holder, started_at=started, finished_at=now, next_discovery=header.next_at,
            )
        mark = self.watch.cursor.standing(branch)
        why = standings.stands(
            header, mark, epoch=epoch, seen=seen, holder=holder, base_moved=base_moved,
            fingerprint=self.queue.fingerprint(branch) if mark is not None else None,
            heads_noted=mark is not None and self.watch.heads_noted(branch),
        )
        if why is not None or mark is None:
            log.debug("%s: the host watch's tick %d: comparing the queue (%s)", branch, header.tick, why)
            return None
        if not self.queue.confirm(branch, mark.fingerprint, now):
            return None
        self.discovery_log.record(branch, asked_at=now, rev=rev)
        self.watch.cursor.set(branch, header.epoch, header.tick, stands=mark)
        report = RoundReport(
            branch, "taken-in", f"the host watch's tick {header.tick}: nothing moved since tick {seen}; the queue stands",
            holder=holder, started_at=started, finished_at=now, open=mark.open, next_discovery=header.next_at,
        )
        self.rounds.record(report)
        log.debug("%s: %s", branch, report.why)
        return report

    def _watched(self, branch: str, reason: str, pushed: frozenset[str]) -> tuple[BaseView | None, frozenset[int]]:
        """The host watch's fresh answer for this base, and the requests to read whatever it says.

        None: ask for ourselves — no watch, or a push or an opening from this
        host the watch's last tick cannot have seen. A push of request heads
        the hook names (``pushed``) needs no list: the requests whose heads
        they are are read at once, the rest stands on the watch's list. The
        base itself moving needs no new list either, only the re-reading of its
        requests' mergeability: the watch's list serves.
        """
        if self.watch is None:
            return None, frozenset()
        if reason in OWN_LIST_REASONS:
            if reason != "push" or not pushed:
                return None, frozenset()
            view = self.watch.view(branch)
            forced = frozenset(i.number for i in view.items if i.head_ref in pushed) if view is not None else frozenset()
            return (view, forced) if forced else (None, frozenset())
        return self.watch.view(branch), frozenset()

    def _watch_ticks(self, branch: str) -> bool:
        """Whether the host watch ticks for this base (its answers are fresh): it then takes the heads'
        baselines itself, so a round that asked its own list (a hook's, after a push) need not."""
        return self.watch is not None and self.watch.view(branch) is not None

    def _watched_round(
        self, branch: str, watched: BaseView, holder: str | None, rev: str | None, started: float, *,
        wait: bool, deadline: float | None, forced: frozenset[int] = frozenset(), calls: bool = True,
    ) -> RoundReport:
        """A round on the host watch's answers: no list, no probe; only the readings of what moved
        (``calls`` False: not even those — another host holds the branch, see :meth:`_mirrors`)."""
        assert self.watch is not None
        now = self.clock.time()
        epoch, seen = self.watch.cursor.get(branch)
        base_moved = self._base_moved(branch, rev)
        if epoch == watched.epoch and seen >= watched.tick and not base_moved and not forced:
            return RoundReport(
                branch, "within-interval",
                f"the host watch found nothing new since its tick {watched.tick}; "
                f"next tick at {local_time(watched.next_at)}",
                holder=holder, started_at=started, finished_at=now, next_discovery=watched.next_at,
            )
        before = _snapshot(self.forge)
        why = f"the host watch's tick {watched.tick}"
        if not calls:
            why += f"; {holder or 'another host'} holds the lease: the fleet's reading, no call from here"
        report = RoundReport(branch, "taken-in", why, holder=holder, started_at=started)
        with self._taking_in(branch, report, before):
            stands = self._take_in(branch, report, holder, base_moved=base_moved, wait=wait, deadline=deadline,
                                   watched=watched, since=(epoch, seen), forced=forced, calls=calls)
            self.discovery_log.record(branch, asked_at=now, rev=rev)
            self.watch.cursor.set(branch, watched.epoch, watched.tick, stands=stands)
            report.next_discovery = watched.next_at
        return report

    def _checks_moved_of(
        self, numbers: list[int], entries: Mapping[int, Entry], watched: BaseView | None,
        since: tuple[str | None, int], *, wait: bool, deadline: float | None,
    ) -> list[int]:
        """Of the requests whose checks the plan asks, those whose checks moved: by the watch's word
        since its last tick taken, or by this round's own conditional call."""
        if watched is not None:
            return [n for n in numbers if watched.checks_moved(entries[n].head_sha, epoch=since[0], since=since[1])]
        return [n for n in numbers if self.checks_moved(entries[n].head_sha, wait=wait, deadline=deadline)]

    def _read(self, branch: str, numbers: list[int], open_count: int, holder: str | None, *, calls: bool,
              wait: bool, deadline: float | None) -> gq.ParseResult:
        """One GraphQL read of ``numbers`` — none where this host makes no call (a mirror: each skipped,
        to be read by the fleet's next survey)."""
        result = gq.ParseResult()
        if numbers and not calls:
            for number in numbers:
                result.skipped[number] = f"{holder or 'another host'} takes it in: no reading of the fleet yet"
        elif numbers:
            result = gq.read_all(
                lambda query, variables: self._guarded_graphql(query, variables, wait=wait, deadline=deadline),
                self.owner, self.name, numbers, base=branch, open_count=open_count,
            )
        return result

    def _keep(self, doc: QueueDoc, entries: dict[int, Entry], branch: str, holder: str | None, now: float) -> str:
        """The queue as this round leaves it, saved; what ``save`` returns (its fingerprint)."""
        doc.entries = entries
        doc.repository = self.repository
        doc.branch = branch
        doc.holder = holder
        doc.withdrawn_by = None
        doc.read_at = now
        return self.queue.save(doc)

    def _take_baselines(self, numbers: list[int], entries: Mapping[int, Entry], *, wait: bool,
                        deadline: float | None) -> None:
        """A request read just now that still waits on checks gets its checks' baseline now, so the
        next discovery asks them conditionally (free while they stand still) instead of paying a 200
        that would only say "no baseline yet". (Under the host watch the watch takes that baseline,
        for every clone at once — also after a round that asked its own list, a hook's after a push:
        its record registers the heads, and the watch's next tick, or a driver's join, asks their
        check runs, and the combined status only where the repository uses statuses.)"""
        for number in numbers:
            entry = entries[number]
            if needs_recheck(entry) and not self._has_baseline(entry.head_sha):
                self.checks_moved(entry.head_sha, wait=wait, deadline=deadline)

    def _check_lease(self) -> None:
        """Between the calls of a round: is the branch still this host's to take in?

        A holder cut off from the remote cannot renew; by its own clock its lease
        lapses (less one call's deadline), and from then on it starts no call
        (issue #14, point 5): the host that takes over never overlaps it.
        """
        branch = self._guarding
        if branch is None:
            return
        lease = self.lease_reader(branch)
        if lease is not None and not lease.takes_in:
            raise LeaseLapsed(branch, lease_words(lease, named=False))  # the branch once (issue 31)

    def _unleased(self, branch: str, lease: LeaseView, now: float) -> RoundReport:
        """A writer without its own live mark: no call, and the queue is left as it is (no one
        else is known to hold the branch, so nothing is withdrawn in anyone's name)."""
        if lease.blocked is not None:
            why = f"the lease cannot be written: {lease.blocked}"
        elif lease.mine:
            why = "this host's lease has lapsed by its own clock (it could not renew it)"
        else:
            why = f"this host could not take the lease ({lease.note or 'no mark of its own'})"
        return RoundReport(
            branch, "unleased", why + "; no call until it holds the lease again",
            holder=lease.holder, started_at=now, finished_at=now,
        )

    def _defer(self, branch: str, lease: LeaseView, now: float) -> RoundReport:
        holder = lease.holder or "an unknown holder (a mark that is not a lease record)"
        doc = self.queue.load(branch)
        withdrawn = sorted(doc.entries)
        if withdrawn or doc.withdrawn_by != holder or doc.holder != lease.holder:
            doc.entries = {}
            doc.withdrawn_by = holder
            doc.holder = lease.holder
            self.queue.save(doc)
        return RoundReport(
            branch, "deferred", f"{holder} holds the lease: it takes this branch in",
            holder=lease.holder, started_at=now, finished_at=now, left=withdrawn,
        )

    def _take_in(
        self, branch: str, report: RoundReport, holder: str | None, *, base_moved: bool, wait: bool,
        deadline: float | None, watched: BaseView | None = None, since: tuple[str | None, int] = (None, -1),
        forced: frozenset[int] = frozenset(), calls: bool = True,
    ) -> Standing | None:
        """The round's comparison and readings; under the watch, what it leaves when the same list with
        nothing moved would read nothing again (None otherwise, and without the watch)."""
        doc = self.queue.load(branch)
        items: list[Any]
        pushed: dict[int, Entry] = {}
        if watched is not None:
            pushed, forced = self._pushed_entries(watched, forced, doc.entries)
            # a request whose head this clone just pushed, where the push's own record cannot say what
            # moved, is read whatever the watch's list says of it
            items = [
                replace(i, updated_at="") if i.number in forced and i.number not in pushed else i
                for i in _with_labels(watched, doc.entries)
            ]
        else:
            items = self._list(branch, wait=wait, deadline=deadline)
        report.open = len(items)
        plan = plan_readings(items, doc.entries, discovery=True, now=self.clock.time(), base_moved=base_moved)
        checked = self._checks_moved_of(plan.to_check, doc.entries, watched, since, wait=wait, deadline=deadline)
        to_read = set(plan.query_numbers(checked)) - set(pushed)
        settled = _settled_by_watch(plan, sorted(to_read), doc.entries, watched, self.clock.time()) if watched else {}
        to_read -= set(settled)
        from_watch = _read_by_watch(watched, plan, to_read) if watched is not None else {}
        to_read -= set(from_watch)
        log.debug("%s: %d open; checks asked for %s, moved: %s; settled by the watch's query: %s; read by the watch: "
                  "%s; reading %s", branch, len(items), _numbers(plan.to_check), _numbers(checked),
                  _numbers(sorted(settled)) or "none", _numbers(sorted(from_watch)) or "none",
                  _numbers(sorted(to_read)) or "none (one GraphQL read saved)")
        result = self._read(branch, sorted(to_read), len(items), holder, calls=calls, wait=wait, deadline=deadline)
        result.readings.update(from_watch)
        report.read = sorted(to_read)
        report.skipped = dict(result.skipped)
        now = self.clock.time()
        entries = merged_entries(plan, doc.entries, result.readings, {**plan.drafts, **settled, **pushed}, branch,
                                 report, now)
        if watched is None and not self._watch_ticks(branch):
            self._take_baselines(sorted(to_read & set(entries)), entries, wait=wait, deadline=deadline)
        report.left = sorted(set(doc.entries) - set(entries))
        written = self._keep(doc, entries, branch, holder, now)
        if self.watch is not None:
            try:
                self.watch.record(branch, entries)
            except Exception as exc:  # the watch is an optimisation: its registry failing costs it, not the round
                log.warning("could not tell the host watch what this clone waits on: %s", exc)
                return None
        if watched is None or report.skipped:
            return None
        again = plan_readings(items, entries, discovery=True, now=now)
        if again.to_read or set(again.items) != set(entries):
            return None  # a request it could not read, a mergeability still unknown, a head pushed from here
        return Standing(fingerprint=written, holder=holder, open=len(items))

    def _pushed_entries(
        self, watched: BaseView, forced: frozenset[int], entries: dict[int, Entry]
    ) -> tuple[dict[int, Entry], frozenset[int]]:
        """The requests whose heads this clone's push moved, as the push itself says they stand, and
        those still to read at once.

        A push of a request's head is a fact this host holds before GitHub
        says it: the remote-tracking ref the push moved names the new head,
        whose checks have not run yet and whose mergeability GitHub has yet
        to compute. The queue shows that at once — the new head, waiting —
        and the host watch's next tick, which sees the request move, reads it
        in its one batched query for the host instead of a query of its own
        now (a point per push). Where the ref says nothing new (the push was
        refused, or went elsewhere), or the request was never queued, the old
        way: it is read now. A head the watch's list already shows needs no
        forcing: its tick's batched reading serves.
        """
        if self.head_rev is None or not forced:
            return {}, forced
        expected = checks_expected(entries.values())
        out: dict[int, Entry] = {}
        still = set(forced)
        for item in watched.items:
            previous = entries.get(item.number)
            if item.number not in forced or previous is None or previous.draft or item.draft:
                continue
            try:
                sha = self.head_rev(item.head_ref)
            except Exception as exc:  # an unreadable ref: read the request instead
                log.debug("%s: the pushed head %s could not be read (%s)", self.repository, item.head_ref, exc)
                continue
            if not sha:
                continue
            if sha == item.head_sha:  # the watch already saw this push
                still.discard(item.number)
            elif sha == previous.head_sha:  # queued as pushed by an earlier round of this push
                still.discard(item.number)
                out[item.number] = previous
            else:
                state = derive_state(previous.draft, previous.review_decision, None, "UNKNOWN",
                                     checks_expected=expected)
                still.discard(item.number)
                out[item.number] = replace(
                    previous, head_sha=sha, checks_state=None, failing=(), pending=(), mergeable="UNKNOWN",
                    state=state,
                )
        return out, frozenset(still)

    def _list(self, branch: str, *, wait: bool, deadline: float | None) -> list[dict[str, Any]]:
        """Every page of the open requests on ``branch``, each page conditional."""
        items: list[dict[str, Any]] = []
        url: str | None = self.forge.url_for(
            f"repos/{self.owner}/{self.name}/pulls",
            {"state": "open", "base": branch, "per_page": 100},
        )
        pages = 0
        while url is not None and pages < 100:
            self._check_lease()
            answer = self.forge.get(url, wait=wait, deadline=deadline).raise_for_status()
            page = answer.json()
            if not isinstance(page, list):
                raise ValueError(f"GitHub's list of pull requests is not a list ({url})")
            items.extend(item for item in page if isinstance(item, dict) and "number" in item)
            url = answer.next_url()
            pages += 1
        return items

    def _guarded_graphql(self, query: str, variables: Any, *, wait: bool, deadline: float | None) -> Any:
        self._check_lease()
        return self.forge.graphql(query, variables, wait=wait, deadline=deadline)

    def _checks_address(self, sha: str, suffix: str) -> str:
        return f"repos/{self.owner}/{self.name}/commits/{sha}/{suffix}"

    def _has_baseline(self, sha: str) -> bool:
        return all(self.forge.has_validator(self._checks_address(sha, suffix)) for suffix in ("check-runs", "status"))

    def checks_moved(self, sha: str, *, wait: bool, deadline: float | None) -> bool:
        """Conditional GETs of a head's check runs and combined status: free while nothing changed."""
        moved = False
        for suffix in ("check-runs", "status"):
            self._check_lease()
            answer = self.forge.get(self._checks_address(sha, suffix), wait=wait, deadline=deadline)
            if answer.status == 200 and not answer.from_kept:
                moved = True
        return moved


def _own_failure(lease: LeaseView) -> bool:
    """Not taking in because of this host's own lease (none won, lapsed, blocked), not another's."""
    if lease.blocked is not None:
        return True
    if lease.mine:
        return True
    return lease.writer and (lease.oid is None or not lease.live)



def _read_by_watch(watched: BaseView, plan: ReadingPlan, to_read: set[int]) -> dict[int, Any]:
    """What the watch read for the host in its tick, of ``to_read``, where it matches the list."""
    found: dict[int, Any] = {}
    for number in sorted(to_read):
        reading, item = watched.readings.get(number), plan.items.get(number)
        if reading is not None and item is not None and (reading.head_sha, reading.updated_at) == (
            item.head_sha, item.updated_at
        ):
            found[number] = reading
    return found


def merged_entries(
    plan: ReadingPlan, previous: Mapping[int, Entry], readings: Mapping[int, Any], known: Mapping[int, Entry],
    branch: str, report: RoundReport, now: float,
) -> dict[int, Entry]:
    """The queue's new entries: a fresh reading wins, then what is ``known`` without one (a head pushed
    from here, settled by the watch's query, a draft), then the last entry; a new request whose reading
    was skipped waits for the next round. ``report`` learns what was added, changed or closed meanwhile."""
    expected = checks_expected([*previous.values(), *readings.values()])
    entries: dict[int, Entry] = {}
    for number in sorted(plan.items):
        before = previous.get(number)
        reading = readings.get(number)
        if reading is not None:
            if reading.github_state != "OPEN" or reading.base != branch:
                report.skipped.setdefault(number, f"{reading.github_state.lower()} or retargeted since the list")
                continue
            entry = entry_from_reading(reading, previous=before, now=now, checks_expected=expected)
        elif number in known:
            entry = known[number]
        elif before is not None:
            entry = before
        else:
            continue  # new, but its reading was skipped: it is read again next round
        if before is None:
            report.added.append(number)
        elif _visible(before) != _visible(entry):
            report.changed.append(number)
        entries[number] = entry
    return entries

def _snapshot(forge: Forge) -> tuple[int, int, int, int]:
    s = forge.stats
    return (s.requests, s.counted, s.not_modified, s.points)


def _account(report: RoundReport, before: tuple[int, int, int, int], forge: Forge) -> None:
    after = _snapshot(forge)
    report.requests, report.counted, report.not_modified, report.points = (a - b for a, b in zip(after, before))


def _with_labels(watched: BaseView, entries: dict[int, Entry]) -> list[Any]:
    """The watch's list, each request whose labels the watch could not see keeping its queued labels.

    (GraphQL's list carries none; a label change moves ``updated_at``, so the request is read anyway.)
    """
    items = []
    for item in watched.items:
        previous = entries.get(item.number)
        if not watched.labels_known.get(item.number, False) and previous is not None:
            item = replace(item, labels=previous.labels)
        items.append(item)
    return items


WATCH_SETTLES = frozenset({"mergeability unknown", "base moved", "checks may still change"})
"""Reasons to read that the watch's query can answer by itself: mergeability, which moves no
``updated_at``, and checks whose rollup passed (nothing failing or pending to name)."""


def _settled_by_watch(
    plan: ReadingPlan, numbers: list[int], entries: dict[int, Entry], watched: BaseView, now: float
) -> dict[int, Entry]:
    """The requests among ``numbers`` whose reading the host watch's query already holds.

    Where the watch asked by GraphQL it said each request's review decision,
    checks state and mergeability, for free. A request with nothing but those
    to learn — its mergeability (still UNKNOWN: GitHub is computing it, and a
    reading now would say no more), or its checks turning SUCCESS, which
    leaves no check to name as failing or pending — takes them from there
    instead of a reading. A changed review decision, or checks that failed or
    still run (their names are shown), are read.
    """
    expected = checks_expected(entries.values())
    out: dict[int, Entry] = {}
    for number in numbers:
        entry, said = entries.get(number), watched.inputs.get(number)
        if plan.reasons.get(number) not in WATCH_SETTLES or entry is None or said is None:
            continue
        review, checks, mergeable = said
        if review != entry.review_decision:
            continue
        if checks != entry.checks_state and checks != "SUCCESS":
            continue
        state = derive_state(entry.draft, review, checks, mergeable, checks_expected=expected)
        if checks == entry.checks_state:
            out[number] = replace(entry, mergeable=mergeable, state=state, read_at=now)
        else:
            out[number] = replace(entry, checks_state=checks, failing=(), pending=(), mergeable=mergeable,
                                  state=state, read_at=now)
    return out


def _visible(entry: Entry) -> tuple[Any, ...]:
    """What a person would call a change (not the read times)."""
    return (
        entry.title, entry.head_sha, entry.draft, entry.review_decision, entry.checks_state,
        tuple(entry.failing), entry.mergeable, tuple(entry.labels), entry.state,
    )


def _numbers(numbers: Any) -> str:
    """``#3, #7`` for a log line; empty for none."""
    return ", ".join(f"#{n}" for n in numbers)
