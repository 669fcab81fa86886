"""End to end: a clone of ``https://ghe.example.com/acme/widgets.git`` with no ``sluice.api`` (issue 31).

The real console script, the GitHub double in Enterprise mode served over
https with a throw-away CA's certificate for ``ghe.example.com``, and
``GIT_SLUICE_TEST_RESOLVE`` connecting ``ghe.example.com:443`` to the
double's loopback port (curl's ``--resolve``: the URL, the Host header, the
TLS name and the certificate check stay ghe.example.com's). The double only
answers under ``/api/v3`` and ``/api/graphql``, and only Enterprise's token,
so every answered call proves the derived address and the token's host.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from git_sluice.double import GitHubDouble, serve
from tests.cliworld import SLUICE
from tests.gitutil import git
from tests.tlsutil import TestCA, make_ca

HOST = "ghe.example.com"


@dataclass
class Ghes:
    gh: GitHubDouble
    ca: TestCA
    work: Path
    env: dict[str, str]

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        full = {k: v for k, v in {**self.env, **env}.items() if v != ""}
        return subprocess.run([SLUICE, *args], cwd=self.work, env=full, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture
def ghes(tmp_path: Path) -> Iterator[Ghes]:
    ca = make_ca(tmp_path / "ca")
    gh = GitHubDouble(enterprise=True)
    gh.add_token("tok-ghes", user="alice")
    gh.add_token("tok-github-com", user="mallory")  # were it ever sent, the ledger would name mallory
    gh.add_repo("acme/widgets")
    bare = tmp_path / "widgets.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    git(work, "commit", "-q", "--allow-empty", "-m", "seed")
    git(work, "remote", "add", "origin", f"https://{HOST}/acme/widgets.git")
    # git itself reaches the remote through a local mirror; the URL as written names the server
    git(work, "config", f"url.{bare}.insteadOf", f"https://{HOST}/acme/widgets.git")
    git(work, "push", "-q", "origin", "main")
    git(work, "fetch", "-q", "origin")
    git(work, "config", "sluice.host", "host-a")
    with serve(gh, tls=ca.server_context([HOST])) as server:
        env = dict(os.environ)
        env.update(
            XDG_STATE_HOME=str(tmp_path / "state"),
            GIT_SLUICE_TEST_RESOLVE=f"{HOST}:443=127.0.0.1:{server.port}",
            SSL_CERT_FILE=str(ca.pem),
            GH_ENTERPRISE_TOKEN="tok-ghes",
            GH_TOKEN="tok-github-com",  # github.com's: never sent to an Enterprise Server (gh's rule)
        )
        yield Ghes(gh, ca, work, env)


def test_the_api_is_derived_from_the_remote_and_only_enterprise_s_token_goes_there(ghes: Ghes) -> None:
    done = ghes.run("api", "repos/acme/widgets")
    assert done.returncode == 0, done.stderr
    assert '"full_name": "acme/widgets"' in done.stdout
    graphql = ghes.run("api", "graphql", "-f", "query={ viewer { login } }")
    assert graphql.returncode == 0 and '"login": "alice"' in graphql.stdout, graphql.stderr
    calls = ghes.gh.calls()
    assert [c.path.split("?")[0] for c in calls if c.path != "/user"] == ["/repos/acme/widgets", "/graphql"]
    assert {c.pool for c in calls} == {"user:alice"}


def test_doctor_says_where_the_api_came_from(ghes: Ghes) -> None:
    done = ghes.run("doctor")
    out = done.stdout
    assert f"https://{HOST}/api/v3 (derived from remote origin's host {HOST})" in out, out
    assert f"https://{HOST}/api/graphql (derived from remote origin's host {HOST})" in out
    assert "from GH_ENTERPRISE_TOKEN" in out and "the token reads acme/widgets" in out, out
    assert "tok-ghes" not in out + done.stderr


def test_an_untrusted_ca_is_told_and_the_fix_works_at_once(ghes: Ghes) -> None:
    untrusted = ghes.run("api", "repos/acme/widgets", SSL_CERT_FILE="")
    assert untrusted.returncode != 0
    said = untrusted.stderr
    assert f"the certificate of {HOST} is not trusted" in said and "SSL_CERT_FILE" in said, said
    assert "Traceback" not in said and "connection refused" not in said
    assert ghes.gh.requests() == 0
    fixed = ghes.run("api", "repos/acme/widgets")  # not remembered: the next process asks at once
    assert fixed.returncode == 0, fixed.stderr


def test_a_name_that_does_not_resolve_is_said_plainly(ghes: Ghes) -> None:
    git(ghes.work, "remote", "set-url", "origin", "https://ghe.invalid/acme/widgets.git")
    done = ghes.run("api", "repos/acme/widgets", GIT_SLUICE_TEST_RESOLVE="")
    assert done.returncode != 0
    assert "the name ghe.invalid does not resolve" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_with_a_refused_key_doctor_still_looks_for_the_token_of_the_derived_host(ghes: Ghes) -> None:
    git(ghes.work, "config", "sluice.discovery", "1s")  # refused: below the floor
    done = ghes.run("doctor")
    assert "fail  config sluice.discovery" in done.stdout, done.stdout
    assert "ok    token: from GH_ENTERPRISE_TOKEN (not shown)" in done.stdout, done.stdout


def test_doctor_names_the_host_that_does_not_resolve(ghes: Ghes) -> None:
    git(ghes.work, "remote", "set-url", "origin", "https://ghe.invalid/acme/widgets.git")
    git(ghes.work, "config", f"url.{ghes.work}/../widgets.git.insteadOf", "https://ghe.invalid/acme/widgets.git")
    done = ghes.run("doctor", GIT_SLUICE_TEST_RESOLVE="")
    line = next(line for line in done.stdout.splitlines() if line.startswith("fail  token access"))
    assert "the name ghe.invalid does not resolve" in line and "When GitHub cannot be reached" in line, line


def test_a_server_with_no_rate_limit_is_said_plainly_with_what_was_counted(ghes: Ghes) -> None:
    """Issue 31: no ``[????…] ?/?`` bar, no "used ? / ?": the server reports no limit; what was counted still shows."""
    assert ghes.run("intake").returncode == 0
    status = ghes.run("status").stdout
    core = next(line for line in status.splitlines() if " core " in line)
    assert "no limit: this server reports none (rate limiting off); counted here last hour:" in core, status
    assert "?" not in status, status
    doctor = ghes.run("doctor").stdout
    budget = [line for line in doctor.splitlines() if line.startswith("ok    budget ")]
    assert budget and all("no limit: this server reports none" in line for line in budget), doctor
    assert "counted here in the last hour" in budget[0] and "used ? / ?" not in doctor
    projected = next(line for line in doctor.splitlines() if "projected hourly spend core" in line)
    assert projected.endswith("; this server reports no limit"), projected  # not "0% of 5000 (assumed…)"
