"""Test isolation shared by every test.

Each test gets its own HOME, XDG_STATE_HOME and git identity, and no token or
git-sluice setting leaks in from the machine, so tests are parallel-safe and
never touch the real host's state.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pytest_git import GitRepo

from tests.gitutil import git


pytest_plugins = ["git_sluice.double.pytest_plugin"]
"""The double's fixtures (``github``, ``fake_clock``): opt-in, as for any project (docs/double.md)."""


_LEAKY = (
    # a proxy of the host's must not carry the tests' loopback calls (git-sluice honours these)
    "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "GH_HOST",
    # a trust store of the host's must not decide the tests' TLS (tests/tlsutil.py makes their own CA)
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Sluice Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@sluice.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Sluice Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@sluice.invalid")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    for name in _LEAKY:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("GIT_SLUICE_"):
            monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def seeded_repo(git_repo: GitRepo, isolated_env: Path) -> Path:
    """pytest-git's throw-away repository, on branch main with one commit (the identity is the test's)."""
    work = Path(git_repo.workspace)
    git(work, "symbolic-ref", "HEAD", "refs/heads/main")
    git(work, "commit", "-q", "--allow-empty", "-m", "seed")
    return work


@pytest.fixture
def github_clone(seeded_repo: Path) -> Path:
    """A clone-like repository with no network: origin on GitHub (never fetched), origin/main known locally."""
    git(seeded_repo, "remote", "add", "origin", "https://github.com/octo/widgets.git")
    git(seeded_repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    return seeded_repo
