"""The queue: the state rule, the public JSON document, and its atomic per-branch store."""

from __future__ import annotations

import itertools
import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings as hsettings, strategies as hst

from git_sluice.intake.request import Request
from git_sluice.clock import parse_rfc3339, rfc3339
from git_sluice.intake.queue import (
    Entry,
    QueueDoc,
    QueueStore,
    branch_file_name,
    checks_expected,
    derive_state,
    entry_from_reading,
    from_document,
    to_document,
)

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "queue-json.md"

REVIEWS = ["APPROVED", "CHANGES_REQUESTED", "REVIEW_REQUIRED", None]
CHECKS = ["SUCCESS", "FAILURE", "ERROR", "PENDING", "EXPECTED", None]
MERGEABLE = ["MERGEABLE", "CONFLICTING", "UNKNOWN", None]


# --------------------------------------------------------------- derive_state

TABLE = [
    # draft, review, checks, mergeable, checks_expected -> state
    (True, "APPROVED", "SUCCESS", "MERGEABLE", False, "draft"),
    (True, "CHANGES_REQUESTED", "FAILURE", "CONFLICTING", True, "draft"),
    (False, "APPROVED", "SUCCESS", "MERGEABLE", False, "ready"),
    (False, None, "SUCCESS", "MERGEABLE", False, "ready"),  # no review required
    (False, None, None, "MERGEABLE", False, "ready"),  # no checks, none expected
    (False, "APPROVED", None, "MERGEABLE", False, "ready"),
    (False, "APPROVED", None, "MERGEABLE", True, "waiting"),  # CI not started yet
    (False, "REVIEW_REQUIRED", "SUCCESS", "MERGEABLE", False, "waiting"),
    (False, "APPROVED", "PENDING", "MERGEABLE", False, "waiting"),
    (False, "APPROVED", "EXPECTED", "MERGEABLE", False, "waiting"),
    (False, "APPROVED", "SUCCESS", "UNKNOWN", False, "waiting"),
    (False, "APPROVED", "SUCCESS", None, False, "waiting"),  # mergeability not read
    (False, "CHANGES_REQUESTED", "SUCCESS", "MERGEABLE", False, "blocked"),
    (False, "APPROVED", "FAILURE", "MERGEABLE", False, "blocked"),
    (False, "APPROVED", "ERROR", "MERGEABLE", False, "blocked"),
    (False, "APPROVED", "SUCCESS", "CONFLICTING", False, "blocked"),
    (False, "CHANGES_REQUESTED", "PENDING", "UNKNOWN", False, "blocked"),  # blocked beats waiting
    (False, "REVIEW_REQUIRED", "FAILURE", "MERGEABLE", False, "blocked"),
    (False, "REVIEW_REQUIRED", "PENDING", "CONFLICTING", True, "blocked"),
    (False, None, None, "CONFLICTING", True, "blocked"),
    (False, "REVIEW_REQUIRED", None, "UNKNOWN", True, "waiting"),
    (False, "SOMETHING_NEW", "SUCCESS", "MERGEABLE", False, "waiting"),  # unknown values never read as ready
    (False, "APPROVED", "NEUTRALISH", "MERGEABLE", False, "waiting"),
    (False, "APPROVED", "SUCCESS", "MAYBE", False, "waiting"),
]


@pytest.mark.parametrize(("draft", "review", "checks", "mergeable", "expected", "state"), TABLE)
def test_derive_state_table(
    draft: bool, review: str | None, checks: str | None, mergeable: str | None, expected: bool, state: str
) -> None:
    assert derive_state(draft, review, checks, mergeable, checks_expected=expected) == state


