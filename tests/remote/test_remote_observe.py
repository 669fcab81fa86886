"""First-seen times that outlive processes, and restart at a new object or a new boot."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from git_sluice.clock import FakeClock
from git_sluice.remote.observe import FILE_NAME, ObservationStore

REF = "refs/sluice/intake/main"
A = "a" * 40
B = "b" * 40


def store(directory: Path, clock: FakeClock, boot: str = "boot-1") -> ObservationStore:
    return ObservationStore(directory, clock, boot=boot)


def test_same_object_keeps_its_first_seen_time(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    s = store(tmp_path, clock)
    first = s.observe(REF, A)
    assert first is not None and first.first_seen == 1000.0 and first.boot_id == "boot-1"
    clock.advance(250)
    s.fetched(clock.monotonic())  # a fetch that succeeded saw it still there
    again = s.observe(REF, A)
    assert again.first_seen == first.first_seen and again.confirmed_at == 1250.0
    assert s.observed_for(again) == 250.0


def test_a_mark_ages_only_as_far_as_the_last_successful_fetch(tmp_path: Path) -> None:
    """Issue #14 point 11: while fetches fail, a mark last seen is not "seen unchanged"."""
    clock = FakeClock(1000.0)
    s = store(tmp_path, clock)
    assert s.observed_for(s.observe(REF, A)) is None  # no fetch ever confirmed it
    s.fetched(1000.0)
    clock.advance(30)
    s.fetched(clock.monotonic())  # the last fetch that succeeded
    clock.advance(3600)  # every fetch since failed: nothing more is known
    assert s.observed_for(s.observe(REF, A)) == 30.0
    s.fetched(900.0)  # an older fetch finishing late moves nothing back
    assert s.observed_for(s.observe(REF, A)) == 30.0


