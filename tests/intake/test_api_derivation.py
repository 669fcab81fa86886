"""The API follows the remote's host, as gh derives it (issue 31): the pure rule over many URL shapes, then git.

A GitHub Enterprise Server remote with no ``sluice.api`` talks to
``https://HOST/api/v3`` and ``https://HOST/api/graphql``; github.com keeps
``https://api.github.com``; a token from the environment is only read for
the host it belongs to (gh's variables).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_sluice.config import DEFAULT_API, RemoteHost, api_for_host, derive_api, load_settings, remote_host
from git_sluice.forge import origins
from git_sluice.forge.auth import find_token, token_variables, web_host

GHES = ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def derived(url: str, aliases: dict[str, str] | None = None) -> tuple[str, str] | None:
    found = derive_api("origin", [url], lambda alias: (aliases or {}).get(alias))
    return (found.api, found.graphql) if found is not None else None


@pytest.mark.parametrize("url", [
    "https://ghe.example.com/acme/widgets.git",
    "https://ghe.example.com/acme/widgets",
    "https://ghe.example.com/acme/widgets/",
    "https://user@ghe.example.com/acme/widgets.git",
    "https://user:s3cret@ghe.example.com/acme/widgets.git",
    "https://GHE.Example.COM/acme/widgets.git",
    "https://ghe.example.com:443/acme/widgets.git",
    "http://ghe.example.com/acme/widgets.git",  # a token never crosses a network in clear: https
    "git@ghe.example.com:acme/widgets.git",
    "ghe.example.com:acme/widgets.git",
    "ssh://git@ghe.example.com/acme/widgets.git",
    "ssh://git@ghe.example.com:2222/acme/widgets.git",  # ssh's port is sshd's, not the API's
    "git+ssh://git@ghe.example.com/acme/widgets.git",
    "git://ghe.example.com/acme/widgets.git",
])
def test_an_enterprise_server_remote_gives_api_v3_and_api_graphql(url: str) -> None:
    assert derived(url) == GHES


@pytest.mark.parametrize(("url", "api"), [
    ("https://ghe.example.com:8443/acme/widgets.git", "https://ghe.example.com:8443/api/v3"),
    ("https://[2001:db8::1]:8443/acme/widgets.git", "https://[2001:db8::1]:8443/api/v3"),
    ("https://10.1.2.3/acme/widgets.git", "https://10.1.2.3/api/v3"),
    ("http://127.0.0.1:8080/acme/widgets.git", "http://127.0.0.1:8080/api/v3"),  # loopback: http stays
    ("https://octo.ghe.com/acme/widgets.git", "https://api.octo.ghe.com"),  # GHE.com, as gh
])
def test_ports_addresses_and_ghe_com(url: str, api: str) -> None:
    found = derived(url)
    assert found is not None and found[0] == api


@pytest.mark.parametrize("url", [
    "https://github.com/octo/widgets.git", "git@github.com:octo/widgets.git", "ssh://git@github.com/octo/widgets",
    "ssh://git@ssh.github.com:443/octo/widgets.git", "https://www.github.com/octo/widgets", "GIT@GITHUB.COM:o/r",
])
def test_github_com_keeps_api_github_com(url: str) -> None:
    assert derived(url) == (DEFAULT_API, f"{DEFAULT_API}/graphql")


@pytest.mark.parametrize("url", ["/srv/git/widgets.git", "./widgets", "../widgets.git", "file:///srv/widgets.git",
                                 "C:\\repos\\widgets", "", "https:///nohost", "ftp://ghe.example.com/a/b"])
def test_a_local_path_names_no_host(url: str) -> None:
    assert derived(url) is None


def test_an_ssh_alias_is_the_host_ssh_connects_to() -> None:
    """``Host work`` / ``HostName github.com`` in ~/.ssh/config: gh asks ``ssh -G``, so does git-sluice."""
    assert derived("git@work:octo/widgets.git", {"work": "github.com"}) == (DEFAULT_API, f"{DEFAULT_API}/graphql")
    assert derived("git@corp:acme/widgets.git", {"corp": "ghe.example.com"}) == GHES
    found = derive_api("origin", ["git@corp:acme/w.git"], lambda alias: "ghe.example.com")
    assert found is not None and found.origin == "derived from remote origin's host corp (ssh: ghe.example.com)"
    assert derived("https://corp/acme/widgets.git", {"corp": "github.com"}) == (
        "https://corp/api/v3", "https://corp/api/graphql")  # an https host is no ssh alias


_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
HOSTS = st.lists(_LABEL, min_size=2, max_size=4).map(".".join).filter(
    lambda h: h != "github.com" and not h.endswith((".github.com", ".ghe.com")))


def _shapes(host: str, port: int | None, owner: str, name: str) -> list[str]:
    at = f"{host}:{port}" if port else host
    return [f"https://{at}/{owner}/{name}.git", f"https://tok@{at}/{owner}/{name}", f"ssh://git@{at}/{owner}/{name}",
            f"git@{host}:{owner}/{name}.git", f"git://{at}/{owner}/{name}"]


@settings(max_examples=150, deadline=None)
@given(host=HOSTS, port=st.one_of(st.none(), st.integers(1, 65535)),
       owner=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,8}", fullmatch=True),
       name=st.from_regex(r"[A-Za-z0-9._-]{1,12}", fullmatch=True).filter(lambda n: n not in {".", ".."}))
def test_the_api_is_always_on_the_host_the_remote_names(host: str, port: int | None, owner: str, name: str) -> None:
    """Whatever the shape: the token's destination is that host, over https, at the web port or 443."""
    for url in _shapes(host, port, owner, name):
        found = derive_api("origin", [url], lambda alias: None)
        assert found is not None, url
        rest, graphql = origins.split(found.api), origins.split(found.graphql)
        assert rest is not None and graphql is not None
        assert rest[0] == graphql[0] and rest[0].host == host and rest[0].scheme == "https"
        https_port = port if url.startswith("https://") and port else 443
        assert rest[0].port == https_port, url
        assert (rest[1], graphql[1]) == ("/api/v3", "/api/graphql")
        assert token_variables(found.api) == ("GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")


