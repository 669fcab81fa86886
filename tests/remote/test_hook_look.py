"""Issue 29: a hook round after the user's own fetch or push reads no more of the remote than the host's
look of this tick. The branch's new revision comes from the user's remote-tracking ref (forward only);
the leases and notes from the look. Views that diverged still fetch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from git_sluice.commands.drive import drive
from git_sluice.commands.hook_round import hook_step, shares_look
from git_sluice.remote.git import RemoteGit, tracking_ref
from git_sluice.runtime import session as session_module
from git_sluice.runtime.tracking import Move, adopt_user_tracking, tracking_move

from tests.remote.test_fleet_roles import Fleet, fleet_factory, git, ready_pr  # noqa: F401 (the fixture)

# a small history: 0 <- 1 <- 2, and 0 <- 3 (a branch beside 1 and 2)
PARENT = {"1": "0", "2": "1", "3": "0"}


def descends(a: str, b: str) -> bool:
    """a descends from b (strictly), in PARENT's history."""
    while a in PARENT:
        a = PARENT[a]
        if a == b:
            return True
    return False


@given(st.sampled_from([None, "0", "1", "2", "3"]), st.sampled_from([None, "0", "1", "2", "3"]))
def test_the_rounds_view_only_moves_forward_and_a_divergence_fetches(ours: str | None, theirs: str | None) -> None:
    move = tracking_move(ours, theirs, descends)
    if theirs is None or theirs == ours:
        assert move is Move.KEEP
    elif ours is None or descends(theirs, ours):
        assert move is Move.ADVANCE  # the user's command brought something newer
    elif descends(ours, theirs):
        assert move is Move.KEEP  # the user's ref is an older view: never back
    else:
        assert move is Move.FETCH and {ours, theirs} & {"3"}  # only across the fork


def test_which_reasons_share_the_hosts_look() -> None:
    assert shares_look(["push request head refs/heads/r0 to origin"], "origin")
    assert shares_look(["fetch refs/remotes/origin/main", "fetch refs/sluice/intake/main"], "origin")
    assert shares_look(["push refs/heads/main to origin", "fetch refs/remotes/origin/main"], "origin")
    # a push by URL moves no remote-tracking ref: the round needs its own fetch
    assert not shares_look(["push refs/heads/main to file:///srv/r.git"], "origin")
    assert not shares_look(["push refs/heads/main to origin"], None)
    assert not shares_look([], "origin")


def commit_and_push(tmp_path: Path, url: str, name: str, *, force_from: str | None = None) -> str:
    """Another person moves main on the remote (``force_from``: rewritten from that revision)."""
    work = tmp_path / f"other-{name}"
    if not work.exists():
        git("clone", "-q", url, str(work))
    git("fetch", "-q", "origin", cwd=work)
    git("reset", "-q", "--hard", force_from or "origin/main", cwd=work)
    (work / f"{name}.txt").write_text(name)
    git("add", ".", cwd=work)
    git("-c", "user.name=o", "-c", "user.email=o@example.com", "commit", "-q", "-m", name, cwd=work)
    git("push", "-q", "--force", "origin", "HEAD:main", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


@pytest.fixture
def counted_fetches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    fetches: list[tuple[str, ...]] = []
    real = RemoteGit.fetch

    def counted(self: RemoteGit, *extra: str) -> None:
        fetches.append(extra)
        real(self, *extra)

    monkeypatch.setattr(RemoteGit, "fetch", counted)
    return fetches


def test_a_round_after_the_users_fetch_takes_the_branch_from_it_and_asks_the_remote_nothing(
        fleet_factory, counted_fetches: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fleet: Fleet = fleet_factory(("host-a",), lease="180s")
    ready_pr(fleet.gh, "r0")
    host = fleet.hosts["host-a"]
    drive(fleet.session("host-a"), max_ticks=1, let_go=False)  # the host's look of this tick
    moved = commit_and_push(tmp_path, host.url, "one")
    git("fetch", "-q", "origin", cwd=host.path)  # the user's own fetch (its hook asks for the round)
    monkeypatch.setattr(session_module, "open_session", lambda path, **kw: fleet.session("host-a"))
    fleet.clock.advance(20)  # type: ignore[attr-defined]
    counted_fetches.clear()
    mark = fleet.gh.mark()
    hook_step(_repo(host.path), reason="hook",
              share=shares_look(["fetch refs/remotes/origin/main"], "origin"))
    assert counted_fetches == []  # the look of this tick stood for the round's fetch
    assert git("rev-parse", tracking_ref("origin", "main"), cwd=host.path) == moved
    assert fleet.gh.ledger[mark:], "the round saw main move and asked GitHub about it"


def test_a_round_whose_views_diverged_fetches_and_never_moves_back(
        fleet_factory, counted_fetches: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fleet: Fleet = fleet_factory(("host-a",), lease="180s")
    ready_pr(fleet.gh, "r0")
    host = fleet.hosts["host-a"]
    base = git("rev-parse", "origin/main", cwd=host.path)
    commit_and_push(tmp_path, host.url, "one")
    drive(fleet.session("host-a"), max_ticks=1, let_go=False)  # the rounds' view: "one"
    seen = git("rev-parse", tracking_ref("origin", "main"), cwd=host.path)
    repo = _repo(host.path)
    # the user's view is older than the rounds': kept, no fetch needed
    assert adopt_user_tracking(repo, "origin", ["main"]) is True
    assert repo.ref(tracking_ref("origin", "main")) == seen
    rewritten = commit_and_push(tmp_path, host.url, "two", force_from=base)  # a force push beside "one"
    git("fetch", "-q", "origin", cwd=host.path)
    assert adopt_user_tracking(repo, "origin", ["main"]) is False
    monkeypatch.setattr(session_module, "open_session", lambda path, **kw: fleet.session("host-a"))
    fleet.clock.advance(20)  # type: ignore[attr-defined]
    counted_fetches.clear()
    hook_step(repo, reason="hook", share=shares_look(["fetch refs/remotes/origin/main"], "origin"))
    assert len(counted_fetches) == 1  # the round's own fetch: only the remote says which is current
    assert repo.ref(tracking_ref("origin", "main")) == rewritten


def _repo(path: Path) -> Any:
    from git_sluice.repo import Repo

    return Repo.discover(path)
