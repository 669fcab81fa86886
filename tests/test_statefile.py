"""statefile: the one atomic write and the one locked JSON document."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from git_sluice import statefile
from git_sluice.statefile import JsonDocument, StateFileBusy, file_lock, held, load_json, try_acquire, write_atomic


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_write_atomic_writes_text_and_bytes_private(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    write_atomic(target, "one\n")
    assert target.read_text() == "one\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomic(target, b"two\n")
    assert target.read_bytes() == b"two\n"
    assert _leftovers(tmp_path) == []


def test_write_atomic_sets_the_named_mode_past_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "hook"
    old = os.umask(0o077)
    try:
        write_atomic(target, "#!/bin/sh\n", mode=0o755)
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_write_atomic_failure_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "taken"
    target.write_text("old")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(statefile.os, "replace", refuse)
    with pytest.raises(OSError):
        write_atomic(target, "data")
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_a_directory_where_the_file_goes_is_moved_aside_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "inside").write_text("x")
    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        write_atomic(target, "data")
    assert target.read_text() == "data"
    assert (tmp_path / "taken.corrupt-1" / "inside").read_text() == "x"  # set aside, never deleted
    assert len(caplog.records) == 1 and "taken.corrupt-1" in caplog.text
    assert _leftovers(tmp_path) == []


def test_a_file_where_a_folder_goes_is_moved_aside(tmp_path: Path) -> None:
    (tmp_path / "queue").write_text("not a folder")
    (tmp_path / "watch").symlink_to(tmp_path / "nowhere")
    write_atomic(tmp_path / "queue" / "main.json", "{}")
    assert (tmp_path / "queue" / "main.json").read_text() == "{}"
    assert (tmp_path / "queue.corrupt-1").read_text() == "not a folder"
    assert statefile.ensure_dir(tmp_path / "watch" / "g" / "kept").is_dir()
    assert (tmp_path / "watch.corrupt-1").is_symlink()


def test_set_aside_counts_up_and_says_what_to_remove_when_it_cannot(tmp_path: Path) -> None:
    target = tmp_path / "log"
    for n in (1, 2):
        target.mkdir()
        assert statefile.set_aside(target).name == f"log.corrupt-{n}"
    for n in range(3, statefile.SET_ASIDE_LIMIT + 1):
        (tmp_path / f"log.corrupt-{n}").touch()
    target.mkdir()
    with pytest.raises(statefile.StateInTheWay, match="remove .*log"):
        statefile.set_aside(target)


@pytest.mark.parametrize("kind", ["directory", "dangling", "file-on-the-way"])
def test_a_lock_takes_its_place_whatever_stands_there(tmp_path: Path, kind: str) -> None:
    lock_path = tmp_path / "sub" / "doc.lock"
    if kind == "directory":
        lock_path.mkdir(parents=True)
    elif kind == "dangling":
        lock_path.parent.mkdir()
        lock_path.symlink_to(tmp_path / "elsewhere" / "x")
    else:
        (tmp_path / "sub").write_text("x")
    with held(file_lock(lock_path), busy="test"):
        assert lock_path.is_file() and not lock_path.is_symlink()
    assert not (tmp_path / "elsewhere").exists()  # a link is never followed to make a file elsewhere


@pytest.mark.parametrize("raw", [b"\xff\xfe{}", b"[" * 100_000, b"\xff\xfe\x7b\x00\x7d\x00", b"", b"\x00" * 9])
def test_parse_json_has_one_exception_for_anything_a_file_holds(raw: bytes) -> None:
    with pytest.raises(ValueError):
        statefile.parse_json(raw)


def test_parse_json_reads_utf8_as_json_loads_does() -> None:
    assert statefile.parse_json(b'\xef\xbb\xbf{"a": "\xc3\xa9"}') == {"a": "\u00e9"}  # a BOM, as json.loads takes it


@pytest.mark.parametrize("kind", ["directory", "dangling", "nonutf8", "deep"])
def test_load_json_reads_anything_as_absent_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    path = tmp_path / "doc.json"
    if kind == "directory":
        path.mkdir()
    elif kind == "dangling":
        path.symlink_to(tmp_path / "nowhere")
    else:
        path.write_bytes(b"\xff{}" if kind == "nonutf8" else b"[" * 100_000)
    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        assert load_json(path, dict, dict, what="test doc") == {}
    assert len(caplog.records) == 1 and "test doc" in caplog.text
    doc = JsonDocument(path, what="test doc")
    with doc.update() as data:
        data["a"] = 1
    assert doc.read() == {"a": 1}


def test_load_json_absent_is_quiet_and_corrupt_is_discarded_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "doc.json"
    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        assert load_json(path, dict, dict, what="test doc") == {}
    assert caplog.records == []
    path.write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        assert load_json(path, dict, dict, what="test doc") == {}
    assert "test doc" in caplog.text and "corrupt" in caplog.text and str(path) in caplog.text


def test_load_json_refused_by_the_parser_is_corrupt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"branch": 3}))

    def parse(data: dict[str, object]) -> str:
        if not isinstance(data["branch"], str):
            raise TypeError("branch is not a string")
        return data["branch"]

    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        assert load_json(path, parse, lambda: "none", what="queue") == "none"
    assert "branch is not a string" in caplog.text


def test_document_not_an_object_is_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    doc = JsonDocument(tmp_path / "d.json", what="test doc")
    doc.path.write_text("[1, 2]")
    with caplog.at_level(logging.WARNING, logger="git_sluice"):
        with doc.update() as data:
            assert data == {}
            data["a"] = 1
    assert json.loads(doc.path.read_text()) == {"a": 1}
    assert "not an object" in caplog.text


def test_update_writes_nothing_when_the_block_raises(tmp_path: Path) -> None:
    doc = JsonDocument(tmp_path / "sub" / "d.json", what="test doc")
    with doc.update() as data:
        data["kept"] = True
    with pytest.raises(RuntimeError):
        with doc.update() as data:
            data["kept"] = False
            raise RuntimeError("changed my mind")
    assert doc.read() == {"kept": True}
    assert stat.S_IMODE(doc.path.parent.stat().st_mode) == 0o700


def test_threads_updating_one_document_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "d.json"

    def bump(n: int) -> None:
        doc = JsonDocument(path, what="counter")  # an instance each, as separate stores would be
        for _ in range(n):
            with doc.update() as data:
                data["n"] = data.get("n", 0) + 1

    threads = [threading.Thread(target=bump, args=(25,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert JsonDocument(path, what="counter").read() == {"n": 100}
    assert _leftovers(tmp_path) == []


def _bump_in_process(path: str, n: int) -> None:
    doc = JsonDocument(path, what="counter")
    for _ in range(n):
        with doc.update() as data:
            data["n"] = data.get("n", 0) + 1


def test_processes_updating_one_document_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "d.json")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_bump_in_process, args=(path, 20)) for _ in range(3)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    assert JsonDocument(path, what="counter").read() == {"n": 60}


def test_a_held_lock_past_its_timeout_names_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "q.lock"
    holder = file_lock(path)
    with held(holder, busy="the queue lock"):
        # another process's view of the same lock: flock is per open file, so a second lock object conflicts
        waiter = file_lock(path, timeout=0)
        with pytest.raises(StateFileBusy) as caught:
            with held(waiter, busy="the queue lock"):
                pass  # pragma: no cover - never reached
    assert str(path) in str(caught.value) and "the queue lock" in str(caught.value)
    assert caught.value.exit_code == 1
    with held(file_lock(path, timeout=0), busy="the queue lock"):
        pass  # released: the next holder gets it at once


def test_one_timeout_for_documents(tmp_path: Path) -> None:
    doc = JsonDocument(tmp_path / "d.json", what="x")
    with doc.locked():
        assert doc._lock is not None and doc._lock.timeout == statefile.LOCK_TIMEOUT == 30.0


def test_try_acquire_does_not_wait(tmp_path: Path) -> None:
    first, second = file_lock(tmp_path / "r.lock"), file_lock(tmp_path / "r.lock")
    assert try_acquire(first)
    try:
        assert not try_acquire(second)
    finally:
        first.release()
    assert try_acquire(second)
    second.release()


def test_reading_state_does_not_import_filelock(tmp_path: Path) -> None:
    code = (
        "import sys; from git_sluice.intake.queue import QueueStore; "
        f"QueueStore({str(tmp_path)!r}).load('main'); assert 'filelock' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_lock_is_the_one_filelock_takes_so_older_processes_still_exclude_this_one(tmp_path: Path) -> None:
    """issue 15: statefile's own flock lock replaced the filelock package; the kernel lock is the same."""
    import filelock

    path = tmp_path / "q.lock"
    theirs = filelock.FileLock(str(path), timeout=0)
    with theirs:
        assert not try_acquire(file_lock(path))
    ours = file_lock(path)
    assert try_acquire(ours)
    try:
        with pytest.raises(filelock.Timeout):
            theirs.acquire()
    finally:
        ours.release()
    theirs.acquire()
    theirs.release()


