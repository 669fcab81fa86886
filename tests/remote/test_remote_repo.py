"""Repo.discover from every place a hook or command may start, and what it refuses."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest
from pytest_git import GitRepo

from git_sluice.gitcli import GitFailed
from git_sluice.repo import NotARepository, Repo, ReftableUnsupported, boot_id


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def clone(git_repo: GitRepo) -> Path:
    path = Path(git_repo.workspace)
    git("symbolic-ref", "HEAD", "refs/heads/main", cwd=path)
    (path / "f").write_text("x\n")
    git("add", "f", cwd=path)
    git("commit", "-q", "-m", "one", cwd=path)
    (path / "sub" / "dir").mkdir(parents=True)
    return path


def test_discover_from_a_subdirectory(clone: Path) -> None:
    repo = Repo.discover(clone / "sub" / "dir")
    assert repo.workdir == clone.resolve()
    assert repo.git_dir == (clone / ".git").resolve()
    assert repo.common_dir == repo.git_dir
    head = git("rev-parse", "HEAD", cwd=clone).strip()
    assert repo.rev("HEAD") == head and repo.ref("HEAD") == head and repo.ref("refs/heads/main") == head
    assert repo.rev("no-such-rev") is None and repo.ref("refs/heads/none") is None


def test_linked_worktree_shares_the_sluice_dir(clone: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "side", str(wt), cwd=clone)
    repo = Repo.discover(wt)
    main = Repo.discover(clone)
    assert repo.workdir == wt.resolve()
    assert repo.git_dir == (clone / ".git" / "worktrees" / "wt").resolve()
    assert repo.common_dir == (clone / ".git").resolve()
    assert repo.sluice_dir == main.sluice_dir == (clone / ".git" / "sluice").resolve()
    assert repo.git("rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "side"


def test_submodule(clone: Path, tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    git("init", "-q", "-b", "main", str(outer), cwd=tmp_path)
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", clone.as_uri(), "mod", cwd=outer)
    repo = Repo.discover(outer / "mod")
    assert repo.workdir == (outer / "mod").resolve()
    assert repo.git_dir == (outer / ".git" / "modules" / "mod").resolve()
    assert repo.sluice_dir.parent == repo.git_dir
    assert repo.rev("HEAD") == git("rev-parse", "HEAD", cwd=clone).strip()


def test_bare_repository(tmp_path: Path) -> None:
    bare = tmp_path / "b.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    repo = Repo.discover(bare)
    assert repo.workdir is None and repo.git_dir == bare.resolve()
    assert repo.git("rev-parse", "--is-bare-repository").stdout.strip() == "true"


def test_not_a_repository(tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    with pytest.raises(NotARepository) as caught:
        Repo.discover(lonely)
    assert str(lonely) in str(caught.value)


def test_reftable_is_refused_clearly(clone: Path) -> None:
    git("config", "core.repositoryformatversion", "1", cwd=clone)
    git("config", "extensions.refStorage", "reftable", cwd=clone)
    with pytest.raises(ReftableUnsupported) as caught:
        Repo.discover(clone)
    assert "reftable" in str(caught.value) and "--ref-format=files" in str(caught.value)


def test_reftable_directory_is_refused_too(clone: Path) -> None:
    (clone / ".git" / "reftable").mkdir()
    with pytest.raises(ReftableUnsupported):
        Repo.discover(clone / "sub")


def test_sluice_dir_is_private(clone: Path) -> None:
    path = Repo.discover(clone).sluice_dir
    assert path.is_dir() and stat.S_IMODE(path.stat().st_mode) == 0o700


def test_config_single_and_multi(clone: Path) -> None:
    repo = Repo.discover(clone)
    assert repo.config_get("sluice.branch") is None and repo.config_get_all("sluice.branch") == []
    git("config", "--add", "sluice.branch", "main", cwd=clone)
    git("config", "--add", "sluice.branch", "next", cwd=clone)
    assert repo.config_get_all("sluice.branch") == ["main", "next"]
    assert repo.config_get("sluice.branch") == "next"  # last one wins, as git's --get
    git("config", "sluice.host", "h1", cwd=clone)
    assert repo.config_get("sluice.host") == "h1"


def test_git_runs_on_this_repo_whatever_the_hook_env_says(clone: Path, tmp_path: Path, monkeypatch) -> None:
    other = tmp_path / "other"
    git("init", "-q", str(other), cwd=tmp_path)
    repo = Repo.discover(clone)
    monkeypatch.setenv("GIT_DIR", ".git")  # a hook's relative GIT_DIR
    monkeypatch.chdir(other)
    top = repo.git("rev-parse", "--show-toplevel").stdout.strip()
    assert Path(top) == clone.resolve()
    with pytest.raises(GitFailed) as caught:
        repo.git("rev-parse", "--verify", "refs/heads/absent")
    assert caught.value.returncode != 0
    assert repo.git("rev-parse", "--verify", "refs/heads/absent", check=False).returncode != 0
    assert repo.git("hash-object", "--stdin", input="x\n").stdout.strip()


def test_discover_honours_an_exported_git_dir(clone: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_DIR", str(clone / ".git"))
    assert Repo.discover().git_dir == (clone / ".git").resolve()


def test_local_ref_writes(clone: Path) -> None:
    repo = Repo.discover(clone)
    head = repo.rev("HEAD")
    repo.set_ref("refs/sluice/intake/main", head)
    assert repo.refs_under("refs/sluice/") == {"refs/sluice/intake/main": head}
    repo.set_ref("refs/sluice/intake/main", None)
    repo.set_ref("refs/sluice/intake/main", None)  # deleting twice is fine
    assert repo.refs_under("refs/sluice/") == {}


def test_boot_id_is_stable() -> None:
    first = boot_id()
    assert first and first == boot_id()
