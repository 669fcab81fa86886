"""The runner's own decisions and bookkeeping, in-process (no hooks, no detaching)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from filelock import FileLock

from tests.hooks.conftest import World
from git_sluice.commands import hook_round
from git_sluice.clock import FakeClock
from git_sluice.errors import ConfigError
from git_sluice.repo import Repo

SHA = "a" * 40
ZERO = "0" * 40


# ------------------------------------------------------------------ pure parts


def test_inbox_lines_are_read_per_hook() -> None:
    text = (
        "@pre-push origin\n@url /srv/remote.git\n"
        f"refs/heads/feature {SHA} refs/heads/feature {ZERO}\n"
        f"(delete) {ZERO} refs/heads/gone {SHA}\n"
        "@reference-transaction\nrefs/remotes/origin/main refs/sluice/intake/main \n"
        "garbage that is no line at all\n\x00\x01\n"
    )
    calls = hook_round.parse_inbox(text)
    assert calls == [
        hook_round.HookCall("pre-push", ("refs/heads/feature", "refs/heads/gone"), "origin", "/srv/remote.git"),
        hook_round.HookCall("reference-transaction", ("refs/remotes/origin/main", "refs/sluice/intake/main")),
    ]
    assert hook_round.parse_inbox("") == []
    assert hook_round.parse_inbox("\x00garbage\nrefs/heads/x\n") == []


def test_what_asks_for_a_round() -> None:
    taken = hook_round.filter_refs("origin", ["main", "release"])
    assert taken == ["refs/remotes/origin/main", "refs/remotes/origin/release"]

    def decide(*calls: hook_round.HookCall, heads: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
        return hook_round.decide(calls, remote="origin", remote_url="/srv/r.git", taken_in=taken, request_heads=heads)

    rt = "reference-transaction"
    assert decide(hook_round.HookCall(rt, ("refs/remotes/origin/main",))) == ["fetch refs/remotes/origin/main"]
    assert decide(hook_round.HookCall(rt, ("refs/sluice/pause/abc/core",))) == ["fetch refs/sluice/pause/abc/core"]
    assert decide(hook_round.HookCall(rt, ("refs/remotes/origin/side", "refs/remotes/fork/main"))) == []
    # a push of a branch taken in counts on sluice.remote (by name or by URL) only
    push = hook_round.HookCall("pre-push", ("refs/heads/main",), "origin", "/srv/r.git")
    assert decide(push) == ["push refs/heads/main to origin"]
    assert decide(hook_round.HookCall("pre-push", ("refs/heads/main",), "/srv/r.git", "/srv/r.git")) != []
    assert decide(hook_round.HookCall("pre-push", ("refs/heads/main",), "fork", "/srv/fork.git")) == []
    # a queued request's head counts on any remote (a fork's head moves the request)
    head = hook_round.HookCall("pre-push", ("refs/heads/feature",), "fork", "/srv/fork.git")
    assert decide(head) == []
    assert decide(head, heads={"feature"}) == ["push request head refs/heads/feature to fork"]
    assert decide(head, heads={"refs/heads/feature"}) != []
    assert decide(hook_round.HookCall("pre-push", ("refs/tags/feature",), "origin", None), heads={"feature"}) == []


def test_a_push_tells_the_round_to_ask_at_once() -> None:
    assert hook_round.step_reason(["fetch refs/remotes/origin/main", "push request head refs/heads/x to fork"]) == "push"
    assert hook_round.step_reason(["fetch refs/remotes/origin/main", "fetch refs/sluice/intake/main"]) == "hook"


def test_heads_file_is_read_leniently() -> None:
    text = f"main 7 feature {SHA}\nmain x broken {SHA}\n\nmain 9 fix/it\n\x00\xff junk\n"
    assert hook_round.parse_heads(text) == {"feature", "fix/it"}


# ------------------------------------------------------------------ failures


def test_a_failure_is_kept_for_status_without_any_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "ghp_" + "Z" * 36
    monkeypatch.setenv("GH_TOKEN", token)
    clock = FakeClock(1_800_000_000.0)
    sluice = tmp_path / "sluice"
    sluice.mkdir()

    class Fake:
        common_dir = tmp_path

    assert hook_round.last_failure(Fake()) is None
    error = ConfigError("sluice.api", f"https://x:{token}@h", "an URL")
    hook_round.record_failure(sluice, clock, reason="fetch refs/remotes/origin/main", error=error)
    hook_round.write_log(sluice, clock, f"hook round end failed: {error} and {token}")
    failure = hook_round.last_failure(Fake())
    assert failure is not None
    assert failure["exit_code"] == 2 and failure["at"] == "2027-01-15T08:00:00Z"
    assert failure["error"].startswith("ConfigError: sluice.api=")
    everything = (sluice / "last-failure.json").read_text() + (sluice / "log").read_text()
    assert token not in everything and "Z" * 20 not in everything

    (sluice / "last-failure.json").write_bytes(b"\x00not json")
    assert hook_round.last_failure(Fake()) is None


# ------------------------------------------------------------------ rounds under the lock


@pytest.fixture
def repo(world: World) -> Repo:
    return Repo.discover(world.work)


def test_an_ask_made_during_a_round_runs_one_more_round(world: World, repo: Repo) -> None:
    sluice = world.sluice_dir
    seen: list[str] = []

    def step(_repo: object, *, reason: str, pushed: frozenset[str] = frozenset(), share: bool = False) -> None:
        seen.append(reason)
        if len(seen) == 1:
            hook_round.ask(sluice, ["fetch refs/remotes/origin/main"])  # another runner, mid-round

    hook_round.ask(sluice, ["push refs/heads/main to origin"])
    rounds = hook_round.drain(repo, sluice, FakeClock(), step)
    assert rounds == 2
    assert seen == ["push", "hook"]  # the step's reasons; the log keeps the detail
    assert not list(sluice.glob("hook-ask.*"))
    starts = [line for line in world.log_lines() if "hook round start" in line]
    assert len(starts) == 2


def test_while_another_runner_holds_the_lock_the_ask_waits_for_it(world: World, repo: Repo) -> None:
    sluice = world.sluice_dir
    ran: list[str] = []
    hook_round.ask(sluice, ["fetch refs/remotes/origin/main"])
    holder = FileLock(str(sluice / hook_round.LOCK_NAME))
    with holder:
        done = threading.Event()
        result: list[int] = []

        def other() -> None:  # another process's view: the lock is taken, do not wait
            result.append(hook_round.drain(repo, sluice, FakeClock(), lambda r, *, reason, pushed=frozenset(), share=False: ran.append(reason)))
            done.set()

        thread = threading.Thread(target=other)
        thread.start()
        assert done.wait(10)
        thread.join()
    assert result == [0] and ran == []
    assert list(sluice.glob("hook-ask.*"))  # still there for the holder
    assert hook_round.drain(repo, sluice, FakeClock(), lambda r, *, reason, pushed=frozenset(), share=False: ran.append(reason)) == 1
    assert ran == ["hook"]


def test_a_failing_round_is_recorded_and_a_later_good_one_says_recovered(world: World, repo: Repo) -> None:
    sluice = world.sluice_dir
    clock = FakeClock(1_800_000_000.0)

    def failing(_repo: object, *, reason: str, pushed: frozenset[str] = frozenset(), share: bool = False) -> None:
        raise RuntimeError("forge down")

    hook_round.ask(sluice, ["fetch refs/remotes/origin/main"])
    assert hook_round.drain(repo, sluice, clock, failing) == 1
    failure = hook_round.last_failure(repo)
    assert failure and failure["error"] == "RuntimeError: forge down" and "recovered_at" not in failure
    assert any("hook round end failed: RuntimeError: forge down" in line for line in world.log_lines())

    clock.advance(60)
    hook_round.ask(sluice, ["fetch refs/remotes/origin/main"])
    hook_round.drain(repo, sluice, clock, lambda r, *, reason, pushed=frozenset(), share=False: None)
    failure = hook_round.last_failure(repo)
    assert failure and failure["recovered_at"] == "2027-01-15T08:01:00Z"


def test_an_orphaned_inbox_is_taken_in_by_the_next_runner(world: World, repo: Repo) -> None:
    sluice = world.sluice_dir
    dead = subprocess.Popen(["true"])
    dead.wait()
    (sluice / f"hook-in.{dead.pid}").write_text("@reference-transaction\nrefs/remotes/origin/main \n")
    alive = sluice / f"hook-in.{os.getpid()}"  # its git still runs: not ours to take
    alive.write_text("@reference-transaction\nrefs/remotes/origin/main \n")
    reasons: list[str] = []
    rounds = hook_round.run_hook_round(
        repo, wait_pid=None, inbox=None, clock=FakeClock(), step=lambda r, *, reason, pushed=frozenset(), share=False: reasons.append(reason)
    )
    assert rounds == 1 and reasons == ["hook"]
    assert "reason=fetch refs/remotes/origin/main" in world.rounds()[-1]
    assert not (sluice / f"hook-in.{dead.pid}").exists()
    assert alive.exists()


def test_the_runner_waits_for_the_git_command_before_it_reads(world: World, repo: Repo) -> None:
    sluice = world.sluice_dir
    git_like = subprocess.Popen(["sleep", "30"])
    inbox = sluice / f"hook-in.{git_like.pid}"
    inbox.write_text("@reference-transaction\nrefs/remotes/origin/main \n")
    clock = FakeClock()
    slept: list[float] = []
    real_sleep = clock.sleep

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 5:
            git_like.kill()
            git_like.wait()
        real_sleep(seconds)

    clock.sleep = sleep  # type: ignore[method-assign]
    reasons: list[str] = []
    rounds = hook_round.run_hook_round(
        repo, wait_pid=git_like.pid, inbox=inbox, clock=clock, step=lambda r, *, reason, pushed=frozenset(), share=False: reasons.append(reason)
    )
    assert len(slept) >= 5 and rounds == 1 and reasons == ["hook"]


def test_only_our_own_inboxes_are_claimed(world: World, repo: Repo, tmp_path: Path) -> None:
    elsewhere = tmp_path / "hook-in.1"
    elsewhere.write_text("@reference-transaction\nrefs/remotes/origin/main \n")
    rounds = hook_round.run_hook_round(repo, wait_pid=None, inbox=elsewhere, clock=FakeClock(), step=lambda r, *, reason, pushed=frozenset(), share=False: None)
    assert rounds == 0 and elsewhere.exists()


def test_the_filter_follows_the_config(world: World, repo: Repo) -> None:
    sluice = world.sluice_dir
    assert (sluice / "hook-filter").read_text() == "refs/remotes/origin/main\n"
    world.git("config", "--add", "sluice.branch", "side")
    world.git("config", "--add", "sluice.branch", "main")
    assert hook_round.refresh_filter(repo, sluice) == ("origin", ["refs/remotes/origin/side", "refs/remotes/origin/main"])
    assert (sluice / "hook-filter").read_text() == "refs/remotes/origin/side\nrefs/remotes/origin/main\n"
    filter_mtime = (sluice / "hook-filter").stat().st_mtime_ns
    assert all(filter_mtime > m for m in hook_round._config_mtimes(repo))
    # a config the round would refuse still yields a filter (the round then fails, and says why)
    world.git("config", "sluice.discovery", "abc")
    assert hook_round.refresh_filter(repo, sluice)[1] == ["refs/remotes/origin/side", "refs/remotes/origin/main"]


def test_the_failure_file_is_json_status_can_read(world: World, repo: Repo) -> None:
    hook_round.record_failure(world.sluice_dir, FakeClock(), reason="r", error=ValueError("v"))
    data = json.loads((world.sluice_dir / "last-failure.json").read_text())
    assert set(data) == {"time", "at", "reason", "error", "exit_code"}


def test_a_hook_round_reads_the_settings_once(world: World, repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The filter, the round's reasons and the round's session share one read of git's config (issue 15)."""
    from git_sluice import config

    reads: list[str] = []
    real = config._read_config
    monkeypatch.setattr(config, "_read_config", lambda root, *a: (reads.append(str(root)), real(root, *a))[1])
    monkeypatch.delenv("GH_TOKEN", raising=False)  # the session is opened (settings read), then refused
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    inbox = world.sluice_dir / "hook-in.1"
    inbox.write_text("@reference-transaction\nrefs/remotes/origin/main \n")
    rounds = hook_round.run_hook_round(repo, wait_pid=None, inbox=inbox, clock=FakeClock())
    assert rounds == 1 and len(reads) == 1, reads
    config.load_settings(repo.workdir, need_branches=False)  # outside a hook round: read afresh
    assert len(reads) == 2


def test_the_pushed_request_heads_are_named_for_the_round() -> None:
    from git_sluice.commands.hook_round import pushed_heads

    reasons = ["push refs/heads/main to origin", "push request head refs/heads/feat/x to origin",
               "push request head refs/heads/y to my fork", "fetch refs/sluice/intake/main"]
    assert pushed_heads(reasons) == frozenset({"feat/x", "y"})
    assert pushed_heads([]) == frozenset()


def test_the_late_start_markers_are_no_hook_call() -> None:
    from git_sluice.commands.hook_round import parse_inbox

    calls = parse_inbox(f"@late\n@pre-push origin\n@url /r.git\nrefs/heads/f {'1' * 40} refs/heads/f {'2' * 40}\n"
                        "@waiter\n@reference-transaction\nrefs/remotes/origin/main \n")
    assert [(c.hook, c.refs, c.remote) for c in calls] == [
        ("pre-push", ("refs/heads/f",), "origin"), ("reference-transaction", ("refs/remotes/origin/main",), None)]
