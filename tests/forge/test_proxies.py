"""Which proxy a call goes through: curl's rules for ``*_proxy`` and ``no_proxy``, and the wire that follows them."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from git_sluice.clock import SystemClock
from git_sluice.errors import ConfigError, ForgeUnavailable
from git_sluice.forge.client import Forge
from git_sluice.forge.hoststore import HostStore
from git_sluice.forge.kept_answers import KeptAnswers
from git_sluice.forge.proxies import ProxySetting, bypassed, proxy_for, redact
from git_sluice.forge.wire import ByOrigin, transport_for

GH = "https://api.github.com"
LOCAL = "http://127.0.0.1:8080/api"


@pytest.mark.parametrize(
    ("endpoint", "env", "want"),
    [
        (GH, {}, None),
        (GH, {"https_proxy": "http://p:3128"}, "http://p:3128"),
        (GH, {"HTTPS_PROXY": "http://P:3128"}, "http://P:3128"),
        (GH, {"https_proxy": "http://low:1", "HTTPS_PROXY": "http://up:2"}, "http://low:1"),  # lower case wins
        (GH, {"http_proxy": "http://p:3128"}, None),  # an http proxy is not asked for https
        (GH, {"all_proxy": "http://all:1"}, "http://all:1"),
        (GH, {"ALL_PROXY": "http://all:1", "https_proxy": "http://s:2"}, "http://s:2"),  # the scheme's own first
        (GH, {"https_proxy": "p.corp:3128"}, "http://p.corp:3128"),  # no scheme: http
        (GH, {"https_proxy": "  "}, None),  # blank is unset
        (LOCAL, {"http_proxy": "http://p:1"}, "http://p:1"),
        (LOCAL, {"HTTP_PROXY": "http://p:1", "REQUEST_METHOD": "GET"}, None),  # httpoxy: CGI ignores HTTP_PROXY
        (LOCAL, {"http_proxy": "http://p:1", "REQUEST_METHOD": "GET"}, "http://p:1"),
        (GH, {"https_proxy": "http://p:1", "no_proxy": "*"}, None),
        (GH, {"https_proxy": "http://p:1", "no_proxy": "github.com"}, None),  # a domain covers its names
        (GH, {"https_proxy": "http://p:1", "NO_PROXY": ".github.com"}, None),
        (GH, {"https_proxy": "http://p:1", "no_proxy": "hub.com"}, "http://p:1"),  # not a suffix at a dot
        (GH, {"https_proxy": "http://p:1", "no_proxy": "api.github.com:443"}, None),
        (GH, {"https_proxy": "http://p:1", "no_proxy": "api.github.com:8443"}, "http://p:1"),  # another port
        (GH, {"https_proxy": "http://p:1", "no_proxy": "example.com, API.GitHub.com "}, None),
        (LOCAL, {"http_proxy": "http://p:1", "no_proxy": "127.0.0.0/8"}, None),  # CIDR
        (LOCAL, {"http_proxy": "http://p:1", "no_proxy": "10.0.0.0/8"}, "http://p:1"),
        (LOCAL, {"http_proxy": "http://p:1", "no_proxy": "127.0.0.1"}, None),
        ("http://[::1]:9/api", {"http_proxy": "http://p:1", "no_proxy": "::1"}, None),
        ("http://[::1]:9/api", {"http_proxy": "http://p:1", "no_proxy": "[::1]:9"}, None),
        ("http://[::1]:9/api", {"http_proxy": "http://p:1", "no_proxy": "[::1]:10"}, "http://p:1"),
    ],
)
def test_the_proxy_for_an_endpoint_follows_curls_rules(endpoint: str, env: dict[str, str], want: str | None) -> None:
    assert proxy_for(endpoint, env) == want


@pytest.mark.parametrize("value", ["socks5://u:hunter2@p:1080", "ftp://p:21", "http://p:99999", "http://:3128"])
def test_a_proxy_git_sluice_cannot_use_is_a_config_error_naming_the_variable_never_its_password(value: str) -> None:
    with pytest.raises(ProxySetting) as caught:
        proxy_for(GH, {"HTTPS_PROXY": value})
    error = caught.value
    assert isinstance(error, ConfigError) and error.exit_code == 2
    assert str(error).startswith("HTTPS_PROXY=") and "http://host:port" in str(error)
    assert "hunter2" not in str(error) and "hunter2" not in repr(error.args)


def test_a_bad_proxy_that_no_proxy_bypasses_is_never_looked_at() -> None:
    assert proxy_for(GH, {"https_proxy": "socks5://p:1", "no_proxy": "github.com"}) is None


@given(user=st.text(st.characters(codec="ascii", exclude_characters="/?#@"), min_size=1, max_size=12),
       password=st.text(st.characters(codec="ascii", exclude_characters="/?#@:"), min_size=4, max_size=16))
def test_redact_never_shows_a_password(user: str, password: str) -> None:
    shown = redact(f"http://{user}:{password}@proxy.corp:3128/")
    assert shown == "http://***@proxy.corp:3128/"  # exactly: a short password may be a substring of the rest


def test_bypassed_matches_names_and_never_resolves_them() -> None:
    assert bypassed("localhost", 80, "localhost") and not bypassed("127.0.0.1", 80, "localhost")
    assert not bypassed("example.com", 80, "10.0.0.0/8,not-a-cidr/99") and not bypassed("10.1.2.3", 80, "")


def test_the_wire_routes_each_endpoint_to_its_own_proxy_or_direct() -> None:
    import httpcore

    one = transport_for((GH, f"{GH}/graphql"), {"https_proxy": "http://p:3128"})
    assert isinstance(one, httpx.HTTPTransport) and isinstance(one._pool, httpcore.HTTPProxy)  # type: ignore[attr-defined]
    direct = transport_for((GH, f"{GH}/graphql"), {"https_proxy": "http://p:3128", "no_proxy": "github.com"})
    assert isinstance(direct._pool, httpcore.ConnectionPool)  # type: ignore[attr-defined]
    split = transport_for(("https://ghe.corp/api/v3", GH), {"https_proxy": "http://p:3128", "no_proxy": "ghe.corp"})
    assert isinstance(split, ByOrigin) and len({id(w) for w in split.routes.values()}) == 2


class _Recorder:
    """A proxy that takes one CONNECT, records every byte, and refuses the tunnel."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(4)
        self.seen = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.getsockname()[1]}"

    def _serve(self) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(5)
            while b"\r\n\r\n" not in self.seen:
                got = conn.recv(65536)
                if not got:
                    return
                self.seen += got
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@pytest.mark.parametrize("variable", ["https_proxy", "ALL_PROXY"])
def test_an_https_call_goes_to_the_proxy_as_a_connect_and_the_token_stays_inside_the_tunnel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    proxy = _Recorder()
    monkeypatch.setenv(variable, proxy.url)
    clock = SystemClock()

    class Token:
        source = "test"

        def token(self) -> str:
            return "tok-proxy-secret"

        def pool_id(self) -> str:
            return "pool1"

    forge = Forge(api="https://ghe.invalid/api/v3", graphql_url="https://ghe.invalid/api/graphql", credentials=Token(),
                  store=HostStore(tmp_path / "host.sqlite3", clock=clock), kept=KeptAnswers(tmp_path / "kept"),
                  clock=clock, timeout=5.0)
    try:
        with pytest.raises(ForgeUnavailable):
            forge.get("repos/o/r")
    finally:
        forge.close()
        proxy.server.close()
    proxy.thread.join(5)
    assert proxy.seen.startswith(b"CONNECT ghe.invalid:443 HTTP/1.1\r\n"), proxy.seen
    assert b"tok-proxy-secret" not in proxy.seen