def test_derive_state_every_combination() -> None:
    """All 2 x 4 x 6 x 4 x 2 inputs, against the rule as written in docs/queue-json.md."""
    seen = set()
    for draft, review, checks, mergeable, expected in itertools.product(
        [True, False], REVIEWS, CHECKS, MERGEABLE, [True, False]
    ):
        state = derive_state(draft, review, checks, mergeable, checks_expected=expected)
        seen.add(state)
        needs_person = [review == "CHANGES_REQUESTED", checks in ("FAILURE", "ERROR"), mergeable == "CONFLICTING"]
        time_helps = [
            review == "REVIEW_REQUIRED",
            checks in ("PENDING", "EXPECTED"),
            checks is None and expected,
            mergeable in ("UNKNOWN", None),
        ]
        if draft:
            assert state == "draft"
        elif any(needs_person):
            assert state == "blocked", (review, checks, mergeable)
        elif any(time_helps):
            assert state == "waiting", (review, checks, mergeable, expected)
        else:
            assert review in ("APPROVED", None) and checks in ("SUCCESS", None) and mergeable == "MERGEABLE"
            assert state == "ready"
    assert seen == {"draft", "waiting", "blocked", "ready"}


# -------------------------------------------------------------------- entries


def make_entry(number: int, **over: Any) -> Entry:
    values: dict[str, Any] = dict(
        number=number,
        title=f"Request {number}",
        author="mona",
        head_ref=f"topic/{number}",
        head_sha=f"{number:040x}",
        base="main",
        draft=False,
        updated_at="2026-11-29T18:00:00Z",
        review_decision="APPROVED",
        checks_state="FAILURE",
        failing=("test",),
        mergeable="MERGEABLE",
        labels=("bug",),
        state="blocked",
        taken_in_at=T0,
        read_at=T0 + 60,
    )
    values.update(over)
    return Entry(**values)


def test_rfc3339() -> None:
    assert rfc3339(T0) == "2027-01-15T08:00:00Z"
    assert rfc3339(T0 + 0.9) == "2027-01-15T08:00:00Z"  # whole seconds
    assert parse_rfc3339("2027-01-15T08:00:00Z") == T0
    assert parse_rfc3339("2027-01-15T09:00:00+01:00") == T0
    with pytest.raises(ValueError):
        parse_rfc3339("2027-01-15T08:00:00")  # no zone


ENTRY_KEYS = [
    "number", "title", "author", "head_ref", "head_sha", "base", "draft", "updated_at",
    "review_decision", "checks", "mergeable", "labels", "state", "taken_in_at", "read_at",
]


def test_entry_json_shape() -> None:
    data = make_entry(7).to_json()
    assert list(data) == ENTRY_KEYS
    assert data["checks"] == {"state": "FAILURE", "failing": ["test"]}
    assert data["taken_in_at"] == "2027-01-15T08:00:00Z"
    assert data["read_at"] == "2027-01-15T08:01:00Z"
    assert Entry.from_json(data) == make_entry(7)


def test_document_shape_sorted_and_serialisable() -> None:
    doc = QueueDoc(
        repository="octo/widgets",
        branch="release/2.x",
        holder="build-7",
        read_at=T0 + 120,
        entries={12: make_entry(12), 3: make_entry(3, author=None, checks_state=None, failing=())},
    )
    document = to_document(doc)
    assert list(document) == ["schema", "repository", "branch", "holder", "read_at", "entries"]
    assert document["schema"] == 1
    assert document["read_at"] == "2027-01-15T08:02:00Z"
    assert [e["number"] for e in document["entries"]] == [3, 12]
    assert document["entries"][0]["checks"] == {"state": None, "failing": []}
    assert json.loads(json.dumps(document)) == document
    empty = to_document(QueueDoc(repository=None, branch="main"))
    assert empty["read_at"] is None and empty["entries"] == [] and empty["holder"] is None


