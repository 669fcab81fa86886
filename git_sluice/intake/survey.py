"""The fleet's survey of a base: what its lease holder's watch found of it at one tick (pure).

Each host used to pay for its own watch: every host following a branch
another host held still listed it for its waits, and a host that mirrors
nothing cannot show a queue it does not read (issue 29). Now the holder's
watch, which reads the base from GitHub anyway, publishes what its tick
found as ``refs/sluice/survey/<pool>/<base>`` on the repository's remote
(:mod:`git_sluice.remote.surveys`), in the push of its tick; every other host
of the group following that branch takes the survey as its own tick's
answer for the base and asks GitHub nothing for it — its rounds then show
the same queue as the holder's, with no call (``Intake._mirrors``).

A survey is a record anyone with push access can forge, so nothing in it is
trusted beyond what one interval of staleness can cost
(docs/operations.md#what-a-pusher-can-make-a-fleet-believe):

- **it holds no time**: its age is never read from it. A mirror takes only the
  survey of the host it sees holding the lease (:func:`adoptable`, by this
  host's own reading of the lease), and the holder pushes its own again at
  its next tick whenever the remote holds anything else, so a forged or
  stale survey stands at most one interval;
- **every number and string is bounded** (:func:`decode`): its blobs' size
  and count, the requests, readings and heads, every text; a malformed
  request is dropped, a malformed survey is not taken (the mirror's queue
  waits);
- **it holds what GitHub said, never a decision**: the requests' numbers,
  heads, times, drafts, the inputs of their state, and readings — each
  state re-derived by the mirror's own rules.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import field, fields
from operator import attrgetter
from typing import Any, Protocol

from .. import __version__
from ..errors import SurveyRejected as SurveyRejected
from ..records import record
from ..remote.surveys import HEAD_NAME, MAX_BYTES, SHARD_NAMES, SHARDS, SurveyFiles, shard_name
from .request import Request
from .watchstore import bounded_reading, inputs_of, item_json, item_of, reading_json, reading_of

FORMAT = "git-sluice survey"
VERSION = 2
MAX_BASES = 64
MAX_ITEMS = 20_000
"""Requests per base, at most: past this the survey is not taken (the host reads for itself)."""
MAX_HEADS = 20_000
MAX_TEXT = 1024
"""A title, a branch name, a label: longer than this in a survey means a forgery."""


def shard_of_request(number: int) -> int:
    return number % SHARDS


def shard_of_head(sha: str) -> int:
    try:
        return int(sha[:8], 16) % SHARDS
    except ValueError:
        return 0


@record(frozen=True)
class SurveyItem:
    """One open request as the surveying host listed it."""

    request: Request
    labels_known: bool
    inputs: tuple[str | None, str | None, str | None] | None


@record
class Survey:
    """One base of a repository as its holder's tick found it (decoded, bounded, validated)."""

    repository: str
    base: str
    host: str = ""
    """The host that wrote it (a claim: :func:`adoptable` checks it against the lease holder)."""
    oid: str = ""
    """The object it was read from (set by whoever read it)."""
    items: list[SurveyItem] = field(default_factory=list)
    readings: dict[int, Request] = field(default_factory=dict)
    """The readings the surveying tick took (what moved in it), by number."""
    heads: dict[str, str | None] = field(default_factory=dict)
    """head sha -> its checks' rollup state, as the tick found it."""


# ------------------------------------------------------------------ encoding


def encode(repository: str, base: str, part: Mapping[str, Any], heads: Mapping[str, str | None], *,
           host: str) -> SurveyFiles:
    """The survey of one base: ``part`` is the watch's stored base part (items and readings, as in
    answers.json), ``heads`` the states of the heads waiting on it."""
    draft = Draft(repository, base, host)
    for raw in part.get("items") or []:
        draft.add_item(raw)
    for raw in (part.get("readings") or {}).values():
        reading = reading_of(raw)
        if reading is not None:
            draft.add_reading(reading)
    for sha, state in heads.items():
        draft.add_head(sha, state)
    return draft.files()


def stored_items(part: Mapping[str, Any]) -> list[SurveyItem]:
    """A stored base part's items as a survey holds them (each read once: a malformed one is left out)."""
    items = []
    for raw in part.get("items") or []:
        found = item_of(raw)
        if found is not None:
            items.append(SurveyItem(found[0], found[1], inputs_of(raw)))
    return items


def encode_items(repository: str, base: str, items: Sequence[SurveyItem], readings: Mapping[int, Request],
                 heads: Mapping[str, str | None], *, host: str) -> SurveyFiles:
    """The survey of one base from its items as read, the readings by number and the waiting heads' states."""
    draft = Draft(repository, base, host)
    for i in items:
        draft.add_item(_item_json(i.request, i.labels_known, i.inputs))
    for reading in readings.values():
        draft.add_reading(reading)
    for sha, state in heads.items():
        draft.add_head(sha, state)
    return draft.files()


