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


DEV = "+refs/heads/dev:refs/sluice/tracking/origin/dev"


def test_a_look_brings_what_other_processes_of_the_host_asked_lately(tmp_path: Path) -> None:
    """Issue 29: a wait's base branch rides the watch's look, so the wait takes that look as its own
    instead of fetching a second time in the same tick; a want older than the horizon rides no more."""
    from git_sluice.remote.looks import WANT_HORIZON

    clock = FakeClock(1000.0)
    wait, watch = RemoteLooks(tmp_path, clock, boot="b1"), RemoteLooks(tmp_path, clock, boot="b1")
    fetched: list[list[str]] = []

    def fetch(looks: RemoteLooks, needs: list[str]) -> object:
        def run(riders: object) -> None:
            brought = [*needs, *riders]  # type: ignore[misc]
            fetched.append(brought)
            looks.noted("k", clock.monotonic(), brought)
        return run

    assert wait.share_or_fetch("k", [*SPECS, DEV], 60.0, fetch(wait, [*SPECS, DEV])) is None
    clock.advance(60.0)  # the next tick: the watch looks first, bringing the wait's branch too
    assert watch.share_or_fetch("k", SPECS, 10.0, fetch(watch, SPECS)) is None
    assert fetched[-1] == [*SPECS, DEV]
    clock.advance(1.0)
    assert wait.share_or_fetch("k", [*SPECS, DEV], 60.0, fetch(wait, [*SPECS, DEV])) == 1060.0
    assert len(fetched) == 2
    clock.advance(WANT_HORIZON)  # the wait ended long ago: its branch rides no more
    watch.share_or_fetch("k", SPECS, 10.0, fetch(watch, SPECS))
    assert fetched[-1] == SPECS


def test_only_refspecs_into_git_sluices_own_refs_ride_a_look(tmp_path: Path) -> None:
    """The file is the host's own, but a damaged one must never make a look write the user's refs."""
    import json

    clock = FakeClock(1000.0)
    looks = RemoteLooks(tmp_path, clock, boot="b1")
    looks.wanted("k", [DEV])
    data = json.loads((tmp_path / "remote-looks.json").read_text())
    data["k"]["wanted"].update({"+refs/heads/main:refs/remotes/origin/main": 1000.0, "--upload-pack=x": 1000.0,
                                "+refs/heads/a b:refs/sluice/x": 1000.0, 7: "x", DEV + "x": "nan"})
    (tmp_path / "remote-looks.json").write_text(json.dumps(data))
    assert looks.riders("k", SPECS) == [DEV]
    assert looks.riders("k", [DEV]) == []
    (tmp_path / "remote-looks.json").write_text('{"k": {"boot": "b1", "clock": "FakeClock", "wanted": [1]}}')
    assert looks.riders("k", SPECS) == []
    assert RemoteLooks(tmp_path, clock, boot="b2").riders("k", SPECS) == []
