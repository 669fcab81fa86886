"""The Forge's own promises over a mock transport: where the token may go, and a whole-call deadline."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from git_sluice.clock import FakeClock
from git_sluice.errors import ForeignURL, ForgeUnavailable, PathOutsideAPI
from git_sluice.forge.client import Forge
from git_sluice.forge.hoststore import HostStore
from git_sluice.forge.kept_answers import KeptAnswers


@dataclass
class FixedToken:
    source: str = "test"

    def token(self) -> str:
        return "tok-secret"

    def pool_id(self) -> str:
        return "pool1"


class Trickle(httpx.SyncByteStream):
    """One byte every five seconds, on the fake clock."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(10_000):
            self.clock.advance(5)
            yield b" "


def forge(tmp_path: Path, clock: FakeClock, handler: object, *, api: str, graphql: str) -> Forge:
    return Forge(
        api=api, graphql_url=graphql, credentials=FixedToken(), store=HostStore(tmp_path / "host.sqlite3", clock=clock),
        kept=KeptAnswers(tmp_path / "kept"), clock=clock, transport=httpx.MockTransport(handler),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("api", "graphql", "url"),
    [
        ("https://ghe.corp/api/v3", "https://ghe.corp", "https://ghe.corp.evil/anything"),
        ("https://ghe.corp/api/v3", "https://ghe.corp/api/graphql", "https://ghe.corp/api/v3.evil.example/x"),
        ("https://ghe.corp/api/v3", "https://ghe.corp/api/graphql", "https://ghe.corp:444/api/v3/user"),
        ("https://ghe.corp/api/v3", "https://ghe.corp/api/graphql", "http://ghe.corp/api/v3/user"),
        ("https://ghe.corp/api/v3", "https://ghe.corp/api/graphql", "https://ghe.corp/api/graphqlx"),
        ("http://localhost:8080", "http://localhost:8080/graphql", "http://evil.localhost:8080/user"),
    ],
)
def test_a_full_url_at_another_origin_is_refused_and_nothing_is_sent(
    tmp_path: Path, api: str, graphql: str, url: str
) -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=[])

    with forge(tmp_path, FakeClock(), answer, api=api, graphql=graphql) as f:
        with pytest.raises(ForeignURL) as caught:
            f.get(url)
    assert sent == [] and caught.value.exit_code == 1


