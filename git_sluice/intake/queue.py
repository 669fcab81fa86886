"""The taken-in queue of each branch: its entries, their state, and where they are kept.

The queue is what other tools read instead of asking GitHub themselves
(``git sluice queue --json``), so its JSON is a public, versioned interface,
documented in ``docs/queue-json.md``; :func:`to_document` is the only producer
of it. Each branch's queue lives in ``<sluice dir>/queue/<branch>.json``
(branch names percent-encoded, since they may hold ``/``), written atomically
under a lock so concurrent processes of one clone never see half a queue. A
corrupt file is discarded and re-read from GitHub rather than trusted.

``<sluice dir>/heads`` lists every queued request's head across all branches
(``<branch> <number> <head_ref> <head_sha>`` per line) for the pre-push hook:
a push to a request's head is local movement that asks GitHub at once.
``<sluice dir>/heads.d/`` holds the same heads as one empty file each (see
:mod:`.headmarks`), so the hook's lookup costs the same at 2,000 heads as at 2.

The state rule (:func:`derive_state`) is pure and documented with its edge
cases in ``docs/queue-json.md``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field, replace
from pathlib import Path
TYPE_CHECKING = False  # typing's own flag, without importing typing (issue 15: ~2 ms of queue's start-up)
if TYPE_CHECKING:
    from typing import Any
from urllib.parse import quote, unquote

from ..clock import parse_rfc3339, rfc3339
from ..records import record
from ..statefile import ensure_dir, file_lock, held, load_json, parse_json, read_bytes, write_atomic
from .headmarks import MARKS_DIR, sync_marks
from .request import Request, request_fields

SCHEMA_VERSION = 1
STATES = ("draft", "waiting", "blocked", "ready")

_BLOCKING_CHECKS = frozenset({"FAILURE", "ERROR"})
_WAITING_CHECKS = frozenset({"PENDING", "EXPECTED"})
_KNOWN_CHECKS = frozenset({"SUCCESS"}) | _BLOCKING_CHECKS | _WAITING_CHECKS
_KNOWN_REVIEWS = frozenset({"APPROVED", "CHANGES_REQUESTED", "REVIEW_REQUIRED"})


# --------------------------------------------------------------------- state


def derive_state(
    draft: bool,
    review_decision: str | None,
    checks_state: str | None,
    mergeable: str | None,
    *,
    checks_expected: bool = False,
) -> str:
    """``draft`` | ``blocked`` | ``waiting`` | ``ready``, in that order of precedence.

    - draft: the request is a draft, whatever else is true.
    - blocked (needs a person): changes requested, checks FAILURE/ERROR, or a
      merge conflict; it beats waiting, because waiting longer will not help.
    - waiting (time may help): review required, checks PENDING/EXPECTED, no
      checks yet where checks are expected (``checks_expected``: the branch's
      other requests have checks), mergeability UNKNOWN or not read, or a value
      this version does not know (never call unknown "ready").
    - ready: review APPROVED or none required, checks SUCCESS or none (where
      none are expected), MERGEABLE.
    """
    if draft:
        return "draft"
    if (
        review_decision == "CHANGES_REQUESTED"
        or checks_state in _BLOCKING_CHECKS
        or mergeable == "CONFLICTING"
    ):
        return "blocked"
    if (
        review_decision == "REVIEW_REQUIRED"
        or (review_decision is not None and review_decision not in _KNOWN_REVIEWS)
        or checks_state in _WAITING_CHECKS
        or (checks_state is not None and checks_state not in _KNOWN_CHECKS)
        or (checks_state is None and checks_expected)
        or mergeable != "MERGEABLE"
    ):
        return "waiting"
    return "ready"


# --------------------------------------------------------------------- entry


@record(frozen=True, kw_only=True)
class Entry(Request):
    """One taken-in request as the queue keeps it: the request, its verdict, when (epoch seconds).

    The queue file keeps the documented fields only (docs/queue-json.md); what
    a reading adds beyond them (``pending``, ``url``, ``reviews``) is for the
    round that read it and is back at its defaults in an entry loaded from disk.
    """

    state: str  # draft | waiting | blocked | ready (derive_state)
    taken_in_at: float
    read_at: float

    @classmethod
    def of(cls, request: Request, *, state: str, taken_in_at: float, read_at: float) -> Entry:
        """The queue's entry for what the list or a reading said of ``request``."""
        return cls(**request_fields(request), state=state, taken_in_at=taken_in_at, read_at=read_at)

    def to_json(self) -> dict[str, Any]:
        """The entry in the documented shape (``docs/queue-json.md``)."""
        return {
            "number": self.number,
            "title": self.title,
            "author": self.author,
            "head_ref": self.head_ref,
            "head_sha": self.head_sha,
            "base": self.base,
            "draft": self.draft,
            "updated_at": self.updated_at,
            "review_decision": self.review_decision,
            "checks": {"state": self.checks_state, "failing": list(self.failing)},
            "mergeable": self.mergeable,
            "labels": list(self.labels),
            "state": self.state,
            "taken_in_at": rfc3339(self.taken_in_at),
            "read_at": rfc3339(self.read_at),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Entry:
        """The inverse of :meth:`to_json`; raises KeyError/TypeError/ValueError when malformed."""
        checks = data["checks"]
        if not isinstance(checks, Mapping):
            raise TypeError("checks is not an object")
        state = data["state"]
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}")
        number = data["number"]
        if not isinstance(number, int) or isinstance(number, bool):
            raise TypeError("number is not an integer")
        if not isinstance(data["draft"], bool):
            raise TypeError("draft is not a boolean")
        return cls(
            number=number,
            title=str(data["title"]),
            author=_opt_str(data["author"]),
            head_ref=str(data["head_ref"]),
            head_sha=str(data["head_sha"]),
            base=str(data["base"]),
            draft=data["draft"],
            updated_at=str(data["updated_at"]),
            review_decision=_opt_str(data["review_decision"]),
            checks_state=_opt_str(checks["state"]),
            failing=tuple(map(str, checks["failing"])),
            mergeable=_opt_str(data["mergeable"]),
            labels=tuple(map(str, data["labels"])),
            state=state,
            taken_in_at=parse_rfc3339(data["taken_in_at"]),
            read_at=parse_rfc3339(data["read_at"]),
        )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def checks_expected(entries: Iterable[Request]) -> bool:
    """Whether this branch runs checks at all: any non-draft entry (or reading) has reported some.

    Pass the fresh readings along with the queue's entries, so the first
    round of a branch already knows whether its CI runs.

    A request read before its CI started has no checks yet; on a branch whose
    other requests have checks that means "not yet", so it waits (and is
    re-checked) instead of passing as ready with nothing run.
    """
    return any(e.checks_state is not None for e in entries if not e.draft)


