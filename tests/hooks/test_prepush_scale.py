"""pre-push's head lookup costs the same at 2,000 queued heads as at 20 (counted in syscalls).

Speed is the benchmark's (docs/benchmarks.md S6); this test counts what the
hook script asks of the kernel, under ``strace``, with the queue's own
``heads`` and ``heads.d`` written by :class:`QueueStore`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from git_sluice.intake.headmarks import MARKS_DIR, mark_of, present_marks, sync_marks, valid_branch
from git_sluice.intake.queue import QueueDoc, QueueStore
from tests.hooks.conftest import base_path
from tests.intake.test_queue import T0, make_entry

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "pre-push"
STRACE = shutil.which("strace")


def _clone_dir(root: Path, heads: int) -> tuple[Path, dict[str, str]]:
    """A bare-bones git dir the hook can read: config, a fresh filter and a queue of ``heads`` requests."""
    gd = root / f"git{heads}"
    sd = gd / "sluice"
    sd.mkdir(parents=True)
    (gd / "config").write_text("[core]\n")
    old = 1_700_000_000
    os.utime(gd / "config", (old, old))
    (sd / "hook-filter").write_text("refs/remotes/origin/main\n")
    QueueStore(sd).save(QueueDoc("o/r", "main", None, T0, {
        n: make_entry(n, head_ref=f"team/topic-{n}") for n in range(1, heads + 1)
    }))
    env = {
        "PATH": base_path(), "GIT_DIR": str(gd), "HOME": str(root / "home"),
        "XDG_CONFIG_HOME": str(root / "home" / ".config"),
        "GIT_CONFIG_GLOBAL": str(root / "none"), "GIT_CONFIG_SYSTEM": str(root / "none"),
    }
    return gd, env


def _syscalls(root: Path, env: dict[str, str], pushed: str) -> Counter[str]:
    """The hook's syscalls by name for one push of ``refs/heads/<pushed>``."""
    out = root / f"trace-{pushed.replace('/', '_')}-{len(list(root.iterdir()))}"
    line = f"refs/heads/{pushed} {'1' * 40} refs/heads/{pushed} {'0' * 40}\n"
    proc = subprocess.run(
        [STRACE, "-f", "-qq", "-o", str(out), "sh", str(HOOK), "origin", "/nowhere.git"],
        input=line, text=True, env=env, capture_output=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    names: Counter[str] = Counter()
    for text in out.read_text().splitlines():
        parts = text.split(None, 1)
        if len(parts) == 2 and "(" in parts[1]:
            names[parts[1].split("(", 1)[0]] += 1
    return names


@pytest.mark.skipif(STRACE is None, reason="strace is not installed")
def test_pre_push_lookup_is_constant_in_the_queue_size(tmp_path: Path) -> None:
    small_dir, small_env = _clone_dir(tmp_path, 20)
    big_dir, big_env = _clone_dir(tmp_path, 2000)
    assert len(list((big_dir / "sluice" / MARKS_DIR / "team").iterdir())) == 2000

    for pushed in ("unrelated", "team/topic-7"):
        small = _syscalls(tmp_path, small_env, pushed)
        big = _syscalls(tmp_path, big_env, pushed)
        # the same syscalls whatever the queue holds, and few reads: the heads list is not scanned
        assert big == small, (pushed, big - small, small - big)
        assert big["read"] <= 250, big  # the stdin line and the filter, byte by byte; 2,000 heads are ~80,000 bytes
    # a queued head is found (no git-sluice on PATH: the hook warns once, starts nothing)
    assert (big_dir / "sluice" / "hook-warned").exists()


def test_marks_follow_the_queue(tmp_path: Path) -> None:
    store = QueueStore(tmp_path)
    store.save(QueueDoc("o/r", "main", None, T0, {1: make_entry(1, head_ref="a"), 2: make_entry(2, head_ref="a/b")}))
    store.save(QueueDoc("o/r", "dev", None, T0, {3: make_entry(3, head_ref="x/y/z")}))
    assert present_marks(tmp_path / MARKS_DIR) == {"a~", "a/b~", "x/y/z~"}
    store.save(QueueDoc("o/r", "dev", None, T0, {}))
    assert present_marks(tmp_path / MARKS_DIR) == {"a~", "a/b~"}
    assert not (tmp_path / MARKS_DIR / "x").exists()  # emptied folders go too


def test_hostile_head_names_get_no_mark_and_reach_nothing_outside(tmp_path: Path) -> None:
    hostile = ["../../escape", "/abs", ".hidden", "a/.b", "x..y", "sp ace", "t~", "q?", "end.lock", "a//b", "", "@",
               "c\x01", "dot."]
    sd = tmp_path / "sluice"
    sd.mkdir()
    sync_marks(sd, hostile + ["fine/one"])
    assert present_marks(sd / MARKS_DIR) == {"fine/one~"}
    assert sorted(p.name for p in sd.iterdir()) == [MARKS_DIR]


@given(st.text(min_size=1, max_size=40))
def test_a_mark_never_leaves_its_folder(name: str) -> None:
    mark = mark_of(name)
    if mark is None:
        return
    parts = mark.split("/")
    assert not mark.startswith("/") and all(p and not p.startswith(".") and p != ".." for p in parts)
    assert valid_branch(name) and mark.endswith("~") and "~" not in name


def test_a_fresh_process_whose_queue_keeps_its_heads_walks_no_marks(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The marks are made before the heads file, so a heads file already right means marks already right.

    A fresh process (nothing remembered) saving a queue whose heads did not
    change walks none of its 500 marks (issue 15); one whose marks folder is
    missing (an older version wrote the heads file) makes them all."""
    import git_sluice.intake.queue as queue

    sd = tmp_path / "sluice"
    doc = QueueDoc("o/r", "main", None, T0, {n: make_entry(n, head_ref=f"topic-{n}") for n in range(1, 501)})
    QueueStore(sd).save(doc)
    walked: list[int] = []
    real = queue.sync_marks

    def counted(sluice_dir: Path, head_refs: object) -> None:
        walked.append(1)
        real(sluice_dir, head_refs)  # type: ignore[arg-type]

    monkeypatch.setattr(queue, "sync_marks", counted)
    queue._MARKS_SYNCED.clear()  # as a fresh process finds it
    QueueStore(sd).save(doc)
    assert walked == []
    shutil.rmtree(sd / MARKS_DIR)
    queue._MARKS_SYNCED.clear()
    QueueStore(sd).save(doc)
    assert walked == [1] and len(present_marks(sd / MARKS_DIR)) == 500
    changed = QueueDoc("o/r", "main", None, T0, {**doc.entries, 501: make_entry(501, head_ref="topic-501")})
    QueueStore(sd).save(changed)
    assert walked == [1, 1] and "topic-501~" in present_marks(sd / MARKS_DIR)
    assert (sd / "heads").read_text().count("\n") == 501


def test_pre_push_never_reads_the_heads_list_when_marks_stand(tmp_path: Path) -> None:
    """Without strace: the 2,000-head ``heads`` file is swapped for a FIFO nobody writes, so a hook that
    opened it would block (and time out) instead of finishing; it must still find a queued head."""
    gd, env = _clone_dir(tmp_path, 2000)
    sd = gd / "sluice"
    (sd / "heads").unlink()
    os.mkfifo(sd / "heads")
    os.utime(sd / "hook-filter")  # the filter stays newer than the config, as a round leaves it
    for pushed, found in (("unrelated", False), ("team/topic-1999", True)):
        (sd / "hook-warned").unlink(missing_ok=True)
        line = f"refs/heads/{pushed} {'1' * 40} refs/heads/{pushed} {'0' * 40}\n"
        proc = subprocess.run(["sh", str(HOOK), "origin", "/nowhere.git"], input=line, text=True, env=env,
                              capture_output=True, timeout=10)
        assert proc.returncode == 0, proc.stderr
        # no git-sluice on PATH: a push that concerns git-sluice warns once, one that does not stays silent
        assert (sd / "hook-warned").exists() is found, pushed