@given(st.text(max_size=60))
def test_any_text_derives_a_usable_endpoint_or_none(text: str) -> None:
    where = remote_host(text)
    if where is not None:
        api, graphql = api_for_host(where)
        assert origins.split(api) is not None and origins.split(graphql) is not None


def test_tokens_go_only_to_the_host_they_belong_to() -> None:
    env = {"GH_TOKEN": "github-token", "GH_ENTERPRISE_TOKEN": "ghes-token"}
    never = lambda *a, **k: (_ for _ in ()).throw(AssertionError("gh must not run"))  # noqa: E731
    assert find_token("https://ghe.example.com/api/v3", env, run=never) == ("ghes-token", "GH_ENTERPRISE_TOKEN")
    assert find_token(DEFAULT_API, env, run=never) == ("github-token", "GH_TOKEN")
    assert find_token("https://api.octo.ghe.com", env, run=never) == ("github-token", "GH_TOKEN")
    assert find_token("http://127.0.0.1:9/api/v3", {"GH_TOKEN": "t"}, run=never) == ("t", "GH_TOKEN")
    assert find_token("http://127.0.0.1:9/api/v3", {"GITHUB_ENTERPRISE_TOKEN": "e"}, run=never) == (
        "e", "GITHUB_ENTERPRISE_TOKEN")
    assert web_host("https://ghe.example.com:8443/api/v3") == "ghe.example.com:8443"
    assert web_host("https://[2001:db8::1]:8443/api/v3") == "[2001:db8::1]:8443"
    assert web_host("https://api.octo.ghe.com") == "octo.ghe.com" and web_host(DEFAULT_API) == "github.com"


