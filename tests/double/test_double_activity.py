"""Repository-level activity: what changes GitHub's bodies though no pull request moved.

GitHub embeds the whole repository in every pull request item and in the
combined status, so a push to another branch, a star, a fork or an issue
changes those bodies (a conditional list answers 200, counted); check runs
embed no counters and a pull request's ``updated_at`` stays put. A comment
moves only the pull request it is on.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from git_sluice.double.core import GitHubDouble
from git_sluice.double.model import DoubleError
from git_sluice.double.scenario import load_scenario
from git_sluice.double.testing import ServedDouble

LIST = "/repos/o/r/pulls?state=open&per_page=100"


def _status(gh: GitHubDouble) -> str:
    return f"/repos/o/r/commits/{gh.pr('o/r', 1).head_sha}/status"


def _checks(gh: GitHubDouble) -> str:
    return f"/repos/o/r/commits/{gh.pr('o/r', 1).head_sha}/check-runs"


def _revalidate(client: httpx.Client, path: str, etag: str) -> int:
    return client.get(path, headers={"If-None-Match": etag}).status_code


ACTIVITY: dict[str, Callable[[GitHubDouble], object]] = {
    "push_branch": lambda gh: gh.push_branch("o/r", "unrelated"),
    "star": lambda gh: gh.star("o/r", "bob"),
    "fork": lambda gh: gh.fork("o/r", "carol"),
    "open_issue": lambda gh: gh.open_issue("o/r", "a bug"),
}


@pytest.mark.parametrize("kind", sorted(ACTIVITY))
def test_unrelated_activity_changes_the_list_and_combined_status_not_check_runs(
    github: ServedDouble, alice: httpx.Client, kind: str
) -> None:
    gh = github.gh
    gh.open_pr("o/r", head_ref="feat")
    sha = gh.pr("o/r", 1).head_sha
    gh.add_check_run("o/r", sha, "ci")
    gh.set_status("o/r", sha, "lint", "success")
    tags = {path: alice.get(path).headers["etag"] for path in (LIST, _status(gh), _checks(gh))}
    updated = gh.pr("o/r", 1).updated_at
    github.clock.advance(30)  # type: ignore[attr-defined]

    ACTIVITY[kind](gh)

    mark = gh.mark()
    assert _revalidate(alice, LIST, tags[LIST]) == 200
    assert _revalidate(alice, _status(gh), tags[_status(gh)]) == 200
    assert _revalidate(alice, _checks(gh), tags[_checks(gh)]) == 304
    assert [c.counted for c in gh.calls(since=mark)] == [True, True, False]
    assert gh.pr("o/r", 1).updated_at == updated


def test_counters_are_what_github_embeds(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.open_pr("o/r", head_ref="feat")
    created = alice.get("/repos/o/r").json()["pushed_at"]
    github.clock.advance(60)  # type: ignore[attr-defined]
    sha = gh.push_branch("o/r", "dev")
    gh.star("o/r", "bob")
    gh.star("o/r", "bob")  # starring twice is still one star
    gh.star("o/r")
    fork = gh.fork("o/r", "carol")
    issue = gh.open_issue("o/r", "a bug", author="dave")
    gh.open_issue("o/r", "another")
    gh.close_issue("o/r", issue)

    (item,) = alice.get(LIST).json()
    for side in ("base", "head"):
        repo = item[side]["repo"]
        assert repo["stargazers_count"] == repo["watchers_count"] == repo["watchers"] == 2
        assert repo["forks_count"] == repo["forks"] == 1
        assert repo["open_issues_count"] == repo["open_issues"] == 2  # one issue + one pull request
        assert repo["pushed_at"] > created
        assert isinstance(repo["size"], int)
    assert len(sha) == 40 and gh.world.repos["o/r"].branches["dev"] == sha
    assert fork == "carol/r"
    forked = alice.get("/repos/carol/r").json()
    assert forked["fork"] is True and forked["parent"]["full_name"] == "o/r"
    status = alice.get(_status(gh)).json()["repository"]
    assert status["stargazers_count"] == 2 and status["forks_count"] == 1


def test_issues_share_the_pull_requests_numbers(github: ServedDouble) -> None:
    gh = github.gh
    assert gh.open_pr("o/r", head_ref="a") == 1
    assert gh.open_issue("o/r") == 2
    assert gh.open_pr("o/r", head_ref="b") == 3
    with pytest.raises(DoubleError, match="pull request"):
        gh.close_issue("o/r", 1)


def test_a_comment_moves_its_pull_request_only(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    gh.open_pr("o/r", head_ref="a")
    issue = gh.open_issue("o/r", "question")
    etag = alice.get(LIST).headers["etag"]
    before = gh.pr("o/r", 1).updated_at

    gh.comment("o/r", issue, "me too", author="bob")  # an issue comment moves no counter
    assert _revalidate(alice, LIST, etag) == 304
    assert gh.world.repos["o/r"].issues[issue].comments == 1

    gh.comment("o/r", 1, "looks good", author="bob")  # on a pull request: its updated_at moves
    assert gh.pr("o/r", 1).updated_at > before
    assert _revalidate(alice, LIST, etag) == 200
    assert alice.get("/repos/o/r/pulls/1").json()["comments"] == 1


def test_a_push_to_a_requests_head_moves_the_request(github: ServedDouble) -> None:
    gh = github.gh
    gh.open_pr("o/r", head_ref="feat")
    before = gh.pr("o/r", 1).updated_at
    sha = gh.push_branch("o/r", "feat")
    assert gh.pr("o/r", 1).head_sha == sha and gh.pr("o/r", 1).updated_at > before


def test_closing_an_issue_moves_the_counter_back(github: ServedDouble, alice: httpx.Client) -> None:
    gh = github.gh
    number = gh.open_issue("o/r")
    assert alice.get("/repos/o/r").json()["open_issues_count"] == 1
    gh.close_issue("o/r", number)
    gh.close_issue("o/r", number)  # closing a closed issue changes nothing
    assert alice.get("/repos/o/r").json()["open_issues_count"] == 0


def test_the_control_api_drives_activity(github: ServedDouble, http: httpx.Client) -> None:
    def call(name: str, **args: object) -> object:
        answer = http.post(f"{github.url}/_double/{name}", json=args)
        assert answer.status_code == 200, answer.text
        return answer.json()["result"]

    sha = call("push_branch", repo="o/r", branch="dev")
    assert isinstance(sha, str) and len(sha) == 40
    assert call("star", repo="o/r", login="bob") is None
    assert call("fork", repo="o/r", owner="carol") == "carol/r"
    number = call("open_issue", repo="o/r", title="bug")
    assert number == 1
    assert call("comment", repo="o/r", number=number, body="+1") == 1  # the comment's id, to read it back
    assert call("close_issue", repo="o/r", number=number) is None
    repo = github.gh.world.repos["o/r"]
    assert (repo.stargazers, repo.forks, repo.issues[1].state) == (["bob"], ["carol/r"], "closed")


def test_a_scenario_declares_activity() -> None:
    gh = GitHubDouble()
    load_scenario(gh, {"repos": [{
        "name": "o/r",
        "pushes": ["dev", {"branch": "release", "sha": "a" * 40}],
        "stars": 3,
        "forks": ["carol"],
        "issues": [{"title": "bug {i}", "repeat": 2, "comments": 1}, {"state": "closed"}],
        "pulls": [{"head_ref": "feat", "comments": 2}],
    }]})
    repo = gh.world.repos["o/r"]
    assert repo.branches["release"] == "a" * 40 and "dev" in repo.branches
    assert len(repo.stargazers) == 3 and repo.forks == ["carol/r"]
    assert [i.title for i in repo.issues.values()][:2] == ["bug 1", "bug 2"]
    assert repo.open_issues_count == 3  # two open issues, one open pull request
    assert gh.pr("o/r", 1).comments == 2
