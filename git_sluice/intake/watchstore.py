"""The host watch's files: who is watched (the registry), what the last tick found (the answers).

They live in the host state dir, beside ``host.sqlite3``, so every clone and
process of the user on the host shares them (docs/design.md#the-host-watch: discovery is a
host's job):

- ``watch/registry.json`` — per clone (its sluice dir): the repository, the
  bases it takes in, its watch group and discovery interval, the heads it
  waits on (number, sha, ``updated_at``, checks), the requests its waits
  follow on branches another host takes in, and when it last said so.
  Every round writes its clone's part; a clone silent for a day is dropped.
- ``watch/<group>/answers.json`` — the last tick of that group: its number,
  when it ran and when the next is due, each repository's mode and each
  base's open requests as last seen, each waiting head's record. Written
  atomically once, at the end of a tick: a tick cut short leaves the previous
  answers whole, and the next comer redoes the tick.
- ``watch/<group>/kept/`` — the watch's own kept answers (ETags), so whoever
  runs the tick revalidates what the last one asked.
- ``watch/<group>/tick.lock`` — one tick at a time (a file lock: a process
  that dies lets go of it with its last breath).

A group is one (REST endpoint, GraphQL endpoint, pool): ETags and the
allowance belong to a pool, so only clones reaching GitHub the same way share
a watch. Every file here is a cache: a corrupt one is discarded (with a
warning) and rebuilt, and a clone that cannot read them runs its own round.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from ..jsonshape import field_list, field_map
from ..records import record
from ..statefile import JsonDocument, read_bytes
from .request import Request
from .standing import Standing

REGISTRY_FORGET = 86400.0
"""A clone that has not said it is there for a day is no longer watched."""
MAX_HEADS = 2000
"""Heads per clone branch the registry keeps (a hostile or runaway queue must not bloat the host's files)."""
FOLLOW_FORGET = 600.0
"""A followed request whose wait has not said so for 10 minutes is no longer watched (a wait killed
without its ``finally`` leaves a follow that only costs the watch a list until then)."""
MAX_FOLLOWS = 200
"""Requests one clone's waits may follow at once."""


def group_of(api: str, graphql: str, pool: str) -> str:
    """The watch group of a clone: one per (REST endpoint, GraphQL endpoint, pool)."""
    return hashlib.sha256(f"{api.rstrip('/')}\n{graphql}\n{pool}".encode()).hexdigest()[:16]


@record(frozen=True)
class HeadInterest:
    """A head some clone waits on (from its queue)."""

    repository: str
    base: str
    number: int
    sha: str
    updated_at: str
    checks_state: str | None


@record
class RepoInterest:
    """What the group's clones take in of one repository."""

    bases: set[str] = field(default_factory=set)
    heads: dict[str, HeadInterest] = field(default_factory=dict)
    mirrors: set[str] = field(default_factory=set)
    """Of ``bases``, those every clone here follows only as mirrors (another host holds their lease):
    the watch takes them from the holder's survey and never asks GitHub for them."""
    held: set[str] = field(default_factory=set)
    """Of ``bases``, those a clone here takes in itself (a driver, a step): always asked, and surveyed
    for the fleet. The rest — mirrors, and bases only a wait follows — are taken from a survey."""
    holders: dict[str, str | None] = field(default_factory=dict)
    """Per mirrored base, the host its clones here read holding the lease (whose survey alone is taken)."""


@record(frozen=True)
class CloneRemote:
    """A clone of a repository on this host and how its driver reaches the remote: where the host
    watch looks for the fleet's survey of the repository (and fetches, for that clone, what its
    driver's own fetch would have)."""

    clone: str
    remote: str
    refspecs: tuple[str, ...]
    pools: tuple[str, ...] | None


UNSETTLED = "\x00unsettled"
"""A mirrored base whose holder this host's clones read differently: no survey is taken until they agree."""


class Registry:
    """``watch/registry.json``: every clone that takes something in on this host."""

    def __init__(self, watch_dir: Path) -> None:
        self.doc = JsonDocument(Path(watch_dir) / "registry.json", what="host watch registry")

    def note(
        self, clone: str, *, repository: str, group: str, discovery: float, now: float,
        bases: Iterable[str] = (), heads: Mapping[str, list[dict[str, Any]]] | None = None, exact: bool = False,
        remote: CloneRemote | None = None, mirrors: Mapping[str, str | None] | None = None,
    ) -> None:
        """Say this clone takes ``bases`` of ``repository`` in, and (per base, when given) the heads it waits on.

        ``exact``: ``bases`` is all it takes in (a driver's word after reading its leases), not more of them.
        ``remote``: how the clone's driver fetches (the watch looks at the fleet's survey through it).
        ``mirrors``: of the bases, those another host holds, each with its holder as this clone read the
        lease (None: a mark of unknown holder); with ``exact``: the clone's whole word.
        """
        with self.doc.update() as data:
            entry = self._entry(data, clone)
            if entry.get("repository") != repository or entry.get("group") != group:
                entry.clear()  # the clone was reconfigured: what it said before is void
            old_bases = field_list(entry, "bases")
            old_heads = field_map(entry, "heads")
            entry.update({
                "repository": repository, "group": group, "discovery": float(discovery), "seen_at": now,
                "bases": sorted(
                    (set() if exact else {b for b in old_bases if isinstance(b, str)}) | set(bases) | set(heads or {})
                ),
                "heads": {**old_heads, **{b: list(h)[:MAX_HEADS] for b, h in (heads or {}).items()}},
            })
            if mirrors is not None or exact:
                entry["mirrors"] = {b: h for b, h in sorted((mirrors or {}).items()) if b in entry["bases"]}
            if remote is not None:
                entry["remote"] = {"name": remote.remote, "refspecs": list(remote.refspecs)[:64],
                                   "pools": list(remote.pools) if remote.pools is not None else None}
            self._forget(data, now)

    def follow(
        self, clone: str, *, repository: str, group: str, discovery: float, now: float, base: str, number: int,
        head: Mapping[str, Any] | None = None,
    ) -> None:
        """Say a wait of this clone follows request ``number`` on ``base`` though another host takes it in.

        The watch then lists that base for the host (conditionally, or in its
        one GraphQL query when the list churns) and watches ``head``'s checks,
        so the wait reads its request from the watch's answers instead of
        asking GitHub for it every few seconds. Kept apart from the bases a
        driver registers (a driver's exact word must not drop a wait's follow).
        """
        with self.doc.update() as data:
            entry = self._entry(data, clone)
            if entry.get("repository") != repository or entry.get("group") != group:
                entry.clear()
                entry.update({"repository": repository, "group": group, "bases": [], "heads": {}})
            follows = {k: v for k, v in field_map(entry, "follows").items() if _follow_live(v, now)}
            follows[f"{base} {number}"] = {"base": base, "number": number, "at": now, "head": dict(head or {}) or None}
            if len(follows) > MAX_FOLLOWS:
                for key in sorted(follows, key=lambda k: _follow_at(follows[k]))[: len(follows) - MAX_FOLLOWS]:
                    del follows[key]
            entry["follows"] = follows
            entry["seen_at"] = now
            entry.setdefault("discovery", float(discovery))
            self._forget(data, now)

    def unfollow(self, clone: str, *, base: str, number: int) -> None:
        """The wait is over: the watch stops listing that base for it."""
        with self.doc.update() as data:
            entry = self._entry(data, clone)
            follows = dict(field_map(entry, "follows"))
            follows.pop(f"{base} {number}", None)
            entry["follows"] = follows

    def heads_noted(self, clone: str, base: str, now: float) -> bool:
        """Whether the registry still holds what ``clone`` last said it waits on, on ``base`` (even nothing)."""
        clones = self.doc.read().get("clones")
        entry = clones.get(clone) if isinstance(clones, dict) else None
        return isinstance(entry, dict) and _recent(entry, now) and isinstance(field_map(entry, "heads").get(base), list)

    @staticmethod
    def _entry(data: dict[str, Any], clone: str) -> dict[str, Any]:
        clones = data.get("clones")
        if not isinstance(clones, dict):
            clones = data["clones"] = {}
        entry = clones.get(clone)
        if not isinstance(entry, dict):
            entry = clones[clone] = {}
        return entry

    @staticmethod
    def _forget(data: dict[str, Any], now: float) -> None:
        clones = data.get("clones")
        if isinstance(clones, dict):
            for key in [k for k, v in clones.items() if not _recent(v, now)]:
                del clones[key]

    def interests(self, group: str, now: float) -> tuple[dict[str, RepoInterest], float | None]:
        """The group's repositories (bases, waiting heads) and the shortest discovery interval among its clones."""
        out: dict[str, RepoInterest] = {}
        held: dict[str, set[str]] = {}
        followed: dict[str, set[str]] = {}
        interval: float | None = None
        clones = self.doc.read().get("clones")
        for value in (clones.values() if isinstance(clones, dict) else ()):
            if not isinstance(value, dict) or value.get("group") != group or not _recent(value, now):
                continue
            repository = value.get("repository")
            if not isinstance(repository, str) or repository.count("/") != 1:
                continue
            discovery = value.get("discovery")
            if isinstance(discovery, (int, float)) and discovery >= 10:
                interval = float(discovery) if interval is None else min(interval, float(discovery))
            interest = out.setdefault(repository, RepoInterest())
            bases = {b for b in field_list(value, "bases") if isinstance(b, str) and b}
            mirrored = {b: h for b, h in field_map(value, "mirrors").items()
                        if b in bases and (h is None or isinstance(h, str))}
            interest.bases.update(bases)
            held.setdefault(repository, set()).update(bases - set(mirrored))
            for base, named in mirrored.items():
                holder = named if named else UNSETTLED  # a mark of unknown holder: no one's survey is its own
                said = interest.holders.setdefault(base, holder)
                if said != holder:  # two clones here read two holders (a take-over between their fetches)
                    interest.holders[base] = UNSETTLED
            interest.mirrors.update(mirrored)
            for base, items in field_map(value, "heads").items():
                for item in items if isinstance(items, list) else []:
                    head = _head(repository, base, item)
                    if head is not None:
                        interest.heads[head.sha] = head
            for follow in field_map(value, "follows").values():
                followed_base = follow.get("base") if isinstance(follow, dict) else None
                if not isinstance(follow, dict) or not _follow_live(follow, now) or not isinstance(followed_base, str) \
                        or not followed_base:
                    continue
                interest.bases.add(followed_base)
                followed.setdefault(repository, set()).add(followed_base)  # asked when no survey says it
                head = _head(repository, followed_base, follow.get("head"))
                if head is not None:
                    interest.heads.setdefault(head.sha, head)
        for repository, interest in out.items():
            interest.held = held.get(repository, set())
            interest.mirrors -= interest.held | followed.get(repository, set())
        return out, interval


    def remotes(self, group: str, now: float) -> dict[str, list[CloneRemote]]:
        """Per repository of the group, its clones whose drivers said how they reach the remote."""
        out: dict[str, list[CloneRemote]] = {}
        clones = self.doc.read().get("clones")
        for clone, value in sorted(clones.items()) if isinstance(clones, dict) else ():
            if not isinstance(value, dict) or value.get("group") != group or not _recent(value, now):
                continue
            repository, said = value.get("repository"), value.get("remote")
            if not isinstance(repository, str) or not isinstance(said, dict) or not isinstance(said.get("name"), str):
                continue
            specs = said.get("refspecs")
            pools = said.get("pools")
            out.setdefault(repository, []).append(CloneRemote(
                clone=clone, remote=said["name"],
                refspecs=tuple(s for s in specs if isinstance(s, str)) if isinstance(specs, list) else (),
                pools=tuple(p for p in pools if isinstance(p, str)) if isinstance(pools, list) else None,
            ))
        return out


def _recent(value: Any, now: float) -> bool:
    seen = value.get("seen_at") if isinstance(value, dict) else None
    return isinstance(seen, (int, float)) and now - REGISTRY_FORGET <= seen <= now + 3600


def _follow_at(value: object) -> float:
    """When a follow was last said (0 for one that says no time: it goes first when there are too many)."""
    at = value.get("at") if isinstance(value, Mapping) else None
    return float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else 0.0


def _follow_live(value: Any, now: float) -> bool:
    at = value.get("at") if isinstance(value, Mapping) else None
    return isinstance(at, (int, float)) and not isinstance(at, bool) and now - FOLLOW_FORGET <= at <= now + 60


def _head(repository: str, base: str, item: Any) -> HeadInterest | None:
    if not isinstance(item, dict):
        return None
    number, sha = item.get("number"), item.get("sha")
    if not isinstance(number, int) or not isinstance(sha, str) or len(sha) < 7:
        return None
    state = item.get("checks_state")
    return HeadInterest(
        repository, str(base), number, sha, str(item.get("updated_at") or ""), state if isinstance(state, str) else None
    )


class Answers:
    """``watch/<group>/answers.json``: the last tick's findings (read by every round, written by the tick)."""

    def __init__(self, group_dir: Path) -> None:
        self.dir = Path(group_dir)
        self.doc = JsonDocument(self.dir / "answers.json", what="host watch answers")
        self._peeked: tuple[bytes, Mapping[str, Any]] | None = None

    def read(self) -> dict[str, Any]:
        """The answers, freshly parsed: the caller may change what it is given."""
        return self.doc.read()

    def peek(self) -> Mapping[str, Any]:
        """The answers, for reading only: parsed again only when the file changed.

        A round asks whether the watch is due, whether a clone joined, and for
        its base's view: three parses of a file that, over 500 requests, is
        120 KB of JSON (issue 15). Compared by content, never by time.
        """
        raw = read_bytes(self.doc.path)
        if raw is not None and self._peeked is not None and self._peeked[0] == raw:
            return self._peeked[1]
        data = self.doc.read()
        if raw is not None and raw == read_bytes(self.doc.path):  # not replaced while it was parsed
            self._peeked = (raw, data)
        return data

    def write(self, data: dict[str, Any]) -> None:
        """Replace the answers with ``data``, which the caller hands over: it is what :meth:`peek` gives
        next, unparsed, until the file changes (a drive's rounds then parse no tick's answers again)."""
        text = self.doc.write(data)
        self._peeked = (text.encode("utf-8"), data)

    @staticmethod
    def new_epoch() -> str:
        return os.urandom(8).hex()


def item_json(item: Request, *, labels_known: bool, inputs_known: bool = False) -> dict[str, Any]:
    """``inputs_known``: the item came from the watch's GraphQL query, which also says what the
    request's state is derived from (review decision, checks, mergeability); a REST list does not."""
    return {
        "number": item.number, "title": item.title, "author": item.author, "head_ref": item.head_ref,
        "head_sha": item.head_sha, "base": item.base, "draft": item.draft, "updated_at": item.updated_at,
        "labels": list(item.labels) if labels_known else None,
        "inputs": [item.review_decision, item.checks_state, item.mergeable] if inputs_known else None,
    }


def inputs_of(raw: Any) -> tuple[str | None, str | None, str | None] | None:
    """(review decision, checks state, mergeability) as the watch's query said them; None when not said."""
    inputs = raw.get("inputs") if isinstance(raw, dict) else None
    if not isinstance(inputs, list) or len(inputs) != 3:
        return None
    a, b, c = inputs  # unrolled: read for every listed request, several times a round (5,000 at a time)
    if not ((a is None or (isinstance(a, str) and len(a) <= 40)) and (b is None or (isinstance(b, str) and len(b) <= 40))
            and (c is None or (isinstance(c, str) and len(c) <= 40))):
        return None
    return (a, b, c)


def item_of(raw: Any) -> tuple[Request, bool] | None:
    """(the request, whether its labels are known) from :func:`item_json`'s form; None when malformed."""
    if not isinstance(raw, dict):
        return None
    number = raw.get("number")
    if not isinstance(number, int) or isinstance(number, bool):
        return None
    labels = raw.get("labels")
    known = isinstance(labels, list)
    return (
        Request(
            number=number, title=str(raw.get("title") or ""),
            author=raw.get("author") if isinstance(raw.get("author"), str) else None,
            head_ref=str(raw.get("head_ref") or ""), head_sha=str(raw.get("head_sha") or ""),
            base=str(raw.get("base") or ""), draft=raw.get("draft") is True,
            updated_at=str(raw.get("updated_at") or ""),
            labels=tuple(map(str, labels)) if known else (),  # type: ignore[arg-type]
        ),
        known,
    )


class Cursor:
    """``<sluice dir>/watched.json``: per base, the watch tick (and answers epoch) this clone last took in."""

    def __init__(self, sluice_dir: Path) -> None:
        self.doc = JsonDocument(Path(sluice_dir) / "watched.json", what="host watch cursor")

    def get(self, base: str) -> tuple[str | None, int]:
        value = self.doc.read().get(base)
        if not isinstance(value, dict) or not isinstance(value.get("tick"), int):
            return None, -1
        epoch = value.get("epoch")
        return (epoch if isinstance(epoch, str) else None), int(value["tick"])

    def standing(self, base: str) -> Standing | None:
        """What the take-in at the cursor left, when it would read nothing again (:mod:`.standing`)."""
        value = self.doc.read().get(base)
        raw = value.get("stands") if isinstance(value, dict) else None
        if not isinstance(raw, dict):
            return None
        fingerprint, holder, count = raw.get("fingerprint"), raw.get("holder"), raw.get("open")
        if not isinstance(fingerprint, str) or not (holder is None or isinstance(holder, str)):
            return None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            return None
        return Standing(fingerprint=fingerprint, holder=holder, open=count)

    def set(self, base: str, epoch: str, tick: int, stands: Standing | None = None) -> None:
        with self.doc.update() as data:
            data[base] = {"epoch": epoch, "tick": tick}
            if stands is not None:
                data[base]["stands"] = {"fingerprint": stands.fingerprint, "holder": stands.holder,
                                        "open": stands.open}


def reading_json(reading: Request) -> dict[str, Any]:
    """A reading the watch took for the host's clones (every field a :class:`Request` has)."""
    return {
        "number": reading.number, "title": reading.title, "author": reading.author, "head_ref": reading.head_ref,
        "head_sha": reading.head_sha, "base": reading.base, "draft": reading.draft, "updated_at": reading.updated_at,
        "labels": list(reading.labels), "github_state": reading.github_state,
        "review_decision": reading.review_decision, "checks_state": reading.checks_state,
        "failing": list(reading.failing), "pending": list(reading.pending), "mergeable": reading.mergeable,
        "url": reading.url, "reviews": [[author, state] for author, state in reading.reviews],
    }


READING_TEXT_MAX = 4096
READING_LIST_MAX = 200


def bounded_reading(reading: Request) -> Request | None:
    """What ``reading_of(reading_json(reading))`` gives, without the round trip (a survey's readings at
    5,000 open requests): None when a text is past :data:`READING_TEXT_MAX`, every list cut at
    :data:`READING_LIST_MAX`."""
    texts = (reading.title, reading.author, reading.head_ref, reading.head_sha, reading.base, reading.updated_at,
             reading.github_state, reading.review_decision, reading.checks_state, reading.mergeable, reading.url)
    if any(text is not None and len(text) > READING_TEXT_MAX for text in texts):
        return None
    if max(len(reading.labels), len(reading.failing), len(reading.pending), len(reading.reviews)) > READING_LIST_MAX:
        return replace(reading, labels=reading.labels[:READING_LIST_MAX], failing=reading.failing[:READING_LIST_MAX],
                       pending=reading.pending[:READING_LIST_MAX], reviews=reading.reviews[:READING_LIST_MAX])
    return reading


def reading_of(raw: Any) -> Request | None:
    """:func:`reading_json`'s form back; None when any field is not of its kind (a cache: never trusted)."""
    if not isinstance(raw, dict):
        return None

    def text(key: str, optional: bool = False) -> str | None:
        value = raw.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or len(value) > READING_TEXT_MAX:
            raise ValueError(key)
        return value

    def texts(key: str) -> tuple[str, ...]:
        value = raw.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(key)
        return tuple(value[:READING_LIST_MAX])

    try:
        number = raw.get("number")
        if not isinstance(number, int) or isinstance(number, bool) or not isinstance(raw.get("draft"), bool):
            return None
        reviews = raw.get("reviews")
        if not isinstance(reviews, list) or not all(
            isinstance(r, list) and len(r) == 2 and (r[0] is None or isinstance(r[0], str)) and isinstance(r[1], str)
            for r in reviews
        ):
            return None
        return Request(
            number=number, title=str(text("title")), author=text("author", True), head_ref=str(text("head_ref")),
            head_sha=str(text("head_sha")), base=str(text("base")), draft=raw["draft"],
            updated_at=str(text("updated_at")), labels=texts("labels"), github_state=str(text("github_state")),
            review_decision=text("review_decision", True), checks_state=text("checks_state", True),
            failing=texts("failing"), pending=texts("pending"), mergeable=text("mergeable", True),
            url=str(text("url")), reviews=tuple((r[0], r[1]) for r in reviews[:READING_LIST_MAX]),
        )
    except ValueError:
        return None
