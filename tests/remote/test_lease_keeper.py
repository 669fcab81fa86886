"""LeaseKeeper against real remotes: races, wrong clocks, take-overs, garbage, failures."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from git_sluice.remote.git import CasUpdate, RefOutcome, RemoteGit, RemoteRefused, RemoteUnreachable
from git_sluice.remote.lease_record import LeaseRecord, LeaseView
from git_sluice.remote.lease_keeper import LeaseKeeper

REF = "refs/sluice/intake/main"


class CountingRemote(RemoteGit):
    """Counts connections, so tests can say "one push", "no retry"."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pushes: list[list[CasUpdate]] = []
        self.fetches = 0

    def push_cas(self, updates: Sequence[CasUpdate]) -> list[RefOutcome]:
        self.pushes.append(list(updates))
        return super().push_cas(updates)

    def fetch(self, *extra: str) -> None:
        self.fetches += 1
        super().fetch(*extra)


def keeper(host, clock, *, role: str = "driver", lease: float = 300.0) -> LeaseKeeper:
    remote = CountingRemote(host.repo, "origin", clock=clock)
    return LeaseKeeper(
        host.repo, remote, host=host.name, role=role, lease=lease, clock=clock, observations=host.observations(clock)
    )


def remote_holder(bare: Path, ref: str = REF) -> str | None:
    proc = subprocess.run(["git", "log", "-1", "--format=%B", ref], cwd=bare, capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    record = LeaseRecord.parse(proc.stdout)
    return record.holder if record else "<garbage>"


def test_three_hosts_at_once_exactly_one_holds(make_host, url_for, bare_remote, fake_clock) -> None:
    hosts = [make_host(f"host{i}", url_for) for i in range(3)]
    keepers = [keeper(h, fake_clock) for h in hosts]
    views: dict[int, LeaseView] = {}
    barrier = threading.Barrier(3)

    def run(i: int) -> None:
        barrier.wait()
        views[i] = keepers[i].ensure(["main"])["main"]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    holders = [i for i, v in views.items() if v.mine and v.live]
    assert len(holders) == 1, {i: v.note for i, v in views.items()}
    winner = hosts[holders[0]].name
    assert remote_holder(bare_remote) == winner
    for i, view in views.items():
        if i != holders[0]:
            # a loser fetched and read again: it sees the winner and defers to it
            assert view.holder == winner and view.live and not view.takes_in
    for k in keepers:
        assert len(k.remote.pushes) <= 1  # never a blind retry
    # a second call changes nothing: everyone agrees
    fake_clock.advance(10)
    again = [k.ensure(["main"])["main"] for k in keepers]
    assert [v.holder for v in again] == [winner] * 3
    assert sum(v.mine for v in again) == 1


def test_git_log_reads_the_record(make_host, fake_clock) -> None:
    host = make_host("alpha")
    keeper(host, fake_clock).ensure(["main"])
    shown = subprocess.run(["git", "log", "-1", REF], cwd=host.path, capture_output=True, text=True).stdout
    assert "Holder: alpha" in shown and "Role: driver" in shown and "Lease: 300" in shown
    assert "Renewal: 0" in shown and "Sluice-Version:" in shown


def test_renewal_every_third_of_a_lease_in_one_push(make_host, bare_remote, fake_clock) -> None:
    a = make_host("a")
    b = make_host("b")
    ka = keeper(a, fake_clock, lease=300)
    kb = keeper(b, fake_clock, role="driver", lease=300)
    branches = ["main", "next", "release/1.x"]
    first = ka.ensure(branches)
    assert all(v.mine and v.live for v in first.values())
    assert len(ka.remote.pushes) == 1 and len(ka.remote.pushes[0]) == 3
    for step in range(18):  # 15 minutes, three leases
        fake_clock.advance(50)
        ka.ensure(branches)
        views = kb.ensure(branches)
        assert all(v.holder == "a" and not v.mine for v in views.values()), step
    assert not kb.remote.pushes  # b never even tried
    # one push renews all three, every other call (every 100 s), never more
    assert len(ka.remote.pushes) == 1 + 9
    assert all(len(p) == 3 for p in ka.remote.pushes)
    record = LeaseRecord.parse(
        subprocess.run(["git", "log", "-1", "--format=%B", REF], cwd=bare_remote, capture_output=True, text=True).stdout
    )
    assert record is not None and record.renewal == 9


def test_takeover_only_after_a_full_lease_by_my_own_observation(make_host, bare_remote, fake_clock) -> None:
    a = make_host("a")
    b = make_host("b")
    keeper(a, fake_clock, lease=300).ensure(["main"])  # a takes, then dies
    fake_clock.advance(200)  # b first looks 200 s after a's write
    kb = keeper(b, fake_clock, lease=300)
    view = kb.ensure(["main"])["main"]
    assert view.holder == "a" and view.age == 0.0 and "held by a" in view.note
    fake_clock.advance(299)  # 499 s after a's write, 299 s by b's own observation
    kb_restarted = keeper(b, fake_clock, lease=300)  # a restarted process keeps the observation
    view = kb_restarted.ensure(["main"])["main"]
    assert view.holder == "a" and view.age == 299.0
    assert not kb_restarted.remote.pushes
    fake_clock.advance(1)
    view = kb_restarted.ensure(["main"])["main"]
    assert view.mine and view.live and "took the lease over" in view.note
    assert remote_holder(bare_remote) == "b"


def test_a_reboot_restarts_the_observation(make_host, fake_clock) -> None:
    a = make_host("a")
    b = make_host("b")
    keeper(a, fake_clock, lease=300).ensure(["main"])
    keeper(b, fake_clock, lease=300).ensure(["main"])
    fake_clock.advance(250)
    b.boot = "boot-2"  # b rebooted: its monotonic readings from before mean nothing
    kb = keeper(b, fake_clock, lease=300)
    assert kb.ensure(["main"])["main"].age == 0.0
    fake_clock.advance(299)
    assert kb.ensure(["main"])["main"].holder == "a"
    fake_clock.advance(1)
    assert kb.ensure(["main"])["main"].mine


@pytest.mark.parametrize("offset", [3600.0, -3600.0])
def test_a_clock_an_hour_wrong_never_takes_early(make_host, bare_remote, fake_clock, skewed, offset) -> None:
    a = make_host("a")
    b = make_host("b")
    keeper(a, fake_clock, lease=300).ensure(["main"])
    wrong = skewed(fake_clock, offset)
    kb = keeper(b, wrong, lease=300)
    for _ in range(29):
        assert kb.ensure(["main"])["main"].holder == "a"
        fake_clock.advance(10)
    assert not kb.remote.pushes  # 290 s: never early
    fake_clock.advance(10)
    assert kb.ensure(["main"])["main"].mine
    assert remote_holder(bare_remote) == "b"


def test_a_live_holder_is_never_taken_over(make_host, fake_clock, skewed) -> None:
    a = make_host("a")
    b = make_host("b")
    ka = keeper(a, skewed(fake_clock, -3600.0), lease=60)
    kb = keeper(b, skewed(fake_clock, 3600.0), lease=60)
    ka.ensure(["main"])
    for _ in range(20):  # 380 s, six leases
        fake_clock.advance(19)
        assert ka.ensure(["main"])["main"].mine
        assert kb.ensure(["main"])["main"].holder == "a"


def test_driver_takes_a_wait_mark_at_once_and_wait_lets_go(make_host, bare_remote, fake_clock) -> None:
    w = make_host("w")
    d = make_host("d")
    kw = keeper(w, fake_clock, role="wait")
    view = kw.ensure(["main"])["main"]
    assert view.mine and view.role == "wait"
    kd = keeper(d, fake_clock, role="driver")
    view = kd.ensure(["main"])["main"]
    assert view.mine and view.role == "driver" and "wait mark of w" in view.note
    # the wait sees the driver and defers; its release leaves the driver's mark alone
    view = kw.ensure(["main"])["main"]
    assert view.holder == "d" and not view.mine
    kw.release(["main"])
    assert remote_holder(bare_remote) == "d"
    kd.release(["main"])
    assert remote_holder(bare_remote) is None
    assert d.repo.ref(REF) is None


def test_wait_releases_its_own_mark(make_host, bare_remote, fake_clock) -> None:
    w = make_host("w")
    other = make_host("o")
    kw = keeper(w, fake_clock, role="wait")
    kw.ensure(["main"])
    keeper(other, fake_clock, role="wait").ensure(["main"])
    kw.release(["main", "never-held"])
    assert remote_holder(bare_remote) is None
    # no mark now: another wait takes it at once
    assert keeper(other, fake_clock, role="wait").ensure(["main"])["main"].mine


def test_a_host_driver_upgrades_its_own_wait_mark(make_host, bare_remote, fake_clock) -> None:
    host = make_host("h")
    keeper(host, fake_clock, role="wait").ensure(["main"])
    view = keeper(host, fake_clock, role="driver").ensure(["main"])["main"]
    assert view.mine and view.role == "driver"
    # the host's wait no longer renews the driver's fresh mark, and never demotes it
    wait_again = keeper(host, fake_clock, role="wait")
    fake_clock.advance(150)
    assert not wait_again.remote.pushes and wait_again.ensure(["main"])["main"].role == "driver"
    assert not wait_again.remote.pushes
    fake_clock.advance(60)  # 210 s > two thirds: the driver fell silent
    assert wait_again.ensure(["main"])["main"].role == "driver"
    assert len(wait_again.remote.pushes) == 1


def test_a_step_never_writes(make_host, bare_remote, fake_clock) -> None:
    host = make_host("s")
    step = keeper(host, fake_clock, role="step")
    view = step.ensure(["main"])["main"]
    assert view.absent and view.takes_in and "alone" in view.note
    assert not step.remote.pushes and remote_holder(bare_remote) is None
    keeper(make_host("d"), fake_clock).ensure(["main"])
    view = step.ensure(["main"])["main"]
    assert view.holder == "d" and not view.takes_in
    fake_clock.advance(300)
    view = step.ensure(["main"])["main"]
    assert view.takes_in and not view.live and not step.remote.pushes


def test_garbage_is_reported_and_taken_over_after_one_lease(make_host, bare_remote, fake_clock, git_repo) -> None:
    seed = git_repo.workspace  # what bare_remote was seeded from
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "someone else's commit"], cwd=seed, check=True)
    subprocess.run(["git", "push", "-q", bare_remote.as_uri(), f"HEAD:{REF}"], cwd=seed, check=True)
    host = make_host("h")
    kh = keeper(host, fake_clock, lease=120)
    view = kh.ensure(["main"])["main"]
    assert view.garbage and view.holder is None and view.live and not view.takes_in
    assert "unknown holder" in view.note and "garbage" in view.describe()
    fake_clock.advance(119)
    assert kh.ensure(["main"])["main"].garbage
    assert not kh.remote.pushes
    fake_clock.advance(1)
    view = kh.ensure(["main"])["main"]
    assert view.mine and not view.garbage and remote_holder(bare_remote) == "h"