@pytest.mark.parametrize("path", [
    "%2e%2e/%2e%2e/x", "%2E%2E/x", "..%2f..%2fx", "%2e%2e%2f%2e%2e%2fx", "a/../../x", "./x", "%252e%252e/x",
    "a%5c..%5c..%5cx", "https://ghe.corp/api/v3/%2e%2e/%2e%2e/x",
])
def test_a_path_with_dot_segments_is_refused_before_anything_is_asked(tmp_path: Path, path: str) -> None:
    """Issue 33: ``…/api/v3/%2e%2e/%2e%2e/x`` starts with the prefix, and a server decoding it serves ``/x``."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=[])

    with forge(tmp_path, FakeClock(), answer, api="https://ghe.corp/api/v3", graphql="https://ghe.corp/api/graphql") as f:
        with pytest.raises(PathOutsideAPI) as caught:
            f.get(path)
        assert f.kept.meta("GET https://ghe.corp/x").fail_count == 0
    assert sent == [] and caught.value.exit_code == 2 and "%2e%2e" in str(caught.value)


def test_an_encoded_slash_alone_stays_inside_and_goes_out(tmp_path: Path) -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={})

    with forge(tmp_path, FakeClock(), answer, api="https://ghe.corp/api/v3", graphql="https://ghe.corp/api/graphql") as f:
        f.get("repos/o/r/branches/feature%2Fx")
        f.get("repos/o/r/contents/a..b/.github")
    assert [r.url.raw_path for r in sent] == [b"/api/v3/repos/o/r/branches/feature%2Fx",
                                              b"/api/v3/repos/o/r/contents/a..b/.github"]


def test_a_full_url_at_the_configured_origins_goes_out_with_the_token(tmp_path: Path) -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"data": {}})

    with forge(tmp_path, FakeClock(), answer, api="https://ghe.corp/api/v3", graphql="https://ghe.corp/api/graphql") as f:
        f.get("https://ghe.corp/api/v3/repos/o/r?page=2")
        f.graphql("query { viewer { login } }")
    assert [str(r.url) for r in sent] == ["https://ghe.corp/api/v3/repos/o/r?page=2", "https://ghe.corp/api/graphql"]
    assert all(r.headers["authorization"] == "token tok-secret" for r in sent)


def test_an_answer_trickling_in_fails_as_timed_out_at_the_whole_call_deadline(tmp_path: Path) -> None:
    clock = FakeClock()
    start = clock.time()
    with forge(tmp_path, clock, lambda r: httpx.Response(200, stream=Trickle(clock)),
               api="https://api.github.com", graphql="https://api.github.com/graphql") as f:
        with pytest.raises(ForgeUnavailable) as caught:
            f.get("repos/o/r")
        assert caught.value.kind == "timeout" and caught.value.reason.startswith("timed out")
        assert clock.time() - start <= f.timeout + 5


def test_a_real_socket_trickling_bytes_is_cut_at_the_whole_call_deadline(tmp_path: Path) -> None:
    """httpx's timeout is per read: bytes every 0.2 s never trip a 1 s read timeout; the call's deadline does."""
    import socket
    import threading
    import time

    from git_sluice.clock import SystemClock

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n")
            for _ in range(200):
                if stop.wait(0.2):
                    return
                try:
                    conn.sendall(b" ")
                except OSError:
                    return

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    api = f"http://127.0.0.1:{server.getsockname()[1]}"
    clock = SystemClock()
    f = Forge(api=api, graphql_url=f"{api}/graphql", credentials=FixedToken(),
              store=HostStore(tmp_path / "host.sqlite3", clock=clock), kept=KeptAnswers(tmp_path / "kept"),
              clock=clock, timeout=1.0)
    started = time.monotonic()
    try:
        with pytest.raises(ForgeUnavailable) as caught:
            f.get("repos/o/r")
    finally:
        stop.set()
        f.close()
        server.close()
    assert caught.value.kind == "timeout" and caught.value.reason.startswith("timed out")
    assert time.monotonic() - started < 5  # the body alone would have taken 40 s


def test_errors_come_in_families_a_caller_can_catch_whole() -> None:
    from git_sluice.errors import (
        AllowanceSpent,
        CredentialsRefused,
        ForgeAnswered,
        ForgeError,
        HostStoreError,
        RemoteError,
        RemoteUnreachable,
        SluiceError,
        StateError,
    )
    from git_sluice.forge.client import Answer

    with pytest.raises(CredentialsRefused) as refused:
        Answer(401, {}, b'{"message": "Bad credentials"}', "https://api.github.com/user").raise_for_status()
    assert isinstance(refused.value, ForgeAnswered) and "GH_TOKEN" in str(refused.value)
    with pytest.raises(ForgeAnswered) as missing:
        Answer(404, {}, b'{"message": "Not Found"}', "https://api.github.com/repos/o/x").raise_for_status()
    assert missing.value.status == 404 and not isinstance(missing.value, CredentialsRefused)
    assert issubclass(AllowanceSpent, ForgeError) and AllowanceSpent.exit_code == 3
    assert issubclass(RemoteUnreachable, RemoteError) and issubclass(HostStoreError, StateError)
    # the old homes still name the same classes
    from git_sluice.forge.hoststore import HostStoreError as FromHostStore
    from git_sluice.remote.git import RemoteUnreachable as FromGit

    assert FromHostStore is HostStoreError and FromGit is RemoteUnreachable
    assert all(issubclass(c, SluiceError) for c in (ForgeError, RemoteError, StateError))
