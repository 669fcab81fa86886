"""The host watch: one tick per host over everything its clones take in, shared with every round.

Who runs it: every driver (``git sluice drive``) offers to before its rounds;
the first to reach a due tick takes ``watch/<group>/tick.lock`` and ticks for
the whole host, the others find the tick done (or wait a little for it) and
read its answers. A round — a driver's, a hook's, a wait's — reads its base's
part of the last tick's answers for free, and asks GitHub only for the
readings of what moved (:mod:`.round`).

What a tick asks (decisions in :mod:`.watch`): each repository on REST while
its lists answer 304; the repositories whose lists churn without a request
moving, together in ONE GraphQL query; each waiting head's checks by
conditional REST (the combined status only where the repository uses
statuses; failed-and-still-failed heads less and less often).

When the process running it dies mid-tick: the file lock goes with it, the
answers of the tick before stand whole (they are written once, atomically, at
the end), the tick is still due, and whoever comes next redoes it — the
watch's own kept answers make the redo's lists 304s. A watch that does not
tick (stopped, paused, its files unreadable) leaves answers that go stale; a
round that finds no fresh answer runs its own round the old way.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..clock import Clock
from ..errors import CredentialsRefused, Interrupted, SluiceError
from ..jsonshape import field_map
from ..records import record
from ..statefile import file_lock, try_acquire
from . import pace as pacing
from . import watch as w
from .queue import Entry
from .readings import list_item, needs_recheck
from .request import Request
from .standing import WatchedBase
from . import graphql as gq
from . import survey as sv
from .answers_doc import BasePart, HeadDoc, RepoRecord, base_part, repo_record
from .watchstore import (
    Answers, CloneRemote, Cursor, HeadInterest, Registry, RepoInterest, inputs_of, item_json, item_of, reading_json,
    reading_of,
)

if TYPE_CHECKING:
    from ..forge.client import Forge
    from ..forge.hoststore import BudgetRow

log = logging.getLogger("git_sluice")

WAIT_FOR_TICK = 20.0
"""A driver that finds another process ticking waits this long for its answers, then goes its own way."""
MAX_GRAPHQL_PAGES = 10
MAX_BATCH_READ = 100
"""Requests the watch reads for the host in one tick, at most (about 4 points); past that its clones read."""
STALE_GRACE = 15.0
"""Answers whose next tick is overdue by more than this are not trusted: the watch is not ticking
(stopped, paused, stuck), and every round asks for itself, the old way, until it ticks again."""


@record
class BaseView:
    """One base's part of the last tick (what a round reads instead of asking the list)."""

    epoch: str
    tick: int
    ticked_at: float
    next_at: float
    items: list[Request]
    labels_known: dict[int, bool]
    changed_tick: int
    heads: dict[str, int] = field(default_factory=dict)
    """head sha -> the tick its checks were last seen to move."""
    inputs: dict[int, tuple[str | None, str | None, str | None]] = field(default_factory=dict)
    """number -> (review decision, checks state, mergeability) where this tick's GraphQL query said them."""
    readings: dict[int, Request] = field(default_factory=dict)
    """number -> the reading the tick took for the host (of what moved in it)."""
    active_tick: int = 0
    """The last tick in which the repository showed any activity (a list 200, or asked by GraphQL)."""

    def checks_moved(self, sha: str, *, epoch: str | None, since: int) -> bool:
        """Did this head's checks move after tick ``since`` of answers ``epoch``? (Unknown heads: no.)"""
        changed = self.heads.get(sha)
        if changed is None:
            return False
        return epoch != self.epoch or changed > since


@record
class TickReport:
    tick: int
    rest_lists: int = 0
    graphql_queries: int = 0
    heads_asked: int = 0
    modes: dict[str, str] = field(default_factory=dict)
    read: dict[str, list[int]] = field(default_factory=dict)
    """Per repository, the requests the tick read for the host's clones."""
    stretch: float = 1.0
    errors: dict[str, str] = field(default_factory=dict)
    adopted: list[str] = field(default_factory=list)
    """Repositories this tick took (some bases of) from their holders' surveys: no call for those."""


