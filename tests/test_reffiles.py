"""Refs read from git's files backend agree with git's own reading (issue 15: no libgit2 for reads).

Every case is checked against ``git for-each-ref`` / ``git rev-parse`` on a
real repository: loose, packed, a loose ref over a packed one, deletion
after packing, symbolic refs, linked worktrees, and the names and contents
git would refuse.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from git_sluice.reffiles import RefFiles, valid_name
from git_sluice.repo import Repo
from tests.gitutil import git


def _commit(repo: Path, message: str) -> str:
    tree = subprocess.run(["git", "-C", str(repo), "mktree"], input="", capture_output=True, text=True,
                          check=True).stdout.strip()
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           "commit-tree", tree, "-m", message], capture_output=True, text=True,
                          check=True).stdout.strip()


def _git_refs(repo: Path, prefix: str) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix.rstrip("/") + "/")
    pairs = (line.split(" ", 1) for line in out.splitlines() if line)
    return {ref: oid for ref, oid in pairs if ref.startswith(prefix)}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "r"
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    return path


def test_loose_packed_and_both_read_as_git_reads_them(repo: Path) -> None:
    a, b, c = (_commit(repo, m) for m in "abc")
    git(repo, "update-ref", "refs/sluice/intake/main", a)
    git(repo, "update-ref", "refs/sluice/pause/p1/core", b)
    git(repo, "pack-refs", "--all")
    git(repo, "update-ref", "refs/sluice/intake/main", c)  # loose now, over the packed value
    git(repo, "update-ref", "refs/sluice/intake/release/1.x", a)
    refs = Repo.discover(repo).refs
    assert refs.read("refs/sluice/intake/main") == c == git(repo, "rev-parse", "refs/sluice/intake/main")
    assert refs.read("refs/sluice/pause/p1/core") == b  # packed only
    assert refs.under("refs/sluice/") == _git_refs(repo, "refs/sluice/")
    assert refs.under("refs/sluice/intake/") == {"refs/sluice/intake/main": c, "refs/sluice/intake/release/1.x": a}
    assert refs.under("refs/sluice/pause/p1/") == {"refs/sluice/pause/p1/core": b}
    git(repo, "update-ref", "-d", "refs/sluice/pause/p1/core")  # deleted from packed-refs: gone
    assert refs.read("refs/sluice/pause/p1/core") is None and refs.under("refs/sluice/pause/") == {}
    assert refs.read("refs/sluice/intake/absent") is None


def test_symbolic_refs_are_followed_and_their_target_told(repo: Path) -> None:
    a = _commit(repo, "a")
    git(repo, "update-ref", "refs/remotes/origin/main", a)
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    refs = RefFiles(repo / ".git", repo / ".git")
    assert refs.read("refs/remotes/origin/HEAD") == a
    assert refs.target("refs/remotes/origin/HEAD") == "refs/remotes/origin/main"
    assert refs.target("refs/remotes/origin/main") is None
    git(repo, "update-ref", "refs/heads/main", a)
    assert refs.read("HEAD") == a == git(repo, "rev-parse", "HEAD")
    # a loop, and a chain pointing outside refs/, read as absent
    (repo / ".git" / "refs" / "loop").write_text("ref: refs/loop\n")
    (repo / ".git" / "refs" / "out").write_text("ref: ../../etc/passwd\n")
    assert refs.read("refs/loop") is None and refs.read("refs/out") is None


def test_what_git_would_refuse_reads_as_absent(repo: Path) -> None:
    a = _commit(repo, "a")
    git(repo, "update-ref", "refs/sluice/intake/main", a)
    base = repo / ".git" / "refs" / "sluice" / "intake"
    (base / "main.lock").write_text(a + "\n")  # a write in flight
    (base / "garbage").write_text("not an object id\n")
    (base / "short").write_text(a[:20] + "\n")
    refs = RefFiles(repo / ".git", repo / ".git")
    for name in ("refs/sluice/intake/main.lock", "refs/sluice/intake/garbage", "refs/sluice/intake/short",
                 "refs/sluice/../HEAD", "refs//x", "/refs/x", "refs/x/", "refs/a b", "refs/.hidden", "head",
                 "refs/sluice/intake/main@{1}", "refs/x.", ""):
        assert refs.read(name) is None, name
    assert refs.under("refs/sluice/") == {"refs/sluice/intake/main": a}
    assert refs.under("refs/sluice/") == _git_refs(repo, "refs/sluice/")


def test_a_linked_worktree_shares_the_common_refs_and_keeps_its_own(repo: Path, tmp_path: Path) -> None:
    a, b = _commit(repo, "a"), _commit(repo, "b")
    git(repo, "update-ref", "refs/heads/main", a)
    git(repo, "update-ref", "refs/sluice/intake/main", a)
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "--detach", str(linked), a)
    git(linked, "update-ref", "refs/bisect/bad", b)  # per worktree
    found = Repo.discover(linked)
    assert found.common_dir == (repo / ".git").resolve() and found.git_dir != found.common_dir
    assert found.ref("refs/sluice/intake/main") == a and found.ref("refs/bisect/bad") == b
    assert Repo.discover(repo).ref("refs/bisect/bad") is None  # not the main worktree's
    assert found.ref("HEAD") == a == git(linked, "rev-parse", "HEAD")


def test_a_bare_repository_and_an_explicit_path_beside_a_hooks_git_dir(repo: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    found = Repo.discover(bare)
    assert found.workdir is None and found.git_dir == bare.resolve() == found.common_dir
    inside = Repo.discover(repo / ".git")  # from inside a working clone's .git: still that clone, work tree and all
    assert inside.git_dir == (repo / ".git").resolve() and inside.workdir == repo.resolve()
    monkeypatch.setenv("GIT_DIR", str(bare))  # an explicit path wins over a hook's GIT_DIR
    assert Repo.discover(repo).git_dir == (repo / ".git").resolve()
    monkeypatch.chdir(tmp_path)
    assert Repo.discover().git_dir == bare.resolve()  # the default path honours it, as git does


_SEGMENT = st.text(alphabet="abcxyz-_.09", min_size=1, max_size=6).filter(
    lambda s: not s.startswith(".") and not s.endswith(".lock") and not s.endswith(".") and ".." not in s)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.lists(_SEGMENT, min_size=1, max_size=3), min_size=1, max_size=8, unique_by=tuple),
       pack_after=st.integers(min_value=0, max_value=8), deleted=st.sets(st.integers(min_value=0, max_value=7)))
def test_any_mix_of_loose_packed_and_deleted_refs_reads_as_git_reads_it(
        tmp_path_factory: pytest.TempPathFactory, names: list[list[str]], pack_after: int, deleted: set[int]) -> None:
    repo = tmp_path_factory.mktemp("mix")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    oids = [_commit(repo, str(i)) for i in range(2)]
    refs = sorted({"refs/sluice/" + "/".join(parts) for parts in names})
    # a ref that is also a folder of another is refused by git: keep the names git accepts
    refs = [r for r in refs if not any(o.startswith(r + "/") for o in refs)]
    for i, ref in enumerate(refs):
        git(repo, "update-ref", ref, oids[i % 2])
        if i + 1 == pack_after:
            git(repo, "pack-refs", "--all")
    for i, ref in enumerate(refs):
        if i in deleted:
            git(repo, "update-ref", "-d", ref)
        elif i % 3 == 0:
            git(repo, "update-ref", ref, oids[(i + 1) % 2])  # rewritten: loose over packed
    reader = RefFiles(repo / ".git", repo / ".git")
    assert reader.under("refs/sluice/") == _git_refs(repo, "refs/sluice/")
    for ref in refs:
        said = git(repo, "rev-parse", "--verify", "-q", ref, check=False) or None
        assert reader.read(ref) == said, ref
        assert valid_name(ref)


def test_the_settings_read_the_remote_tracking_refs_from_the_files_as_for_each_ref_lists_them(
        github_clone: Path) -> None:
    """A session has found the clone already: its settings cost one git (config), not two (issue 15)."""
    from git_sluice import config

    a = _commit(github_clone, "a")
    for name in ("refs/remotes/origin/feature/x", "refs/remotes/origin/release-1", "refs/remotes/upstream/main"):
        git(github_clone, "update-ref", name, a)
    git(github_clone, "pack-refs", "--all")
    git(github_clone, "update-ref", "refs/remotes/origin/zz-loose", a)
    git(github_clone, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    repo = Repo.discover(github_clone)
    listed = config._remote_refs(github_clone)
    assert config._files_remote_refs(repo.refs) == listed
    assert ("refs/remotes/origin/HEAD", "refs/remotes/origin/main") in listed
    assert config.load_settings(github_clone, refs=repo.refs) == config.load_settings(github_clone)


@settings(max_examples=60, deadline=None)
@given(name=st.text(alphabet="refs/ab.-_lock@{}~^:?*[\\ \x01", min_size=1, max_size=14))
def test_valid_name_agrees_with_git_check_ref_format(name: str) -> None:
    full = name if name.startswith("refs/") else "refs/" + name
    said = subprocess.run(["git", "check-ref-format", full], capture_output=True).returncode == 0
    assert valid_name(full) == said, full