def documented_example() -> dict[str, Any]:
    text = DOC_PATH.read_text()
    blocks = re.findall(r"```json\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/queue-json.md has no json example"
    return json.loads(blocks[0])


def test_documented_example_is_what_the_code_produces() -> None:
    example = documented_example()
    assert to_document(from_document(example)) == example
    for entry in example["entries"]:
        assert derive_state(
            entry["draft"], entry["review_decision"], entry["checks"]["state"], entry["mergeable"],
            checks_expected=True,
        ) == entry["state"]


def test_documentation_names_every_field() -> None:
    text = DOC_PATH.read_text()
    for key in ["schema", "repository", "branch", "holder", "read_at", "entries", *ENTRY_KEYS, "failing"]:
        assert f"`{key}`" in text, key
    for state in ("draft", "waiting", "blocked", "ready"):
        assert f"`{state}`" in text


def reading(number: int, **over: Any) -> Request:
    values: dict[str, Any] = dict(
        number=number, title="t", author="a", head_ref="h", head_sha="s" * 40, base="main", draft=False,
        github_state="OPEN", updated_at="2026-11-29T18:00:00Z", review_decision=None, checks_state=None,
        failing=(), pending=(), mergeable="MERGEABLE", labels=("x",),
    )
    values.update(over)
    return Request(**values)


def test_entry_from_reading_keeps_taken_in_at() -> None:
    first = entry_from_reading(reading(4), previous=None, now=T0)
    assert (first.taken_in_at, first.read_at, first.state) == (T0, T0, "ready")
    later = entry_from_reading(
        reading(4, checks_state="FAILURE", failing=("ci",)), previous=first, now=T0 + 300
    )
    assert (later.taken_in_at, later.read_at, later.state, later.failing) == (T0, T0 + 300, "blocked", ("ci",))
    waiting = entry_from_reading(reading(4), previous=None, now=T0, checks_expected=True)
    assert waiting.state == "waiting"


def test_checks_expected() -> None:
    assert not checks_expected([])
    assert not checks_expected([make_entry(1, checks_state=None)])
    assert not checks_expected([make_entry(1, checks_state="SUCCESS", draft=True)])
    assert checks_expected([make_entry(1, checks_state=None), make_entry(2, checks_state="PENDING")])
    assert checks_expected([make_entry(1, checks_state=None), reading(2, checks_state="SUCCESS")])


# ---------------------------------------------------------------------- store


def test_round_trip(tmp_path: Path) -> None:
    store = QueueStore(tmp_path / "sluice")
    doc = QueueDoc("octo/widgets", "main", "build-7", T0, {1: make_entry(1), 2: make_entry(2, draft=True, state="draft")})
    store.save(doc)
    assert store.load("main") == doc
    doc.withdrawn_by = "other-host"
    doc.entries = {}
    store.save(doc)
    assert store.load("main") == doc


def test_missing_queue_is_empty(tmp_path: Path) -> None:
    doc = QueueStore(tmp_path).load("main")
    assert doc == QueueDoc(repository=None, branch="main")


def test_branch_names_with_slashes(tmp_path: Path) -> None:
    store = QueueStore(tmp_path)
    for branch in ["main", "release/2.x", "feat/a%b", "x" * 300]:
        store.save(QueueDoc("o/r", branch, None, T0, {}))
    assert store.branches() == sorted(["main", "release/2.x", "feat/a%b", "x" * 300])
    names = [p.name for p in (tmp_path / "queue").iterdir()]
    assert "release%2F2.x.json" in names
    assert all("/" not in n and len(n) < 200 for n in names)
    assert store.load("release/2.x").branch == "release/2.x"
    assert store.load("x" * 300).branch == "x" * 300
    assert branch_file_name("release/2.x") != branch_file_name("release%2F2.x")


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "",
        "[]",
        json.dumps({"schema": 2, "branch": "main", "entries": []}),
        json.dumps({"schema": 1, "branch": "other", "entries": []}),
        json.dumps({"schema": 1, "branch": "main", "entries": [{"number": 1}]}),
    ],
)
def test_corrupt_queue_is_discarded_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture, content: str) -> None:
    store = QueueStore(tmp_path)
    store.save(QueueDoc("o/r", "main", None, T0, {1: make_entry(1)}))
    store.path_for("main").write_text(content)
    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        doc = store.load("main")
    assert doc.entries == {} and doc.branch == "main"
    assert "corrupt" in caplog.text
    store.save(QueueDoc("o/r", "main", None, T0, {2: make_entry(2)}))  # a save replaces it
    assert set(store.load("main").entries) == {2}


