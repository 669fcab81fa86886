"""GitHub's REST JSON for the double's objects.

Shaped after GitHub's answers for the fields a client reads (number, state,
title, user.login, head/base, draft, labels, times, mergeable, html_url,
node_id …). As on GitHub, ``mergeable`` and ``merged`` appear only on a
single pull request, not in the list.
"""

from __future__ import annotations

from typing import Any

from .model import (
    CheckRun,
    CommitStatus,
    Installation,
    Issue,
    IssueComment,
    PullRequest,
    Repo,
    User,
    World,
    fake_sha,
    node_id,
)
from .timefmt import rfc3339


def _t(epoch: int | None) -> str | None:
    return rfc3339(epoch) if epoch is not None else None


def user_json(api: str, html: str, user: User | None, login: str) -> dict[str, Any]:
    """GitHub's "simple user", every field its schema requires."""
    uid = user.id if user else 0
    url = f"{api}/users/{login}"
    return {
        "login": login,
        "id": uid,
        "node_id": user.node_id if user else node_id("U", "user", login),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"{html}/{login}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": "Bot" if login.endswith("[bot]") else "User",  # an App installation writes as SLUG[bot]
        "site_admin": False,
    }


def public_user_json(api: str, html: str, user: User) -> dict[str, Any]:
    """``GET /users/{login}`` and ``GET /user``: the simple user and the profile around it."""
    return {
        **user_json(api, html, user, user.login),
        "name": user.login,
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "twitter_username": None,
        "public_repos": 0,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": _t(0),
        "updated_at": _t(0),
    }


def private_user_json(api: str, html: str, user: User) -> dict[str, Any]:
    """``GET /user``: the public profile and what only its owner sees."""
    return {
        **public_user_json(api, html, user),
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "disk_usage": 0,
        "collaborators": 0,
        "two_factor_authentication": True,
        "plan": {"name": "free", "space": 976562499, "collaborators": 0, "private_repos": 10000},
    }


_REPO_TEMPLATES = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}


def repo_json(api: str, html: str, repo: Repo, owner: User | None) -> dict[str, Any]:
    """The whole repository, as GitHub embeds it in pull requests and the combined status.

    Its counters and ``pushed_at`` are why unrelated activity (a push to
    another branch, a star, a fork, an issue) changes every body that embeds it.
    """
    url = f"{api}/repos/{repo.full_name}"
    host = html.split("://", 1)[-1]
    stars, forks, issues = len(repo.stargazers), len(repo.forks), repo.open_issues_count
    return {
        "id": repo.id,
        "node_id": repo.node_id,
        "name": repo.name,
        "full_name": repo.full_name,
        "private": repo.private,
        "owner": user_json(api, html, owner, repo.owner),
        "html_url": f"{html}/{repo.full_name}",
        "description": None,
        "fork": repo.parent is not None,
        "url": url,
        **{key: url + suffix for key, suffix in _REPO_TEMPLATES.items()},
        "git_url": f"git://{host}/{repo.full_name}.git",
        "ssh_url": f"git@{host}:{repo.full_name}.git",
        "clone_url": f"{html}/{repo.full_name}.git",
        "svn_url": f"{html}/{repo.full_name}",
        "mirror_url": None,
        "homepage": None,
        "language": None,
        "size": repo.size,
        "stargazers_count": stars,
        "watchers_count": stars,
        "forks_count": forks,
        "open_issues_count": issues,
        "forks": forks,
        "open_issues": issues,
        "watchers": stars,
        "default_branch": repo.default_branch,
        "visibility": "private" if repo.private else "public",
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": True,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "license": None,
        "created_at": _t(repo.created_at),
        "updated_at": _t(repo.updated_at),
        "pushed_at": _t(repo.pushed_at),
    }


def full_repo_json(api: str, html: str, repo: Repo, owner: User | None, parent: Repo | None,
                   parent_owner: User | None) -> dict[str, Any]:
    """``GET /repos/{o}/{r}``: the embedded form plus what only the single repository carries."""
    out = repo_json(api, html, repo, owner)
    out.update({"network_count": len(repo.forks), "subscribers_count": 0})
    if parent is not None:
        out["parent"] = out["source"] = repo_json(api, html, parent, parent_owner)
    return out


def _label_json(api: str, repo: Repo, name: str) -> dict[str, Any]:
    return {
        "id": int(fake_sha(repo.full_name, "label", name)[:7], 16),
        "node_id": node_id("LA", repo.full_name, name),
        "url": f"{api}/repos/{repo.full_name}/labels/{name}",
        "name": name,
        "color": "ededed",
        "default": False,
        "description": "",
    }