_READING = attrgetter(*(f.name for f in fields(Request)))
"""Every field of a reading, as a tuple (a queue's entry has three more: the survey says none of them)."""
ENCODING = f"{VERSION} {__version__}"
"""What a shard's key says of the code that encodes it: a shard encoded by another release is not
taken for this one's, whatever its key."""


class Draft:
    """A survey before it is encoded: its requests, readings and head states, shard by shard.

    Each shard has a key (:meth:`keys`), a digest of everything its blob is
    made of: the stored items as they stand (never re-parsed to compute it),
    the readings' fields, the head states. Equal keys mean equal blobs, so a
    holder encodes only the shards whose key moved since the survey it last
    pushed, and takes the others' blobs from that survey's tree
    (:func:`git_sluice.runtime.watching.publish_surveys`): at 5,000 requests,
    where five moved, about ten shards of 64. Nothing of the tick itself (its
    number, its time) goes in: a base where nothing moved has the same
    survey, and is not pushed again.
    """

    def __init__(self, repository: str, base: str, host: str) -> None:
        self.repository, self.base, self.host = repository, base, host
        self._items: dict[int, list[Any]] = {}
        self._readings: dict[int, dict[int, Request]] = {}
        self._heads: dict[int, dict[str, str | None]] = {}

    def add_item(self, raw: Any) -> None:
        """A stored item (:func:`~.watchstore.item_json`'s form, with its inputs); a malformed one is left out."""
        number = raw.get("number") if isinstance(raw, dict) else None
        if isinstance(number, int) and not isinstance(number, bool):
            self._items.setdefault(shard_of_request(number), []).append(raw)

    def add_reading(self, reading: Request) -> None:
        """A reading of a listed request; the first one added for a number stands."""
        self._readings.setdefault(shard_of_request(reading.number), {}).setdefault(reading.number, reading)

    def add_head(self, sha: str, state: str | None) -> None:
        self._heads.setdefault(shard_of_head(sha), {})[sha] = state

    def names(self) -> list[str]:
        return sorted(shard_name(k) for k in {*self._items, *self._readings, *self._heads})

    def keys(self) -> dict[str, str]:
        """Each shard's key by name (a digest of what its blob is made of, see the class)."""
        out = {}
        for name in self.names():
            k = int(name[6:8])
            material = (ENCODING, self.repository, self.base, k, self._items.get(k, []),
                        sorted((n, _READING(r)) for n, r in (self._readings.get(k) or {}).items()),
                        sorted((self._heads.get(k) or {}).items(), key=lambda kv: kv[0]))
            out[name] = hashlib.blake2b(repr(material).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        return out

    def head(self) -> bytes:
        return _dumps({"format": FORMAT, "version": VERSION, "repository": self.repository, "base": self.base,
                       "host": self.host, "shards": self.names()})

    def shard(self, name: str) -> bytes:
        """One shard's blob: its requests (each read once, a malformed one left out), its readings (each
        bounded as a stored one is: :func:`~.watchstore.bounded_reading`) and its heads' states."""
        k = int(name[6:8])
        items = []
        for raw in self._items.get(k, []):
            found = item_of(raw)
            if found is not None:
                items.append(_item_json(found[0], found[1], inputs_of(raw)))
        readings = {}
        for number, reading in sorted((self._readings.get(k) or {}).items()):
            bounded = bounded_reading(reading)
            if bounded is not None:
                readings[str(number)] = reading_json(bounded)
        return _dumps({"format": FORMAT, "version": VERSION, "repository": self.repository, "base": self.base,
                       "shard": k, "items": items, "readings": readings, "heads": dict(self._heads.get(k) or {})})

    def digest(self, keys: Mapping[str, str] | None = None) -> str:
        """The whole survey's digest, from its head and its shards' keys (nothing encoded but the head)."""
        h = hashlib.sha256(self.head())
        for name, key in sorted((keys if keys is not None else self.keys()).items()):
            h.update(f"\0{name}\0{key}".encode())
        return h.hexdigest()

    def files(self, *, kept: Collection[str] = ()) -> SurveyFiles:
        """The head and every shard's blob, but those named in ``kept`` (the caller has them already)."""
        out = {name: self.shard(name) for name in self.names() if name not in kept}
        out[HEAD_NAME] = self.head()
        return out


def _dumps(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _item_json(request: Request, labels_known: bool, inputs: tuple[str | None, str | None, str | None] | None
               ) -> dict[str, Any]:
    raw = item_json(request, labels_known=labels_known, inputs_known=False)
    raw["inputs"] = list(inputs) if inputs is not None else None
    return raw


def decode(files: Mapping[str, bytes], repository: str, base: str) -> Survey:
    """The survey in ``files`` (its tree's blobs by name), bounded and validated; raises
    :class:`SurveyRejected` (never anything else).

    Its head names every shard it has: a tree missing one, or holding a shard
    of another survey, is not taken. A malformed request costs itself alone.
    """
    size = sum(len(blob) for blob in files.values())
    if size > MAX_BYTES:
        raise SurveyRejected(f"{size} bytes, more than a survey may hold ({MAX_BYTES})")
    head = _document(files.get(HEAD_NAME), repository, base)
    host, names = head.get("host"), head.get("shards")
    if not _short_text(host, 255):
        raise SurveyRejected("no host")
    if not isinstance(names, list) or len(names) > SHARDS or not all(isinstance(n, str) and n in SHARD_NAMES
                                                                     for n in names):
        raise SurveyRejected("no list of its shards")
    survey = Survey(repository=repository, base=base, host=str(host))
    seen: set[int] = set()
    counts = [0, 0, 0]
    for name in sorted(set(names)):
        if name not in files:
            raise SurveyRejected(f"its {name} is missing")
        data = _document(files[name], repository, base)
        items, readings, heads = data.get("items"), data.get("readings"), data.get("heads")
        if data.get("shard") != int(name[6:8]):
            raise SurveyRejected(f"its {name} is another shard")
        if not isinstance(items, list) or not isinstance(readings, dict) or not isinstance(heads, dict):
            raise SurveyRejected("no requests, readings or heads")
        counts = [counts[0] + len(items), counts[1] + len(readings), counts[2] + len(heads)]
        if counts[0] > MAX_ITEMS or counts[1] > MAX_ITEMS or counts[2] > MAX_HEADS:
            raise SurveyRejected("more requests, readings or heads than a survey may hold")
        _take_shard(survey, items, readings, heads, seen)
    return survey


def _document(blob: bytes | None, repository: str, base: str) -> dict[str, Any]:
    """One of a survey's blobs parsed, as long as it says it is of this survey's version, repository and base."""
    if blob is None:
        raise SurveyRejected("no survey head")
    try:
        data = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SurveyRejected(f"not JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise SurveyRejected("not a git-sluice survey of this version")
    if data.get("repository") != repository or data.get("base") != base:
        raise SurveyRejected(
            f"a survey of {str(data.get('repository'))[:80]!r} {str(data.get('base'))[:80]!r}, not of {repository} {base}"
        )
    return data


def _take_shard(survey: Survey, items: list[Any], readings: dict[Any, Any], heads: dict[Any, Any],
                seen: set[int]) -> None:
    base = survey.base
    for raw in items:
        found = item_of(raw)
        if found is None or not _sane_request(found[0], base) or found[0].number in seen:
            continue  # one malformed request costs its own reading (the holder's queue has it), not the survey
        seen.add(found[0].number)
        survey.items.append(SurveyItem(found[0], found[1], inputs_of(raw)))
    for raw in readings.values():
        reading = reading_of(raw)
        if reading is not None and reading.number in seen and _sane_request(reading, base):
            survey.readings[reading.number] = reading
    for sha, state in heads.items():
        if _is_sha(sha) and (state is None or _short_text(state, 40)):
            survey.heads[sha] = state


def _sane_request(request: Request, base: str) -> bool:
    texts = (request.title, request.head_ref, request.head_sha, request.updated_at, request.author or "", *request.labels)
    return (
        0 < request.number < 2**31 and request.base == base and _is_sha(request.head_sha)
        and all(len(t) <= MAX_TEXT for t in texts) and len(request.labels) <= 100
    )


def _short_text(value: Any, limit: int = MAX_TEXT) -> bool:
    return isinstance(value, str) and len(value) <= limit


def _is_sha(value: Any) -> bool:
    return isinstance(value, str) and len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value)


# ------------------------------------------------------------------ the decision


def adoptable(survey: Survey, holder: str | None) -> bool:
    """Whether a mirror takes ``survey`` for its base: it must be the lease holder's own.

    ``holder`` is the host that holds the branch's lease by this host's own
    reading of it (the lease record, aged by this host's own observation);
    None when no holder is known here (a base only a wait follows), where any
    survey of the base is taken. A survey left by an earlier holder, or
    pushed in another host's name by someone else, is not the holder's until
    the holder itself writes it: the holder's next tick does, since it pushes
    whenever the remote holds anything but its own last survey.
    """
    return holder is None or survey.host == holder


def items_json(survey: Survey) -> list[dict[str, Any]]:
    """A survey's requests in the watch's stored form (answers.json)."""
    return [_item_json(i.request, i.labels_known, i.inputs) for i in survey.items]


def head_states(survey: Survey) -> dict[str, str | None]:
    """Every head state the survey says: its watched heads, and each listed request's rollup where the
    surveying tick's GraphQL query said it (a request's own checks state is its head's)."""
    out: dict[str, str | None] = {i.request.head_sha: i.inputs[1] for i in survey.items if i.inputs is not None}
    out.update(survey.heads)
    return out


class SurveyPlace(Protocol):
    """Where the host watch reads a repository's surveys: one of its clones on this host
    (:class:`git_sluice.remote.surveys.SurveyRemote`, which also publishes them: the driver's part,
    :func:`git_sluice.runtime.watching.publish_surveys`); tests hand in their own."""

    def look(self) -> bool: ...

    def current(self, pool: str, base: str) -> str | None: ...

    def read(self, oid: str) -> SurveyFiles | None: ...