def test_a_github_token_is_not_sent_to_an_enterprise_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from git_sluice.forge.auth import no_token_advice

    seen: list[list[str]] = []

    def gh(args: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        seen.append(args)
        return subprocess.CompletedProcess(args, 1, "", "not logged in")

    api = "https://ghe.example.com/api/v3"
    assert find_token(api, {"GH_TOKEN": "github-token"}, run=gh) is None
    if seen:  # gh installed: asked for the Enterprise host, never github.com's token
        assert seen[0][-2:] == ["--hostname", "ghe.example.com"]
    advice = no_token_advice(api, {"GH_TOKEN": "github-token"})
    assert "GH_ENTERPRISE_TOKEN" in advice and "GH_TOKEN is set, but is github.com's token" in advice
    assert "github-token" not in advice


# ------------------------------------------------------------ through git config


@pytest.fixture
def ghes_clone(github_clone: Path) -> Path:
    git(github_clone, "remote", "set-url", "origin", "https://ghe.example.com/acme/widgets.git")
    return github_clone


def test_a_ghes_clone_with_no_sluice_api_derives_it_and_says_so(ghes_clone: Path) -> None:
    s = load_settings(ghes_clone)
    assert (s.api, s.graphql, s.repository) == (*GHES, "acme/widgets")
    assert s.origins["sluice.api"] == (GHES[0], "derived from remote origin's host ghe.example.com")
    assert s.origins["sluice.graphql"] == (GHES[1], "derived from remote origin's host ghe.example.com")


def test_sluice_api_wins_and_is_named_where_set(ghes_clone: Path) -> None:
    git(ghes_clone, "config", "sluice.api", "https://api.other.example/v3")
    s = load_settings(ghes_clone)
    assert s.api == "https://api.other.example/v3" and s.origins["sluice.api"][1] == "local file:.git/config"
    assert s.graphql == "https://api.other.example/v3/graphql" and s.origins["sluice.graphql"][1] == "default"


def test_the_remote_git_sluice_uses_names_the_host(ghes_clone: Path) -> None:
    git(ghes_clone, "remote", "add", "upstream", "git@github.com:acme/widgets.git")
    git(ghes_clone, "update-ref", "refs/remotes/upstream/main", "HEAD")
    assert load_settings(ghes_clone).api == GHES[0]
    git(ghes_clone, "config", "sluice.remote", "upstream")
    s = load_settings(ghes_clone)
    assert s.api == DEFAULT_API and s.origins["sluice.api"][1] == "derived from remote upstream's host github.com"


def test_git_s_own_view_of_the_url_after_insteadof(ghes_clone: Path, tmp_path: Path) -> None:
    git(ghes_clone, "remote", "set-url", "origin", "corp:acme/widgets")
    git(ghes_clone, "config", "url.https://ghe.example.com/.insteadOf", "corp:")
    assert load_settings(ghes_clone).api == GHES[0]
    # rewritten to a local mirror: the URL as written still names the server
    git(ghes_clone, "remote", "set-url", "origin", "https://ghe.example.com/acme/widgets.git")
    git(ghes_clone, "config", "--unset", "url.https://ghe.example.com/.insteadOf")
    git(ghes_clone, "config", f"url.{tmp_path}/mirror/.insteadOf", "https://ghe.example.com/")
    assert load_settings(ghes_clone).api == GHES[0]


def test_a_local_remote_keeps_the_default(github_clone: Path, tmp_path: Path) -> None:
    git(github_clone, "remote", "set-url", "origin", str(tmp_path / "bare.git"))
    git(github_clone, "config", "sluice.repository", "octo/widgets")
    s = load_settings(github_clone)
    assert s.api == DEFAULT_API and s.origins["sluice.api"] == (DEFAULT_API, "default")


def test_remote_host_keeps_only_the_web_port() -> None:
    assert remote_host("https://h.example:8443/o/r") == RemoteHost("https", "h.example", 8443)
    assert remote_host("ssh://h.example:2222/o/r") == RemoteHost("ssh", "h.example", None)