def _ref_json(api: str, html: str, repo: Repo, owner: User | None, ref: str, sha: str) -> dict[str, Any]:
    return {
        "label": f"{repo.owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user_json(api, html, owner, repo.owner),
        "repo": repo_json(api, html, repo, owner),
    }


def pr_json(
    api: str,
    html: str,
    repo: Repo,
    pr: PullRequest,
    users: dict[str, User],
    full: bool,
) -> dict[str, Any]:
    owner = users.get(repo.owner)
    base_url = f"{api}/repos/{repo.full_name}"
    out: dict[str, Any] = {
        "url": f"{base_url}/pulls/{pr.number}",
        "id": pr.id,
        "node_id": pr.node_id,
        "html_url": f"{html}/{repo.full_name}/pull/{pr.number}",
        "diff_url": f"{html}/{repo.full_name}/pull/{pr.number}.diff",
        "patch_url": f"{html}/{repo.full_name}/pull/{pr.number}.patch",
        "issue_url": f"{base_url}/issues/{pr.number}",
        "commits_url": f"{base_url}/pulls/{pr.number}/commits",
        "review_comments_url": f"{base_url}/pulls/{pr.number}/comments",
        "review_comment_url": f"{base_url}/pulls/comments{{/number}}",
        "comments_url": f"{base_url}/issues/{pr.number}/comments",
        "statuses_url": f"{base_url}/statuses/{pr.head_sha}",
        "number": pr.number,
        "state": pr.state,
        "locked": False,
        "title": pr.title,
        "user": user_json(api, html, users.get(pr.author), pr.author),
        "body": pr.body,
        "labels": [_label_json(api, repo, name) for name in pr.labels],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": _t(pr.created_at),
        "updated_at": _t(pr.updated_at),
        "closed_at": _t(pr.closed_at),
        "merged_at": _t(pr.merged_at),
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": _ref_json(api, html, repo, owner, pr.head_ref, pr.head_sha),
        "base": _ref_json(api, html, repo, owner, pr.base, repo.branch_sha(pr.base)),
        "_links": {
            "self": {"href": f"{base_url}/pulls/{pr.number}"},
            "html": {"href": f"{html}/{repo.full_name}/pull/{pr.number}"},
            "issue": {"href": f"{base_url}/issues/{pr.number}"},
            "comments": {"href": f"{base_url}/issues/{pr.number}/comments"},
            "review_comments": {"href": f"{base_url}/pulls/{pr.number}/comments"},
            "review_comment": {"href": f"{base_url}/pulls/comments{{/number}}"},
            "commits": {"href": f"{base_url}/pulls/{pr.number}/commits"},
            "statuses": {"href": f"{base_url}/statuses/{pr.head_sha}"},
        },
        "author_association": "CONTRIBUTOR",
        "auto_merge": None,
        "draft": pr.draft,
    }
    if full:
        mergeable = {"MERGEABLE": True, "CONFLICTING": False}.get(pr.mergeable)
        out.update(
            {
                "merged": pr.merged,
                "mergeable": mergeable,
                "rebaseable": mergeable,
                "mergeable_state": {"MERGEABLE": "clean", "CONFLICTING": "dirty"}.get(pr.mergeable, "unknown"),
                "merged_by": None,
                "comments": pr.comments,
                "review_comments": 0,
                "maintainer_can_modify": False,
                "commits": len(pr.commits),
                "additions": 0,
                "deletions": 0,
                "changed_files": 0,
            }
        )
    return out


def issue_json(api: str, html: str, repo: Repo, pr: PullRequest, users: dict[str, User]) -> dict[str, Any]:
    """A pull request as the search API shows it: an issue with a ``pull_request`` key."""
    base_url = f"{api}/repos/{repo.full_name}"
    return {
        "url": f"{base_url}/issues/{pr.number}",
        "repository_url": base_url,
        "labels_url": f"{base_url}/issues/{pr.number}/labels{{/name}}",
        "comments_url": f"{base_url}/issues/{pr.number}/comments",
        "events_url": f"{base_url}/issues/{pr.number}/events",
        "html_url": f"{html}/{repo.full_name}/pull/{pr.number}",
        "id": pr.id,
        "node_id": pr.node_id,
        "number": pr.number,
        "title": pr.title,
        "user": user_json(api, html, users.get(pr.author), pr.author),
        "labels": [_label_json(api, repo, name) for name in pr.labels],
        "state": pr.state,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "author_association": "CONTRIBUTOR",
        "comments": pr.comments,
        "created_at": _t(pr.created_at),
        "updated_at": _t(pr.updated_at),
        "closed_at": _t(pr.closed_at),
        "draft": pr.draft,
        "pull_request": {
            "url": f"{base_url}/pulls/{pr.number}",
            "html_url": f"{html}/{repo.full_name}/pull/{pr.number}",
            "diff_url": f"{html}/{repo.full_name}/pull/{pr.number}.diff",
            "patch_url": f"{html}/{repo.full_name}/pull/{pr.number}.patch",
            "merged_at": _t(pr.merged_at),
        },
        "body": pr.body,
        "score": 1.0,
    }


