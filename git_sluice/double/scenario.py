"""A GitHub described in JSON, for a double in another process.

The stand-alone double (``python -m git_sluice.double --scenario FILE``), the
benchmark and the demo declare their world once — users, tokens, apps and
installations, limits, knobs, repositories with their pull requests (reviews,
checks, statuses, labels, drafts) and faults — instead of scripting calls.
docs/double.md describes the format; ``example_scenario.json`` shows it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import SluiceError
from .core import GitHubDouble
from .model import DoubleError


class ScenarioError(SluiceError):
    """A scenario file that cannot be read or names something it never declared."""

    exit_code = 2


def load_scenario_file(gh: GitHubDouble, path: str | Path) -> None:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ScenarioError(f"scenario {path}: {error}") from None
    load_scenario(gh, data, base_dir=path.parent)


def load_scenario(gh: GitHubDouble, data: dict[str, Any], base_dir: Path | None = None) -> None:
    """Build ``data``'s world into ``gh``; a mistake names the entry it is in."""
    if not isinstance(data, dict):
        raise ScenarioError("scenario: expected a JSON object at the top")
    where = "scenario"
    try:
        _product(gh, data)
        for login in data.get("users", []):
            where = f"users: {login!r}"
            gh.add_user(login)
        _tokens(gh, data.get("tokens", {}))
        for app in data.get("apps", []):
            where = f"apps: {app.get('app_id')!r}"
            _app(gh, app, base_dir)
        for limit in data.get("limits", []):
            where = f"limits: {limit!r}"
            gh.set_limit(limit["pool"], limit["resource"], limit["limit"], limit.get("window"))
        for content in data.get("content_limits", []):
            where = f"content_limits: {content!r}"
            gh.set_content_limits(**content)
        for name, value in data.get("knobs", {}).items():
            where = f"knobs: {name!r}"
            if not hasattr(gh, name) or name.startswith("_") or callable(getattr(gh, name)):
                raise DoubleError(f"no knob {name!r}")
            setattr(gh, name, value)
        for repo in data.get("repos", []):
            where = f"repos: {repo.get('name')!r}"
            _repo(gh, repo)
        for fault in data.get("faults", []):
            where = f"faults: {fault!r}"
            spec = dict(fault)
            gh.fault(spec.pop("kind"), **spec)
    except (DoubleError, KeyError, TypeError, ValueError, AttributeError) as error:
        raise ScenarioError(f"scenario, {where}: {error}") from None


def _product(gh: GitHubDouble, data: dict[str, Any]) -> None:
    """``"enterprise": true`` serves Enterprise Server (limits off unless ``"rate_limits": true``)."""
    for key in ("enterprise", "rate_limits"):
        if key in data and not isinstance(data[key], bool):
            raise DoubleError(f"{key}: expected true or false, not {data[key]!r}")
    if "enterprise" in data:
        gh.enterprise = data["enterprise"]
        gh.rate_limits = not gh.enterprise
    if "rate_limits" in data:
        gh.rate_limits = data["rate_limits"]


def _tokens(gh: GitHubDouble, tokens: Any) -> None:
    if isinstance(tokens, dict):
        for token, user in tokens.items():
            gh.add_token(token, user=user)
        return
    for entry in tokens:
        gh.add_token(entry["token"], user=entry["user"], repos=entry.get("repos"), write=entry.get("write", True))


def _app(gh: GitHubDouble, app: dict[str, Any], base_dir: Path | None) -> None:
    pem = app.get("public_key_pem")
    if pem is None:
        key_file = Path(app["public_key_file"])
        if not key_file.is_absolute() and base_dir is not None:
            key_file = base_dir / key_file
        pem = key_file.read_text(encoding="utf-8")
    gh.add_app(app["app_id"], pem, app.get("slug"))
    for inst in app.get("installations", []):
        gh.add_installation(app["app_id"], inst["installation_id"], inst.get("repos", []), inst.get("account"),
                            inst.get("permissions"))


def _repo(gh: GitHubDouble, repo: dict[str, Any]) -> None:
    name = repo["name"]
    gh.add_repo(name, default_branch=repo.get("default_branch", "main"), private=repo.get("private", False))
    for branch, sha in repo.get("branches", {}).items():
        gh.set_branch(name, branch, sha)
    for pull in repo.get("pulls", []):
        for i in range(1, int(pull.get("repeat", 1)) + 1):
            _pull(gh, name, pull, i)
    _activity(gh, name, repo)


def _people(value: Any, what: str) -> list[str | None]:
    """``3`` (made-up people) or ``["bob", "carol"]``."""
    if isinstance(value, bool) or not isinstance(value, (int, list)):
        raise DoubleError(f"{what}: expected a number or a list of logins, not {value!r}")
    return [None] * value if isinstance(value, int) else [str(v) for v in value]


def _activity(gh: GitHubDouble, name: str, repo: dict[str, Any]) -> None:
    """Repository-level activity: what changes the embedded repository without moving a request."""
    for push in repo.get("pushes", []):
        spec = {"branch": push} if isinstance(push, str) else push
        gh.push_branch(name, spec["branch"], spec.get("sha"))
    for login in _people(repo.get("stars", 0), "stars"):
        gh.star(name, login)
    for owner in _people(repo.get("forks", 0), "forks"):
        gh.fork(name, owner)
    for issue in repo.get("issues", []):
        for i in range(1, int(issue.get("repeat", 1)) + 1):
            number = gh.open_issue(name, issue.get("title", "").replace("{i}", str(i)), issue.get("author"))
            for _ in range(int(issue.get("comments", 0))):
                gh.comment(name, number, author=issue.get("author"))
            state = issue.get("state", "open")
            if state == "closed":
                gh.close_issue(name, number)
            elif state != "open":
                raise DoubleError(f"issue state {state!r}: expected open or closed")


def _pull(gh: GitHubDouble, repo: str, pull: dict[str, Any], i: int) -> None:
    def fill(text: str) -> str:
        return text.replace("{i}", str(i))

    number = gh.open_pr(
        repo,
        head_ref=fill(pull["head_ref"]),
        base=pull.get("base"),
        title=fill(pull.get("title", "")),
        author=pull.get("author", "alice"),
        draft=pull.get("draft", False),
        head_sha=pull.get("head_sha"),
        body=pull.get("body", ""),
    )
    sha = gh.pr(repo, number).head_sha
    for label in pull.get("labels", []):
        gh.add_label(repo, number, label)
    for _ in range(int(pull.get("comments", 0))):
        gh.comment(repo, number, author=pull.get("author"))
    for review in pull.get("reviews", []):
        gh.review(repo, number, review["author"], review["state"], review.get("body", ""))
    for check in pull.get("checks", []):
        gh.add_check_run(repo, sha, check["name"], check.get("status", "completed"), check.get("conclusion", "success"))
    for status in pull.get("statuses", []):
        gh.set_status(repo, sha, status["context"], status["state"], status.get("description"))
    if "mergeable" in pull:
        gh.set_mergeable(repo, number, pull["mergeable"])
    state = pull.get("state", "open")
    if state == "merged":
        gh.merge_pr(repo, number)
    elif state == "closed":
        gh.close_pr(repo, number)
    elif state != "open":
        raise DoubleError(f"pull state {state!r}: expected open, closed or merged")