class HostWatch:
    """The host watch as one clone sees it: its view of the answers, its registration, and the tick."""

    def __init__(
        self,
        *,
        watch_dir: Path,
        group: str,
        clone: str,
        repository: str,
        host: str,
        discovery: float,
        clock: Clock,
        sluice_dir: Path,
        forge: Forge | None = None,
        budget: Callable[[], Iterable[BudgetRow]] | None = None,
        pool: str | None = None,
        surveys: Callable[[CloneRemote], sv.SurveyPlace] | None = None,
    ) -> None:
        self.watch_dir = Path(watch_dir)
        self.group = group
        self.group_dir = self.watch_dir / group
        self.clone = clone
        self.repository = repository
        self.host = host
        self.discovery = discovery
        self.clock = clock
        self.forge = forge
        self.budget = budget
        self.pool = pool
        self.surveys = surveys
        """Where a ticking watch reads and writes the fleet's surveys (None: it neither reads nor writes them)."""
        self.registry = Registry(self.watch_dir)
        self.answers = Answers(self.group_dir)
        self.cursor = Cursor(sluice_dir)
        self._riding: dict[str, list[HeadInterest]] = {}
        """Per repository on REST, the waiting heads this tick asks by rollup in its GraphQL query."""
        self._handed: list[str] = []
        """Repositories on REST whose long list moved this tick: the GraphQL query lists them instead."""

    # ------------------------------------------------------------ the clone's side
    def register(self, bases: Iterable[str], remote: CloneRemote | None = None,
                 mirrors: Mapping[str, str | None] | None = None) -> None:
        """What this clone follows now (a driver's branches): exactly these bases, of which ``mirrors``
        another host holds (the watch only takes those from the holder's survey); ``remote``: how its
        driver fetches, where the watch looks for the fleet's survey of the repository."""
        self.registry.note(
            self.clone, repository=self.repository, group=self.group, discovery=self.discovery,
            now=self.clock.time(), bases=bases, exact=True, remote=remote, mirrors=mirrors or {},
        )

    def follow(self, base: str, number: int, head: Mapping[str, object] | None = None) -> None:
        """A wait of this clone follows ``number`` on ``base`` (another host takes it in): watch it too.

        ``head`` (``sha``, ``updated_at``, ``checks_state``, ``draft``: the
        request as last read): its head is watched while its checks may still
        move (their probe, or rollup, then tells the wait they did), not once
        they passed.
        """
        record = None
        if head and isinstance(head.get("sha"), str) and not head.get("draft") and head.get("checks_state") != "SUCCESS":
            record = {"number": number, "sha": head["sha"], "updated_at": str(head.get("updated_at") or ""),
                      "checks_state": head.get("checks_state")}
        self.registry.follow(
            self.clone, repository=self.repository, group=self.group, discovery=self.discovery,
            now=self.clock.time(), base=base, number=number, head=record,
        )

    def unfollow(self, base: str, number: int) -> None:
        self.registry.unfollow(self.clone, base=base, number=number)

    def record(self, base: str, entries: Mapping[int, Entry]) -> None:
        """After a round: the heads this clone waits on, on ``base``, for the next tick to watch."""
        heads = [
            {"number": e.number, "sha": e.head_sha, "updated_at": e.updated_at, "checks_state": e.checks_state}
            for e in sorted(entries.values(), key=lambda e: e.number) if needs_recheck(e) and e.head_sha
        ]
        self.registry.note(
            self.clone, repository=self.repository, group=self.group, discovery=self.discovery,
            now=self.clock.time(), heads={base: heads},
        )

    def view(self, base: str) -> BaseView | None:
        """This base's part of the last tick; None when absent, stale, unreadable or not asked in it."""
        try:
            doc = self.answers.peek()
            return _view_of(doc, self.repository, base, self.clock.time())
        except Exception as exc:  # the watch is an optimisation: never a reason for a round to fail
            log.warning("host watch answers unreadable (%s): this round asks for itself", exc)
            return None

    def header(self, base: str) -> WatchedBase | None:
        """:meth:`view` without the requests: enough to know whether anything moved (:mod:`.standing`)."""
        try:
            return _header_of(self.answers.peek(), self.repository, base, self.clock.time())
        except Exception as exc:  # the watch is an optimisation: never a reason for a round to fail
            log.warning("host watch answers unreadable (%s): this round asks for itself", exc)
            return None

    def heads_noted(self, base: str) -> bool:
        """Whether the watch's registry still holds the heads this clone last said it waits on, on ``base``."""
        try:
            return self.registry.heads_noted(self.clone, base, self.clock.time())
        except Exception:
            return False

    def next_at(self) -> float | None:
        value = self.answers.peek().get("next_at")
        return float(value) if isinstance(value, (int, float)) else None

    # ------------------------------------------------------------ the host's side
    @property
    def _client(self) -> Forge:
        """The forge a tick asks: only a ticking watch has one, and :meth:`tick` returns at once without."""
        assert self.forge is not None, "only a ticking host watch asks GitHub"
        return self.forge

    def tick(self, *, wait: float = WAIT_FOR_TICK) -> TickReport | None:
        """Tick for the host when due; None when not due, or another process ticks (waited for, briefly)."""
        if self.forge is None:
            return None
        if not w.due(self.next_at(), self.clock.time()) and not self._joining(self.answers.peek()):
            return None
        lock = file_lock(self.group_dir / "tick.lock")
        if not try_acquire(lock):
            self._wait_for_other(wait)
            return None
        try:
            # read only: a tick builds the next answers beside these (copy on write), never in them,
            # so the peek's document serves, parsed once while the file stands (tests/intake/test_host_watch.py)
            doc = self.answers.peek()
            now = self.clock.time()
            if w.due(doc.get("next_at") if isinstance(doc.get("next_at"), (int, float)) else None, now):
                self._riding, self._handed = {}, []
                return self._tick(doc, now)
            joining = self._joining(doc)
            if joining:
                return self._join(doc, joining, now)
            return None  # someone ticked while we took the lock
        finally:
            try:
                self.forge.settle()  # the tick's permits handed back and its ledger written, once
            except SluiceError as exc:
                log.warning("could not write the watch's permits and ledger to the host store: %s", exc)
            lock.release()

    def _joining(self, doc: Mapping[str, object]) -> dict[str, tuple[set[str], list[HeadInterest]]]:
        """What was registered since the last tick: bases not asked in it, REST heads it never saw.

        Asked at once, completing that tick: a clone joining mid-interval asks
        no list itself, and a head a round just queued as waiting gets its
        checks' baseline now, so the next tick's probe is a free 304.
        """
        tick = doc.get("tick")
        if not isinstance(tick, int):
            return {}
        interests, _ = self.registry.interests(self.group, self.clock.time())
        repos = field_map(doc, "repos")
        heads = field_map(doc, "heads")
        out: dict[str, tuple[set[str], list[HeadInterest]]] = {}
        for repository, interest in interests.items():
            record = field_map(repos, repository)
            bases = field_map(record, "bases")
            # never a base another host holds (a clone here mirrors it): its holder's survey says it, at
            # the next tick, lists and heads alike; a wait's follow where no clone here mirrors is asked now
            askable = interest.bases - interest.mirrors - (set(interest.holders) - interest.held)
            new_bases = {b for b in askable if field_map(bases, b).get("asked_tick") != tick}
            new_heads = [] if record.get("mode") == "graphql" else [
                h for h in interest.heads.values() if h.base in askable and f"{repository} {h.sha}" not in heads
            ]
            if new_bases or new_heads:
                out[repository] = (new_bases, sorted(new_heads, key=lambda h: (h.base, h.number)))
        return out

    def _join(
        self, doc: Mapping[str, object], joining: Mapping[str, tuple[set[str], list[HeadInterest]]], now: float
    ) -> TickReport:
        """The last tick, completed for what joined since (baseline lists by REST, new heads' checks)."""
        said_tick, said_interval = doc.get("tick"), doc.get("interval")
        tick = said_tick if isinstance(said_tick, int) else 0  # _joining asks only of a tick that says its number
        report = TickReport(tick)
        repos: dict[str, object] = dict(field_map(doc, "repos"))
        heads: dict[str, object] = dict(field_map(doc, "heads"))
        interval = float(said_interval) if isinstance(said_interval, (int, float)) else self.discovery
        for repository, (bases, new_heads) in sorted(joining.items()):
            record = repo_record(repos.get(repository))
            record.setdefault("mode", "rest")
            try:
                for base in sorted(bases):
                    items, _fresh, _same = self._list(repository, base)
                    report.rest_lists += 1
                    _store_base(record, base, items, {i.number: True for i in items}, record["bases"].get(base), tick)
                for head in new_heads:
                    rec = self._probe_head(repository, head, w.HeadRecord(), record, tick, now, interval)
                    heads[f"{repository} {head.sha}"] = _head_json(rec)
                    report.heads_asked += 1
            except (Interrupted, CredentialsRefused):  # a stop, or credentials no call can help
                raise
            except (SluiceError, ValueError) as exc:
                report.errors[repository] = str(exc)
                continue
            repos[repository] = record
        self.answers.write({**doc, "repos": repos, "heads": heads})
        return report

    def _wait_for_other(self, wait: float) -> None:
        before = self.answers.read().get("tick")
        end = self.clock.monotonic() + wait
        while self.clock.monotonic() < end:
            self.clock.sleep(0.25)
            if self.answers.read().get("tick") != before:
                return
        log.info("the host watch is busy in another process; rounds ask for themselves this tick")

    def _tick(self, doc: Mapping[str, object], now: float) -> TickReport:
        interests, interval = self.registry.interests(self.group, now)
        interval = interval or self.discovery
        known = doc.get("epoch")
        epoch = known if isinstance(known, str) else Answers.new_epoch()
        said_tick = doc.get("tick")
        tick = said_tick + 1 if isinstance(said_tick, int) and epoch == known else 1
        repos_doc = field_map(doc, "repos")
        heads_doc = field_map(doc, "heads")
        report = TickReport(tick)
        new_repos: dict[str, RepoRecord] = {}
        new_heads: dict[str, HeadDoc] = {}
        graphql_repos: list[str] = []
        surveyed = self._surveys(interests, now)
        recent: dict[str, dict[int, Request]] = {}
        reading: dict[str, RepoInterest] = {}  # per repository, what this tick asks GitHub
        for repository in sorted(interests):
            record = new_repos[repository] = repo_record(repos_doc.get(repository))
            mode = _mode_of(record)
            interest = interests[repository]
            got = surveyed.get(repository)
            if got:
                self._adopt(repository, interest, record, got, heads_doc, new_heads, tick, now, interval,
                            report)
            # what this tick asks GitHub: the bases a clone here takes in, and those only a wait follows
            # that no fresh survey said; never a base another host holds (its holder's survey says it)
            asked = {b for b in interest.bases - interest.mirrors if got is None or b not in got}
            if not asked:
                continue
            interest = reading[repository] = replace(
                interest, bases=asked, heads={sha: h for sha, h in interest.heads.items() if h.base in asked}
            )
            if mode.mode == "graphql":
                graphql_repos.append(repository)
                continue
            try:
                self._rest_repo(repository, interest, record, mode, heads_doc, new_heads, tick, now,
                                interval, report)
            except (Interrupted, CredentialsRefused):  # a stop, or credentials no call can help
                raise
            except (SluiceError, ValueError) as exc:
                report.errors[repository] = str(exc)
                log.info("host watch: %s: %s", repository, exc)
        graphql_repos += [r for r in self._handed if r not in graphql_repos]
        if graphql_repos or self._riding:
            recent.update(self._graphql_step(graphql_repos, reading, new_repos, heads_doc, new_heads, tick, now,
                                             interval, report))
        try:
            self._read_moved(repos_doc, new_repos, new_heads, tick, report, recent, reading)
        except (Interrupted, CredentialsRefused):  # a stop, or credentials no call can help
            raise
        except (SluiceError, ValueError) as exc:  # the clones read for themselves, as before the watch
            log.info("host watch: the batched reading failed: %s", exc)
        self._write_tick(epoch, tick, now, interval, new_repos, new_heads, report)
        return report

    def _graphql_step(
        self, graphql_repos: list[str], reading: Mapping[str, RepoInterest], new_repos: dict[str, RepoRecord],
        heads_doc: Mapping[str, object], new_heads: dict[str, HeadDoc], tick: int, now: float, interval: float,
        report: TickReport,
    ) -> dict[str, dict[int, Request]]:
        """The tick's one GraphQL query; a failure is each of its repositories' error, never the tick's."""
        try:
            return self._graphql_repos(graphql_repos, reading, new_repos, heads_doc, new_heads, tick, now, interval,
                                       report)
        except (Interrupted, CredentialsRefused):  # a stop, or credentials no call can help
            raise
        except (SluiceError, ValueError) as exc:
            for repository in graphql_repos:
                report.errors[repository] = str(exc)
            log.info("host watch: the GraphQL query failed: %s", exc)
            return {}

    def _write_tick(
        self, epoch: str, tick: int, now: float, interval: float, new_repos: Mapping[str, RepoRecord],
        new_heads: Mapping[str, HeadDoc], report: TickReport,
    ) -> None:
        """What the tick found, for every process of the host, and when the next tick is (paced)."""
        found = pacing.worst(p for p in pacing.paces(list(self.budget() if self.budget else ()), now, pool=self.pool)
                             if p.resource in ("core", "graphql"))
        stretch = found.stretch if found is not None else 1.0
        length = interval * stretch
        report.stretch = stretch
        report.modes = {r: str(new_repos[r].get("mode", "rest")) for r in new_repos}
        self.answers.write({
            "epoch": epoch, "tick": tick, "ticked_at": now, "interval": interval, "stretch": stretch,
            "next_at": w.slot_after_tick(now, length, w.phase_of(self.host, length)),
            "pace": None if found is None else found.describe(),
            "repos": new_repos, "heads": new_heads,
        })

    # -- the fleet's surveys -------------------------------------------------
    def _surveys(self, interests: Mapping[str, RepoInterest], now: float) -> dict[str, dict[str, sv.Survey]]:
        """Per repository: one look at its remote, and the holders' surveys this tick takes there, by base.

        The look is the host's one fetch of the clone's ``refs/sluice/*`` this
        tick (its drivers take it as theirs). A base this host does not take
        in itself — another host holds it, or only a wait here follows it —
        takes the survey on the remote when it is the holder's
        (:func:`.survey.adoptable`). A repository no clone here says how to
        reach, or whose remote cannot be reached, takes none: its bases held
        elsewhere are then not asked at all, and go stale here.
        """
        if self.surveys is None or self.pool is None:
            return {}
        pool = self.pool
        try:
            remotes = self.registry.remotes(self.group, now)
        except Exception as exc:  # the fleet's survey is an optimisation: never a reason for a tick to fail
            log.info("host watch: no clone remotes to look at (%s)", exc)
            return {}
        out: dict[str, dict[str, sv.Survey]] = {}
        for repository in sorted(interests):
            clones = remotes.get(repository)
            if not clones:
                continue
            interest = interests[repository]
            try:
                place = self.surveys(clones[0])
                if not place.look():
                    out[repository] = {}
                    continue
                surveys: dict[str, sv.Survey] = {}
                for base in sorted(interest.bases - interest.held):
                    oid = place.current(pool, base)
                    survey = self._survey_of(place, oid, repository, base) if oid is not None else None
                    if survey is not None and oid is not None:
                        survey.oid = oid
                    if survey is not None and sv.adoptable(survey, interest.holders.get(base)):
                        surveys[base] = survey
                out[repository] = surveys
            except (Interrupted, CredentialsRefused):
                raise
            except Exception as exc:  # a hostile or broken remote costs this host its fleet's answers, no more
                log.warning("host watch: the fleet's surveys of %s could not be read (%s)", repository, exc)
                out[repository] = {}
        return out

    @staticmethod
    def _survey_of(place: sv.SurveyPlace, oid: str, repository: str, base: str) -> sv.Survey | None:
        files = place.read(oid)
        if files is None:
            log.warning("host watch: refs/sluice/survey/…/%s of %s (%s) is not a survey: not taken", base, repository,
                        oid[:12])
            return None
        try:
            return sv.decode(files, repository, base)
        except sv.SurveyRejected as exc:
            log.warning("host watch: the survey of %s %s (%s) was rejected (%s): not taken", repository, base,
                        oid[:12], exc)
            return None

    def _adopt(
        self, repository: str, interest: RepoInterest, record: RepoRecord, surveys: Mapping[str, sv.Survey],
        heads_doc: Mapping[str, object], new_heads: dict[str, HeadDoc], tick: int, now: float, interval: float,
        report: TickReport,
    ) -> None:
        """The holders' surveys as this tick's answer for their bases: their lists, readings and head
        states, compared with this host's last answers exactly as a list of its own would be. A head
        the survey does not say is left as it was: this host asks nothing of a base it does not hold."""
        for base, survey in sorted(surveys.items()):
            old = record["bases"].get(base)
            previous = [p[0] for p in (item_of(raw) for raw in (old or {}).get("items") or []) if p is not None]
            items = [i.request for i in survey.items]
            changed = old is None or w.snapshot(previous) != w.snapshot(items)
            old_changed = (old or {}).get("changed_tick")
            record["bases"][base] = {
                "items": sv.items_json(survey), "asked_tick": tick,
                "changed_tick": tick if changed or not isinstance(old_changed, int) else old_changed,
                "readings": {str(n): reading_json(r) for n, r in survey.readings.items()},
            }
            listed = {i.number: i.updated_at for i in items}
            heads = {sha: replace(h, updated_at=listed.get(h.number, h.updated_at))
                     for sha, h in interest.heads.items() if h.base == base}
            # a head the survey does not say is left as it was: this host asks nothing of a base it does not hold
            self._heads_from_rollups(repository, replace(interest, heads=heads), sv.head_states(survey), heads_doc,
                                     new_heads, tick, now, interval, report, asked=False)
            adopted = record.get("adopted", {})
            if adopted.get(base) != survey.oid:  # a new survey: something moved there, as a list's 200 says
                record["active_tick"] = tick
                record["adopted"] = {**adopted, base: survey.oid}
        report.adopted.append(repository)

    def survey_drafts(self, bases: Iterable[str], entries: Mapping[str, Mapping[int, Request]]
                      ) -> dict[str, sv.Draft]:
        """The surveys of this clone's ``bases`` for the fleet, from the watch's last answers and the
        clone's queue (``entries``: per base, what its round read of each request), not yet encoded.

        Only a base the last tick asked and whose answers are fresh has one. Its
        readings are every queued request whose head and ``updated_at`` are as the
        tick listed them — so a mirror can show every request, not only what
        moved — and the states of the heads waiting on it. Its items are the
        stored ones as they stand: nothing is parsed here that its shard's key
        does not need (:class:`~.survey.Draft`).
        """
        doc = self.answers.peek()
        now = self.clock.time()
        heads = dict(_head_states(doc, self.repository))
        out: dict[str, sv.Draft] = {}
        for base in sorted(set(bases)):
            found = _part_of(doc, self.repository, base, now)
            if found is None:
                continue
            part = found[5]
            draft = sv.Draft(self.repository, base, self.host)
            listed: dict[object, tuple[object, object]] = {}
            for raw in part.get("items") or []:
                draft.add_item(raw)
                if isinstance(raw, dict):
                    sha = raw.get("head_sha")
                    listed[raw.get("number")] = (sha, raw.get("updated_at"))
                    if isinstance(sha, str) and sha in heads:
                        draft.add_head(sha, heads[sha])
            for raw in field_map(part, "readings").values():
                reading = reading_of(raw)
                if reading is not None:
                    draft.add_reading(reading)  # the tick's own reading first: it stands
            for number, entry in sorted((entries.get(base) or {}).items()):
                if listed.get(number) == (entry.head_sha, entry.updated_at):
                    draft.add_reading(entry)
            out[base] = draft
        return out

    # -- REST ---------------------------------------------------------------
    def _rest_repo(
        self, repository: str, interest: RepoInterest, record: RepoRecord, mode: w.RepoMode,
        heads_doc: Mapping[str, object], new_heads: dict[str, HeadDoc], tick: int, now: float, interval: float,
        report: TickReport,
    ) -> None:
        answered_200 = moved = False
        listed: dict[int, str] = {}
        for base in sorted(interest.bases):
            old = record["bases"].get(base)
            items, fresh, same = self._list(repository, base, old is not None and _from_rest(old),
                                            hand_over=not mode.rebasing)
            report.rest_lists += 1
            if same is None:
                # a long list moved: its first page says so, and the tick's GraphQL query finds what moved
                # (most recently updated first, as far as the last tick) instead of walking every page
                self._handed.append(repository)
                record.update({"mode": "graphql", "still": 0, "fingerprint": None, "rebasing": False})
                return
            if same and old is not None:
                # a 304 on the first page: the list stands as last seen, its stored part too (not re-parsed)
                record["bases"][base] = {**old, "asked_tick": tick}
                listed.update(_listed_times(old))
                continue
            listed.update((i.number, i.updated_at) for i in items)
            answered_200 = answered_200 or fresh
            changed = _store_base(record, base, items, {i.number: True for i in items}, old, tick)  # REST: labels
            moved = moved or changed
        due = []
        for head in sorted(interest.heads.values(), key=lambda h: (h.base, h.number)):
            if head.base not in interest.bases:
                continue
            key = f"{repository} {head.sha}"
            rec = _head_of(heads_doc.get(key))
            # the list just read says whether its request moved: a moved request's head is asked at once
            head = replace(head, updated_at=listed.get(head.number, head.updated_at))
            if not w.head_due(rec, now=now, updated_at=head.updated_at):
                new_heads[key] = _head_json(rec)
                continue
            due.append((head, rec))
        if w.rollup_heads(len(due), threshold=REST_HEADS):
            self._riding[repository] = [head for head, _rec in due]  # by rollup, in the tick's GraphQL query
            due = []
        for head, rec in due:
            key = f"{repository} {head.sha}"
            try:
                new_heads[key] = _head_json(self._probe_head(repository, head, rec, record, tick, now, interval))
                report.heads_asked += 1
            except (Interrupted, CredentialsRefused):  # a stop, or credentials no call can help
                raise
            except (SluiceError, ValueError) as exc:
                new_heads[key] = _head_json(rec)
                log.info("host watch: %s %s: %s", repository, head.sha[:12], exc)
        after = w.after_rest(mode, answered_200=answered_200, moved=moved)
        record.update({"mode": after.mode, "still": after.still, "fingerprint": None, "rebasing": after.rebasing})
        if answered_200:
            record["active_tick"] = tick

    def _list(
        self, repository: str, base: str, known: bool = False, *, hand_over: bool = False
    ) -> tuple[list[Request], bool, bool | None]:
        """The base's open requests, most recently updated first: (items, whether any page answered 200,
        whether they stand as last seen — then ``items`` is empty: the caller keeps its own).

        Sorted by ``updated`` descending, the first page is a complete change
        detector: any request that moves (head, labels, review, draft, a new
        one) comes to its top, and a merge or a close changes the repository
        every item embeds (its ``pushed_at``, its open-issues count). So a 304
        on the first page means nothing moved on any page, and with the list
        as last seen (``known``) the other pages are not asked: 1 call a
        tick for a base of 1,000 requests, not 10. Its kept body is not even
        decoded then (100 requests, each embedding its repository: the
        largest part of a quiet tick's CPU). A 200 there on such a list of
        more than one page (``hand_over``) is not walked either: it says
        ``None`` (the GraphQL query then asks what moved, one page whatever
        the number of requests, where the walk cost a counted call a page).
        """
        owner, name = repository.split("/", 1)
        url: str | None = self._client.url_for(
            f"repos/{owner}/{name}/pulls",
            {"state": "open", "base": base, "sort": "updated", "direction": "desc", "per_page": 100},
        )
        items: list[Request] = []
        seen: set[int] = set()
        fresh = False
        pages = 0
        while url is not None and pages < 100:
            answer = self._client.get(url).raise_for_status()
            fresh = fresh or not answer.from_kept
            if pages == 0 and answer.from_kept and known:
                return [], False, True  # nothing moved anywhere: the list stands as last seen
            if pages == 0 and known and hand_over and answer.next_url() is not None:
                return [], True, None
            page = answer.json()
            if not isinstance(page, list):
                raise ValueError(f"GitHub's list of pull requests is not a list ({url})")
            for item in (list_item(raw) for raw in page if isinstance(raw, dict)):
                if item is not None and item.number not in seen:  # a request updated mid-walk shows twice
                    seen.add(item.number)
                    items.append(item)
            url = answer.next_url()
            pages += 1
        return items, fresh, False

    def _probe_head(
        self, repository: str, head: HeadInterest, rec: w.HeadRecord, record: RepoRecord, tick: int,
        now: float, interval: float,
    ) -> w.HeadRecord:
        path = f"repos/{repository}/commits/{head.sha}"
        runs = self._client.get(f"{path}/check-runs").raise_for_status()
        status_json = None
        learned = record.get("statuses_at")
        learn = not isinstance(learned, (int, float)) or now - learned > 3600 or learned > now + 60
        if record.get("uses_statuses") is not False or learn:
            status = self._client.get(f"{path}/status").raise_for_status()
            status_json = status.json()
            if learn or record.get("uses_statuses") is None:
                record["uses_statuses"] = w.uses_statuses(status_json)
                record["statuses_at"] = now
        runs_json = runs.json()
        state = w.rest_rollup(runs_json, status_json)
        if rec.seen:
            moved = (not runs.from_kept) or state != rec.state
        else:
            moved = w.first_look_moved(head.checks_state, state)
        finished = w.finished_at(runs_json)
        return w.after_head(rec, state=state, moved=moved, tick=tick, now=now, interval=interval,
                            updated_at=head.updated_at, failed_for=None if finished is None else now - finished)

    # -- the batched reading ------------------------------------------------
    def _read_moved(
        self, repos_doc: Mapping[str, object], new_repos: dict[str, RepoRecord], new_heads: Mapping[str, HeadDoc], tick: int,
        report: TickReport, recent: Mapping[str, Mapping[int, Request]] | None = None,
        asked: Mapping[str, RepoInterest] | None = None,
    ) -> None:
        """ONE GraphQL read, for the whole host, of what moved in this tick; kept with the tick's answers.

        Each clone's round used to read its own moved requests: a query (at
        least a point) per clone per tick. What moved here — a request new on a
        base the watch already knew, its head, ``updated_at`` or draft flag
        moved, a waiting head's checks moved to anything but SUCCESS (which
        the query's rollup settles alone) — is read once across every
        repository; a round takes a reading that matches its list item
        instead of asking. A base seen for the first time is not read here:
        its clones' queues know their requests, and read what they miss.
        """
        wanted: dict[str, dict[str, list[int]]] = {}
        for repository, record in new_repos.items():
            old_bases = field_map(field_map(repos_doc, repository), "bases")
            moved_heads = {
                key.split(" ", 1)[1]: value.get("state") for key, value in new_heads.items()
                if key.startswith(repository + " ") and isinstance(value, dict) and value.get("changed_tick") == tick
            }
            for base, part in record["bases"].items():
                old = base_part(old_bases.get(base))
                if part.get("asked_tick") != tick or old is None:
                    continue
                if asked is not None and base not in (asked[repository].bases if repository in asked else ()):
                    continue  # taken from its holder's survey, readings and all: never read here
                if part.get("changed_tick") != tick and not moved_heads:
                    continue  # its list did not move this tick (no request did), nor any head's checks
                numbers = _moved_numbers(part, old, moved_heads)
                if numbers:
                    wanted.setdefault(repository, {})[base] = numbers
        # what the watch's own query already read in full (a base's most recently updated requests)
        readings = _from_recent(wanted, recent or {}, new_repos)
        flat = {
            repo: ns for repo, ns in (
                (repo, sorted({n for ns in bases.values() for n in ns} - set(readings.get(repo, {}))))
                for repo, bases in wanted.items()
            ) if ns
        }
        if sum(len(v) for v in flat.values()) > MAX_BATCH_READ:
            flat = {}  # too much at once (a first tick after a long stop): the clones read
        for text, variables, repos in gq.build_host_read(flat) if flat else ():
            payload = self._client.graphql(text, variables)
            report.graphql_queries += 1
            for repo, result in gq.parse_host_read(payload, repos, flat).items():
                readings.setdefault(repo, {}).update(result.readings)
        for repository, bases in wanted.items():
            for base, numbers in bases.items():
                # a new part, never the last tick's: the answers it was built from are shared, read only
                part = new_repos[repository]["bases"][base]
                new_repos[repository]["bases"][base] = {**part, "readings": {
                    str(n): reading_json(readings[repository][n]) for n in numbers if n in readings.get(repository, {})
                }}
        report.read = {repo: sorted(r) for repo, r in readings.items()}

    # -- GraphQL ------------------------------------------------------------
    def _graphql_repos(
        self, repositories: list[str], interests: Mapping[str, RepoInterest], new_repos: dict[str, RepoRecord],
        heads_doc: Mapping[str, object], new_heads: dict[str, HeadDoc], tick: int, now: float, interval: float,
        report: TickReport,
    ) -> dict[str, dict[int, Request]]:
        """The one GraphQL query over every busy repository; returns the full readings it carried
        (per repository, its bases' most recently updated requests).

        Each base is asked for its requests most recently updated first, as
        far as the last tick's newest ``updatedAt`` (one page, whatever the
        number of open requests), with its count and its recently closed and
        merged requests; the whole list is walked only when the count
        disagrees with the list so kept, or none is kept. Waiting heads'
        checks ride in the same query (their rollup by oid), also those of
        repositories on REST with more than a handful waiting
        (:data:`REST_HEADS`).
        """
        riding = {r: h for r, h in self._riding.items() if r not in repositories}
        targets, known, marks = self._watch_targets(repositories, interests, new_repos, heads_doc, new_heads, now)
        for repository, heads in sorted(riding.items()):
            targets.append(w.Target(repository, "", heads=tuple(h.sha for h in heads), lists=False))
        gathered = self._ask_pages(targets, known, marks, report)
        lessons: dict[str, w.GraphqlTick] = {}
        for repository in repositories:
            record = new_repos[repository]
            bases = sorted(interests[repository].bases)
            answers = [gathered.get((repository, b)) for b in bases]
            got = [a for a in answers if a is not None and a.error is None and a.final is not None]
            if len(got) != len(answers):
                report.errors[repository] = next((a.error for a in answers if a is not None and a.error), "no answer")
                _back_to_rest(repository, record, heads_doc, new_heads)
                continue
            mode = _mode_of(record)
            rollups = self._store_answers(repository, record, bases, got, known, tick)
            parts = [record["bases"].get(b) or {} for b in bases]
            lessons[repository] = w.GraphqlTick(
                mode, got[0].fingerprint if got else None,
                moved=any(part.get("changed_tick") == tick for part in parts),
                pages=max((math.ceil(len(part.get("items") or []) / 100) for part in parts), default=1))
            self._heads_from_rollups(repository, interests[repository], rollups, heads_doc, new_heads, tick, now,
                                     interval, report)
        for repository, after in w.after_graphql_tick(lessons, query_goes_anyway=bool(riding)).items():
            new_repos[repository].update({
                "mode": after.mode, "still": after.still, "rebasing": after.rebasing,
                "fingerprint": list(after.fingerprint) if after.fingerprint is not None else None,
            })
        for repository in sorted(riding):
            self._ridden(repository, riding[repository], gathered.get((repository, "")), interests[repository],
                         heads_doc, new_heads, tick, now, interval, report)
        recent: dict[str, dict[int, Request]] = {}
        for (repository, _base), acc in gathered.items():
            if acc.error is None and acc.readings:
                recent.setdefault(repository, {}).update(acc.readings)
        return recent

    def _watch_targets(
        self, repositories: list[str], interests: Mapping[str, RepoInterest], new_repos: Mapping[str, RepoRecord],
        heads_doc: Mapping[str, object], new_heads: Mapping[str, HeadDoc], now: float,
    ) -> tuple[list[w.Target], dict[tuple[str, str], dict[int, Mapping[str, object]]], dict[tuple[str, str], str]]:
        """What the query asks of each base (and its repository's due heads), with the list kept so far
        and its newest ``updatedAt`` per (repository, base)."""
        targets: list[w.Target] = []
        known: dict[tuple[str, str], dict[int, Mapping[str, object]]] = {}
        marks: dict[tuple[str, str], str] = {}
        for repository in repositories:
            record = new_repos[repository]
            bases = sorted(interests[repository].bases)
            listed: dict[int, str] = {}
            for base in bases:
                old = record["bases"].get(base)
                raws = _raw_items(old)
                known[(repository, base)] = raws
                marks[(repository, base)] = _newest(old, raws)
                listed.update((n, str(raw.get("updated_at") or "")) for n, raw in raws.items())
                refresh = tuple(sorted((n for n, raw in raws.items() if _unknown_mergeability(raw)),
                                       reverse=True)[:w.ASKED_MAX])
                targets.append(w.Target(repository, base, walk=old is None, refresh=refresh))
            heads = self._due_heads(repository, interests[repository], heads_doc, new_heads, listed, now)
            if heads and targets:
                targets[-len(bases)] = replace(targets[-len(bases)], heads=tuple(h.sha for h in heads))
        return targets, known, marks

    def _ask_pages(
        self, targets: list[w.Target], known: Mapping[tuple[str, str], Mapping[int, Mapping[str, object]]],
        marks: Mapping[tuple[str, str], str], report: TickReport,
    ) -> dict[tuple[str, str], _Gathered]:
        """The query, page after page while a base has more to say (at most :data:`MAX_GRAPHQL_PAGES`)."""
        gathered: dict[tuple[str, str], _Gathered] = {}
        pending = targets
        pages = 0
        while pending and pages < MAX_GRAPHQL_PAGES:
            text, variables = w.build_watch_query(pending)
            payload = self._client.graphql(text, variables)
            report.graphql_queries += 1
            pages += 1
            following = []
            for target, part in zip(pending, w.parse_watch_answer(payload, pending)):
                key = (target.repository, target.base)
                after = _gather(gathered.setdefault(key, _Gathered()), target, part, marks.get(key, ""),
                                known.get(key, {}))
                if after is not None:
                    following.append(after)
            pending = following
        for target in pending:
            gathered[(target.repository, target.base)].error = "more pages than the watch follows"
        return gathered

    @staticmethod
    def _store_answers(
        repository: str, record: RepoRecord, bases: list[str], got: list[_Gathered],
        known: Mapping[tuple[str, str], Mapping[int, Mapping[str, object]]], tick: int,
    ) -> dict[str, str | None]:
        """Each base's list as the query left it, into the repository's record; the heads' rollups it carried."""
        rollups: dict[str, str | None] = {}
        for answer in got:
            rollups.update(answer.rollups)
        for base, answer in zip(bases, got):
            old = record["bases"].get(base)
            _store_listing(record, base, answer, known[(repository, base)], old, tick, rollups)
        record["active_tick"] = tick  # on GraphQL because its repository is busy
        return rollups

    def _ridden(
        self, repository: str, heads: list[HeadInterest], ridden: _Gathered | None, interest: RepoInterest,
        heads_doc: Mapping[str, object], new_heads: dict[str, HeadDoc], tick: int, now: float, interval: float,
        report: TickReport,
    ) -> None:
        """A REST repository's heads that rode in the query: their rollups, or asked again next tick."""
        if ridden is None or ridden.error is not None:
            for head in heads:  # asked again next tick (by REST if few are due then)
                head_key = f"{repository} {head.sha}"
                new_heads[head_key] = _head_json(_head_of(heads_doc.get(head_key)))
            report.errors.setdefault(repository, (ridden.error if ridden is not None else None) or "no answer")
            return
        self._heads_from_rollups(repository, interest, ridden.rollups, heads_doc, new_heads, tick,
                                 now, interval, report, only={h.sha for h in heads})

    def _due_heads(
        self, repository: str, interest: RepoInterest, heads_doc: Mapping[str, object], new_heads: Mapping[str, HeadDoc],
        listed: Mapping[int, str], now: float,
    ) -> list[HeadInterest]:
        """The repository's waiting heads whose checks are asked this tick (failed ones on their back-off)."""
        out = []
        for head in sorted(interest.heads.values(), key=lambda h: (h.base, h.number)):
            if head.base not in interest.bases:
                continue
            key = f"{repository} {head.sha}"
            rec = _head_of(new_heads.get(key, heads_doc.get(key)))
            if w.head_due(rec, now=now, updated_at=listed.get(head.number, head.updated_at)):
                out.append(head)
        return out

    def _heads_from_rollups(
        self, repository: str, interest: RepoInterest, rollups: Mapping[str, str | None], heads_doc: Mapping[str, object],
        new_heads: dict[str, HeadDoc], tick: int, now: float, interval: float, report: TickReport,
        only: set[str] | None = None, asked: bool = True,
    ) -> None:
        """Each watched head's record after the query (or a holder's survey, ``asked`` False: no call of
        this host's): moved when its rollup differs from the last one seen."""
        for head in interest.heads.values():
            if only is not None and head.sha not in only:
                continue
            key = f"{repository} {head.sha}"
            rec = _head_of(heads_doc.get(key))
            if head.sha not in rollups:
                new_heads[key] = _head_json(rec)
                continue
            state = rollups[head.sha]
            moved = state != rec.state if rec.seen else w.first_look_moved(head.checks_state, state)
            new_heads[key] = _head_json(w.after_head(
                rec, state=state, moved=moved, tick=tick, now=now, interval=interval, updated_at=head.updated_at
            ))
            report.heads_asked += 1 if asked else 0


