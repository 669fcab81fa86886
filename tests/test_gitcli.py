"""gitcli: the one git runner and its one environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from git_sluice.gitcli import (
    REPO_SELECTING_ENV,
    GitFailed,
    environment,
    parse_version,
    run,
    scrub,
    scrub_environ,
    version_text,
)


def test_a_named_repository_scrubs_every_selecting_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in REPO_SELECTING_ENV:
        monkeypatch.setenv(name, "relative/from/a/hook")
    env = environment(git_dir=tmp_path / ".git", workdir=tmp_path)
    assert env["GIT_DIR"] == str(tmp_path / ".git") and env["GIT_WORK_TREE"] == str(tmp_path)
    assert not set(REPO_SELECTING_ENV) - {"GIT_DIR", "GIT_WORK_TREE"} & set(env)


def test_discovery_keeps_the_users_git_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/somewhere/.git")
    assert environment()["GIT_DIR"] == "/somewhere/.git"


def test_git_never_prompts_unless_the_user_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GIT_TERMINAL_PROMPT", raising=False)
    assert environment()["GIT_TERMINAL_PROMPT"] == "0"
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "1")
    assert environment()["GIT_TERMINAL_PROMPT"] == "1"
    assert environment(extra={"GIT_TERMINAL_PROMPT": "0"})["GIT_TERMINAL_PROMPT"] == "0"


def test_scrub_environ_drops_the_same_list(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in REPO_SELECTING_ENV:
        monkeypatch.setenv(name, "x")
    scrub_environ()
    assert not set(REPO_SELECTING_ENV) & set(os.environ)


def test_run_on_a_named_repository_ignores_a_hooks_relative_git_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run(["init", "-q", str(tmp_path / "r")], check=True)
    work = tmp_path / "r"
    monkeypatch.setenv("GIT_DIR", "nonexistent")
    proc = run(["rev-parse", "--absolute-git-dir"], cwd=work, git_dir=work / ".git", workdir=work, check=True)
    assert Path(proc.stdout.strip()) == (work / ".git").resolve()


def test_check_raises_git_failed_naming_the_command(tmp_path: Path) -> None:
    with pytest.raises(GitFailed) as caught:
        run(["rev-parse", "--verify", "no-such-rev"], cwd=tmp_path, check=True)
    assert "git rev-parse --verify no-such-rev failed" in str(caught.value)
    assert caught.value.returncode != 0
    assert run(["rev-parse", "--verify", "x"], cwd=tmp_path).returncode != 0  # without check: the result


def test_output_that_is_not_utf8_never_raises(tmp_path: Path) -> None:
    run(["init", "-q", str(tmp_path)], check=True)
    run(["config", "--local", "sluice.odd", "caf\udce9"], cwd=tmp_path)  # surrogate: written as it can be
    proc = run(["config", "--local", "--list"], cwd=tmp_path)
    assert isinstance(proc.stdout, str)


def test_scrub_removes_credentials_and_token_shaped_words() -> None:
    assert scrub("https://x:ghp_ABCDEFGHIJKLMNOPQRSTUV@github.com/o/r") == "https://***@github.com/o/r"


def test_version_text_is_none_without_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert parse_version(version_text() or "") >= (2,)
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no git on PATH
    assert version_text() is None
