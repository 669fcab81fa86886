"""The double on a loopback port: HTTP in, the pipeline, HTTP out.

A ``ThreadingHTTPServer`` in a background thread, so a test talks to it with
a real HTTP client over a real socket (keep-alive, Content-Length, a dropped
connection are all real). Paths under ``/_double/`` are the control API
(control.py): never counted, never in the ledger.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from . import control
from .pipeline import Request, handle
from .timefmt import http_date

if TYPE_CHECKING:
    from .core import GitHubDouble


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, a keep-alive client
    # waits out a delayed ACK (~40 ms) on every answer.
    disable_nagle_algorithm = True
    server: "_Server"

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)  # a client that never finishes its handshake holds only its own thread
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib's name
        """Quiet: the ledger is the double's log."""

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header from the double's clock, so a retry-after date and Date agree."""
        return http_date(self.server.gh.clock.time() if timestamp is None else timestamp)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        host = self.headers.get("Host") or f"{self.server.server_address[0]!s}:{self.server.server_address[1]}"
        control_path = split.path.removeprefix(ENTERPRISE_REST) if self.server.gh.enterprise else split.path
        if control_path.startswith(control.PREFIX):
            # under the printed base URL too, so "$URL/_double/…" works in both modes
            status, payload = control.dispatch(self.server.gh, self.command, control_path, split.query, body)
            self._write(status, [("Content-Type", "application/json")], json.dumps(payload).encode())
            return
        scheme = "https" if self.server.tls is not None else "http"
        path, base, outside = api_path(self.server.gh.enterprise, split.path or "/", f"{scheme}://{host}")
        request = Request(
            method=self.command,
            path=path,
            query=split.query,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            base_url=base,
            outside_api=outside,
        )
        self.server.gh.receive(request)
        try:
            response = handle(self.server.gh, request, self.server.sleep)
        except Exception:  # a bug in the double must show, not hang the client
            text = traceback.format_exc()
            self._write(500, [("Content-Type", "text/plain")], f"GitHub double error:\n{text}".encode())
            return
        if response.drop:
            self.close_connection = True
            return
        self._write(response.status, response.headers, response.body)

    def _write(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        try:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD" and status not in (204, 304):
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve


ENTERPRISE_REST = "/api/v3"
ENTERPRISE_GRAPHQL = "/api/graphql"


def api_path(enterprise: bool, path: str, origin: str) -> tuple[str, str, bool]:
    """(the API path, the REST base for Link and URLs, whether it is outside the API).

    Enterprise Server serves REST under ``/api/v3`` and GraphQL at
    ``/api/graphql``; the pipeline, the ledger and faults see the path
    without the prefix, as on github.com, so the same filters work on both.
    """
    if not enterprise:
        return path, origin, False
    base = origin + ENTERPRISE_REST
    if path == ENTERPRISE_GRAPHQL:
        return "/graphql", base, False
    if path == ENTERPRISE_REST or path.startswith(ENTERPRISE_REST + "/"):
        return path[len(ENTERPRISE_REST) :] or "/", base, False
    return path, base, True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, gh: "GitHubDouble", address: tuple[str, int], tls: ssl.SSLContext | None = None) -> None:
        super().__init__(address, _Handler)
        self.gh = gh
        self.tls = tls
        self.stopping = threading.Event()

    def get_request(self) -> tuple[socket.socket, object]:
        """With ``tls``, each connection is wrapped; its handshake runs in its own thread (``_Handler.setup``)."""
        conn, address = super().get_request()
        if self.tls is None:
            return conn, address
        return self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that refused the certificate, or hung up, is a test's point, not the double's error."""
        import sys

        if isinstance(sys.exc_info()[1], (ssl.SSLError, ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]

    def sleep(self, seconds: float, released: threading.Event) -> None:
        """A hang fault's real wait, cut short when the fault is cleared or the server stops."""
        deadline = time.monotonic() + seconds
        while not released.is_set() and not self.stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            released.wait(min(left, 0.02))


class DoubleServer:
    """A served double; use as a context manager or call :meth:`close`.

    ``tls``: a server-side context (its certificate loaded) to serve https
    instead of http — for tests of certificate trust and of an Enterprise
    Server reached by its own name (docs/double.md, "Over TLS").
    """

    def __init__(self, gh: "GitHubDouble", host: str = "127.0.0.1", port: int = 0,
                 tls: ssl.SSLContext | None = None) -> None:
        self.gh = gh
        self.tls = tls
        self._server = _Server(gh, (host, port), tls)
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="github-double", daemon=True
        )
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"{'https' if self.tls is not None else 'http'}://{self.host!s}:{self.port}"

    @property
    def url(self) -> str:
        """REST base, like https://api.github.com (Enterprise Server: ``…/api/v3``)."""
        return self.origin + (ENTERPRISE_REST if self.gh.enterprise else "")

    @property
    def graphql_url(self) -> str:
        return self.origin + (ENTERPRISE_GRAPHQL if self.gh.enterprise else "/graphql")

    def close(self) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "DoubleServer":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def serve(gh: "GitHubDouble", host: str = "127.0.0.1", port: int = 0,
          tls: ssl.SSLContext | None = None) -> DoubleServer:
    """Serve ``gh`` on a free loopback port in a background thread (already running on return); https with ``tls``."""
    return DoubleServer(gh, host, port, tls)