# ----------------------------------------------------------------- helpers

REST_HEADS = 4
"""A repository on REST asks up to this many due heads' checks by conditional REST (free, a call each
— two where it uses statuses); past it, by rollup in the tick's GraphQL query (one point for every
repository's heads together, one call), so 150 waiting heads cost one call a tick, not 150."""


@record
class _Gathered:
    """What the pages of one tick's query said of one base."""

    error: str | None = None
    fingerprint: tuple[object, ...] | None = None
    base_oid: str | None = None
    total: int | None = None
    items: list[Request] = field(default_factory=list)
    """The requests the recent pages listed (new or moved since the last tick, and a few unmoved)."""
    walked: list[Request] = field(default_factory=list)
    gone: dict[int, str] = field(default_factory=dict)
    refreshed: list[Request] = field(default_factory=list)
    rollups: dict[str, str | None] = field(default_factory=dict)
    readings: dict[int, Request] = field(default_factory=dict)
    final: dict[int, object] | None = None
    """The open list after this tick (number -> a request listed now, or the stored item as kept)."""
    listed: list[Request] = field(default_factory=list)
    """The requests this tick's query said (fresh inputs)."""


def _gather(
    acc: _Gathered, target: w.Target, part: w.TargetAnswer, mark: str, known: Mapping[int, object]
) -> w.Target | None:
    """One page's part of one base, added to what the earlier pages said; the target of its next page, if any.

    Pure: a walked base follows its cursor to the end; a recent listing follows
    while the page is still newer than the last tick's ``mark``, then is merged
    with the kept list — and walked after all when the count says something
    left the base unseen.
    """
    if part.error is not None:
        acc.error = part.error
        return None
    acc.rollups.update(part.rollups)
    acc.readings.update(part.readings)
    acc.refreshed.extend(part.refreshed)
    if not target.lists:
        return None
    if target.cursor is None:
        acc.fingerprint = acc.fingerprint or part.fingerprint
        acc.base_oid = acc.base_oid or part.base_oid
        acc.total = part.total
        acc.gone.update(part.gone)
    if target.walk:
        if target.cursor is None:
            acc.walked = []
        acc.walked.extend(part.items)
        if part.next_cursor is not None:
            return w.Target(target.repository, target.base, part.next_cursor, walk=True)
        acc.final = {i.number: i for i in acc.walked}
        acc.listed = list(acc.walked)
        return None
    acc.items.extend(part.items)
    if w.more_recent(mark, part.items, part.next_cursor is not None):
        return w.Target(target.repository, target.base, part.next_cursor)
    merged, agrees = w.merge_listing(known, [*acc.items, *acc.refreshed], acc.gone, acc.total)
    if not agrees:  # something left the base unseen (retargeted, deleted, closed long ago): walk it
        return w.Target(target.repository, target.base, walk=True)
    acc.final = merged
    acc.listed = [*acc.items, *acc.refreshed]
    return None


