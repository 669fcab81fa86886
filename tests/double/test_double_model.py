"""What moves a pull request's updated_at (and what does not), numbering, and the ledger's questions."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import httpx
import pytest

from git_sluice.clock import FakeClock
from git_sluice.double import DoubleError, GitHubDouble

T0 = 1_800_000_000


@pytest.fixture
def gh() -> GitHubDouble:
    double = GitHubDouble(clock=FakeClock(T0))
    double.add_repo("o/r")
    return double


MOVES: dict[str, Callable[[GitHubDouble, int], object]] = {
    "push": lambda gh, n: gh.push_pr("o/r", n),
    "review": lambda gh, n: gh.review("o/r", n, "bob", "COMMENTED"),
    "add label": lambda gh, n: gh.add_label("o/r", n, "x"),
    "remove label": lambda gh, n: (gh.add_label("o/r", n, "x"), gh.remove_label("o/r", n, "x")),
    "title": lambda gh, n: gh.edit_title("o/r", n, "new"),
    "draft": lambda gh, n: gh.set_draft("o/r", n, True),
    "merge": lambda gh, n: gh.merge_pr("o/r", n),
    "close": lambda gh, n: gh.close_pr("o/r", n),
}
STAYS: dict[str, Callable[[GitHubDouble, int], object]] = {
    "check run": lambda gh, n: gh.add_check_run("o/r", gh.pr("o/r", n).head_sha, "ci"),
    "status": lambda gh, n: gh.set_status("o/r", gh.pr("o/r", n).head_sha, "ci", "failure"),
    "mergeable": lambda gh, n: gh.set_mergeable("o/r", n, "CONFLICTING"),
}


@pytest.mark.parametrize("change", sorted(MOVES))
def test_these_move_updated_at(gh: GitHubDouble, change: str) -> None:
    n = gh.open_pr("o/r", head_ref="a")
    gh.clock.advance(60)  # type: ignore[attr-defined]
    MOVES[change](gh, n)
    assert gh.pr("o/r", n).updated_at >= T0 + 60


@pytest.mark.parametrize("change", sorted(MOVES))
def test_updated_at_moves_even_when_the_clock_stood_still(gh: GitHubDouble, change: str) -> None:
    n = gh.open_pr("o/r", head_ref="a")
    MOVES[change](gh, n)
    assert gh.pr("o/r", n).updated_at > T0


@pytest.mark.parametrize("change", sorted(STAYS))
def test_these_do_not_move_updated_at(gh: GitHubDouble, change: str) -> None:
    n = gh.open_pr("o/r", head_ref="a")
    gh.clock.advance(60)  # type: ignore[attr-defined]
    STAYS[change](gh, n)
    assert gh.pr("o/r", n).updated_at == T0


def test_numbers_run_per_repository_and_are_never_reused(gh: GitHubDouble) -> None:
    gh.add_repo("o/s")
    assert [gh.open_pr("o/r", head_ref=f"b{i}") for i in range(3)] == [1, 2, 3]
    assert gh.open_pr("o/s", head_ref="x") == 1
    gh.delete_pr("o/r", 3)
    assert gh.open_pr("o/r", head_ref="again") == 4
    with pytest.raises(DoubleError, match="no pull request #3"):
        gh.pr("o/r", 3)


def test_push_gives_a_new_head_and_keeps_the_history(gh: GitHubDouble) -> None:
    n = gh.open_pr("o/r", head_ref="a", head_sha="a" * 40)
    new = gh.push_pr("o/r", n)
    assert len(new) == 40 and new != "a" * 40
    assert gh.push_pr("o/r", n, sha="b" * 40) == "b" * 40
    pr = gh.pr("o/r", n)
    assert pr.head_sha == "b" * 40 and pr.commits == ["a" * 40, new, "b" * 40]


def test_merge_and_close_leave_the_open_list(gh: GitHubDouble) -> None:
    a, b, c = (gh.open_pr("o/r", head_ref=r) for r in "abc")
    gh.merge_pr("o/r", a)
    gh.close_pr("o/r", b)
    assert (gh.pr("o/r", a).state, gh.pr("o/r", a).merged, gh.pr("o/r", a).graphql_state) == ("closed", True, "MERGED")
    assert (gh.pr("o/r", b).state, gh.pr("o/r", b).graphql_state) == ("closed", "CLOSED")
    gh.reopen_pr("o/r", b)
    assert gh.pr("o/r", b).state == "open" and gh.pr("o/r", c).state == "open"
    with pytest.raises(DoubleError, match="merged"):
        gh.reopen_pr("o/r", a)


def test_misuse_is_named(gh: GitHubDouble) -> None:
    with pytest.raises(DoubleError, match="add_repo"):
        gh.open_pr("x/y", head_ref="a")
    with pytest.raises(DoubleError, match="review state"):
        gh.review("o/r", gh.open_pr("o/r", head_ref="a"), "bob", "LGTM")
    with pytest.raises(DoubleError, match="conclusion"):
        gh.add_check_run("o/r", "0" * 40, "ci", conclusion="great")
    with pytest.raises(DoubleError, match="mergeable"):
        gh.set_mergeable("o/r", 1, "YES")


def test_the_ledger_answers_questions_by_mark_pool_resource_and_path() -> None:
    from git_sluice.double import serve

    gh = GitHubDouble(clock=FakeClock(T0))
    gh.add_token("tok-a", user="alice")
    gh.add_token("tok-b", user="bob")
    gh.add_repo("o/r")
    with serve(gh) as server:
        a = httpx.Client(base_url=server.url, headers={"Authorization": "token tok-a"}, timeout=60)
        b = httpx.Client(base_url=server.url, headers={"Authorization": "token tok-b"}, timeout=60)
        a.get("/repos/o/r")
        mark = gh.mark()
        a.get("/repos/o/r/pulls")
        b.get("/repos/o/r/pulls")
        b.get("/rate_limit")
        a.get("/nope")
    assert mark == 1
    assert len(gh.calls(since=mark)) == 4
    assert [c.path for c in gh.calls(pool="user:bob")] == ["/repos/o/r/pulls", "/rate_limit"]
    assert len(gh.calls(path=r"/pulls$")) == 2
    assert gh.calls(status=404)[0].path == "/nope"
    assert gh.counted() == 4 and gh.counted(since=mark) == 3 and gh.counted(pool="user:bob") == 1
    assert gh.requests() == 5 and gh.requests(since=mark, pool="user:alice") == 2
    assert {c.token_sha for c in gh.calls(pool="user:alice")} == {hashlib.sha256(b"tok-a").hexdigest()}
    assert all("tok-" not in repr(c) for c in gh.ledger)