def test_heads_file_lists_every_queued_request(tmp_path: Path) -> None:
    store = QueueStore(tmp_path)
    store.save(QueueDoc("o/r", "main", None, T0, {5: make_entry(5), 2: make_entry(2, draft=True, state="draft")}))
    store.save(QueueDoc("o/r", "release/2.x", None, T0, {9: make_entry(9, head_ref="fix/x", head_sha="a" * 40)}))
    lines = (tmp_path / "heads").read_text().splitlines()
    assert lines == [
        f"main 2 topic/2 {2:040x}",
        f"main 5 topic/5 {5:040x}",
        f"release/2.x 9 fix/x {'a' * 40}",
    ]
    store.save(QueueDoc("o/r", "main", None, T0, {}))  # requests left: their lines go
    assert (tmp_path / "heads").read_text().splitlines() == [f"release/2.x 9 fix/x {'a' * 40}"]


def test_concurrent_saves_leave_whole_files(tmp_path: Path) -> None:
    store = QueueStore(tmp_path)
    errors: list[BaseException] = []

    def writer(branch: str) -> None:
        try:
            for i in range(15):
                store.save(QueueDoc("o/r", branch, None, T0, {n: make_entry(n) for n in range(1, i + 2)}))
                assert store.load(branch).branch == branch
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(b,)) for b in ("main", "dev", "release/1")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for branch in ("main", "dev", "release/1"):
        assert len(store.load(branch).entries) == 15
    assert len((tmp_path / "heads").read_text().splitlines()) == 45
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_queue_kept_in_memory_loads_exactly_as_its_file_does(tmp_path: Path) -> None:
    """A driver keeps what it last wrote or read; what it loads from there must be what parsing the
    file gives — what a reading adds beyond the stored fields at its defaults, times at whole seconds
    — and a file another process replaced is read again."""
    store = QueueStore(tmp_path / "sluice")
    read = replace_entry(make_entry(1), pending=("ci",), url="https://x/1", reviews=(("bob", "APPROVED"),),
                         read_at=T0 + 0.75, taken_in_at=T0 + 0.25)
    doc = QueueDoc("octo/widgets", "main", "build-7", T0 + 0.5, {1: read, 2: make_entry(2)})
    store.save(doc)
    path = store.path_for("main")
    from_file = from_document(json.loads(path.read_text()))
    assert store.load("main") == from_file
    assert QueueStore(tmp_path / "sluice").load("main") == from_file  # another store in the same process too
    # another process replaces the file: its content, not the kept one
    other = from_document(json.loads(path.read_text()))
    other.entries = {3: make_entry(3)}
    path.write_text(json.dumps(to_document(other)) + "\n")
    assert sorted(store.load("main").entries) == [3]
    # a caller changing what it loaded changes nothing kept
    loaded = store.load("main")
    loaded.entries.clear()
    assert sorted(store.load("main").entries) == [3]


def replace_entry(entry: Entry, **changes: Any) -> Entry:
    from dataclasses import replace

    return replace(entry, **changes)


_AWKWARD = hst.sampled_from(["", "x", '"entries":[]', 'a"b\\c', "é ü", "\x00"])


@hsettings(max_examples=60, deadline=None)
@given(count=hst.integers(0, 12), repository=hst.one_of(hst.none(), _AWKWARD), branch=_AWKWARD.filter(bool),
       holder=hst.one_of(hst.none(), _AWKWARD), withdrawn=hst.one_of(hst.none(), _AWKWARD), title=_AWKWARD,
       read=hst.one_of(hst.none(), hst.just(T0)))
