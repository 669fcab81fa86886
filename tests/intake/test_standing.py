"""Whether a queue stands on the host watch's newest tick (pure), and the queue's confirmation file."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, strategies as hst

from git_sluice.clock import rfc3339
from git_sluice.intake.queue import Entry, QueueDoc, QueueStore
from git_sluice.intake.standing import Standing, WatchedBase, stands, unseen
from git_sluice.intake.watchstore import Cursor

T0 = 1_800_000_000.0
BASE = WatchedBase(epoch="e1", tick=7, next_at=T0 + 60, changed_tick=4, heads_tick=5)
MARK = Standing(fingerprint="f" * 32, holder="host-a", open=500)
GOOD = dict(epoch="e1", seen=6, fingerprint="f" * 32, holder="host-a", base_moved=False, heads_noted=True)


def test_a_tick_that_moved_nothing_since_the_take_in_leaves_the_queue_standing() -> None:
    assert stands(BASE, MARK, **GOOD) is None  # type: ignore[arg-type]


# each fact that makes the queue be compared again, alone: (the watch's header, the standing, the
# round's facts, the reason given)
BREAKERS = [
    ({}, None, {}, "left something to read again"),
    ({"epoch": "e2"}, MARK, {}, "started anew"),
    ({}, MARK, {"epoch": None}, "started anew"),
    ({}, MARK, {"seen": 8}, "ahead of the watch"),
    ({"changed_tick": 7}, MARK, {}, "list changed in tick 7"),
    ({"heads_tick": 7}, MARK, {}, "checks moved in tick 7"),
    ({}, MARK, {"base_moved": True}, "base branch moved"),
    ({}, MARK, {"fingerprint": None}, "queue file changed"),
    ({}, MARK, {"fingerprint": "0" * 32}, "queue file changed"),
    ({}, MARK, {"holder": "host-b"}, "holder changed"),
    ({}, MARK, {"holder": None}, "holder changed"),
    ({}, MARK, {"heads_noted": False}, "no longer holds the heads"),
]


def test_each_fact_alone_makes_the_queue_be_compared_again() -> None:
    for header, mark, facts, reason in BREAKERS:
        base = WatchedBase(**{**BASE.__dict__, **header})
        why = stands(base, mark, **{**GOOD, **facts})  # type: ignore[arg-type]
        assert why is not None and reason in why, (header, mark, facts, why)


@given(
    changed=hst.integers(0, 12), heads=hst.integers(0, 12), seen=hst.integers(-1, 12), tick=hst.integers(0, 12),
    same_epoch=hst.booleans(), moved=hst.booleans(), same_file=hst.booleans(), same_holder=hst.booleans(),
    noted=hst.booleans(), marked=hst.booleans(),
)
def test_the_queue_stands_exactly_when_nothing_it_stands_on_moved(
    changed: int, heads: int, seen: int, tick: int, same_epoch: bool, moved: bool, same_file: bool,
    same_holder: bool, noted: bool, marked: bool,
) -> None:
    base = WatchedBase(epoch="e1", tick=tick, next_at=T0, changed_tick=changed, heads_tick=heads)
    why = stands(
        base, MARK if marked else None, epoch="e1" if same_epoch else "e0", seen=seen,
        fingerprint=MARK.fingerprint if same_file else "other", holder=MARK.holder if same_holder else "x",
        base_moved=moved, heads_noted=noted,
    )
    expected = (marked and same_epoch and changed <= seen <= tick and heads <= seen and not moved and same_file
                and same_holder and noted)
    assert (why is None) == expected


def test_there_is_something_new_when_the_watch_ticked_or_the_base_moved() -> None:
    assert not unseen(BASE, epoch="e1", seen=7, base_moved=False)
    assert unseen(BASE, epoch="e1", seen=6, base_moved=False)
    assert unseen(BASE, epoch="e0", seen=7, base_moved=False)
    assert unseen(BASE, epoch="e1", seen=7, base_moved=True)


# ---------------------------------------------------------------- the cursor

def test_the_cursor_keeps_a_standing_and_refuses_one_of_the_wrong_shape(tmp_path: Path) -> None:
    cursor = Cursor(tmp_path)
    cursor.set("main", "e1", 3, stands=MARK)
    assert cursor.get("main") == ("e1", 3) and cursor.standing("main") == MARK
    cursor.set("main", "e1", 4)  # a take-in that left something to read again
    assert cursor.get("main") == ("e1", 4) and cursor.standing("main") is None
    for bad in ({"fingerprint": 3, "holder": None, "open": 1}, {"fingerprint": "f", "holder": 2, "open": 1},
                {"fingerprint": "f", "holder": None, "open": -1}, {"fingerprint": "f", "holder": None, "open": True},
                "stands"):
        (tmp_path / "watched.json").write_text(json.dumps({"main": {"epoch": "e1", "tick": 4, "stands": bad}}))
        assert Cursor(tmp_path).standing("main") is None, bad


# ---------------------------------------------------------- the confirmation

def _doc(read_at: float) -> QueueDoc:
    entry = Entry(number=1, title="t", author="a", head_ref="h", head_sha="a" * 40, base="main", draft=False,
                  updated_at="2027-01-15T08:00:00Z", state="ready", taken_in_at=T0, read_at=T0)
    return QueueDoc(repository="o/r", branch="main", holder="host-a", read_at=read_at, entries={1: entry})


def test_a_confirmation_moves_the_read_time_of_the_very_file_it_names_and_no_other(tmp_path: Path) -> None:
    store = QueueStore(tmp_path)
    written = store.save(_doc(T0))
    before = store.path_for("main").read_bytes()
    assert store.fingerprint("main") == written
    assert store.confirm("main", written, T0 + 600)
    assert store.path_for("main").read_bytes() == before  # the queue itself is not rewritten
    assert store.load("main").read_at == T0 + 600
    assert QueueStore(tmp_path).load("main").read_at == T0 + 600  # another process reads it too
    # an older confirmation never moves the time back
    assert store.confirm("main", written, T0 - 600) and store.load("main").read_at == T0
    store.confirm("main", written, T0 + 600)
    # any later write of the queue voids it: the file is another one
    store.save(_doc(T0 + 60))
    assert store.load("main").read_at == T0 + 60
    assert not store.confirm("main", written, T0 + 900)  # names a file that is gone: nothing written
    assert store.load("main").read_at == T0 + 60


def test_a_torn_or_foreign_confirmation_confirms_nothing(tmp_path: Path) -> None:
    store = QueueStore(tmp_path)
    written = store.save(_doc(T0))
    for text in ("", "{", "[]", json.dumps({"fingerprint": written}), json.dumps({"fingerprint": written, "read_at": 5}),
                 json.dumps({"fingerprint": written, "read_at": "yesterday"}),
                 json.dumps({"fingerprint": "0" * 32, "read_at": rfc3339(T0 + 600)})):
        store.confirmed_path("main").write_text(text)
        assert QueueStore(tmp_path).load("main").read_at == T0, text
    assert store.branches() == ["main"]  # the confirmation is no queue of its own


def test_no_queue_no_confirmation(tmp_path: Path) -> None:
    store = QueueStore(tmp_path)
    assert store.fingerprint("main") is None
    assert not store.confirm("main", "f" * 32, T0)
    assert not store.confirmed_path("main").exists()