def _back_to_rest(repository: str, record: RepoRecord, heads_doc: Mapping[str, object],
                  new_heads: dict[str, HeadDoc]) -> None:
    """A repository the query could not answer goes back to REST; its heads' records stand as they were."""
    record.update({"mode": "rest", "still": 0, "fingerprint": None, "rebasing": False})
    for head_key, value in heads_doc.items():
        if head_key.startswith(repository + " ") and isinstance(value, dict):
            new_heads[head_key] = _head_json(_head_of(value))


def _checks_moved(raw: object, head_sha: object, moved_heads: Mapping[str, object]) -> bool:
    """A listed request whose head's checks moved this tick (a rollup that passed, with the state's
    inputs known, is settled by the query alone)."""
    return isinstance(head_sha, str) and head_sha in moved_heads and not (
        moved_heads[head_sha] == "SUCCESS" and inputs_of(raw) is not None)


def _moved_numbers(part: BasePart, old: BasePart, moved_heads: Mapping[str, object]) -> list[int]:
    """The requests of one base to read this tick: those its listing says moved (or that differ from the
    last tick's list), and those whose head's checks moved. Drafts are never read."""
    numbers: list[int] = []
    if "moved" in part:  # an incremental listing said what moved
        moved_now = set(part["moved"])
        for raw in part.get("items") or []:
            if not isinstance(raw, dict) or raw.get("draft") is True:
                continue
            number = raw.get("number")
            if isinstance(number, int) and (number in moved_now or _checks_moved(raw, raw.get("head_sha"), moved_heads)):
                numbers.append(number)
        return numbers
    before = {p[0].number: w.snapshot([p[0]])[p[0].number]
              for p in (item_of(raw) for raw in old.get("items") or []) if p is not None}
    for raw in part.get("items") or []:
        found = item_of(raw)
        if found is None or found[0].draft:
            continue
        item = found[0]
        if before.get(item.number) != w.snapshot([item])[item.number] or _checks_moved(raw, item.head_sha, moved_heads):
            numbers.append(item.number)
    return numbers