def check_run_json(api: str, html: str, repo: Repo, run: CheckRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "node_id": node_id("CR", repo.full_name, run.id),
        "head_sha": run.head_sha,
        "external_id": "",
        "url": f"{api}/repos/{repo.full_name}/check-runs/{run.id}",
        "html_url": f"{html}/{repo.full_name}/runs/{run.id}",
        "details_url": f"{html}/{repo.full_name}/runs/{run.id}",
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": _t(run.started_at),
        "completed_at": _t(run.completed_at),
        "output": {
            "title": None,
            "summary": None,
            "text": None,
            "annotations_count": 0,
            "annotations_url": f"{api}/repos/{repo.full_name}/check-runs/{run.id}/annotations",
        },
        "name": run.name,
        "check_suite": {"id": run.id},
        "app": app_json(api, html, 15368, "github-actions", "GitHub Actions", "github"),
        "pull_requests": [],
    }


def app_json(api: str, html: str, app_id: int, slug: str, name: str, owner: str) -> dict[str, Any]:
    """A GitHub App as GitHub shows it (``GET /app``, a check run's ``app``)."""
    return {
        "id": app_id,
        "slug": slug,
        "node_id": node_id("A", "app", app_id),
        "client_id": f"Iv1.{fake_sha('app', app_id)[:16]}",
        "owner": {**user_json(api, html, None, owner), "type": "Organization"},
        "name": name,
        "description": None,
        "external_url": f"{html}/apps/{slug}",
        "html_url": f"{html}/apps/{slug}",
        "created_at": _t(0),
        "updated_at": _t(0),
        "permissions": {"checks": "read", "metadata": "read", "pull_requests": "read", "statuses": "read"},
        "events": [],
    }


def status_json(api: str, repo: Repo, sha: str, status: CommitStatus) -> dict[str, Any]:
    return {
        "url": f"{api}/repos/{repo.full_name}/statuses/{sha}",
        "avatar_url": "https://avatars.githubusercontent.com/u/0?v=4",
        "id": status.id,
        "node_id": node_id("SC", repo.full_name, status.id),
        "state": status.state,
        "description": status.description,
        "target_url": status.target_url,
        "context": status.context,
        "created_at": _t(status.created_at),
        "updated_at": _t(status.updated_at),
    }


def installation_json(api: str, inst: Installation) -> dict[str, Any]:
    return {
        "id": inst.installation_id,
        "app_id": inst.app_id,
        "account": {"login": inst.account, "type": "Organization"},
        "repository_selection": "selected",
        "access_tokens_url": f"{api}/app/installations/{inst.installation_id}/access_tokens",
        "repositories_url": f"{api}/installation/repositories",
        "permissions": dict(inst.permissions),
        "events": [],
        "target_type": "Organization",
    }


def comment_json(api: str, html: str, repo: Repo, target: PullRequest | Issue, comment: IssueComment,
                 world: World) -> dict[str, Any]:
    """An issue comment as GitHub answers its creation and lists it (``issue_url`` also for a pull request:
    on GitHub every pull request is an issue, and its comments are the issue's)."""
    base_url = f"{api}/repos/{repo.full_name}"
    kind = "pull" if isinstance(target, PullRequest) else "issues"
    app = world.apps.get(comment.app_id) if comment.app_id is not None else None
    via = None
    if app is not None:
        owner = next((i.account for i in world.installations.values() if i.app_id == app.app_id), app.slug)
        via = app_json(api, html, app.app_id, app.slug, app.slug, owner)
    return {
        "id": comment.id,
        "node_id": comment.node_id,
        "url": f"{base_url}/issues/comments/{comment.id}",
        "html_url": f"{html}/{repo.full_name}/{kind}/{target.number}#issuecomment-{comment.id}",
        "body": comment.body,
        "user": user_json(api, html, world.users.get(comment.author), comment.author),
        "created_at": _t(comment.created_at),
        "updated_at": _t(comment.updated_at),
        "issue_url": f"{base_url}/issues/{target.number}",
        "author_association": "OWNER" if comment.author == repo.owner else "CONTRIBUTOR",
        "performed_via_github_app": via,
        "reactions": {
            "url": f"{base_url}/issues/comments/{comment.id}/reactions",
            "total_count": 0,
            "+1": 0,
            "-1": 0,
            "laugh": 0,
            "hooray": 0,
            "confused": 0,
            "heart": 0,
            "rocket": 0,
            "eyes": 0,
        },
    }
