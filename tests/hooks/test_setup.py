"""`git sluice setup`: chains what is there, changes nothing twice, and undoes byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.hooks.conftest import World
from git_sluice.commands import setup as installer
from git_sluice.gitcli import parse_version
from git_sluice.repo import Repo


def snapshot(folder: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry of a folder: kind, mode and content digest (a link: its target)."""
    found: dict[str, tuple[str, int, str]] = {}
    if not folder.exists():
        return found
    for path in sorted(folder.iterdir()):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            found[path.name] = ("link", st.st_mode, os.readlink(path))
        elif stat.S_ISDIR(st.st_mode):
            found[path.name] = ("dir", st.st_mode, "")
        else:
            found[path.name] = ("file", st.st_mode, hashlib.sha256(path.read_bytes()).hexdigest())
    return found


REJECTING = """#!/bin/sh
# the team's own policy hook
echo "args: $*" >"$(dirname "$0")/../../seen-args"
cat >"$(dirname "$0")/../../seen-stdin"
echo "policy: no pushes to main today" >&2
exit 3
"""


def test_an_existing_pre_push_that_rejects_still_rejects_and_undo_restores_it(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    hooks = world.work / ".git" / "hooks"
    hook = hooks / "pre-push"
    hook.write_text(REJECTING)
    hook.chmod(0o750)
    before_hooks = snapshot(hooks)
    before_config = (world.work / ".git" / "config").read_bytes()
    world.git("commit", "-q", "--allow-empty", "-m", "x")

    plain = world.git("push", "origin", "HEAD:main", check=False)
    plain_stdin = (world.work / "seen-stdin").read_text()
    plain_args = (world.work / "seen-args").read_text()
    assert plain.returncode == 1 and "policy: no pushes" in plain.stderr

    out = world.setup().stdout
    assert "chained" in out and "pre-push.legacy" in out
    assert (hooks / "pre-push.legacy").read_text() == REJECTING

    chained = world.git("push", "origin", "HEAD:main", check=False)
    assert chained.returncode == plain.returncode
    assert chained.stderr == plain.stderr
    assert chained.stdout == plain.stdout
    assert (world.work / "seen-stdin").read_text() == plain_stdin  # stdin replayed exactly
    assert (world.work / "seen-args").read_text() == plain_args
    # the hook's own status is the legacy hook's, exactly (git only says 1)
    direct = subprocess.run(
        [str(hook), "origin", str(world.remote)],
        input=plain_stdin,
        cwd=world.work,
        env=world.env,
        capture_output=True,
        text=True,
    )
    assert direct.returncode == 3 and direct.stderr == "policy: no pushes to main today\n"
    world.wait_quiet()
    assert world.runners() == (0, 0)  # a refused push moved nothing

    # setup twice is a no-op: same files, same config, and it says so
    after_hooks = snapshot(hooks)
    after_config = (world.work / ".git" / "config").read_bytes()
    manifest = (world.sluice_dir / "setup.json").read_bytes()
    again = world.setup()
    assert again.stdout.strip().endswith("set up; nothing changed")
    assert snapshot(hooks) == after_hooks
    assert (world.work / ".git" / "config").read_bytes() == after_config
    assert (world.sluice_dir / "setup.json").read_bytes() == manifest

    undone = world.sluice("setup", "--undo")
    assert undone.returncode == 0, undone.stderr
    assert "restored" in undone.stdout
    assert snapshot(hooks) == before_hooks
    assert (world.work / ".git" / "config").read_bytes() == before_config
    assert not (world.sluice_dir / "setup.json").exists()
    again = world.sluice("setup", "--undo")
    assert again.returncode == 0 and "nothing to undo" in again.stdout


def test_a_symlinked_hook_is_chained_and_put_back_as_the_same_link(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    tools = world.work / ".git" / "team-hooks"
    tools.mkdir()
    (tools / "pre-push").write_text("#!/bin/sh\necho team-hook-ran >&2\nexit 0\n")
    (tools / "pre-push").chmod(0o755)
    hooks = world.work / ".git" / "hooks"
    (hooks / "pre-push").symlink_to("../team-hooks/pre-push")
    before = snapshot(hooks)

    world.setup()
    assert os.readlink(hooks / "pre-push.legacy") == "../team-hooks/pre-push"
    world.git("commit", "-q", "--allow-empty", "-m", "x")
    proc = world.git("push", "-q", "origin", "HEAD:side")
    assert proc.stderr == "team-hook-ran\n"

    world.sluice("setup", "--undo")
    assert snapshot(hooks) == before


@pytest.mark.parametrize("kind", ["directory", "not-executable", "dangling-link", "legacy-exists", "unreadable"])
def test_a_hook_that_cannot_be_chained_is_refused_before_anything_changes(make_world, kind: str) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    hooks = world.work / ".git" / "hooks"
    hook = hooks / "reference-transaction"
    if kind == "directory":
        hook.mkdir()
        expected = "is a directory"
    elif kind == "not-executable":
        hook.write_text("#!/bin/sh\nexit 0\n")
        hook.chmod(0o644)
        expected = "not executable"
    elif kind == "dangling-link":
        hook.symlink_to("../nowhere/hook")
        expected = "does not exist"
    elif kind == "legacy-exists":
        hook.write_text("#!/bin/sh\nexit 0\n")
        hook.chmod(0o755)
        (hooks / "reference-transaction.legacy").write_text("#!/bin/sh\n")
        expected = "already exists"
    else:
        if os.geteuid() == 0:
            pytest.skip("root reads every file")
        hook.write_text("#!/bin/sh\nexit 0\n")
        hook.chmod(0o311)
        expected = "not readable"
    before_hooks = snapshot(hooks)
    before_config = (world.work / ".git" / "config").read_bytes()

    proc = world.sluice("setup")
    assert proc.returncode == 2
    assert expected in proc.stderr and str(hook) in proc.stderr
    assert snapshot(hooks) == before_hooks
    assert (world.work / ".git" / "config").read_bytes() == before_config
    assert not (world.sluice_dir / "setup.json").exists()


def test_a_bad_config_is_refused_naming_the_key(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    world.git("config", "sluice.discovery", "5s")
    before = snapshot(world.work / ".git" / "hooks")
    proc = world.sluice("setup")
    assert proc.returncode == 2
    assert "sluice.discovery" in proc.stderr
    assert snapshot(world.work / ".git" / "hooks") == before


def test_a_file_where_the_sluice_dir_belongs_is_refused(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    world.sluice_dir.write_text("not a directory\n")
    proc = world.sluice("setup")
    assert proc.returncode == 2
    assert "not a directory" in proc.stderr


def test_core_hooks_path_is_named_and_other_repositories_are_left_alone(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    shared = world.root / "shared-hooks"
    world.git("config", "core.hooksPath", str(shared))
    world.git("config", "core.hooksPath", str(shared), cwd=world.other)
    proc = world.setup()
    assert "core.hooksPath" in proc.stderr and "other repositories" in proc.stderr
    assert (shared / "pre-push").is_file() and (shared / "reference-transaction").is_file()
    assert not (world.work / ".git" / "hooks" / "pre-push").exists()

    # the other clone shares the folder but was never set up: its git is untouched
    world.git("commit", "-q", "--allow-empty", "-m", "o", cwd=world.other)
    push = world.git("push", "-q", "origin", "HEAD:main", cwd=world.other)
    assert push.stderr == ""
    world.wait_quiet()
    assert world.runners() == (0, 0)

    # and this one takes that movement in
    world.git("fetch", "-q")
    world.wait_quiet()
    assert len(world.rounds()) == 1

    world.sluice("setup", "--undo")
    assert not shared.exists()  # setup made the folder, and it is empty again


def test_json_report_names_the_token_source_and_never_the_token(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    world.env.pop("GH_TOKEN")
    token = "ghp_" + "S3cr3t" * 6
    env = dict(world.env, GH_TOKEN=token)
    proc = world.run(str(world.bin / "git-sluice"), "setup", "--json", env=env)
    assert token not in proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["token"] == {"found": True, "source": "GH_TOKEN"}
    assert report["changed"] is True and report["mode"] == "files"
    assert report["remote"] == "origin" and report["branches"] == ["main"]
    assert {s["subject"] for s in report["steps"]} >= {"hook pre-push", "hook reference-transaction", "fetch refspec"}

    bare = world.sluice("setup", "--json")
    assert json.loads(bare.stdout)["changed"] is False
    assert json.loads(bare.stdout)["token"]["found"] is False


LEGACY = "+refs/sluice/*:refs/sluice/*"


def test_setup_adds_no_fetch_refspec(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    before = world.git("config", "--get-all", "remote.origin.fetch").stdout.split()
    world.setup()
    world.setup()
    assert world.git("config", "--get-all", "remote.origin.fetch").stdout.split() == before
    assert LEGACY not in before


def test_setup_removes_the_refspec_an_older_setup_added_and_undo_restores_the_config(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    config = world.work / ".git" / "config"
    before_config = config.read_bytes()
    world.setup()
    # what an older setup left: the refspec, and its record in the manifest
    world.git("config", "--add", "remote.origin.fetch", LEGACY)
    manifest = json.loads((world.sluice_dir / "setup.json").read_text())
    manifest["refspecs"].append({"remote": "origin", "key": "remote.origin.fetch", "value": LEGACY,
                                 "section_created": False})
    (world.sluice_dir / "setup.json").write_text(json.dumps(manifest))
    proc = world.sluice("setup", "--json")
    assert proc.returncode == 0, proc.stderr
    steps = {s["subject"]: s for s in json.loads(proc.stdout)["steps"]}
    assert steps["fetch refspec"]["status"] == "removed" and steps["fetch refspec"]["changed"]
    assert LEGACY not in world.git("config", "--get-all", "remote.origin.fetch").stdout.split()
    assert json.loads((world.sluice_dir / "setup.json").read_text())["refspecs"] == []
    assert world.sluice("setup", "--undo").returncode == 0
    assert config.read_bytes() == before_config


def test_a_refspec_setup_did_not_add_is_left_with_a_word(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    world.git("config", "--add", "remote.origin.fetch", LEGACY)
    proc = world.sluice("setup")
    assert proc.returncode == 0, proc.stderr
    assert LEGACY in world.git("config", "--get-all", "remote.origin.fetch").stdout.split()
    assert "git config --fixed-value --unset remote.origin.fetch" in proc.stderr


def test_git_versions_are_read_and_the_mode_chosen() -> None:
    assert parse_version("git version 2.39.5") == (2, 39, 5)
    assert parse_version("git version 2.54.0.windows.1") == (2, 54, 0)
    assert parse_version("git version 2.54.0-rc1") == (2, 54, 0)
    assert installer.choose_mode((2, 39, 5)) == "files"
    assert installer.choose_mode((2, 53, 9)) == "files"
    assert installer.choose_mode((2, 54, 0)) == "config"
    assert installer.choose_mode((3, 0)) == "config"
    assert installer.config_hook_command(Path("/a/b/pre-push")) == "/a/b/pre-push"
    assert installer.config_hook_command(Path("/a b/pre-push")) == "exec '/a b/pre-push'"


def test_config_defined_hooks_on_new_git_leave_the_hooks_folder_alone(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    hooks = world.work / ".git" / "hooks"
    (hooks / "pre-push").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "pre-push").chmod(0o755)
    before_hooks = snapshot(hooks)
    before_config = (world.work / ".git" / "config").read_bytes()
    repo = Repo.discover(world.work)
    asked: list[str] = []

    def verify(_repo: object, name: str) -> bool:
        asked.append(name)
        return True

    report = installer.install(repo, git_version=(2, 54, 0), verify=verify, token_finder=lambda api: None)
    assert report.mode == "config" and report.changed
    assert asked == ["pre-push", "reference-transaction"]
    assert snapshot(hooks) == before_hooks  # the existing hook is not even moved
    script = world.sluice_dir / "hooks" / "pre-push"
    assert world.git("config", "--local", "hook.sluice-pre-push.command").stdout.strip() == str(script)
    assert world.git("config", "--local", "hook.sluice-pre-push.event").stdout.strip() == "pre-push"
    assert world.git("config", "--local", "hook.sluice-reference-transaction.event").stdout.strip() == (
        "reference-transaction"
    )
    assert script.read_bytes() == installer.script("pre-push") and os.access(script, os.X_OK)

    again = installer.install(repo, git_version=(2, 54, 0), verify=verify, token_finder=lambda api: None)
    assert not again.changed

    undone = installer.undo(repo)
    assert undone.changed
    assert (world.work / ".git" / "config").read_bytes() == before_config
    assert snapshot(hooks) == before_hooks
    assert not script.exists()


def test_when_git_does_not_list_the_config_hook_a_hook_file_is_installed(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    before_config = (world.work / ".git" / "config").read_bytes()
    repo = Repo.discover(world.work)
    report = installer.install(repo, git_version=(2, 54, 0), verify=lambda r, n: False, token_finder=lambda api: None)
    assert any("installed a hook file instead" in w for w in report.warnings)
    assert installer.is_ours(world.work / ".git" / "hooks" / "pre-push")
    assert world.git("config", "--local", "--get-regexp", "^hook\\.", check=False).stdout == ""
    installer.undo(repo)
    assert (world.work / ".git" / "config").read_bytes() == before_config
    assert not (world.work / ".git" / "hooks" / "pre-push").exists()


def test_undo_without_a_record_still_restores_chained_hooks(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    hooks = world.work / ".git" / "hooks"
    (hooks / "pre-push").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "pre-push").chmod(0o700)
    before = snapshot(hooks)
    world.setup()
    (world.sluice_dir / "setup.json").write_bytes(b"\x00garbage")
    proc = world.sluice("setup", "--undo")
    assert proc.returncode == 0
    assert snapshot(hooks) == before
    assert "no record" in proc.stderr


def test_describe_tells_doctor_what_is_installed(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    repo = Repo.discover(world.work)
    before = installer.describe(repo)
    assert not before["hooks"]["pre-push"]["installed"] and not before["refspec"]["present"]
    (world.work / ".git" / "hooks" / "pre-push").write_text("#!/bin/sh\nexit 0\n")
    (world.work / ".git" / "hooks" / "pre-push").chmod(0o755)
    world.setup()
    now = installer.describe(repo)
    assert now["hooks"]["pre-push"] == {
        "installed": True,
        "how": "file",
        "path": str(world.work / ".git" / "hooks" / "pre-push"),
        "chained": True,
        "current": True,
    }
    assert now["hooks"]["reference-transaction"]["chained"] is False
    assert not now["refspec"]["present"] and now["recorded"] and not now["config_hooks_run"]


def test_a_hooks_folder_it_cannot_write_is_an_error_not_a_crash(make_world) -> None:  # type: ignore[no-untyped-def]
    world: World = make_world(with_setup=False)
    blocked = world.root / "blocked"
    blocked.write_text("a file where the hooks folder should be\n")
    world.git("config", "core.hooksPath", str(blocked / "hooks"))
    proc = world.sluice("setup", "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["exit_code"] == 1
    assert proc.stderr.startswith("git sluice: cannot change") and "Traceback" not in proc.stderr