def _from_recent(
    wanted: Mapping[str, Mapping[str, list[int]]], recent: Mapping[str, Mapping[int, Request]],
    new_repos: Mapping[str, RepoRecord],
) -> dict[str, dict[int, Request]]:
    """The wanted requests the watch's own query already read in full, as they are listed now."""
    readings: dict[str, dict[int, Request]] = {}
    for repository, bases in wanted.items():
        mine = recent.get(repository) or {}
        for base, numbers in bases.items():
            listed = _raw_items(new_repos[repository]["bases"][base])  # as stored: no request built for the rest
            for n in numbers:
                got, now_listed = mine.get(n), listed.get(n)
                if got is not None and now_listed is not None and (got.head_sha, got.updated_at) == (
                    now_listed.get("head_sha"), now_listed.get("updated_at")
                ):
                    readings.setdefault(repository, {})[n] = got
    return readings


def _raw_items(part: BasePart | None) -> dict[int, Mapping[str, object]]:
    """A stored base part's items as stored (number -> the raw item), without building the requests."""
    out: dict[int, Mapping[str, object]] = {}
    for raw in (part or {}).get("items") or []:
        number = raw.get("number") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and isinstance(number, int) and not isinstance(number, bool):
            out[number] = raw
    return out


def _newest(part: BasePart | None, raws: Mapping[int, Mapping[str, object]]) -> str:
    """The newest ``updated_at`` the stored part knew (kept with it; else found among its items)."""
    kept = (part or {}).get("newest")
    if isinstance(kept, str):
        return kept
    return max((str(raw.get("updated_at") or "") for raw in raws.values()), default="")