def entry_from_reading(
    reading: Request,
    *,
    previous: Entry | None,
    now: float,
    checks_expected: bool = False,
) -> Entry:
    """The queue entry for a fresh GraphQL reading; keeps when it was first taken in."""
    state = derive_state(
        reading.draft, reading.review_decision, reading.checks_state, reading.mergeable, checks_expected=checks_expected
    )
    return Entry.of(reading, state=state, taken_in_at=previous.taken_in_at if previous is not None else now, read_at=now)


# ------------------------------------------------------------------ document


@record
class QueueDoc:
    """One branch's queue; ``withdrawn_by`` names the host whose lease made this one let go."""

    repository: str | None
    branch: str
    holder: str | None = None
    read_at: float | None = None
    entries: dict[int, Entry] = field(default_factory=dict)
    withdrawn_by: str | None = None


def to_document(doc: QueueDoc, *, encode: Callable[[Entry], EncodedEntry] | None = None) -> dict[str, Any]:
    """The public JSON (schema 1) of one branch's queue: entries sorted by number."""
    if encode is None:
        encode = Entry.to_json
    return {
        "schema": SCHEMA_VERSION,
        "repository": doc.repository,
        "branch": doc.branch,
        "holder": doc.holder,
        "read_at": rfc3339(doc.read_at) if doc.read_at is not None else None,
        "entries": [encode(doc.entries[n]) for n in sorted(doc.entries)],
    }


