"""The small machines of issue 13, without a CLI: the 401 back-off, the driver lock, the shared App token."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from git_sluice.runtime.driverlock import AlreadyDriving, DriverLock
from git_sluice.runtime.refusal import BACKOFF_BASE, BACKOFF_CAP, Refusal
from git_sluice.forge.tokencache import SharedTokens


@given(st.integers(min_value=1, max_value=40), st.floats(min_value=0, max_value=1e9))
def test_the_back_off_doubles_from_a_minute_to_fifteen_and_never_asks_inside_it(refusals: int, now: float) -> None:
    refusal = Refusal()
    delays = []
    for _ in range(refusals):
        until = refusal.refused(now)
        delays.append(until - now)
        assert refusal.holding_off(now) and not refusal.due(now)
        assert refusal.due(until) and not refusal.holding_off(until)
        refusal.retried()
    # until is an absolute time: ``until - now`` carries the float rounding of ``now``
    assert delays[0] == pytest.approx(BACKOFF_BASE)
    assert all(b == pytest.approx(min(2 * a, BACKOFF_CAP)) for a, b in zip(delays, delays[1:]))
    refusal.accepted()
    assert refusal.refused(now) - now == pytest.approx(BACKOFF_BASE)  # a success forgets the streak


def test_the_driver_lock_refuses_a_second_holder_naming_the_first_and_frees_on_release(tmp_path: Path) -> None:
    first = DriverLock(tmp_path)
    first.acquire()
    with pytest.raises(AlreadyDriving) as refused:
        DriverLock(tmp_path).acquire()
    assert refused.value.pid == os.getpid() and f"pid {os.getpid()}" in str(refused.value)
    assert refused.value.exit_code == 2
    first.release()
    with DriverLock(tmp_path):  # free again: the kernel's lock went with the descriptor
        pass


def test_the_shared_token_round_trips_through_the_daemon_and_a_refused_one_is_forgotten(tmp_path: Path) -> None:
    shared = SharedTokens(tmp_path)
    key = SharedTokens.key("api.example", "7", "42")
    try:
        assert shared.get(key) is None
        with shared.minting(key):
            shared.put(key, "ghs_" + "a" * 36, 1_800_003_600.0)
        got = shared.get(key)
        assert got is not None and got.token == "ghs_" + "a" * 36 and got.expires_at == 1_800_003_600.0
        assert "ghs_" not in repr(got)
        shared.put(key, "ghs_" + "b" * 36, 1_800_007_200.0)  # a renewal replaces, never stacks
        assert shared.get(key).token == "ghs_" + "b" * 36  # type: ignore[union-attr]
        assert shared.get(SharedTokens.key("api.example", "7", "43")) is None  # another installation's key
        shared.forget(key)
        assert shared.get(key) is None
        assert oct((tmp_path / "run").stat().st_mode & 0o777) == "0o700"
    finally:
        shared.stop()


def test_without_git_the_token_is_not_shared_and_nothing_breaks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    shared = SharedTokens(tmp_path)
    key = SharedTokens.key("api.example", "7", "42")
    shared.put(key, "ghs_" + "c" * 36, 1_800_003_600.0)
    assert shared.get(key) is None
