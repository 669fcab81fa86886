"""Rounds from the user's own git activity: exactly one when something concerns us, none otherwise."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.hooks.conftest import World


def _head(world: World, ref: str, cwd: Path | None = None) -> str:
    return world.git("rev-parse", ref, cwd=cwd).stdout.strip()


def test_push_of_a_queued_request_head_runs_one_round(world: World) -> None:
    world.git("checkout", "-q", "-b", "feature")
    world.git("commit", "-q", "--allow-empty", "-m", "work")
    sha = _head(world, "HEAD")
    (world.sluice_dir / "heads").write_text(f"main 7 feature {sha}\nmain 9 other-head {sha}\n")

    world.git("push", "-q", "origin", "feature")
    world.wait_quiet()

    rounds = world.rounds()
    assert len(rounds) == 1, world.log_lines()
    assert "push request head refs/heads/feature to origin" in rounds[0]
    assert world.runners() == (1, 1)


def test_push_of_a_branch_taken_in_runs_one_round_for_both_hooks(world: World) -> None:
    # pre-push asks, and the remote-tracking update after the push runs
    # reference-transaction too: one git command, one runner, one round
    world.git("commit", "-q", "--allow-empty", "-m", "to main")
    world.git("push", "-q", "origin", "HEAD:main")
    world.wait_quiet()

    rounds = world.rounds()
    assert len(rounds) == 1, world.log_lines()
    assert "push refs/heads/main to origin" in rounds[0]
    assert f"refs/remotes/origin/main@{_head(world, 'HEAD')[:12]}" in rounds[0]
    assert world.runners() == (1, 1)


def test_fetch_that_moves_the_branch_taken_in_runs_one_round(world: World) -> None:
    sha = world.advance("main")
    world.git("fetch", "-q")
    world.wait_quiet()

    rounds = world.rounds()
    assert len(rounds) == 1, world.log_lines()
    assert "fetch refs/remotes/origin/main" in rounds[0]
    assert f"refs/remotes/origin/main@{sha[:12]}" in rounds[0]
    assert any("hook round end" in line for line in world.log_lines())


def test_fetch_of_other_branches_a_rebase_a_checkout_and_a_commit_start_nothing(world: World) -> None:
    world.advance("side")
    world.git("fetch", "-q")  # moves refs/remotes/origin/side only
    # 50 commits to rebase, made without hooks (only the rebase is under test)
    world.run(
        "sh",
        "-c",
        "git checkout -q -b topic && for i in $(seq 50); do echo $i >f$i && git add f$i && "
        "git -c core.hooksPath=/dev/null commit -q -m c$i || exit 1; done && "
        "git checkout -q main && git -c core.hooksPath=/dev/null commit -q --allow-empty -m 'main moves'",
    )
    world.git("checkout", "-q", "topic")
    world.git("rebase", "-q", "main")
    assert world.git("rev-list", "--count", "main..topic").stdout.strip() == "50"
    world.git("checkout", "-q", "main")
    world.git("commit", "-q", "--allow-empty", "-m", "one more")
    world.wait_quiet()

    assert world.runners() == (0, 0)
    assert world.rounds() == []


def test_a_push_that_moves_nothing_and_a_fetch_that_moves_nothing_start_nothing(world: World) -> None:
    world.git("push", "-q", "origin", "main")  # Everything up-to-date: pre-push runs, empty stdin
    world.git("fetch", "-q")
    world.wait_quiet()
    assert world.runners() == (0, 0)


def test_a_round_brings_the_marks_a_plain_fetch_no_longer_does(world: World) -> None:
    # another host's lease on the remote; the user's fetch moves the branch taken in
    world.git("update-ref", "refs/sluice/intake/main", "HEAD", cwd=world.other)
    world.git("push", "-q", "origin", "refs/sluice/intake/main", cwd=world.other)
    world.advance("main")
    fetched = world.git("fetch", "origin")
    assert "refs/sluice" not in fetched.stdout + fetched.stderr  # not the person's fetch's business
    world.wait_quiet()
    rounds = world.rounds()
    assert len(rounds) == 1 and "fetch refs/remotes/origin/main" in rounds[0]
    # the round fetched them with its own refspecs: the marks are there to read
    assert "refs/sluice/intake/main" in world.git("for-each-ref", "refs/sluice").stdout
    assert world.git("for-each-ref", "refs/sluice/tracking/origin/main").stdout.strip()


def test_our_own_git_commands_ask_nothing(world: World) -> None:
    world.advance("main")
    env = dict(world.env, GIT_SLUICE_INTERNAL="1")
    world.git("fetch", "-q", env=env)
    world.wait_quiet()
    assert world.runners() == (0, 0)


@pytest.mark.slow
def test_twenty_fetches_in_a_row_run_one_round_at_a_time_and_lose_none(world: World) -> None:
    # twenty commits made beforehand in the other clone; the remote then moves one at a time
    world.run(
        "sh",
        "-c",
        "git fetch -q && git checkout -q -B main origin/main && "
        "for i in $(seq 20); do git commit -q --allow-empty -m m$i || exit 1; done",
        cwd=world.other,
    )
    shas = world.git("rev-list", "--reverse", "origin/main..main", cwd=world.other).stdout.split()
    assert len(shas) == 20
    started = time.monotonic()
    for sha in shas:
        world.git("push", "-q", "origin", f"{sha}:refs/heads/main", cwd=world.other)
        world.git("fetch", "-q")
    elapsed = time.monotonic() - started
    world.wait_quiet(timeout=60)

    lines = [line for line in world.log_lines() if "hook round start" in line or "hook round end" in line]
    # strictly alternating: never two rounds at once
    kinds = ["start" if "hook round start" in line else "end" for line in lines]
    assert kinds == ["start", "end"] * (len(kinds) // 2), lines
    rounds = [line for line in lines if "hook round start" in line]
    assert 1 <= len(rounds) <= 20
    # the last movement is always taken in: the last round started after it
    assert f"refs/remotes/origin/main@{shas[-1][:12]}" in rounds[-1], (rounds, shas[-1])
    started_runners, finished = world.runners()
    # at most one runner per fetch: a fetch that ends while a runner is at work leaves its inbox to
    # that runner's last look (issue 33), and the runs fold into fewer rounds
    assert 1 <= started_runners == finished <= 20
    print(f"20 fetches in {elapsed:.2f}s, {len(rounds)} rounds")
    assert elapsed < 20


def test_a_config_change_is_honoured_before_the_filter_is_rewritten(world: World) -> None:
    # take in 'side' instead of 'main': the filter written by setup is now stale
    world.git("config", "sluice.branch", "side")
    sha = world.advance("side")
    world.git("fetch", "-q")
    world.wait_quiet()
    rounds = world.rounds()
    assert len(rounds) == 1 and f"refs/remotes/origin/side@{sha[:12]}" in rounds[0], world.log_lines()
    assert (world.sluice_dir / "hook-filter").read_text() == "refs/remotes/origin/side\n"

    # main is no longer taken in: with the filter fresh again, its movement starts nothing
    before = world.runners()
    world.advance("main")
    world.git("fetch", "-q")
    world.wait_quiet()
    assert world.runners() == before
    assert len(world.rounds()) == 1


def test_from_a_linked_worktree(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    tree = world.root / "tree"
    world.git("worktree", "add", "-q", "-b", "wt", str(tree))
    world.setup(cwd=tree)
    assert (world.work / ".git" / "hooks" / "reference-transaction").is_file()
    assert not (world.work / ".git" / "worktrees" / "tree" / "sluice").exists()

    sha = world.advance("main")
    world.git("fetch", "-q", cwd=tree)
    world.wait_quiet()
    rounds = world.rounds()
    assert len(rounds) == 1 and sha[:12] in rounds[0]

    world.git("checkout", "-q", "-B", "wt", "origin/main", cwd=tree)
    world.git("commit", "-q", "--allow-empty", "-m", "in tree", cwd=tree)
    world.git("push", "-q", "origin", "HEAD:main", cwd=tree)
    world.wait_quiet()
    assert len(world.rounds()) == 2


def test_from_a_submodule(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    parent = world.root / "parent"
    env = world.env
    subprocess.run(["git", "init", "-q", "-b", "main", str(parent)], env=env, check=True)
    world.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(world.remote), "sub", cwd=parent)
    sub = parent / "sub"
    world.git("config", "sluice.repository", "octo/widgets", cwd=sub)
    world.git("config", "sluice.api", "http://127.0.0.1:9", cwd=sub)
    world.setup(cwd=sub)
    modules = parent / ".git" / "modules" / "sub"
    assert (modules / "hooks" / "reference-transaction").is_file()
    assert not (parent / ".git" / "hooks" / "reference-transaction").exists()

    sha = world.advance("main")
    world.git("fetch", "-q", cwd=sub)
    world.wait_quiet(modules / "sluice")
    rounds = world.rounds(modules / "sluice")
    assert len(rounds) == 1 and sha[:12] in rounds[0]


def test_a_failed_round_is_logged_and_kept_for_status(world: World, tmp_path: Path) -> None:
    # a setting no round accepts makes every round fail; the push must not notice
    world.git("config", "sluice.discovery", "every now and then")
    world.git("commit", "-q", "--allow-empty", "-m", "x")
    proc = world.git("push", "-q", "origin", "HEAD:main")
    assert proc.stderr == ""
    world.wait_quiet()
    failure = (world.sluice_dir / "last-failure.json").read_text()
    assert "error" in failure and "sluice.discovery" in failure
    assert any("hook round end failed" in line for line in world.log_lines())
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \[\d+\] ", world.log_lines()[-1])
    assert os.environ.get("GIT_SLUICE_INTERNAL") is None


def test_a_directory_where_the_round_lock_goes_is_moved_aside_and_the_round_runs(world: World) -> None:
    """Issue 33: it used to fail every round until a person removed it; the push never noticed either way."""
    (world.sluice_dir / "hook-round.lock").mkdir()
    world.git("commit", "-q", "--allow-empty", "-m", "x")
    proc = world.git("push", "-q", "origin", "HEAD:main")
    assert proc.stderr == ""
    world.wait_quiet()
    lines = world.log_lines()
    assert any("moved to hook-round.lock.corrupt-1" in line for line in lines), lines
    # the round ran (it then finds no GitHub here: this world's sluice.api answers nothing), the runner did not fail
    assert len(world.rounds()) == 1 and not any("hook runner failed" in line for line in lines), lines
    assert (world.sluice_dir / "hook-round.lock").is_file()


def _sleep_shim(world: World, tmp_path: Path, ref: str) -> Path:
    """A `sleep` on PATH that notes, at each call, what the loose ref file ``ref`` holds ("none": absent)."""
    import shutil

    real = shutil.which("sleep", path=world.env["PATH"])
    assert real is not None
    shims = tmp_path / "sleep-shim"
    shims.mkdir(exist_ok=True)
    seen = tmp_path / "sleep.seen"
    (shims / "sleep").write_text(
        "#!/bin/sh\n"
        f'v=none; [ -f "{world.work}/.git/{ref}" ] && IFS= read -r v <"{world.work}/.git/{ref}"\n'
        f'echo "$v" >>"{seen}"\n'
        f'exec "{real}" "$@"\n'
    )
    (shims / "sleep").chmod(0o755)
    world.env["PATH"] = f"{shims}{os.pathsep}{world.env['PATH']}"
    # the remote takes its time with each push, so a waiter started while git works has to sleep
    receive = world.remote / "hooks" / "pre-receive"
    receive.write_text(f'#!/bin/sh\ncat >/dev/null\nexec "{real}" 0.3\n')
    receive.chmod(0o755)
    return seen


def _seen(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _queued_commit(world: World, message: str) -> str:
    """A new commit on the checked-out branch, queued as request 7's head (the legacy heads list)."""
    world.git("commit", "-q", "--allow-empty", "-m", message)
    sha = _head(world, "HEAD")
    (world.sluice_dir / "heads").write_text(f"main 7 feature {sha}\n")
    return sha


