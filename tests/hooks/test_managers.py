"""The hooks beside other hook managers (issue 31), with real git, real hooks and a real push.

- pre-commit (the real one, from the ``test`` extra): installed, then ``setup``,
  then ``pre-commit install`` again. pre-commit's script cannot run as
  someone's ``.legacy`` (it would run itself and refuse the push), so ours goes
  under it, at ``<hook>.legacy``, and stays there.
- husky, without npm: its layouts emulated as husky writes them (8: hooks in
  the tracked ``.husky/``, each sourcing ``_/husky.sh``, which runs the hook
  again under ``sh -e``; 9: ``core.hooksPath=.husky/_``, ignored, whose stubs
  source ``h``, which runs the tracked ``.husky/<hook>`` by the stub's name).
  setup changes no tracked file; it names the line to add.

Each checks that both tools' hooks run on a real ``git push`` to the bare
remote, that the round waited for the push to end, that doctor's hook checks
pass, and that ``git status --porcelain`` is empty.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from git_sluice.commands import _hook_managers
from git_sluice.commands import setup as installer
from git_sluice.commands.doctor.checks import hook_check
from git_sluice.commands.doctor.gather import gather_hooks
from git_sluice.repo import Repo

from tests.hooks.conftest import World

pytest.importorskip("pre_commit")

PRE_COMMIT_CONFIG = """\
repos:
- repo: local
  hooks:
  - id: mark
    name: mark
    entry: sh -c 'echo pre-commit >> "$0"' {marker}
    language: system
    always_run: true
    pass_filenames: false
    stages: [pre-push]
"""

# husky 8's `_/husky.sh`, as husky writes it in behaviour: the hook sources it, and on the
# first pass it runs the same hook again under `sh -e` and exits with that status.
HUSKY8_SH = """\
#!/usr/bin/env sh
if [ -z "$husky_skip_init" ]; then
  hook_name="$(basename -- "$0")"
  [ "$HUSKY" = "0" ] && exit 0
  husky_skip_init=1
  export husky_skip_init
  sh -e "$0" "$@"
  exitCode="$?"
  [ $exitCode != 0 ] && echo "husky - $hook_name hook exited with code $exitCode (error)"
  exit $exitCode
fi
"""

# husky 9's `_/h`: runs `<folder>/../<name of the stub>` with `sh -e`.
HUSKY9_H = """\
#!/usr/bin/env sh
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n
[ ! -f "$s" ] && exit 0
[ "${HUSKY-}" = "0" ] && exit 0
export PATH="node_modules/.bin:$PATH"
sh -e "$s" "$@"
c=$?
[ $c != 0 ] && echo "husky - $n script failed (code $c)"
exit $c
"""
HUSKY9_STUB = '#!/usr/bin/env sh\n. "${0%/*}/h"'
HUSKY9_HOOKS = ("pre-commit", "commit-msg", "post-checkout", "post-merge", "pre-push")


def _status(world: World) -> str:
    return world.git("status", "--porcelain", "--ignored=no").stdout


def _doctor_hooks(world: World) -> list[tuple[str, str, str, str]]:
    checks = [hook_check(state) for state in gather_hooks(Repo.discover(world.work))]
    return [(c.name, c.status, c.found, c.advice) for c in checks]


def _assert_doctor_passes(world: World) -> None:
    for name, status, detail, fix in _doctor_hooks(world):
        assert status == "ok", (name, detail, fix)


def _push_and_wait(world: World, marker: Path) -> None:
    """A new commit on main, pushed to the bare remote; then every runner the hooks started has ended."""
    world.git("commit", "-q", "--allow-empty", "-m", "work")
    head = world.git("rev-parse", "HEAD").stdout.strip()
    world.git("push", "-q", "origin", "main")
    assert world.git("rev-parse", "main", cwd=world.remote).stdout.strip() == head
    world.wait_quiet()
    assert marker.is_file(), "the other tool's hook did not run"
    assert any("push refs/heads/main" in line for line in world.rounds()), world.log_lines()
    # the runner found the git process it serves, even run by another program, and waited for it
    ended = (world.counter.parent / (world.counter.name + ".git")).read_text().split()
    assert ended and set(ended) == {"ended"}, ended


def _pre_commit(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return world.run(sys.executable, "-m", "pre_commit", *args)


@pytest.fixture
def pc_world(make_world, tmp_path: Path) -> World:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    world.env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    marker = world.root / "pre-commit-ran"
    (world.work / ".pre-commit-config.yaml").write_text(PRE_COMMIT_CONFIG.format(marker=marker))
    world.git("add", ".pre-commit-config.yaml")
    world.git("commit", "-qm", "pre-commit config")
    return world


def test_pre_commit_installed_again_after_setup_both_run(pc_world: World) -> None:
    world = pc_world
    hooks = world.work / ".git" / "hooks"
    _pre_commit(world, "install", "-t", "pre-push")
    world.setup()
    assert _hook_managers.is_pre_commit(hooks / "pre-push"), "setup moved pre-commit's hook"
    assert installer.is_ours(hooks / "pre-push.legacy")
    _pre_commit(world, "install", "-t", "pre-push")  # "Running in migration mode"
    assert _hook_managers.is_pre_commit(hooks / "pre-push") and installer.is_ours(hooks / "pre-push.legacy")

    again = world.sluice("setup")
    assert again.returncode == 0, again.stderr
    assert again.stdout.rstrip().endswith("set up; nothing changed"), again.stdout
    _assert_doctor_passes(world)
    assert any("pre-commit" in detail for name, _s, detail, _f in _doctor_hooks(world) if name == "hook pre-push")

    _push_and_wait(world, world.root / "pre-commit-ran")
    assert _status(world) == ""

    undone = world.sluice("setup", "--undo")
    assert undone.returncode == 0, undone.stderr
    assert _hook_managers.is_pre_commit(hooks / "pre-push")
    assert not (hooks / "pre-push.legacy").exists() and not (hooks / "reference-transaction").exists()


def test_an_older_setups_chain_over_pre_commit_is_repaired(pc_world: World) -> None:
    """Ours at pre-push and pre-commit's at pre-push.legacy refuses every push; setup swaps them back."""
    world = pc_world
    hooks = world.work / ".git" / "hooks"
    _pre_commit(world, "install", "-t", "pre-push")
    original = (hooks / "pre-push").read_bytes()
    (hooks / "pre-push").rename(hooks / "pre-push.legacy")
    (hooks / "pre-push").write_bytes(installer.script("pre-push"))
    (hooks / "pre-push").chmod(0o755)

    world.setup()
    assert (hooks / "pre-push").read_bytes() == original
    assert installer.is_ours(hooks / "pre-push.legacy")
    _assert_doctor_passes(world)
    _push_and_wait(world, world.root / "pre-commit-ran")

    assert world.sluice("setup", "--undo").returncode == 0
    assert (hooks / "pre-push").read_bytes() == original and not (hooks / "pre-push.legacy").exists()


