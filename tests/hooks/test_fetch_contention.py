"""The hooks add no "cannot lock ref" to concurrent fetches beyond git's own (issue 33).

A failure count on a loaded machine is too noisy to assert on without
flaking (contrib/bench/fetch_contention.py measures it, docs/benchmarks-hooks.md
has the figures: an installed reference-transaction hook, even a link to
``true``, raises the failures, because git holds the ref locks while it runs
the hook for ``prepared``; git-sluice's hook costs what an empty one does). So
these tests pin the mechanism instead, on real git:

- in ``prepared`` and ``aborted``, the phases run with the locks held, the
  hook ends on its first command: it reads nothing, writes nothing, starts
  nothing, whatever git sends it;
- the round a fetch starts writes no ref, no lock and no file that the user's
  fetch takes (only ``refs/sluice/*``, objects and its own state), and it waits
  for every git command of the clone that left an inbox, so a burst of
  fetches is over before its round begins.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.hooks.conftest import World
from git_sluice.clock import FakeClock
from git_sluice.commands import hook_round

OURS = ("objects", "sluice", os.path.join("refs", "sluice"), os.path.join("logs", "refs", "sluice"))


def _trace(world: World, phase: str, stdin: str) -> list[str]:
    hook = world.work / ".git" / "hooks" / "reference-transaction"
    proc = subprocess.run(
        ["sh", "-x", str(hook), phase], input=stdin, cwd=world.work, env=world.env,
        capture_output=True, text=True, timeout=30,
    )
    assert proc.returncode == 0 and proc.stdout == ""
    return [line for line in proc.stderr.splitlines() if line.startswith("+")]


def test_prepared_and_aborted_end_on_the_first_command(world: World) -> None:
    oid = world.git("rev-parse", "HEAD").stdout.strip()
    lines = f"{'0' * 40} {oid} refs/remotes/origin/main\n{oid} {'0' * 40} refs/sluice/intake/main\n"
    before = sorted(p.name for p in world.sluice_dir.iterdir())
    for phase in ("prepared", "aborted"):
        trace = _trace(world, phase, lines)
        # the phase test, the .legacy test, exit: nothing else runs while git holds the locks
        assert len(trace) == 3, trace
        assert trace[0].startswith("+ [ " + phase) and trace[-1] == "+ exit 0", trace
    assert sorted(p.name for p in world.sluice_dir.iterdir()) == before


def _written_since(git_dir: Path, since_ns: int) -> list[str]:
    written = []
    for folder, dirs, files in os.walk(git_dir):
        relative = os.path.relpath(folder, git_dir)
        if relative != "." and any(relative == top or relative.startswith(top + os.sep) for top in OURS):
            dirs[:] = []
            continue
        for name in files:
            path = Path(folder) / name
            if path.stat().st_mtime_ns > since_ns:
                written.append(os.path.relpath(path, git_dir))
    return written


def test_a_fetchs_round_writes_nothing_the_users_fetch_takes(world: World) -> None:
    world.advance("main")
    world.git("fetch", "-q", "origin")
    fetched = time.time_ns()  # everything the user's fetch wrote is older than this
    world.wait_quiet()
    assert any("fetch refs/remotes/origin/main" in line for line in world.rounds()), world.log_lines()
    assert world.git("for-each-ref", "refs/sluice/").stdout.strip(), "the round fetched nothing: nothing tested"
    assert _written_since(world.work / ".git", fetched) == []


def test_a_runner_waits_for_the_clones_other_git_commands(tmp_path: Path) -> None:
    """The other inboxes' git processes end before the round starts; bounded, on the test clock."""
    sluice_dir = tmp_path / "sluice"
    sluice_dir.mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (sluice_dir / f"{hook_round.INBOX_PREFIX}{sleeper.pid}").write_text("@reference-transaction\n")
        clock = FakeClock()
        began = clock.monotonic()
        hook_round.wait_for_siblings(sluice_dir, clock, None, limit=5.0)
        assert clock.monotonic() - began >= 5.0  # it waited for the running one, up to the bound
        sleeper.terminate()
        sleeper.wait()
        began = clock.monotonic()
        hook_round.wait_for_siblings(sluice_dir, clock, None, limit=5.0)
        assert clock.monotonic() - began < 1.0  # an ended one costs nothing
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
