"""Test isolation shared by every test.

Each test gets its own HOME, XDG_STATE_HOME and git identity, and no token or
git-sluice setting leaks in from the machine, so tests are parallel-safe and
never touch the real host's state.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_git import GitRepo

from tests import procs
from tests.gitutil import git


pytest_plugins = ["git_sluice.double.pytest_plugin", "tests.progress"]
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


def pytest_configure(config: pytest.Config) -> None:
    """Mark this pytest process's run (each xdist worker its own): every process a test starts inherits
    it, so the run's end can find what any test left behind (tests/procs.py)."""
    os.environ[procs.SESSION] = str(os.getpid())
    if getattr(config.option, "loadscopereorder", None):
        # xdist's --dist loadfile would hand out files by their number of tests; the order
        # pytest_collection_modifyitems gives (the slowest files first) is the one wanted
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files with the slowest tests first (``@pytest.mark.slow(seconds=N)``), each file's tests together.

    With ``-n 2`` a four-minute test collected last ran alone at the end while the other worker
    idled (issue 31: 12.8 minutes); started first, it runs beside everything else. A file stays in
    one piece and in its own order, so ``--dist loadfile`` (the README's command) gives each file to
    one worker and its line comes when that worker is through it. Every xdist worker must collect
    the same order: a stable sort on the markers only.
    """
    def cost(item: pytest.Item) -> float:
        marker = item.get_closest_marker("slow")
        return 0.0 if marker is None else float(marker.kwargs.get("seconds", 10))

    per_file: dict[str, float] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        per_file[path] = per_file.get(path, 0.0) + cost(item)
    first_seen = {path: i for i, path in enumerate(dict.fromkeys(item.nodeid.split("::", 1)[0] for item in items))}
    items.sort(key=lambda item: (-per_file[item.nodeid.split("::", 1)[0]], first_seen[item.nodeid.split("::", 1)[0]]))


@pytest.fixture(scope="session", autouse=True)
def nothing_left_by_the_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The run fails, naming them, if any process it started is still alive at its end (issue 31)."""
    since = procs.now()
    yield
    left = procs.reap(mark=(procs.SESSION, str(os.getpid())), under=tmp_path_factory.getbasetemp(), since=since,
                      grace=5.0)
    if left:
        pytest.fail("processes started by this test run were still alive at its end (now ended):\n"
                    + "\n".join(map(str, left)), pytrace=False)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test's own HOME, state and git identity; at its end, nothing it started still runs.

    git's credential-cache daemon, which the product starts on purpose to share an App token
    (docs/design.md#credentials), is asked to exit as a person would; any other process still alive
    after a grace of a few seconds fails the test, naming it (tests/procs.py).
    """
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
    monkeypatch.setenv(procs.OWNER, str(tmp_path))
    since = procs.now()
    yield home
    left = procs.reap(mark=(procs.OWNER, str(tmp_path)), under=tmp_path, since=since)
    if left:
        pytest.fail("processes started by this test were still alive after it (now ended):\n"
                    + "\n".join(map(str, left)), pytrace=False)


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