def _feature_pushed_once(world: World) -> str:
    """Branch ``feature`` queued as a request's head and pushed a first time (its tracking ref now loose)."""
    world.git("checkout", "-q", "-b", "feature")
    sha = _queued_commit(world, "work")
    world.git("push", "-q", "-u", "origin", "feature")
    world.wait_quiet()
    return sha


def test_a_push_of_a_tracked_branch_starts_the_waiter_at_the_push_end(world: World, tmp_path: Path) -> None:
    """Issue 15: the waiter's `sleep` competed with git for the processor while it packed and sent.

    A branch whose loose remote-tracking ref git will rewrite has its waiter
    started by reference-transaction, at the push's end: every `sleep` finds
    the tracking ref already at the pushed commit. A branch pushed for the
    first time (no tracking ref yet) has it started by pre-push, as before.
    One round either way.
    """
    seen = _sleep_shim(world, tmp_path, "refs/remotes/origin/feature")
    _feature_pushed_once(world)
    assert len(world.rounds()) == 1, world.log_lines()
    assert _seen(seen)[:1] == ["none"]  # started by pre-push: it slept before git wrote the tracking ref
    assert (world.sluice_dir / "hook-rt-seen").exists()

    seen.unlink()
    second = _queued_commit(world, "more work")
    world.git("push", "-q", "origin", "feature")
    world.wait_quiet()
    # started at the push's end: not one sleep while the remote took its 0.3 s (git may even be gone
    # before the waiter's first look, and then it never sleeps)
    assert set(_seen(seen)) <= {second}, _seen(seen)
    rounds = world.rounds()
    assert len(rounds) == 2 and "push request head refs/heads/feature to origin" in rounds[1], world.log_lines()
    assert world.runners() == (2, 2)
    assert world.sluice("setup", "--undo").returncode == 0
    assert not (world.sluice_dir / "hook-rt-seen").exists()  # undo leaves none of the hooks' files behind


