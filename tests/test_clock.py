import threading

from git_sluice.clock import FakeClock, FileClock, default_clock, SystemClock


def test_fake_clock_sleep_advances() -> None:
    clock = FakeClock(100.0)
    clock.sleep(3600)
    assert clock.time() == 3700.0
    assert clock.monotonic() == 3700.0


def test_fake_clock_thread_safe() -> None:
    clock = FakeClock(0.0)
    threads = [threading.Thread(target=lambda: [clock.advance(1) for _ in range(1000)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert clock.time() == 4000.0


def test_file_clock_is_shared_and_never_goes_back(tmp_path, monkeypatch) -> None:
    path = tmp_path / "clock"
    a = FileClock(path, start=1000.0)
    b = FileClock(path)
    b.sleep(60)
    assert a.time() == 1060.0
    a._advance_to(10.0)  # an earlier target never moves the clock back
    assert b.time() == 1060.0
    monkeypatch.setenv("GIT_SLUICE_TEST_CLOCK", str(path))
    assert isinstance(default_clock(), FileClock)
    monkeypatch.delenv("GIT_SLUICE_TEST_CLOCK")
    assert isinstance(default_clock(), SystemClock)


def test_a_clock_over_the_shared_file_is_one_kind_whatever_its_class(tmp_path) -> None:
    """Readings kept beside their clock's kind (remote looks, lease observations) are compared only within
    a kind: a subclass of the file clock (the benchmark's) reads the same time as the subprocesses' one."""
    from git_sluice.clock import FakeClock, FileClock, SystemClock, clock_kind

    class Bench(FileClock):
        pass

    class Other(FakeClock):
        pass

    assert clock_kind(Bench(tmp_path / "c", start=5.0)) == clock_kind(FileClock(tmp_path / "c")) == "FileClock"
    assert len({clock_kind(SystemClock()), clock_kind(FakeClock()), clock_kind(Other()), "FileClock"}) == 4