def from_document(data: Mapping[str, Any]) -> QueueDoc:
    """A queue from its stored form; raises on anything not schema 1."""
    if data.get("schema") != SCHEMA_VERSION:
        raise ValueError(f"schema {data.get('schema')!r} is not {SCHEMA_VERSION}")
    branch = data["branch"]
    if not isinstance(branch, str) or not branch:
        raise ValueError("no branch")
    entries: dict[int, Entry] = {}
    for raw in data["entries"]:
        entry = Entry.from_json(raw)
        entries[entry.number] = entry
    read_at = data.get("read_at")
    return QueueDoc(
        repository=_opt_str(data.get("repository")),
        branch=branch,
        holder=_opt_str(data.get("holder")),
        read_at=parse_rfc3339(read_at) if read_at is not None else None,
        entries=entries,
        withdrawn_by=_opt_str(data.get("withdrawn_by")),
    )


# --------------------------------------------------------------------- store


def branch_file_name(branch: str) -> str:
    """A file name for a branch: percent-encoded (``/`` and all), hashed if very long.

    ``~`` cannot occur in a git branch name, so it marks the hashed form.
    """
    encoded = quote(branch, safe="")
    if len(encoded) > 180:
        import hashlib

        digest = hashlib.sha256(branch.encode()).hexdigest()[:16]
        encoded = f"{encoded[:150]}~{digest}"
    return encoded + ".json"