def test_a_blob_at_the_lease_ref_is_garbage_too(make_host, bare_remote, fake_clock) -> None:
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=bare_remote, input="junk\n", capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(["git", "update-ref", REF, blob], cwd=bare_remote, check=True)
    view = keeper(make_host("h"), fake_clock).ensure(["main"])["main"]
    assert view.garbage and view.oid == blob


def test_lost_race_reads_again_and_never_retries(make_host, bare_remote, fake_clock) -> None:
    a = make_host("a")
    b = make_host("b")
    keeper(a, fake_clock).ensure(["main"])
    kb = keeper(b, fake_clock)
    view = kb.ensure(["main"], fetch=False)["main"]  # b's mirror is stale: it believes "absent"
    assert len(kb.remote.pushes) == 1
    assert kb.remote.fetches == 1  # read again after losing
    assert view.holder == "a" and not view.mine and "lost the race" in view.note
    assert remote_holder(bare_remote) == "a"


def test_unreachable_remote_assumes_nothing(make_host, bare_remote, fake_clock, tmp_path) -> None:
    host = make_host("h")
    kh = keeper(host, fake_clock)
    subprocess.run(
        ["git", "remote", "set-url", "origin", (tmp_path / "gone.git").as_uri()], cwd=host.path, check=True
    )
    with pytest.raises(RemoteUnreachable):
        kh.ensure(["main"])
    with pytest.raises(RemoteUnreachable):
        kh.ensure(["main"], fetch=False)  # the push itself fails
    assert host.repo.ref(REF) is None
    assert kh.read("main").absent
    assert host.observations(fake_clock).written_at(REF, "0" * 40) is None
    assert remote_holder(bare_remote) is None


def test_a_remote_that_refuses_sluice_refs_says_so(make_host, bare_remote, fake_clock) -> None:
    hook = bare_remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refs/sluice is not allowed here' >&2\nexit 1\n")
    hook.chmod(0o755)
    kh = keeper(make_host("h"), fake_clock)
    with pytest.raises(RemoteRefused) as caught:
        kh.ensure(["main"])
    assert "refs/sluice/intake/main" in str(caught.value) and "hook declined" in str(caught.value)


def test_read_is_local_and_names_the_holder(make_host, fake_clock) -> None:
    a = make_host("a")
    b = make_host("b")
    keeper(a, fake_clock).ensure(["main"])
    kb = keeper(b, fake_clock)
    assert kb.read("main").absent  # nothing fetched yet
    kb.remote.fetch()
    view = kb.read("main")
    assert view.holder == "a" and view.role == "driver" and not view.mine and view.live
    assert not kb.remote.pushes and kb.remote.fetches == 1
