"""Each way a connection fails has its own words, naming the host and what to do (issue 31) — on loopback.

DNS (a ``.invalid`` name), TLS (the double over https with a throw-away CA:
not trusted, then trusted through ``SSL_CERT_FILE``; a certificate for
another name), refused (a closed port) and timed out (a socket that accepts
and never answers, with a short injected timeout). A failure of this
machine's set-up (DNS, TLS) is not remembered: after the fix, the next call
goes out at once.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from git_sluice.clock import SystemClock
from git_sluice.double import GitHubDouble, serve
from git_sluice.errors import ForgeUnavailable
from git_sluice.forge.client import Forge
from git_sluice.forge.failures import describe
from git_sluice.forge.hoststore import HostStore
from git_sluice.forge.kept_answers import KeptAnswers, address_of
from tests.forge.test_forge import FixedToken
from tests.tlsutil import TestCA, make_ca, self_signed_context


def real_forge(tmp_path: Path, api: str, *, timeout: float = 10.0) -> Forge:
    """A Forge on the real wire (built now, from the environment now: a new process's view)."""
    clock = SystemClock()
    return Forge(api=api, graphql_url=f"{api}/graphql", credentials=FixedToken(),
                 store=HostStore(tmp_path / "host.sqlite3", clock=clock), kept=KeptAnswers(tmp_path / "kept"),
                 clock=clock, timeout=timeout)


def fails(tmp_path: Path, api: str, **kw: float) -> ForgeUnavailable:
    with real_forge(tmp_path, api, **kw) as forge, pytest.raises(ForgeUnavailable) as caught:
        forge.get("repos/o/r")
    return caught.value


def remembered_until(tmp_path: Path, api: str) -> float | None:
    return KeptAnswers(tmp_path / "kept").meta(address_of("GET", f"{api}/repos/o/r")).fail_until


@pytest.fixture
def ca(tmp_path: Path) -> TestCA:
    return make_ca(tmp_path / "ca")


@pytest.fixture
def double() -> GitHubDouble:
    gh = GitHubDouble()
    gh.add_token("tok-secret", user="alice")
    gh.add_repo("o/r")
    return gh


def test_a_name_that_does_not_resolve_is_a_dns_failure_and_is_not_remembered(tmp_path: Path) -> None:
    api = "https://ghe.invalid/api/v3"
    for _ in range(2):  # not remembered: the second call tries again instead of repeating the first's words
        failure = fails(tmp_path, api)
        assert failure.kind == "dns" and not failure.remembered
        assert "the name ghe.invalid does not resolve" in str(failure) and "DNS" in str(failure)
        assert "sluice.api" in failure.reason and "not remembered" in str(failure)
        assert "connection refused" not in str(failure)
    assert remembered_until(tmp_path, api) is None


def test_an_untrusted_certificate_says_how_to_trust_a_ca_and_a_fix_takes_effect_at_once(
    tmp_path: Path, ca: TestCA, double: GitHubDouble, monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serve(double, tls=ca.server_context(["localhost", "127.0.0.1"])) as server:
        api = server.url
        assert api.startswith("https://127.0.0.1:")
        failure = fails(tmp_path, api)
        assert failure.kind == "tls" and not failure.remembered
        assert f"the certificate of 127.0.0.1 is not trusted" in failure.reason
        assert "SSL_CERT_FILE" in failure.reason and "trust store" in failure.reason
        assert remembered_until(tmp_path, api) is None
        assert double.requests() == 0  # no request reached GitHub: nothing to remember against it

        monkeypatch.setenv("SSL_CERT_FILE", str(ca.pem))  # the person's fix: trust the company CA
        with real_forge(tmp_path, api) as forge:  # the next process, same clone: asks at once
            assert forge.get("repos/o/r").status == 200
        assert double.requests() == 1


def test_a_certificate_for_another_name_says_so(
    tmp_path: Path, ca: TestCA, double: GitHubDouble, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.pem))
    with serve(double, tls=ca.server_context(["ghe.example.com"])) as server:
        failure = fails(tmp_path, server.url)
    assert failure.kind == "tls" and "is not for that name" in failure.reason and "127.0.0.1" in failure.reason
    assert "not trusted" not in failure.reason


def test_a_closed_port_is_refused_and_remembered(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api = f"http://127.0.0.1:{port}"
    failure = fails(tmp_path, api)
    assert failure.kind == "refused" and failure.remembered
    assert f"connection refused by 127.0.0.1:{port}: nothing listens there" in str(failure)
    assert "not asked again before" in str(failure)
    again = fails(tmp_path, api)  # failure memory answers: the address is not asked for a while
    assert again.kind == "remembered" and again.reason == failure.reason


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A socket that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_no_answer_is_a_timeout_naming_the_host_and_the_seconds(tmp_path: Path, silent_port: int) -> None:
    failure = fails(tmp_path, f"http://127.0.0.1:{silent_port}", timeout=0.3)
    assert failure.kind == "timeout" and failure.remembered
    assert "timed out: no answer from 127.0.0.1 within 0.3 s" in failure.reason


@pytest.mark.parametrize(
    ("cause", "kind", "words"),
    [
        (socket.gaierror(-2, "Name or service not known"), "dns", "does not resolve"),
        (ConnectionRefusedError(111, "Connection refused"), "refused", "connection refused by ghe.corp:8443"),
        (ssl.SSLError(1, "wrong version number"), "tls", "TLS handshake with ghe.corp:8443 failed"),
        (OSError(101, "Network is unreachable"), "connect", "could not connect to ghe.corp:8443 (Network is unre"),
    ],
)
def test_the_cause_under_httpx_decides_the_words(cause: OSError, kind: str, words: str) -> None:
    url = httpx.URL("https://ghe.corp:8443/api/v3/user")
    try:
        try:
            raise cause
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
    except httpx.ConnectError as wrapped:
        failure = describe(wrapped, url, env={})
    assert failure.kind == kind and words in failure.reason
    assert failure.local == (kind in {"dns", "tls"})


def test_through_a_proxy_the_proxy_is_named() -> None:
    url = httpx.URL("https://ghe.corp/api/v3/user")
    try:
        raise httpx.ConnectError("x") from socket.gaierror(-2, "Name or service not known")
    except httpx.ConnectError as exc:
        failure = describe(exc, url, env={"https_proxy": "http://user:secret@proxy.corp:3128"})
    assert "the name proxy.corp (the proxy for ghe.corp" in failure.reason and "secret" not in failure.reason


def test_a_self_signed_certificate_is_not_trusted_either(tmp_path: Path, double: GitHubDouble) -> None:
    with serve(double, tls=self_signed_context(tmp_path / "appliance", ["localhost"])) as server:
        failure = fails(tmp_path, f"https://localhost:{server.port}")
    assert failure.kind == "tls" and not failure.remembered
    assert "the certificate of localhost is not trusted (self-signed certificate)" in failure.reason
    assert double.requests() == 0
