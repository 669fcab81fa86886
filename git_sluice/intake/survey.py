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
- **every number and string is bounded** (:func:`decode`): the blob's size,
  the requests, readings and heads, every text; a malformed request is
  dropped, a malformed survey is not taken (the mirror's queue waits);
- **it holds what GitHub said, never a decision**: the requests' numbers,
  heads, times, drafts, the inputs of their state, and readings — each
  state re-derived by the mirror's own rules.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Protocol

from ..errors import SurveyRejected as SurveyRejected
from ..records import record
from .request import Request
from .watchstore import bounded_reading, inputs_of, item_json, item_of, reading_json, reading_of

FORMAT = "git-sluice survey"
VERSION = 1
BLOB_NAME = "survey.json"
MAX_BYTES = 16 * 1024 * 1024
"""A survey's blob, at most (5,000 requests with their readings are about 4 MB)."""
MAX_BASES = 64
MAX_ITEMS = 20_000
"""Requests per base, at most: past this the survey is not taken (the host reads for itself)."""
MAX_HEADS = 20_000
MAX_TEXT = 1024
"""A title, a branch name, a label: longer than this in a survey means a forgery."""


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
           host: str) -> bytes:
    """The survey blob of one base: ``part`` is the watch's stored base part (items and readings, as in
    answers.json), ``heads`` the states of the heads waiting on it."""
    readings: dict[int, Request] = {}
    for raw in (part.get("readings") or {}).values():
        reading = reading_of(raw)
        if reading is not None:
            readings[reading.number] = reading
    return encode_items(repository, base, stored_items(part), readings, heads, host=host)


def stored_items(part: Mapping[str, Any]) -> list[SurveyItem]:
    """A stored base part's items as a survey holds them (each read once: a malformed one is left out)."""
    items = []
    for raw in part.get("items") or []:
        found = item_of(raw)
        if found is not None:
            items.append(SurveyItem(found[0], found[1], inputs_of(raw)))
    return items


def encode_items(repository: str, base: str, items: Sequence[SurveyItem], readings: Mapping[int, Request],
                 heads: Mapping[str, str | None], *, host: str) -> bytes:
    """The survey blob of one base from what is already read: its items, the readings by number (each
    bounded as a stored one is: :func:`~.watchstore.bounded_reading`) and the waiting heads' states.

    Nothing of the tick itself (its number, its time) goes in: a base where
    nothing moved has the same survey, and is not pushed again.
    """
    kept = {}
    for number, reading in readings.items():
        bounded = bounded_reading(reading)
        if bounded is not None:
            kept[str(bounded.number)] = reading_json(bounded)
    doc = {
        "format": FORMAT, "version": VERSION, "repository": repository, "base": base, "host": host,
        "items": [_item_json(i.request, i.labels_known, i.inputs) for i in items],
        "readings": kept, "heads": {sha: state for sha, state in sorted(heads.items())},
    }
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _item_json(request: Request, labels_known: bool, inputs: tuple[str | None, str | None, str | None] | None
               ) -> dict[str, Any]:
    raw = item_json(request, labels_known=labels_known, inputs_known=False)
    raw["inputs"] = list(inputs) if inputs is not None else None
    return raw


def decode(blob: bytes, repository: str, base: str) -> Survey:
    """The survey in ``blob``, bounded and validated; raises :class:`SurveyRejected` (never anything else)."""
    if len(blob) > MAX_BYTES:
        raise SurveyRejected(f"{len(blob)} bytes, more than a survey may hold ({MAX_BYTES})")
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
    items, readings, heads = data.get("items"), data.get("readings"), data.get("heads")
    if not isinstance(items, list) or not isinstance(readings, dict) or not isinstance(heads, dict):
        raise SurveyRejected("no requests, readings or heads")
    if len(items) > MAX_ITEMS or len(readings) > MAX_ITEMS or len(heads) > MAX_HEADS:
        raise SurveyRejected("more requests, readings or heads than a survey may hold")
    host = data.get("host")
    if not _short_text(host, 255):
        raise SurveyRejected("no host")
    survey = Survey(repository=repository, base=base, host=str(host))
    seen: set[int] = set()
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
    return survey


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


def digest(blob: bytes) -> str:
    """What a holder remembers of the survey it last pushed (an unchanged one is not pushed again)."""
    return hashlib.sha256(blob).hexdigest()


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

    def read(self, oid: str) -> bytes | None: ...
