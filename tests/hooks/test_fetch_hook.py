"""`sluice.fetchHook false`: setup installs pre-push alone, so a fetch runs no hook at all (issue 33).

git runs a reference-transaction hook for `prepared` with the transaction's
ref locks held: any such hook lengthens the time a concurrent `git fetch` in
the clone finds a ref locked (docs/benchmarks-hooks.md). A clone that runs
bursts of fetches can leave it out; setup then takes back what it had
installed there and puts back what was there before, byte for byte.
"""

from __future__ import annotations

import json

from tests.hooks.conftest import World
from tests.hooks.test_setup import snapshot
from git_sluice.commands import setup as installer
from git_sluice.repo import Repo

USERS_OWN = "#!/bin/sh\n# the team's own reference-transaction hook\nexit 0\n"


def test_left_out_a_fetch_runs_no_hook_and_a_push_still_gets_its_round(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    hooks = world.work / ".git" / "hooks"
    world.git("config", "sluice.fetchHook", "false")
    proc = world.sluice("setup", "--json")
    assert proc.returncode == 0, proc.stderr
    steps = {s["subject"]: s for s in json.loads(proc.stdout)["steps"]}
    assert steps["hook reference-transaction"]["status"] == "left out"
    assert installer.is_ours(hooks / "pre-push") and not (hooks / "reference-transaction").exists()

    world.advance("main")
    world.git("fetch", "-q")
    world.wait_quiet()
    assert world.rounds() == [] and world.runners() == (0, 0)  # no hook ran: git's own fetch, nothing more

    world.git("reset", "-q", "--hard", "origin/main")
    world.git("commit", "-q", "--allow-empty", "-m", "to main")
    world.git("push", "-q", "origin", "HEAD:main")
    world.wait_quiet()
    rounds = world.rounds()
    assert len(rounds) == 1 and "push refs/heads/main to origin" in rounds[0], world.log_lines()
    assert not (world.sluice_dir / "hook-rt-seen").exists()  # pre-push starts the round's fork itself


def test_turned_off_after_setup_the_users_own_hook_is_put_back_and_on_again_chained(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    hooks = world.work / ".git" / "hooks"
    (hooks / "reference-transaction").write_text(USERS_OWN)
    (hooks / "reference-transaction").chmod(0o755)
    before = snapshot(hooks)
    assert world.setup().returncode == 0
    assert installer.is_ours(hooks / "reference-transaction")
    assert (hooks / "reference-transaction.legacy").read_text() == USERS_OWN
    world.git("commit", "-q", "--allow-empty", "-m", "x")
    world.git("push", "-q", "origin", "HEAD:main")
    world.wait_quiet()
    assert (world.sluice_dir / "hook-rt-seen").exists()

    world.git("config", "sluice.fetchHook", "false")
    out = world.setup().stdout
    assert "left out" in out and "restored" in out
    after = snapshot(hooks)
    assert after["reference-transaction"] == before["reference-transaction"]  # the user's, byte for byte
    assert "reference-transaction.legacy" not in after and installer.is_ours(hooks / "pre-push")
    assert not (world.sluice_dir / "hook-rt-seen").exists()
    again = world.sluice("setup", "--json")
    assert not json.loads(again.stdout)["changed"]  # idempotent: nothing more to take back

    world.git("config", "--unset", "sluice.fetchHook")
    assert "chained" in world.setup().stdout
    assert (hooks / "reference-transaction.legacy").read_text() == USERS_OWN
    assert world.sluice("setup", "--undo").returncode == 0
    assert snapshot(hooks) == before


def test_a_config_defined_hook_is_taken_back_from_the_config(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    repo = Repo.discover(world.work)
    before_config = (world.work / ".git" / "config").read_bytes()
    installer.install(repo, git_version=(2, 54, 0), verify=lambda r, n: True, token_finder=lambda api: None)
    assert world.git("config", "--local", "hook.sluice-reference-transaction.event").stdout.strip()

    world.git("config", "sluice.fetchHook", "off")
    report = installer.install(repo, git_version=(2, 54, 0), verify=lambda r, n: True, token_finder=lambda api: None)
    assert report.changed
    sections = world.git("config", "--local", "--get-regexp", "^hook\\.", check=False).stdout
    assert "sluice-reference-transaction" not in sections and "sluice-pre-push" in sections
    assert not (world.sluice_dir / "hooks" / "reference-transaction").exists()
    assert installer.describe(repo)["hooks"]["reference-transaction"]["installed"] is False

    world.git("config", "--unset", "sluice.fetchHook")
    installer.undo(repo)
    assert (world.work / ".git" / "config").read_bytes() == before_config


def test_a_bad_value_names_the_key_and_changes_nothing(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    hooks = world.work / ".git" / "hooks"
    before = snapshot(hooks)
    world.git("config", "sluice.fetchHook", "sometimes")
    proc = world.sluice("setup")
    assert proc.returncode == 2
    assert "sluice.fetchHook" in proc.stderr and "git boolean" in proc.stderr
    assert snapshot(hooks) == before


def test_the_hooks_setup_installs_are_a_pure_choice() -> None:
    assert installer.hooks_wanted(True) == ("pre-push", "reference-transaction")
    assert installer.hooks_wanted(False) == ("pre-push",)


def test_doctor_says_the_hook_is_left_out_and_warns_while_it_is_still_there(make_world) -> None:  # type: ignore[no-untyped-def]
    from git_sluice.commands.doctor.checks import HookState, hook_check

    left = HookState(name="reference-transaction", path="/h/reference-transaction", exists=False, ours=False,
                     current=False, legacy=None, legacy_runs=False, shared_dir=False, left_out=True)
    assert hook_check(left).status == "ok" and "left out" in hook_check(left).found
    still = HookState(name="reference-transaction", path="/h/reference-transaction", exists=True, ours=True,
                      current=True, legacy=None, legacy_runs=False, shared_dir=False, left_out=True)
    assert hook_check(still).status == "warn" and "git sluice setup" in (hook_check(still).advice or "")

    world: World = make_world(with_setup=False)
    world.git("config", "sluice.fetchHook", "false")
    assert world.setup().returncode == 0
    out = world.sluice("doctor").stdout
    assert "left out (sluice.fetchHook false)" in out
    assert "pre-push" in out