def test_the_stored_text_is_json_dumps_of_the_stored_form_however_it_is_joined(
        count: int, repository: str | None, branch: str, holder: str | None, withdrawn: str | None,
        title: str, read: float | None) -> None:
    """Issue 15: a save joins each entry's kept text; the file is what json.dumps writes, each entry on a line
    of its own (issue 29: a fresh process's load keeps each entry's text from it)."""
    from git_sluice.intake.queue import entry_texts, from_document, stored_text, to_document

    doc = QueueDoc(repository, branch, holder, read,
                   {n: make_entry(n, title=title + str(n)) for n in range(1, count + 1)}, withdrawn_by=withdrawn)
    stored = to_document(doc)
    stored["withdrawn_by"] = withdrawn
    first, kept = stored_text(doc, {})
    again, _ = stored_text(doc, kept)
    assert first == again
    assert json.loads(first) == stored
    compact = json.dumps(stored, separators=(",", ":")) + "\n"
    assert first.replace("\n", "") + "\n" == compact  # the lines are the only difference
    loaded = from_document(json.loads(first))
    texts = entry_texts(first.encode(), loaded)
    assert len(texts) == count and stored_text(loaded, texts)[0] == first


def count_encodings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The numbers of the entries encoded from now on (each :meth:`Entry.to_json` call), in order."""
    encoded: list[int] = []
    real = Entry.to_json

    def counted(entry: Entry) -> dict[str, Any]:
        encoded.append(entry.number)
        return real(entry)

    monkeypatch.setattr(Entry, "to_json", counted)
    return encoded


def as_a_new_process() -> None:
    """Forget what this process read and wrote of every queue file, as a fresh one starts."""
    from git_sluice.intake import queue as q

    for table in (q._DOCS, q._ENCODED):
        table.clear()


def test_a_save_encodes_only_the_entries_that_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = QueueStore(tmp_path)
    entries = {n: make_entry(n) for n in range(1, 501)}
    store.save(QueueDoc("o/r", "main", None, T0, dict(entries)))
    encoded = count_encodings(monkeypatch)
    entries[7] = make_entry(7, title="moved")
    store.save(QueueDoc("o/r", "main", None, T0 + 60, dict(entries)))  # a new read_at and one entry moved
    assert encoded == [7]
    assert store.load("main").entries[7].title == "moved" and store.load("main").read_at == T0 + 60


def test_a_fresh_process_saves_by_encoding_only_what_its_round_changed(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: a one-shot ``intake`` at 5,000 requests loads the queue, changes five entries and saves it;
    the other entries' texts come from the file it loaded, not from encoding them again."""
    store = QueueStore(tmp_path)
    entries = {n: make_entry(n) for n in range(1, 301)}
    store.save(QueueDoc("o/r", "main", None, T0, dict(entries)))
    as_a_new_process()
    loaded = store.load("main")
    encoded = count_encodings(monkeypatch)
    loaded.entries[7] = make_entry(7, title="moved")
    store.save(loaded)
    assert encoded == [7]
    as_a_new_process()
    again = store.load("main")
    assert again.entries[7].title == "moved" and again.entries == {**entries, 7: make_entry(7, title="moved")}


def test_a_queue_file_of_another_layout_is_read_and_its_entries_encoded_again(tmp_path: Path) -> None:
    """An older version's file (one line), or one written by hand, gives no entry's text: nothing is misread."""
    from git_sluice.intake import queue as q

    store = QueueStore(tmp_path)
    entries = {n: make_entry(n) for n in range(1, 4)}
    store.save(QueueDoc("o/r", "main", None, T0, dict(entries)))
    path = store.path_for("main")
    for layout in (json.dumps(json.loads(path.read_text()), separators=(",", ":")),
                   json.dumps(json.loads(path.read_text()), indent=2)):
        path.write_text(layout + "\n")
        as_a_new_process()
        assert store.load("main").entries == entries
        assert q._ENCODED.get(path) == {}