def _husky8(world: World) -> Path:
    husky = world.work / ".husky"
    (husky / "_").mkdir(parents=True)
    (husky / "_" / ".gitignore").write_text("*\n")
    (husky / "_" / "husky.sh").write_text(HUSKY8_SH)
    hook = husky / "pre-push"
    hook.write_text(f'#!/usr/bin/env sh\n. "$(dirname -- "$0")/_/husky.sh"\n\necho husky >> {world.root / "husky-ran"}\n')
    hook.chmod(0o755)
    world.git("config", "core.hooksPath", ".husky")
    world.git("add", ".husky")
    world.git("commit", "-qm", "husky")
    return husky


def _husky9(world: World) -> Path:
    husky = world.work / ".husky"
    (husky / "_").mkdir(parents=True)
    (husky / "_" / ".gitignore").write_text("*")
    (husky / "_" / "h").write_text(HUSKY9_H)
    for name in HUSKY9_HOOKS:
        (husky / "_" / name).write_text(HUSKY9_STUB)
        (husky / "_" / name).chmod(0o755)
    (husky / "pre-push").write_text(f"echo husky >> {world.root / 'husky-ran'}\n")  # husky 9: plain commands
    world.git("config", "core.hooksPath", ".husky/_")
    world.git("add", ".husky")
    world.git("commit", "-qm", "husky")
    return husky


def _add_lines(world: World) -> None:
    """What the user does with setup's words: each line into the file it names, then commits it."""
    import json

    report = json.loads(world.sluice("setup", "--json").stdout)
    assert report["todo"], report
    for item in report["todo"]:
        where = Path(item["file"])
        if item["create"]:
            where.write_text("#!/bin/sh\n" + item["line"] + "\n")
            where.chmod(0o755)
        else:
            where.write_text(where.read_text() + item["line"] + "\n")
        world.git("add", str(where))
    world.git("commit", "-qm", "git-sluice lines")


@pytest.mark.parametrize("layout", ["husky8", "husky9"])
def test_husky_tracked_hooks_get_a_line_not_a_change(make_world, layout: str) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    husky = _husky8(world) if layout == "husky8" else _husky9(world)
    before = {p: p.read_bytes() for p in husky.rglob("*") if p.is_file()}

    proc = world.sluice("setup")
    assert proc.returncode == 0, proc.stderr
    assert _status(world) == "", "setup changed the work tree"
    assert {p: p.read_bytes() for p in before} == before
    assert _hook_managers.line_for("pre-push") in proc.stdout
    assert str(husky / "pre-push") in proc.stdout
    doctor = dict((name, (status, fix)) for name, status, _d, fix in _doctor_hooks(world))
    assert doctor["hook pre-push"][0] == "fail" and _hook_managers.line_for("pre-push") in doctor["hook pre-push"][1]

    _add_lines(world)
    again = world.sluice("setup")
    assert again.returncode == 0 and "to finish" not in again.stdout, again.stdout
    _assert_doctor_passes(world)
    _push_and_wait(world, world.root / "husky-ran")
    assert _status(world) == ""

    assert world.sluice("setup", "--undo").returncode == 0
    assert _status(world) == ""
    assert not (world.sluice_dir / "hooks" / "pre-push").exists()


def test_into_tracked_hooks_writes_there_and_undo_puts_it_back(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    husky = _husky8(world)
    original = (husky / "pre-push").read_bytes()
    proc = world.sluice("setup", "--into-tracked-hooks")
    assert proc.returncode == 0, proc.stderr
    assert installer.is_ours(husky / "pre-push") and _status(world) != ""
    _assert_doctor_passes(world)
    _push_and_wait(world, world.root / "husky-ran")
    assert world.sluice("setup", "--undo").returncode == 0
    assert (husky / "pre-push").read_bytes() == original and _status(world) == ""