def _unknown_mergeability(raw: Mapping[str, object]) -> bool:
    """Whether the watch's query should ask this request by number (free: a single object): its mergeability
    is still unknown (it moves no ``updatedAt``), or no query said its inputs yet (it was listed by REST)."""
    said = inputs_of(raw)
    return said is None or said[2] in (None, "UNKNOWN")


def _store_listing(
    record: RepoRecord, base: str, answer: _Gathered, known: Mapping[int, Mapping[str, object]],
    old: BasePart | None, tick: int, rollups: Mapping[str, str | None],
) -> None:
    """Write a base's list after an incremental (or walked) GraphQL listing into the repository's record.

    What the query listed now is written with its inputs (review decision,
    checks, mergeability) and its labels where it did not move; what it did
    not list stands as stored — with its checks as the heads' rollups asked
    by oid now say them, and its mergeability UNKNOWN once the base branch
    moved (GitHub recomputes it: UNKNOWN until a later listing says it).
    The requests that moved or are new are kept as ``moved`` for the
    batched reading; nothing else of the list is parsed again.
    """
    assert answer.final is not None
    fresh = {i.number: i for i in answer.listed if i.number in answer.final}
    base_moved = bool(old and answer.base_oid and old.get("base_oid") not in (None, answer.base_oid))
    items = []
    moved = []
    for number in sorted(answer.final):
        item = fresh.get(number)
        prev = known.get(number)
        if item is None:
            raw = prev if prev is not None else {}
            said = inputs_of(raw)
            if said is not None:
                checks = rollups.get(str(raw.get("head_sha")), said[1])
                mergeable = "UNKNOWN" if base_moved else said[2]
                if (checks, mergeable) != said[1:]:
                    raw = {**raw, "inputs": [said[0], checks, mergeable]}
            items.append(raw)
            continue
        same = prev is not None and (prev.get("head_sha"), prev.get("updated_at"), prev.get("draft") is True) == (
            item.head_sha, item.updated_at, item.draft)
        labels = prev.get("labels") if prev is not None and prev.get("updated_at") == item.updated_at else None
        if isinstance(labels, list):
            item = replace(item, labels=tuple(str(x) for x in labels))
        items.append(item_json(item, labels_known=isinstance(labels, list), inputs_known=True))
        if not same:
            moved.append(number)
    changed = old is None or bool(moved) or set(known) != set(answer.final)
    old_changed = (old or {}).get("changed_tick")
    record["bases"][base] = {
        "items": items,
        "asked_tick": tick,
        "changed_tick": tick if changed or not isinstance(old_changed, int) else old_changed,
        "newest": max(_newest(old, known), w.newest(answer.listed)),
        "base_oid": answer.base_oid,
        "moved": moved,
    }