def test_pushes_git_writes_no_tracking_ref_for_start_their_waiter_in_pre_push(world: World, tmp_path: Path) -> None:
    """By URL, or a deletion: no reference-transaction would come for them, so each still gets its round."""
    _feature_pushed_once(world)
    assert (world.sluice_dir / "hook-rt-seen").exists() and len(world.rounds()) == 1

    _queued_commit(world, "by url")
    world.git("push", "-q", str(world.remote), "feature")
    world.wait_quiet()
    assert len(world.rounds()) == 2, world.log_lines()

    world.git("push", "-q", "origin", ":feature")
    world.wait_quiet()
    assert len(world.rounds()) == 3, world.log_lines()
    assert world.runners() == (3, 3)


def test_a_refused_push_that_left_its_waiter_late_loses_no_request(world: World) -> None:
    """Refused by the remote, the push rewrites no tracking ref and starts no waiter: its inbox is an
    orphan once git has gone, and the next runner takes it in (nothing it asked for is lost)."""
    _feature_pushed_once(world)
    world.advance("feature", "someone else")
    world.git("commit", "-q", "--allow-empty", "-m", "diverged")
    refused = world.git("push", "-q", "origin", "feature", check=False)
    assert refused.returncode != 0  # not a fast-forward: git's own answer, unchanged
    orphans = list(world.sluice_dir.glob("hook-in.*"))
    assert len(orphans) == 1 and orphans[0].read_text().startswith("@late\n@pre-push origin")
    world.advance("main", "remote moves")
    world.git("fetch", "-q")  # a runner starts, and takes the orphan in with its own inbox
    world.wait_quiet()
    assert not list(world.sluice_dir.glob("hook-in.*"))
    assert "push request head refs/heads/feature to origin" in world.rounds()[-1], world.log_lines()


