"""A lease mark churned by a pusher costs the fleet at most one lease, once (issue 33).

Three hosts' drivers tick on one shared test clock against a bare remote served
by a loopback ``git daemon``; a pusher with push access re-pushes garbage where
the lease goes, or deletes the lease, in a loop. What reached GitHub is read
from the double's ledger and compared with the same fleet undisturbed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from git_sluice.intake.queue import QueueStore

from git_sluice.commands.drive import drive
from tests.remote.test_fleet_roles import REPO, Fleet, fleet_factory, git, ready_pr  # noqa: F401 (the fixture)
from tests.remote.test_hostile_remote import EMPTY_TREE, delete_ref, list_calls

HOSTS = ("host-a", "host-b", "host-c")
REF = "refs/sluice/intake/main"
STEP = 10.0
MINUTES = 4


def push_garbage(fleet: Fleet, n: int) -> None:
    """A new garbage object at the lease ref (its content differs each time: a new object id)."""
    host = next(iter(fleet.hosts.values()))
    oid = subprocess.run(
        ["git", "-c", "user.name=evil", "-c", "user.email=evil@example", "commit-tree", EMPTY_TREE],
        cwd=host.path, input=f"not a lease {n}\n".encode(), capture_output=True, check=True,
    ).stdout.decode().strip()
    git("push", "-q", "--force", host.url, f"{oid}:{REF}", cwd=host.path)


def run_fleet(fleet: Fleet, pusher: Callable[[int], None] | None) -> int:
    """Warm up two minutes undisturbed, then ``MINUTES`` with the pusher acting before every step;
    returns the list calls (REST lists and GraphQL queries) of the measured minutes. Intake must go
    on: the holder's queue is read within the last minute and holds every open request."""
    sessions = {name: fleet.session(name) for name in HOSTS}
    for session in sessions.values():
        assert session.forge.pool
    for _ in range(int(120 / STEP)):
        for name in HOSTS:
            drive(sessions[name], max_ticks=1, let_go=False)
        fleet.clock.advance(STEP)  # type: ignore[attr-defined]
    mark = fleet.gh.mark()
    for step in range(int(MINUTES * 60 / STEP)):
        if pusher is not None:
            pusher(step)
        for name in HOSTS:
            drive(sessions[name], max_ticks=1, let_go=False)
        fleet.clock.advance(STEP)  # type: ignore[attr-defined]
    now = fleet.clock.time()  # type: ignore[attr-defined]
    read = {name: QueueStore(fleet.hosts[name].repo.sluice_dir).load("main") for name in HOSTS}
    fresh = [name for name, doc in read.items() if sorted(doc.entries) == [1, 2, 3] and doc.withdrawn_by is None
             and doc.read_at is not None and doc.read_at >= now - 60 - STEP]
    assert fresh, {name: (sorted(d.entries), d.withdrawn_by, d.read_at, now) for name, d in read.items()}
    return sum(len(list_calls(fleet, name, mark)) for name in HOSTS)


def pusher_of(kind: str, fleet: Fleet) -> Callable[[int], None] | None:
    def garbage(step: int) -> None:  # a new garbage object every 50 s
        if step % 5 == 0:
            push_garbage(fleet, step)

    def deleting(step: int) -> None:  # the lease deleted before every step of the fleet's (every 10 s)
        try:
            delete_ref(fleet, REF)
        except Exception:
            pass  # nothing there to delete

    return {"none": None, "garbage": garbage, "deleted": deleting}[kind]


UNDISTURBED = 4
"""The same fleet's list calls in the same 4 minutes with no pusher: the holder's watch, one a minute
(measured by ``test_the_undisturbed_fleet_reads_once_a_minute``)."""


@pytest.mark.slow(seconds=25)
def test_the_undisturbed_fleet_reads_once_a_minute(fleet_factory) -> None:  # noqa: F811
    fleet = fleet_factory(HOSTS)
    for i in range(3):
        ready_pr(fleet.gh, f"r{i}")
    assert run_fleet(fleet, None) == UNDISTURBED


@pytest.mark.slow(seconds=25)
@pytest.mark.parametrize("kind", ["garbage", "deleted"])
def test_a_churned_or_deleted_lease_costs_at_most_a_fifth_more_and_intake_goes_on(
    fleet_factory, kind: str  # noqa: F811
) -> None:
    fleet = fleet_factory(HOSTS)
    for i in range(3):
        ready_pr(fleet.gh, f"r{i}")
    calls = run_fleet(fleet, pusher_of(kind, fleet))
    assert calls <= 1.2 * UNDISTURBED, (kind, calls)
