"""The kept answers' files: a body with its validators, one failure index, the flight lock's mark (issue 15)."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest

from git_sluice.forge.kept_answers import KeptAnswers, address_of

ADDRESS = address_of("GET", "https://api.github.test/repos/o/r/pulls")


def test_a_body_keeps_its_validators_and_bytes_as_sent(tmp_path: Path) -> None:
    kept = KeptAnswers(tmp_path)
    body = b'[{"number": 1}]\n\x00not even json is altered'
    kept.store_full(kept.meta(ADDRESS), 200, {"etag": '"e1"', "link": "<x>", "x-secret": "no"}, body, 0.0)
    again = KeptAnswers(tmp_path).meta(ADDRESS)
    assert again.etag == '"e1"' and again.kept is not None
    assert again.kept.body == body and again.kept.headers == {"etag": '"e1"', "link": "<x>"}


def test_the_earlier_layout_is_still_read(tmp_path: Path) -> None:
    kept = KeptAnswers(tmp_path)
    path = kept._body_path(ADDRESS)
    path.write_text(json.dumps({"etag": '"old"', "last_modified": None, "status": 200, "headers": {},
                                "body": base64.b64encode(b"[1]").decode()}))
    meta = kept.meta(ADDRESS)
    assert meta.etag == '"old"' and meta.kept is not None and meta.kept.body == b"[1]"


def test_failure_memory_is_one_index_written_when_an_address_fails_or_recovers(tmp_path: Path) -> None:
    kept = KeptAnswers(tmp_path)
    kept.fail(kept.meta(ADDRESS), "timed out", 100.0)
    other = KeptAnswers(tmp_path)  # another process
    assert other.meta(ADDRESS).fail_until == 160.0 and other.meta(ADDRESS).fail_reason == "timed out"
    kept.confirm(kept.meta(ADDRESS), 200.0)
    assert other.meta(ADDRESS).fail_until is None and kept.index_writes == 2
    kept.confirm(kept.meta(ADDRESS), 300.0)  # nothing to clear: nothing written
    assert kept.index_writes == 2


def test_a_corrupt_index_is_discarded_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    kept = KeptAnswers(tmp_path)
    kept.fail(kept.meta(ADDRESS), "timed out", 100.0)
    (tmp_path / "index.json").write_bytes(b"\x00{garbage")
    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        meta = KeptAnswers(tmp_path).meta(ADDRESS)
    assert meta.fail_until is None and meta.fail_count == 0  # forgotten: the address is asked again
    assert "corrupt" in caplog.text


def test_the_lock_holder_marks_an_answer_for_its_waiters(tmp_path: Path) -> None:
    kept = KeptAnswers(tmp_path)
    holder, waiter = kept.flight_lock(ADDRESS), kept.flight_lock(ADDRESS)
    before = waiter.mark()
    assert holder.acquire(timeout=0)
    assert not waiter.acquire(timeout=0)  # one holder at a time, even within a process
    kept.confirm(kept.meta(ADDRESS), 1.0)  # a 304 under the lock: a mark, no file rewritten
    holder.release()
    assert waiter.acquire(timeout=0) and waiter.mark() != before
    waiter.release()
    unheld = waiter.mark()
    kept.confirm(kept.meta(ADDRESS), 2.0)  # nobody holds the lock: nobody to tell
    assert waiter.mark() == unheld
