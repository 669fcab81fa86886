"""Configuration: git config at any level -> validated Settings, bad values refused (exit 2)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pytest_git import GitRepo

from git_sluice.config import (
    KNOWN_KEYS,
    TEST_MIN_DISCOVERY_ENV,
    NotARepository,
    graphql_from_api,
    is_loopback_url,
    load_settings,
    redact_url,
    repository_from_url,
    sanitise_host,
)
from git_sluice.durations import format_duration, parse_duration
from git_sluice.errors import ConfigError

SHA = "1" * 40


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(github_clone: Path) -> Path:
    """A clone-like repository (no network) that also knows origin/release/2.x."""
    git(github_clone, "update-ref", "refs/remotes/origin/release/2.x", "HEAD")
    return github_clone


def cfg(repo: Path, key: str, value: str, *extra: str) -> None:
    git(repo, "config", *extra, key, value)


# ------------------------------------------------------------------ durations


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("1h30m15s", 5415.0),
        ("2m30s", 150.0),
        ("120", 120.0),
        ("0.5", 0.5),
        ("1.5s", 1.5),
        (" 10s ", 10.0),
        ("0", 0.0),
    ],
)
def test_parse_duration_accepts(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "5x", "5mm", "30m1h", "1m1m", "-5s", "s", "h", "1 h", "5 m", "1d"])
def test_parse_duration_refuses_with_the_accepted_form(text: str) -> None:
    with pytest.raises(ValueError, match="90s, 5m, 1h"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (0.5, "0.5 s"),
        (45, "45 s"),
        (60, "1 min"),
        (90, "1 min 30 s"),
        (3600, "1 h"),
        (3725, "1 h 2 min"),
        (86400 + 7200, "1 d 2 h"),
        (-90, "-1 min 30 s"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


# --------------------------------------------------------------- URL helpers


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/octo/widgets",
        "https://github.com/octo/widgets.git",
        "https://github.com/octo/widgets/",
        "https://github.com/octo/widgets.git/",
        "http://github.com/octo/widgets",
        "https://x-access-token:secret@github.com/octo/widgets.git",
        "ssh://git@github.com/octo/widgets.git",
        "ssh://git@github.com:22/octo/widgets",
        "git://github.com/octo/widgets.git",
        "git@github.com:octo/widgets.git",
        "git@github.com:octo/widgets",
        "github.com:octo/widgets.git",
        "git@ghe.example.com:octo/widgets.git",
        "https://ghe.example.com/octo/widgets.git",
    ],
)
def test_repository_from_url_forms(url: str) -> None:
    assert repository_from_url(url) == "octo/widgets"


def test_repository_from_url_keeps_dots_in_names() -> None:
    assert repository_from_url("git@github.com:octo/widgets.js.git") == "octo/widgets.js"
    assert repository_from_url("https://github.com/my-org/.github") == "my-org/.github"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "/srv/git/widgets.git",
        "../widgets",
        "file:///srv/git/octo/widgets.git",
        "https://gitlab.com/group/sub/project.git",
        "https://github.com/octo",
        "https://github.com/",
        "git@github.com:widgets.git",
    ],
)
def test_repository_from_url_none(url: str) -> None:
    assert repository_from_url(url) is None


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8080", True),
        ("http://127.3.4.5/api", True),
        ("http://[::1]:9000/", True),
        ("http://localhost:1234", True),
        ("http://LOCALHOST", True),
        ("http://10.0.0.1", False),
        ("http://example.com", False),
        ("http://127.0.0.1.example.com", False),
        ("http://evil.localhost", False),
        ("http://localhost.evil", False),
        ("not a url", False),
    ],
)
def test_is_loopback_url(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback


@pytest.mark.parametrize(
    ("api", "graphql"),
    [
        ("https://api.github.com", "https://api.github.com/graphql"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"),
        ("http://127.0.0.1:8765", "http://127.0.0.1:8765/graphql"),
        ("http://127.0.0.1:8765/api/v3", "http://127.0.0.1:8765/api/graphql"),
    ],
)
def test_graphql_from_api(api: str, graphql: str) -> None:
    assert graphql_from_api(api) == graphql


def test_redact_url_hides_credentials() -> None:
    assert "secret" not in redact_url("https://user:secret@github.com/o/r")
    assert redact_url("https://github.com/o/r") == "https://github.com/o/r"


def test_sanitise_host() -> None:
    assert sanitise_host("build box#3.example") == "build-box-3.example"
    assert sanitise_host("..--") == "localhost"
    assert len(sanitise_host("a" * 200)) == 63


# ------------------------------------------------------------------- defaults


def test_defaults(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket  # config imports it where it asks the host name (issue 15)

    monkeypatch.setattr(socket, "gethostname", lambda: "ci runner\n7")
    settings = load_settings(repo)
    assert settings.remote == "origin"
    assert settings.branches == ("main",)
    assert settings.discovery == 60.0
    assert settings.lease == 300.0
    assert settings.host == "ci-runner-7"
    assert settings.repository == "octo/widgets"
    assert (settings.owner, settings.name) == ("octo", "widgets")
    assert settings.api == "https://api.github.com"
    assert settings.graphql == "https://api.github.com/graphql"
    assert (settings.app_id, settings.app_key_file, settings.installation) == (None, None, None)
    assert settings.enforce is True
    assert set(settings.origins) == set(KNOWN_KEYS)
    derived = "derived from remote origin's host github.com"
    assert {key: origin for key, (_, origin) in settings.origins.items() if origin != "default"} == {
        "sluice.api": derived, "sluice.graphql": derived}
    assert settings.origins["sluice.discovery"] == ("60s", "default")


def test_every_key_set(repo: Path, tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text("-----BEGIN RSA PRIVATE KEY-----\n")
    git(repo, "remote", "add", "upstream", "git@github.com:other/thing.git")
    git(repo, "update-ref", "refs/remotes/upstream/trunk", git(repo, "rev-parse", "HEAD"))
    for k, v in [
        ("sluice.remote", "upstream"),
        ("sluice.discovery", "90s"),
        ("sluice.lease", "1h30m"),
        ("sluice.host", "build-7.example"),
        ("sluice.repository", "acme/rockets"),
        ("sluice.api", "https://ghe.example.com/api/v3/"),
        ("sluice.appId", "12345"),
        ("sluice.appKeyFile", str(key)),
        ("sluice.installation", "987"),
        ("sluice.enforce", "off"),
    ]:
        cfg(repo, k, v)
    cfg(repo, "sluice.branch", "trunk", "--add")
    settings = load_settings(repo)
    assert settings.remote == "upstream"
    assert settings.branches == ("trunk",)
    assert settings.discovery == 90.0
    assert settings.lease == 5400.0
    assert settings.host == "build-7.example"
    assert settings.repository == "acme/rockets"
    assert settings.api == "https://ghe.example.com/api/v3"
    assert settings.graphql == "https://ghe.example.com/api/graphql"
    assert (settings.app_id, settings.app_key_file, settings.installation) == ("12345", str(key), "987")
    assert settings.enforce is False
    assert settings.origins["sluice.discovery"] == ("90s", "local file:.git/config")


def test_repository_from_upstream_remote_url(repo: Path) -> None:
    git(repo, "remote", "add", "upstream", "git@github.com:other/thing.git")
    git(repo, "update-ref", "refs/remotes/upstream/main", git(repo, "rev-parse", "HEAD"))
    cfg(repo, "sluice.remote", "upstream")
    assert load_settings(repo).repository == "other/thing"


def test_insteadof_rewrite_is_followed(repo: Path) -> None:
    git(repo, "remote", "set-url", "origin", "gh:octo/gadgets")
    cfg(repo, "url.git@github.com:.insteadOf", "gh:")
    assert load_settings(repo).repository == "octo/gadgets"


def test_url_as_written_counts_when_insteadof_points_at_a_local_mirror(repo: Path, tmp_path: Path) -> None:
    cfg(repo, f"url.{tmp_path}/mirror.git.insteadOf", "https://github.com/octo/widgets.git")
    assert load_settings(repo).repository == "octo/widgets"


def test_remote_url_naming_no_repository_needs_sluice_repository(repo: Path, tmp_path: Path) -> None:
    git(repo, "remote", "set-url", "origin", str(tmp_path / "bare.git"))
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    assert caught.value.key == "sluice.repository"
    assert "owner/name" in str(caught.value)
    cfg(repo, "sluice.repository", "octo/widgets")
    assert load_settings(repo).repository == "octo/widgets"


def test_credentials_in_remote_url_never_reach_the_message(repo: Path) -> None:
    git(repo, "remote", "set-url", "origin", "https://user:s3cr3t-token@example.com/a/b/c")
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    assert "s3cr3t-token" not in str(caught.value)


def test_global_level_and_local_override(repo: Path) -> None:
    git(repo, "config", "--global", "sluice.discovery", "2m")
    settings = load_settings(repo)
    assert settings.discovery == 120.0
    value, origin = settings.origins["sluice.discovery"]
    assert value == "120s" and origin.startswith("global file:")
    cfg(repo, "sluice.discovery", "30s")
    settings = load_settings(repo)
    assert settings.discovery == 30.0
    assert settings.origins["sluice.discovery"][1].startswith("local ")


def test_worktree_and_command_line_levels(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg(repo, "extensions.worktreeConfig", "true")
    git(repo, "config", "--worktree", "sluice.lease", "10m")
    settings = load_settings(repo)
    assert settings.lease == 600.0
    assert settings.origins["sluice.lease"][1].startswith("worktree ")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "sluice.lease")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "15m")
    settings = load_settings(repo)
    assert settings.lease == 900.0
    assert settings.origins["sluice.lease"][1] == "the command line: git -c or GIT_CONFIG_*"  # never "command command line:"


def test_enforce_git_booleans(repo: Path) -> None:
    for text, expected in [("yes", True), ("0", False), ("false", False), ("ON", True), ("2", True)]:
        cfg(repo, "sluice.enforce", text)
        assert load_settings(repo).enforce is expected, text
    # a key written without "=" is git's true
    with open(repo / ".git" / "config", "a") as fh:
        fh.write("[sluice]\n\tenforce\n")
    assert load_settings(repo).enforce is True


def test_loopback_http_api_is_accepted(repo: Path) -> None:
    cfg(repo, "sluice.api", "http://127.0.0.1:8765/")
    settings = load_settings(repo)
    assert settings.api == "http://127.0.0.1:8765"
    assert settings.graphql == "http://127.0.0.1:8765/graphql"
    cfg(repo, "sluice.graphql", "http://[::1]:9/gql")
    assert load_settings(repo).graphql == "http://[::1]:9/gql"


def test_branches_multi_valued(repo: Path) -> None:
    for name in ("main", "refs/heads/release/2.x", "main"):
        cfg(repo, "sluice.branch", name, "--add")
    settings = load_settings(repo)
    assert settings.branches == ("main", "release/2.x")
    assert settings.origins["sluice.branch"][0] == "main, release/2.x"


def test_relative_app_key_file_is_found_from_the_repository(repo: Path) -> None:
    (repo / "key.pem").write_text("x")
    cfg(repo, "sluice.appId", "1")
    cfg(repo, "sluice.appKeyFile", "key.pem")
    assert load_settings(repo).app_key_file == str((repo / "key.pem").resolve())


# ----------------------------------------------------------------- bad values

BAD = [
    ("sluice.discovery", "5s", "at least 10s (90s, 5m, 1h or seconds)"),
    ("sluice.discovery", "abc", "at least 10s"),
    ("sluice.discovery", "9.5", "at least 10s"),
    ("sluice.lease", "5s", "at least 60s"),
    ("sluice.lease", "59s", "at least 60s"),
    ("sluice.lease", "5 minutes", "at least 60s"),
    ("sluice.repository", "widgets", "owner/name"),
    ("sluice.repository", "a/b/c", "owner/name"),
    ("sluice.repository", "-bad/name", "owner/name"),
    ("sluice.api", "http://example.com", "https://"),
    ("sluice.api", "ftp://example.com", "https://"),
    ("sluice.api", "https://", "https://"),
    ("sluice.api", "https://example.com/?x=1", "without a query"),
    ("sluice.graphql", "http://10.0.0.1/graphql", "https://"),
    ("sluice.enforce", "maybe", "a git boolean"),
    ("sluice.host", "bad host!", "a host name"),
    ("sluice.host", "", "a host name"),
    ("sluice.remote", "upstream", "a configured git remote (known: origin)"),
    ("sluice.remote", "", "a git remote"),
    ("sluice.appId", "abc", "numeric id"),
    ("sluice.installation", "x1", "numeric id"),
    ("sluice.branch", "nope", "a branch of remote 'origin' (known here: main, release/2.x)"),
    ("sluice.branch", "bad..name", "a branch name"),
]


@pytest.mark.parametrize(("key", "value", "form"), BAD, ids=[f"{k}={v}" for k, v, _ in BAD])
def test_bad_value_is_refused_naming_key_and_form(repo: Path, key: str, value: str, form: str) -> None:
    cfg(repo, key, value)
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    error = caught.value
    assert error.exit_code == 2
    assert error.key == key
    message = str(error)
    assert message.startswith(f"{key}=")
    assert form in message


def test_discovery_message_exactly(repo: Path) -> None:
    cfg(repo, "sluice.discovery", "5s")
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    assert str(caught.value) == "sluice.discovery=5s: expected a duration of at least 10s (90s, 5m, 1h or seconds)"


def test_credentials_in_api_url_are_refused_and_not_shown(repo: Path) -> None:
    cfg(repo, "sluice.api", "https://me:ghp_secret@ghe.example.com/api/v3")
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    assert "ghp_secret" not in str(caught.value)
    assert caught.value.key == "sluice.api"


def test_unknown_key_lists_known_keys_without_echoing_the_value(repo: Path) -> None:
    cfg(repo, "sluice.discovry", "ghp_pasted_token")
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    message = str(caught.value)
    assert caught.value.key == "sluice.discovry"
    assert "ghp_pasted_token" not in message
    for key in KNOWN_KEYS:
        assert key in message


def test_keys_are_case_insensitive_like_git(repo: Path) -> None:
    cfg(repo, "sluice.APPID", "77")
    (repo / "k.pem").write_text("x")
    cfg(repo, "sluice.appkeyfile", "k.pem")
    assert load_settings(repo).app_id == "77"


@pytest.mark.parametrize(
    ("present", "missing_key"),
    [
        ({"sluice.appId": "1"}, "sluice.appKeyFile"),
        ({"sluice.appKeyFile": "KEY"}, "sluice.appId"),
        ({"sluice.installation": "5"}, "sluice.appId"),
    ],
)
def test_app_settings_are_all_or_nothing(repo: Path, present: dict[str, str], missing_key: str) -> None:
    (repo / "key.pem").write_text("x")
    for key, value in present.items():
        cfg(repo, key, str(repo / "key.pem") if value == "KEY" else value)
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    assert caught.value.key == missing_key


def test_missing_app_key_file(repo: Path) -> None:
    cfg(repo, "sluice.appId", "1")
    cfg(repo, "sluice.appKeyFile", "~/nowhere.pem")
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    assert caught.value.key == "sluice.appKeyFile"
    assert "no file is there" in str(caught.value)


def test_broken_config_file_is_a_config_error(repo: Path) -> None:
    with open(repo / ".git" / "config", "a") as fh:
        fh.write("[sluice\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    assert caught.value.exit_code == 2


def test_not_a_repository(tmp_path: Path) -> None:
    empty = tmp_path / "plain"
    empty.mkdir()
    with pytest.raises(NotARepository) as caught:
        load_settings(empty)
    assert caught.value.exit_code == 2


# ------------------------------------------------------------ test-only floor


def test_test_floor_env_lowers_the_floor(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg(repo, "sluice.discovery", "1")
    cfg(repo, "sluice.lease", "3s")
    with pytest.raises(ConfigError):
        load_settings(repo)
    monkeypatch.setenv(TEST_MIN_DISCOVERY_ENV, "0.5")
    settings = load_settings(repo)
    assert (settings.discovery, settings.lease) == (1.0, 3.0)
    cfg(repo, "sluice.discovery", "0.2")
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    assert "at least 0.5s" in str(caught.value)


def test_test_floor_env_never_raises_the_floor(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEST_MIN_DISCOVERY_ENV, "1h")
    cfg(repo, "sluice.discovery", "10s")
    assert load_settings(repo).discovery == 10.0


def test_test_floor_env_garbage_is_refused(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEST_MIN_DISCOVERY_ENV, "soon")
    with pytest.raises(ConfigError) as caught:
        load_settings(repo)
    assert caught.value.key == TEST_MIN_DISCOVERY_ENV


# ----------------------------------------------- default branch, real remote


@pytest.fixture
def bare_remote(tmp_path: Path, git_repo: GitRepo) -> Path:
    """A bare remote whose default branch is 'trunk', with 'trunk' and 'feature/x' (seeded in pytest-git's repository)."""
    seed = Path(git_repo.workspace)
    git(seed, "symbolic-ref", "HEAD", "refs/heads/trunk")
    git(seed, "commit", "-q", "--allow-empty", "-m", "root")
    git(seed, "branch", "feature/x")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    return bare


def test_default_branch_from_remote_head(tmp_path: Path, bare_remote: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare_remote), str(clone))
    cfg(clone, "sluice.repository", "octo/widgets")
    assert load_settings(clone).branches == ("trunk",)
    git(clone, "remote", "set-head", "origin", "feature/x")
    assert load_settings(clone).branches == ("feature/x",)