def test_the_lock_is_reentrant_per_thread_and_excludes_other_threads(tmp_path: Path) -> None:
    lock = file_lock(tmp_path / "r.lock", timeout=0)
    lock.acquire()
    lock.acquire()  # nested: counted
    seen: list[bool] = []
    worker = threading.Thread(target=lambda: seen.append(try_acquire(lock)))
    worker.start()
    worker.join()
    lock.release()
    assert seen == [False] and lock.is_locked and not try_acquire(file_lock(tmp_path / "r.lock"))
    lock.release()
    assert not lock.is_locked and try_acquire(file_lock(tmp_path / "r.lock"))


def test_a_lock_file_removed_while_held_is_not_a_second_lock(tmp_path: Path) -> None:
    path = tmp_path / "gone.lock"
    first = file_lock(path)
    first.acquire()
    path.unlink()  # someone cleans up under the holder
    second = file_lock(path)
    assert try_acquire(second)  # a fresh file: the old holder holds nothing anyone can see
    assert not try_acquire(file_lock(path, timeout=0))
    second.release()
    first.release()


def test_taking_a_lock_does_not_import_filelock(tmp_path: Path) -> None:
    code = (
        "import sys; from git_sluice.statefile import JsonDocument; "
        f"d = JsonDocument({str(tmp_path / 'x.json')!r}, what='x')\n"
        "with d.update() as data: data['n'] = 1\n"
        "assert 'filelock' not in sys.modules, 'a lock loaded filelock'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