def _mode_of(record: Mapping[str, object]) -> w.RepoMode:
    mode = record.get("mode") if record.get("mode") in ("rest", "graphql") else "rest"
    raw_still = record.get("still")
    still = raw_still if isinstance(raw_still, int) else 0
    fingerprint = record.get("fingerprint")
    return w.RepoMode(
        mode=str(mode), still=max(0, min(still, w.QUIET_TICKS)),
        fingerprint=tuple(fingerprint) if isinstance(fingerprint, list) else None,
        rebasing=record.get("rebasing") is True,
    )


def _store_base(
    record: RepoRecord, base: str, items: list[Request], labels_known: Mapping[int, bool],
    old: BasePart | None, tick: int, *, inputs_known: bool = False,
) -> bool:
    """Write a base's new list into the repository's record; True when a request moved (or it is new)."""
    previous = [p[0] for p in (item_of(raw) for raw in (old or {}).get("items") or []) if p is not None]
    changed = old is None or w.snapshot(previous) != w.snapshot(items)
    old_changed = (old or {}).get("changed_tick")
    record["bases"][base] = {
        "items": [
            item_json(i, labels_known=labels_known.get(i.number, False), inputs_known=inputs_known) for i in items
        ],
        "asked_tick": tick,
        "changed_tick": tick if changed or not isinstance(old_changed, int) else old_changed,
    }
    return changed