def test_a_runner_at_work_takes_the_inbox_a_waiter_left_it_in_its_last_look(world: World) -> None:
    """Issue 33: a hook's waiter that finds a live runner (``hook-runner``) starts no Python of its
    own; the runner's last look, after it lets go of the marker, takes that inbox. Nothing is lost."""
    from git_sluice.commands import hook_round as hr

    marker = world.sluice_dir / hr.RUNNER_NAME
    marker.write_text(f"{os.getpid()}\n")  # a runner at work: this (live) process
    before = world.runners()[0]
    sha = world.advance("main")
    world.git("fetch", "-q")
    deadline = time.monotonic() + 30
    inboxes: list[Path] = []
    while time.monotonic() < deadline:  # the waiter ends once git has, leaving its inbox
        inboxes = list(world.sluice_dir.glob(hr.INBOX_PREFIX + "*"))
        if inboxes and all(hr.gone(hr._inbox_pid(p) or 0) for p in inboxes):
            break
        time.sleep(0.05)
    time.sleep(0.5)  # a real interval: the waiter's own poll of git (0.05 s) — it must not start a runner
    assert world.runners()[0] == before, "a waiter started a runner beside the one at work"
    assert inboxes, "the fetch left no inbox"
    marker.unlink()  # what the runner at work does at its end; then its last look (a runner, no inbox named)
    done = world.sluice("_hook-round")
    assert done.returncode == 0, done.stderr
    world.wait_quiet()
    assert not list(world.sluice_dir.glob(hr.INBOX_PREFIX + "*")), "the inbox left to the runner was lost"
    assert world.rounds() and f"refs/remotes/origin/main@{sha[:12]}" in world.rounds()[-1], world.log_lines()
