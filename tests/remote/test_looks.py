"""One look at a remote per host per tick (remote/looks.py): a fetch begun a moment ago by another
process of the host stands for the next one, and nothing doubtful stands for anything."""

from __future__ import annotations

from pathlib import Path

from git_sluice.clock import FakeClock
from git_sluice.remote.looks import SHARE_WINDOW, RemoteLooks, look_key

SPECS = ["+refs/sluice/intake/*:refs/sluice/intake/*", "+refs/heads/main:refs/sluice/tracking/origin/main"]


def test_a_look_stands_for_the_window_and_what_it_brought(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    looks = RemoteLooks(tmp_path, clock, boot="b1")
    key = look_key(tmp_path / "clone" / ".git", "origin")
    assert looks.recent(key, SPECS) is None
    looks.noted(key, 1000.0, SPECS)
    other = RemoteLooks(tmp_path, clock, boot="b1")  # another process of the host
    assert other.recent(key, SPECS) == 1000.0
    assert other.recent(key, SPECS[:1]) == 1000.0  # less than it brought
    assert other.recent(key, [*SPECS, "+refs/heads/dev:refs/sluice/tracking/origin/dev"]) is None  # more
    clock.advance(SHARE_WINDOW)
    assert other.recent(key, SPECS) is None
    assert other.recent(look_key(tmp_path / "elsewhere", "origin"), SPECS) is None


def test_a_later_look_is_kept_and_an_earlier_one_never_replaces_it(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    looks = RemoteLooks(tmp_path, clock, boot="b1")
    looks.noted("k", 1000.0, SPECS)
    looks.noted("k", 990.0, SPECS[:1])
    assert looks.recent("k", SPECS) == 1000.0


def test_a_look_from_another_boot_or_clock_or_a_broken_file_is_no_look(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    RemoteLooks(tmp_path, clock, boot="b1").noted("k", 1000.0, SPECS)
    assert RemoteLooks(tmp_path, clock, boot="b2").recent("k", SPECS) is None

    class OtherClock(FakeClock):
        pass

    assert RemoteLooks(tmp_path, OtherClock(1000.0), boot="b1").recent("k", SPECS) is None
    clock.set(900.0)  # a clock behind the look
    assert RemoteLooks(tmp_path, clock, boot="b1").recent("k", SPECS) is None
    (tmp_path / "remote-looks.json").write_bytes(b"\xff\xfe[[[")
    clock.set(1000.0)
    looks = RemoteLooks(tmp_path, clock, boot="b1")
    assert looks.recent("k", SPECS) is None
    looks.noted("k", 1000.0, SPECS)  # rebuilt
    assert looks.recent("k", SPECS) == 1000.0