def test_observation_outlives_the_process(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    store(tmp_path, clock).observe(REF, A)
    clock.advance(400)
    later_process = store(tmp_path, clock)  # a new process: nothing in memory
    later_process.fetched(clock.monotonic())
    obs = later_process.observe(REF, A)
    assert later_process.observed_for(obs) == 400.0


def test_a_different_object_restarts_the_observation(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    s = store(tmp_path, clock)
    s.observe(REF, A)
    clock.advance(500)
    s.fetched(clock.monotonic())
    obs = s.observe(REF, B)
    assert obs.first_seen == 1500.0 and s.observed_for(obs) == 0.0
    clock.advance(10)
    back = s.observe(REF, A)  # even an object seen before starts over
    assert back.first_seen == 1510.0


def test_a_new_boot_restarts_the_observation(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    store(tmp_path, clock, boot="boot-1").observe(REF, A)
    clock.advance(5000)
    after_reboot = store(tmp_path, clock, boot="boot-2")
    after_reboot.fetched(clock.monotonic())
    obs = after_reboot.observe(REF, A)
    assert obs.boot_id == "boot-2" and after_reboot.observed_for(obs) == 0.0
    # an observation from the old boot means nothing on the new one
    old = store(tmp_path, clock, boot="boot-1").observe(REF, A)
    assert old.boot_id == "boot-1" and old.first_seen == 6000.0
    assert after_reboot.observed_for(old) is None


def test_a_monotonic_clock_behind_the_reading_restarts(tmp_path: Path) -> None:
    """A boot id that failed to change (fallback) is caught by time running backwards."""
    clock = FakeClock(1000.0)
    store(tmp_path, clock).observe(REF, A)
    clock.set(50.0)
    obs = store(tmp_path, clock).observe(REF, A)
    assert obs.first_seen == 50.0


def test_absent_ref_forgets(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    s = store(tmp_path, clock)
    s.observe(REF, A)
    s.wrote({REF: A}, at=1000.0)
    assert s.observe(REF, None) is None
    data = json.loads((tmp_path / FILE_NAME).read_text())
    assert REF not in data["seen"] and REF not in data["wrote"]
    clock.advance(60)
    assert s.observe(REF, A).first_seen == 1060.0


def test_unreadable_file_restarts_everything(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    s = store(tmp_path, clock)
    s.observe(REF, A)
    for junk in ("{not json", "[]", json.dumps({"format": 99, "seen": {}}), json.dumps({"format": 1, "seen": []})):
        (tmp_path / FILE_NAME).write_text(junk)
        clock.advance(1)
        assert s.observe(REF, A).first_seen == clock.time()
    (tmp_path / FILE_NAME).write_text(
        json.dumps({"format": 1, "seen": {REF: {"oid": A, "first_seen": "soon", "boot_id": "boot-1"}}, "wrote": {}})
    )
    assert s.observe(REF, A).first_seen == clock.time()


def test_my_writes_are_kept_per_object_and_boot(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    s = store(tmp_path, clock)
    s.wrote({REF: A}, at=990.0)
    assert s.written_at(REF, A) == 990.0
    assert s.written_at(REF, B) is None
    assert s.observe(REF, A).first_seen == 990.0  # on the remote no earlier than the push began
    assert store(tmp_path, clock, boot="boot-2").written_at(REF, A) is None
    s.wrote({REF: None}, at=1000.0)
    assert s.written_at(REF, A) is None
    s.wrote({REF: B}, at=1000.0)
    s.forget([REF])
    assert s.written_at(REF, B) is None


def test_concurrent_observers_agree_on_first_seen(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    results: list[float] = []
    barrier = threading.Barrier(6)

    def look(i: int) -> None:
        s = store(tmp_path, clock)
        barrier.wait()
        for _ in range(5):
            obs = s.observe(f"refs/sluice/intake/b{i % 2}", A)
            results.append(obs.first_seen)
            clock.advance(1)

    threads = [threading.Thread(target=look, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    data = json.loads((tmp_path / FILE_NAME).read_text())
    firsts = {ref: entry["first_seen"] for ref, entry in data["seen"].items()}
    assert set(firsts) == {"refs/sluice/intake/b0", "refs/sluice/intake/b1"}
    # every reader saw the one first-seen time of its ref, never a later one
    assert set(results) == set(firsts.values())


def test_readings_of_another_kind_of_clock_are_not_compared(tmp_path: Path) -> None:
    """A system-clock process (e.g. `git sluice status`) and a fake-clock test share a clone."""

    class OtherClock(FakeClock):
        pass

    store(tmp_path, OtherClock(5.0)).observe(REF, A)  # monotonic 5 s on that clock
    fake = FakeClock(1_800_000_000.0)
    obs = store(tmp_path, fake).observe(REF, A)
    assert obs.first_seen == fake.time()  # not 1.8e9 seconds "unchanged"
    store(tmp_path, OtherClock(5.0)).wrote({REF: B}, at=5.0)
    assert store(tmp_path, fake).written_at(REF, B) is None


def test_an_unchanged_mark_is_read_without_the_lock_and_a_new_one_under_it(tmp_path: Path, monkeypatch) -> None:
    """A round reads the same mark before each call: only a change takes the lock (issue 15)."""
    from git_sluice.statefile import JsonDocument

    clock = FakeClock(1000.0)
    s = store(tmp_path, clock)
    s.observe(REF, A)
    s.fetched(1000.0)
    taken = []
    real = JsonDocument.locked

    def counted(doc: JsonDocument):  # type: ignore[no-untyped-def]
        taken.append(doc.path.name)
        return real(doc)

    monkeypatch.setattr(JsonDocument, "locked", counted)
    clock.advance(10)
    assert s.observe(REF, A).first_seen == 1000.0 and s.observe_many({REF: A, "refs/x": None})[REF] is not None
    s.fetched(900.0)  # older news than the fetch recorded
    assert taken == []
    assert s.observe(REF, B).first_seen == 1010.0  # a new object: written, under the lock
    s.fetched(1010.0)
    assert taken == [FILE_NAME, FILE_NAME]
    assert store(tmp_path, clock).observe(REF, B).first_seen == 1010.0


def test_garbage_ages_by_the_churn_not_by_its_object(tmp_path: Path) -> None:
    """Issue 33: new garbage every 50 s is one churn; it ages from the first garbage, across a lease
    record in between, until no garbage came for an hour (then a new churn starts)."""
    from git_sluice.remote.observe import CHURN_MEMORY

    clock = FakeClock(1000.0)
    s = store(tmp_path, clock)
    assert s.garbage_since(REF, A).first_seen == 1000.0
    for _ in range(10):
        clock.advance(50)
        s.fetched(clock.monotonic())
        seen = s.garbage_since(REF, f"{clock.monotonic():040.0f}"[-40:])
        assert seen.first_seen == 1000.0 and s.observed_for(seen) == clock.monotonic() - 1000.0
    s.observe(REF, B)  # a lease record in between does not end the churn
    clock.advance(CHURN_MEMORY - 60)
    assert s.garbage_since(REF, A).first_seen == 1000.0
    clock.advance(CHURN_MEMORY + 1)  # quiet for an hour: the next garbage is a new churn
    assert s.garbage_since(REF, A).first_seen == clock.monotonic()
    assert store(tmp_path, clock, boot="boot-2").garbage_since(REF, A).first_seen == clock.monotonic()


def test_the_last_write_at_a_ref_is_kept_whatever_stands_there_now(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    s = store(tmp_path, clock)
    assert s.last_written(REF) is None
    s.wrote({REF: A}, at=1000.0)
    clock.advance(20)
    s.observe(REF, B)  # a pusher's object replaced it
    assert s.last_written(REF) == 1000.0
    assert store(tmp_path, clock, boot="boot-2").last_written(REF) is None
