"""Renewals leave no garbage (issue #14, point 12).

A renewal every third of a lease used to be a new parentless commit each time:
723 new objects a day per branch, unreachable at once, in the remote and in
every clone that fetched them, until ``git gc`` warned on every commit. Now a
holder's records are the same :data:`RENEWAL_CYCLE` objects for ever, so what
git-sluice adds is bounded however long it runs: this test renews 20 branches
for two cycles and more at the default lease on the injected clock (one push per
renewal for all branches, over a loopback git daemon, with a developer's clone
fetching after each) and shows the object count stops growing after the first
cycle — so 30 days (25,920 renewals) hold exactly what one cycle does.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from git_sluice.remote.lease_record import RENEWAL_CYCLE

BRANCHES = [f"b{i:02d}" for i in range(20)]
LEASE = 300.0  # the default


def objects(git_dir: Path) -> set[str]:
    out = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
        cwd=git_dir, capture_output=True, text=True, check=True,
    ).stdout
    return set(out.split())


def disk_kib(git_dir: Path) -> int:
    out = subprocess.run(["git", "count-objects", "-v"], cwd=git_dir, capture_output=True, text=True,
                         check=True).stdout
    fields = dict(line.split(": ", 1) for line in out.splitlines())
    return int(fields["size"]) + int(fields["size-pack"]) + int(fields.get("size-garbage", "0"))


def gc_auto(git_dir: Path) -> str:
    done = subprocess.run(["git", "gc", "--auto"], cwd=git_dir, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.slow(seconds=30)
def test_renewals_at_defaults_add_a_bounded_set_of_objects_and_no_gc_warning(
    make_host, bare_remote: Path, git_daemon: str, fake_clock
) -> None:
    driver = make_host("driver", git_daemon)
    developer = make_host("dev", git_daemon)
    keeper = driver.keeper(fake_clock, role="driver", lease=LEASE)
    reader = developer.remote_git(fake_clock)
    before = objects(bare_remote)

    def renew(times: int) -> None:
        for _ in range(times):
            views = keeper.ensure(BRANCHES)
            assert all(v.mine for v in views.values())
            reader.fetch()
            fake_clock.advance(LEASE / 3)

    renew(RENEWAL_CYCLE + 2)
    after_one_cycle = objects(bare_remote) - before
    dev_after_one_cycle = objects(developer.path)
    renew(RENEWAL_CYCLE + 3)  # another cycle and more: nothing new anywhere
    added = objects(bare_remote) - before
    assert added == after_one_cycle, (len(after_one_cycle), len(added))
    assert len(added) <= len(BRANCHES) * RENEWAL_CYCLE + 1  # the records and the empty tree
    assert objects(developer.path) == dev_after_one_cycle
    for git_dir in (bare_remote, driver.path, developer.path):
        said = gc_auto(git_dir)
        assert "warning" not in said.lower() and "too many" not in said.lower(), said
    # under 1 MB per branch (in fact some 65 KiB: 16 loose objects of a 4 KiB block each),
    # on the remote and in each clone
    for git_dir in (bare_remote, driver.path / ".git", developer.path / ".git"):
        assert disk_kib(git_dir) < 1024 * len(BRANCHES), (git_dir, disk_kib(git_dir))