def test_default_branch_falls_back_to_main_then_master(tmp_path: Path, bare_remote: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    git(work, "init", "-q")
    git(work, "remote", "add", "origin", str(bare_remote))
    git(work, "fetch", "-q", "origin")  # no origin/HEAD after a plain fetch
    cfg(work, "sluice.repository", "octo/widgets")
    assert git(work, "for-each-ref", "refs/remotes/origin/HEAD") == ""
    with pytest.raises(ConfigError) as caught:
        load_settings(work)
    assert caught.value.key == "sluice.branch"
    assert "feature/x, trunk" in str(caught.value)
    assert load_settings(work, need_branches=False).branches == ()
    head = git(work, "rev-parse", "refs/remotes/origin/trunk")
    git(work, "update-ref", "refs/remotes/origin/master", head)
    assert load_settings(work).branches == ("master",)
    git(work, "update-ref", "refs/remotes/origin/main", head)
    assert load_settings(work).branches == ("main",)


def test_no_remote_tracking_refs_at_all(tmp_path: Path, bare_remote: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    git(work, "init", "-q")
    git(work, "remote", "add", "origin", "git@github.com:octo/widgets.git")
    with pytest.raises(ConfigError) as caught:
        load_settings(work)
    assert caught.value.key == "sluice.branch"
    assert "git fetch origin" in str(caught.value)


def test_unknown_branch_with_need_branches_false_is_kept(repo: Path) -> None:
    cfg(repo, "sluice.branch", "not-fetched-yet")
    assert load_settings(repo, need_branches=False).branches == ("not-fetched-yet",)