class QueueStore:
    """The queues of one clone, in its sluice dir (shared by worktrees and processes)."""

    def __init__(self, sluice_dir: Path | str) -> None:
        self.sluice_dir = Path(sluice_dir)
        self.queue_dir = self.sluice_dir / "queue"
        self.heads_path = self.sluice_dir / "heads"
        self._lock_path = self.sluice_dir / "queue.lock"

    def path_for(self, branch: str) -> Path:
        return self.queue_dir / branch_file_name(branch)

    def confirmed_path(self, branch: str) -> Path:
        """Beside the queue file: when its content was last confirmed to stand (:meth:`confirm`)."""
        return self.queue_dir / (branch_file_name(branch)[: -len(".json")] + ".confirmed")

    def load(self, branch: str) -> QueueDoc:
        """The branch's queue; empty when absent, and when corrupt (logged, re-read from GitHub)."""
        path = self.path_for(branch)
        raw = read_bytes(path)
        kept = _DOCS.get(path)
        if raw is not None and kept is not None and kept[0] == raw:
            return self._with_confirmation(branch, raw, _copy(kept[1]))

        def parse(data: Any) -> QueueDoc:
            doc = from_document(data)
            if doc.branch != branch:
                raise ValueError(f"holds branch {doc.branch!r}")
            return doc

        doc = load_json(path, parse, lambda: QueueDoc(repository=None, branch=branch), what="queue")
        if raw is not None and raw == read_bytes(path):  # not replaced while it was read
            _DOCS[path] = (raw, _copy(doc))
            _ENCODED[path] = entry_texts(raw, doc)
            return self._with_confirmation(branch, raw, doc)
        return doc

    def save(self, doc: QueueDoc) -> str:
        """Write the branch's queue atomically, then the ``heads`` file, under the queue lock; returns the
        written file's fingerprint (for :meth:`confirm`)."""
        ensure_dir(self.queue_dir)
        path = self.path_for(doc.branch)
        text, _ENCODED[path] = stored_text(doc, _ENCODED.get(path, {}))
        data = text.encode("utf-8")
        with held(file_lock(self._lock_path), busy="the queue lock"):
            write_atomic(path, data)
            _DOCS[path] = (data, _as_stored(doc))
            self._write_heads(doc)
        _forget_old()
        return fingerprint(data)

    def fingerprint(self, branch: str) -> str | None:
        """The queue file's fingerprint as it stands now; None when there is none."""
        raw = read_bytes(self.path_for(branch))
        return None if raw is None else fingerprint(raw)

    def confirm(self, branch: str, expected: str, at: float) -> bool:
        """Say the queue file with fingerprint ``expected`` was confirmed to stand at ``at``, without
        rewriting it: its ``read_at`` reads as ``at`` from then on (False: the file is no longer that one).

        A quiet round (:mod:`.standing`) confirms a 500-entry queue with a
        file of 80 bytes instead of encoding and writing 500 entries again. The
        confirmation names the content it confirms, so a later write of the
        queue by anyone voids it without having to know of it.
        """
        if self.fingerprint(branch) != expected:
            return False
        write_atomic(self.confirmed_path(branch), json.dumps({"fingerprint": expected, "read_at": rfc3339(at)}))
        return True

    def _with_confirmation(self, branch: str, raw: bytes, doc: QueueDoc) -> QueueDoc:
        """``doc`` (a copy: the caller's) read at its confirmation's time, when that confirms this very file."""
        stamp = read_bytes(self.confirmed_path(branch))
        if stamp is None:
            return doc
        try:
            data = parse_json(stamp)
            at = parse_rfc3339(data["read_at"]) if data.get("fingerprint") == fingerprint(raw) else None
        except (ValueError, KeyError, TypeError, AttributeError):
            return doc  # a torn or foreign confirmation confirms nothing; the next quiet round rewrites it
        if at is not None and (doc.read_at is None or at > doc.read_at):
            doc.read_at = at
        return doc

    def branches(self) -> list[str]:
        """Every branch with a stored queue, sorted."""
        if not self.queue_dir.is_dir():
            return []
        found: set[str] = set()
        for path in self.queue_dir.glob("*.json"):
            stem = path.name[: -len(".json")]
            if "~" not in stem:
                found.add(unquote(stem))
                continue
            try:
                branch = parse_json(path.read_bytes())["branch"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(branch, str):
                found.add(branch)
        return sorted(found)

    def _write_heads(self, saved: QueueDoc) -> None:
        lines: list[str] = []
        heads: list[str] = []
        for branch in sorted(set(self.branches()) | {saved.branch}):
            doc = saved if branch == saved.branch else self.load(branch)
            for number in sorted(doc.entries):
                entry = doc.entries[number]
                lines.append(f"{branch} {number} {entry.head_ref} {entry.head_sha}")
                heads.append(entry.head_ref)
        text = "".join(line + "\n" for line in lines)
        if read_bytes(self.heads_path) == text.encode("utf-8") and (
                _MARKS_SYNCED.get(self.heads_path) == text or (self.sluice_dir / MARKS_DIR).is_dir()):
            # the heads file stands as it is, and so do the marks: they are made before it is written,
            # so a heads file already holding this text was written after its marks (issue 15: a fresh
            # process no longer walks 500 marks to learn that). No marks folder at all: an older
            # version wrote the file, and the marks are made now.
            return
        sync_marks(self.sluice_dir, heads)
        write_atomic(self.heads_path, text)
        _MARKS_SYNCED[self.heads_path] = text


def fingerprint(data: bytes) -> str:
    """A queue file's content, as :meth:`QueueStore.confirm` names it (a digest: equal only for equal bytes)."""
    import hashlib  # only where a queue is confirmed (``status`` never needs it otherwise)

    return hashlib.blake2b(data, digest_size=16).hexdigest()


# A long-running process (a driver over many ticks, in many clones) loads and saves the same queues
# every tick: what it last read or wrote is kept per file, so an unchanged file is not parsed again,
# an unchanged entry not encoded again, an unchanged heads file not rewritten. Compared by content,
# not by times (a coarse file system's mtime cannot tell two writes in one second apart); entries are
# frozen, so sharing them is safe.
EncodedEntry = dict[str, object]
"""An entry in its stored form (:meth:`Entry.to_json`)."""
_DOCS: dict[Path, tuple[bytes, QueueDoc]] = {}
_ENCODED: dict[Path, dict[int, tuple[Entry, str]]] = {}  # each entry's JSON text, by the entry's identity
_MARKS_SYNCED: dict[Path, str] = {}
_KEPT_FILES = 64


_SEPARATORS = (",", ":")
_ENCODER = json.JSONEncoder(separators=_SEPARATORS)  # what json.dumps(..., separators=_SEPARATORS) makes anew each call
_ENTRIES_AT = json.dumps(["\0git-sluice entries " + os.urandom(8).hex()])  # in no text a queue holds


def stored_text(doc: QueueDoc, kept: Mapping[int, tuple[Entry, str]]) -> tuple[str, dict[int, tuple[Entry, str]]]:
    """The queue file's text, ``json.dumps`` of its stored form with each entry on a line of its own, and
    each entry's text for next time.

    A running drive saves its queue every tick, most often for a new
    ``read_at`` alone: encoding 500 unchanged entries again was a sixth of a
    quiet tick's CPU (issue 15). An entry is frozen, so its text is kept by
    identity (``kept``: from the last save, or from the file as loaded,
    :func:`entry_texts`) and joined into the document where a marker no queue
    can hold stands for the list.
    """
    texts: list[str] = []
    fresh: dict[int, tuple[Entry, str]] = {}
    for number in sorted(doc.entries):
        entry = doc.entries[number]
        found = kept.get(id(entry))
        text = found[1] if found is not None and found[0] is entry else _ENCODER.encode(entry.to_json())
        fresh[id(entry)] = (entry, text)
        texts.append(text)
    stored = to_document(QueueDoc(repository=doc.repository, branch=doc.branch, holder=doc.holder,
                                  read_at=doc.read_at, entries={}, withdrawn_by=doc.withdrawn_by))
    stored["entries"] = json.loads(_ENTRIES_AT)
    stored["withdrawn_by"] = doc.withdrawn_by
    head = json.dumps(stored, separators=_SEPARATORS)
    return head.replace(_ENTRIES_AT, "[" + "".join("\n" + t + "," for t in texts)[:-1] + ("\n]" if texts else "]"),
                        1) + "\n", fresh


def entry_texts(raw: bytes, doc: QueueDoc) -> dict[int, tuple[Entry, str]]:
    """Each loaded entry's text in the file just read (:func:`stored_text`'s form: an entry a line), for the
    next save to take for the entries the round leaves as they are.

    A fresh ``intake`` at 5,000 open requests loads the queue, changes a few
    entries and saves it: encoding the other 4,995 again was a tenth of its
    CPU (issue 29). JSON escapes every newline in a string, so a file of this
    layout has exactly one line per entry between the head and the tail; a
    file of any other (an older version's, one written by hand) gives none,
    and the save encodes every entry, as before.
    """
    entries = [doc.entries[n] for n in sorted(doc.entries)]
    lines = raw.decode("utf-8", "replace").split("\n")
    if not entries or len(lines) != len(entries) + 3 or not lines[0].endswith("["):
        return {}
    texts = [line[:-1] if line.endswith(",") else line for line in lines[1:-2]]
    return {id(entry): (entry, text) for entry, text in zip(entries, texts)}


def _forget_old() -> None:
    for table in (_DOCS, _ENCODED, _MARKS_SYNCED):
        while len(table) > _KEPT_FILES:
            table.pop(next(iter(table)))  # type: ignore[attr-defined]


def _as_stored(doc: QueueDoc) -> QueueDoc:
    """The queue exactly as loading its file gives it back: what a reading adds beyond the stored
    fields at its defaults, and the times at the whole seconds the file keeps."""
    def stored(e: Entry) -> Entry:
        if (e.pending, e.url, e.reviews, e.github_state) == ((), "", (), "OPEN") and e.read_at == int(e.read_at) \
                and e.taken_in_at == int(e.taken_in_at):
            return e
        return replace(e, pending=(), url="", reviews=(), github_state="OPEN",
                       read_at=float(int(e.read_at)), taken_in_at=float(int(e.taken_in_at)))
    return QueueDoc(repository=doc.repository, branch=doc.branch, holder=doc.holder,
                    read_at=float(int(doc.read_at)) if doc.read_at is not None else None,
                    entries={n: stored(e) for n, e in doc.entries.items()}, withdrawn_by=doc.withdrawn_by)


def _copy(doc: QueueDoc) -> QueueDoc:
    """A queue the caller may change (its entries are frozen; the mapping is not)."""
    return QueueDoc(repository=doc.repository, branch=doc.branch, holder=doc.holder, read_at=doc.read_at,
                    entries=dict(doc.entries), withdrawn_by=doc.withdrawn_by)
