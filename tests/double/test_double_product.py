"""git-sluice against the harder double: what changed in GitHub's answers still reads right.

A 304 carries no Link (GitHub's), so a product that paged a confirmed list by
the 304's own headers would stop after page one; git-sluice pages with the
Link of its kept answer. An Enterprise Server with rate limiting off sends no
rate headers and answers ``rateLimit`` null; a round still takes requests in.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_sluice.clock import FakeClock
from git_sluice.runtime.session import Session, open_session
from git_sluice.commands.intake import run_rounds
from git_sluice.double import GitHubDouble, serve
from git_sluice.double.testing import ServedDouble
from tests.gitutil import make_clone

TOKEN = "tok-alice"


@pytest.fixture
def session(tmp_path: Path, github: ServedDouble, monkeypatch: pytest.MonkeyPatch) -> Iterator[Session]:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    with open_session(make_clone(tmp_path, api=github.url), clock=github.clock) as s:
        assert s.forge.pool
        yield s


@pytest.mark.slow
def test_a_confirmed_list_pages_on_with_the_kept_link(session: Session, github: ServedDouble) -> None:
    gh = github.gh
    for i in range(101):  # two pages of 100
        gh.open_pr("o/r", head_ref=f"feat-{i}")
    (first,) = run_rounds(session, reason="discovery")
    assert len(first.added) == 101
    github.clock.advance(session.settings.discovery + 1)
    mark = gh.mark()
    run_rounds(session, reason="discovery")
    pages = [c for c in gh.calls(since=mark) if "/pulls?" in c.path]
    assert [c.status for c in pages] == [304, 304]  # page 2 asked though page 1's 304 had no Link
    assert "page=2" in pages[1].path


def test_a_round_against_enterprise_server_without_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gh = GitHubDouble(clock=FakeClock(), enterprise=True)
    gh.add_token(TOKEN, user="alice")
    gh.add_repo("o/r")
    gh.open_pr("o/r", head_ref="feat")
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    with serve(gh) as server, open_session(make_clone(tmp_path, api=server.url), clock=gh.clock) as s:
        (report,) = run_rounds(s, reason="discovery")
    assert report.added == [1]
    assert gh.counted() == 0 and gh.requests() > 0
    assert all(c.status < 400 for c in gh.calls())


def _app_key(tmp_path: Path) -> tuple[Path, bytes]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path / "app.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return path, public


@pytest.mark.slow
def test_rounds_as_a_github_app_mint_their_token_and_renew_it_before_the_hour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the benchmark's App run does: the JWT is the double's to check, the token expires by its clock."""
    clock = FakeClock(1_800_000_000)
    gh = GitHubDouble(clock=clock)
    key_file, public = _app_key(tmp_path)
    gh.add_app(77, public)
    gh.add_repo("o/r")
    gh.add_installation(77, 4242, ["o/r"])
    gh.open_pr("o/r", head_ref="feat")
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    with serve(gh) as server:
        work = make_clone(tmp_path, api=server.url)
        for key, value in (("sluice.appId", "77"), ("sluice.appKeyFile", str(key_file)),
                           ("sluice.installation", "4242")):
            subprocess.run(["git", "-C", str(work), "config", key, value], check=True)
        with open_session(work, clock=clock) as s:
            (report,) = run_rounds(s, reason="discovery")
            assert report.added == [1]
            mints = gh.calls(path=r"^/app/installations/4242/access_tokens$")
            assert [c.status for c in mints] == [201]
            # the JWT spends the App's own pool on the exchange alone; every read spends the installation's
            assert {c.pool for c in gh.calls() if c.counted and c not in mints} == {"installation:4242"}
            for _ in range(70):  # an hour and ten minutes of rounds
                clock.advance(s.settings.discovery + 1)
                run_rounds(s, reason="discovery")
    assert [c.status for c in gh.calls(path=r"/access_tokens$")] == [201, 201]  # renewed once, before expiry
    assert not gh.calls(status=401)  # no expired token ever reached the double
