"""The real console script behind a forward proxy: every call GitHub counts went through it, unless ``no_proxy`` says not."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from tests.cliworld import cli_world

HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "transfer-encoding", "te", "upgrade"}


class _Forward(BaseHTTPRequestHandler):
    """An HTTP/1.1 forward proxy for absolute-form requests; counts what it carried."""

    protocol_version = "HTTP/1.1"

    def _relay(self) -> None:
        target = urlsplit(self.path)
        self.server.carried.append((self.command, target.path))  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        upstream = http.client.HTTPConnection(target.hostname or "", target.port or 80, timeout=30)
        try:
            upstream.request(self.command, target.path + (f"?{target.query}" if target.query else ""), body, headers)
            answer = upstream.getresponse()
            data = answer.read()
        finally:
            upstream.close()
        self.send_response(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in HOP and key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _relay

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def forward_proxy() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Forward)
    server.carried = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_intake_behind_http_proxy_sends_every_call_through_it_and_no_proxy_sends_them_direct(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world, forward_proxy() as proxy:
        world.gh.open_pr("o/r", head_ref="feature")
        host = world.host("host-a")
        proxy_url = f"http://{proxy.server_address[0]}:{proxy.server_address[1]}"
        before = len(world.gh.ledger)
        done = host.run("intake", http_proxy=proxy_url)
        assert done.returncode == 0, done.stderr
        sent = len(world.gh.ledger) - before
        assert sent > 0 and len(proxy.carried) == sent, (sent, proxy.carried)  # type: ignore[attr-defined]

        world.clock.advance(61)
        carried, before = len(proxy.carried), len(world.gh.ledger)  # type: ignore[attr-defined]
        done = host.run("intake", http_proxy=proxy_url, no_proxy="localhost,127.0.0.1")
        assert done.returncode == 0, done.stderr
        assert len(world.gh.ledger) > before and len(proxy.carried) == carried  # type: ignore[attr-defined]


def test_a_proxy_git_sluice_cannot_use_exits_2_naming_the_variable_and_sends_nothing(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        before = len(world.gh.ledger)
        done = host.run("intake", ALL_PROXY="socks5://bot:hunter2@proxy.corp:1080")
        assert done.returncode == 2, done.stderr
        assert "ALL_PROXY=socks5://***@proxy.corp:1080" in done.stderr and "http://host:port" in done.stderr
        assert "hunter2" not in done.stderr + done.stdout and "Traceback" not in done.stderr
        assert len(world.gh.ledger) == before