def _from_rest(part: BasePart) -> bool:
    """Whether a stored base part is a REST list's as it stands (every label known, no GraphQL inputs):
    a 304 then stands for it whole. A part the GraphQL query wrote is rebuilt from the kept list instead,
    so its inputs (mergeability moves no ETag) are not kept past the query that said them."""
    items = part.get("items")
    return isinstance(items, list) and all(
        isinstance(raw, dict) and isinstance(raw.get("labels"), list) and raw.get("inputs") is None for raw in items
    )


def _listed_times(part: BasePart) -> Iterator[tuple[int, str]]:
    """(number, ``updated_at``) of a stored base part's items, without building the requests."""
    for number, raw in _raw_items(part).items():
        yield number, str(raw.get("updated_at") or "")


def _keep_labels(items: list[Request], old: BasePart | None) -> tuple[list[Request], dict[int, bool]]:
    """GraphQL's list carries no labels (a nested connection costs 100 a base): an unmoved request keeps its own."""
    before = {p[0].number: p for p in (item_of(raw) for raw in (old or {}).get("items") or []) if p is not None}
    out, known = [], {}
    for item in items:
        prev = before.get(item.number)
        if prev is not None and prev[1] and prev[0].updated_at == item.updated_at:
            out.append(replace(item, labels=prev[0].labels))
            known[item.number] = True
        else:
            out.append(item)
            known[item.number] = False
    return out, known


def _head_of(raw: object) -> w.HeadRecord:
    if not isinstance(raw, dict):
        return w.HeadRecord()
    def num(key: str, default: float = 0.0) -> float:
        value = raw.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default
    state = raw.get("state")
    return w.HeadRecord(
        state=state if isinstance(state, str) else None, seen=raw.get("seen") is True,
        changed_tick=int(num("changed_tick")), streak=max(0, min(int(num("streak")), 20)),
        next_at=num("next_at"), updated_at=str(raw.get("updated_at") or ""),
    )


def _head_json(rec: w.HeadRecord) -> HeadDoc:
    return {
        "state": rec.state, "seen": rec.seen, "changed_tick": rec.changed_tick, "streak": rec.streak,
        "next_at": rec.next_at, "updated_at": rec.updated_at,
    }


def _part_of(
    doc: Mapping[str, object], repository: str, base: str, now: float
) -> tuple[str, int, float, float, Mapping[str, object], BasePart] | None:
    """(epoch, tick, ticked_at, next tick, repository record, base part) of fresh answers that asked
    ``base`` in their tick; None when absent, stale, or not asked in it."""
    epoch, tick, ticked_at = doc.get("epoch"), doc.get("tick"), doc.get("ticked_at")
    if not isinstance(epoch, str) or not isinstance(tick, int) or not isinstance(ticked_at, (int, float)):
        return None
    raw_interval, raw_stretch = doc.get("interval"), doc.get("stretch")
    interval = raw_interval if isinstance(raw_interval, (int, float)) else 60.0
    stretch = raw_stretch if isinstance(raw_stretch, (int, float)) else 1.0
    length = max(10.0, min(float(interval) * max(1.0, min(float(stretch), pacing.MAX_STRETCH)), 4 * 3600.0))
    next_at = doc.get("next_at")
    due_at = float(next_at) if isinstance(next_at, (int, float)) else float(ticked_at) + length
    due_at = min(due_at, float(ticked_at) + length + w.SLACK)  # a next tick further off than that is garbage
    if ticked_at > now + 60 or now > due_at + STALE_GRACE:
        return None
    record = field_map(field_map(doc, "repos"), repository)
    part = base_part(field_map(record, "bases").get(base))
    if part is None or part.get("asked_tick") != tick:
        return None
    return epoch, tick, float(ticked_at), due_at, record, part


def _head_ticks(doc: Mapping[str, object], repository: str) -> Iterator[tuple[str, int]]:
    """(head sha, the tick its checks last moved) of every head the watch holds for ``repository``."""
    heads = doc.get("heads")
    for key, value in heads.items() if isinstance(heads, dict) else ():
        if isinstance(key, str) and key.startswith(repository + " ") and isinstance(value, dict):
            changed = value.get("changed_tick")
            yield key.split(" ", 1)[1], int(changed) if isinstance(changed, int) else 0


def _head_states(doc: Mapping[str, object], repository: str) -> Iterator[tuple[str, str | None]]:
    """(head sha, its checks' state) of every head the watch has seen for ``repository``."""
    heads = doc.get("heads")
    for key, value in heads.items() if isinstance(heads, dict) else ():
        state = value.get("state") if isinstance(value, dict) else None
        if isinstance(key, str) and key.startswith(repository + " ") and isinstance(value, dict) and (
            value.get("seen") is True and (state is None or isinstance(state, str))
        ):
            yield key.split(" ", 1)[1], state


def _changed_tick(part: BasePart, tick: int) -> int:
    return part.get("changed_tick", tick)


def _header_of(doc: Mapping[str, object], repository: str, base: str, now: float) -> WatchedBase | None:
    found = _part_of(doc, repository, base, now)
    if found is None:
        return None
    epoch, tick, _ticked_at, due_at, _record, part = found
    return WatchedBase(
        epoch=epoch, tick=tick, next_at=due_at, changed_tick=_changed_tick(part, tick),
        heads_tick=max((changed for _sha, changed in _head_ticks(doc, repository)), default=0),
    )


def _view_of(doc: Mapping[str, object], repository: str, base: str, now: float) -> BaseView | None:
    found = _part_of(doc, repository, base, now)
    if found is None:
        return None
    epoch, tick, ticked_at, due_at, record, part = found
    items, known, inputs = [], {}, {}
    for raw in part.get("items") or []:
        item = item_of(raw)
        if item is not None:
            items.append(item[0])
            known[item[0].number] = item[1]
            said = inputs_of(raw)
            if said is not None:
                inputs[item[0].number] = said
    active = record.get("active_tick")  # unknown: as if active now
    readings = {}
    for raw in field_map(part, "readings").values():
        reading = reading_of(raw)
        if reading is not None:
            readings[reading.number] = reading
    return BaseView(
        epoch=epoch, tick=tick, ticked_at=ticked_at, next_at=due_at,
        items=items, labels_known=known, changed_tick=_changed_tick(part, tick),
        heads=dict(_head_ticks(doc, repository)), inputs=inputs, readings=readings,
        active_tick=active if isinstance(active, int) and not isinstance(active, bool) else tick,
    )
