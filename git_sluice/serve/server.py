"""The listening side of ``serve``: HTTP/1.1 on a Unix socket private to the user, and on a loopback port.

The standard library's HTTP server, one thread per connection (the real
``gh`` and octokit keep connections alive). The handler reads one request,
bounded, hands it to the :class:`~.relay.Relay` and writes its reply with a
length; nothing it does can raise into the server.

Stopping (:meth:`Listening.stop`) stops accepting, lets every call in flight
finish and closes idle kept-alive connections at once, so SIGTERM ends
``serve`` within one call's time.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import socket
import socketserver
import stat
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable
from pathlib import Path

from ..errors import ServeRefused
from . import shapes
from .relay import Relay

log = logging.getLogger("git_sluice")

IDLE_TIMEOUT = 30.0
"""Seconds a kept-alive connection may sit idle between requests."""
OVERDUE_GRACE = 5.0
"""Real seconds the calls still waiting after the grace get to answer 503 once told to stop."""
BACKLOG = socket.SOMAXCONN
"""Connections waiting to be accepted. socketserver's default is 5, and a Unix socket whose backlog
is full refuses a non-blocking connect at once (EAGAIN; TCP would retry its SYN): ten ``gh`` started
together got "dial unix …: connect: resource temporarily unavailable". The kernel caps it at
``net.core.somaxconn``."""
MAX_SOCKET_PATH = 100
"""sun_path holds 108 bytes on Linux, 104 on macOS; a longer path cannot be bound."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "git-sluice-serve"
    timeout = IDLE_TIMEOUT

    def setup(self) -> None:
        super().setup()
        self.listening: Listening = self.server.listening  # type: ignore[attr-defined]
        self.listening.opened(self)
        self.busy = False

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.listening.closed(self)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError, socket.timeout):
            self.close_connection = True
        finally:
            self.busy = False
        if self.listening.stopping.is_set():
            self.close_connection = True

    def parse_request(self) -> bool:
        ok = super().parse_request()
        self.busy = ok
        return ok

    def _relay(self) -> None:
        body = self._body()
        if body is None:
            return
        tcp = bool(getattr(self.server, "tcp", False))
        headers = {k: v for k, v in self.headers.items()}
        reply = self.listening.relay.handle(self.command, self.path, headers, body, tcp=tcp)
        self._send(reply, head=self.command == "HEAD")

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _relay

    def _body(self) -> bytes | None:
        """The request body (Content-Length or chunked), bounded; None after answering a bad one."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            total = 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";", 1)[0].strip() or b"x", 16)
                except ValueError:
                    self._send(shapes.bad_request("a well-formed chunked body"))
                    return None
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                total += size
                if total > shapes.MAX_BODY:
                    self._send(shapes.bad_request("a body under 64 MiB"))
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline(8)
        raw = self.headers.get("Content-Length")
        if raw is None:
            return b""
        try:
            length = int(raw)
        except ValueError:
            length = -1
        if not 0 <= length <= shapes.MAX_BODY:
            self._send(shapes.bad_request("a Content-Length from 0 to 64 MiB"))
            return None
        return self.rfile.read(length) if length else b""

    def _send(self, reply: shapes.Reply, *, head: bool = False) -> None:
        self.close_connection = self.close_connection or reply.status >= 500 and reply.status != 502
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if not head and reply.body:
                self.wfile.write(reply.body)
        except (ConnectionError, TimeoutError, socket.timeout):
            self.close_connection = True

    def address_string(self) -> str:
        return "unix" if not getattr(self.server, "tcp", False) else str(self.client_address[0])

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the stdlib's name)
        log.debug("serve: " + format, *args)


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = BACKLOG
    tcp = False


class _TcpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = BACKLOG
    tcp = True


class _Tcp6Server(_TcpServer):
    address_family = socket.AF_INET6


class Listening:
    """The socket and the port ``serve`` answers on, until :meth:`stop`."""

    def __init__(self, relay: Relay, *, socket_path: Path | None, port: int | None, host: str = "127.0.0.1") -> None:
        self.relay = relay
        self.socket_path = socket_path
        self.stopping = threading.Event()
        self._open: set[_Handler] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self.servers: list[socketserver.BaseServer] = []
        self._threads: list[threading.Thread] = []
        try:
            if socket_path is not None:
                self.servers.append(self._unix(socket_path))
            if port is not None:
                self.servers.append(self._tcp(host, port))
        except BaseException:
            self._close_servers()
            raise
        for server in self.servers:
            server.listening = self  # type: ignore[attr-defined]

    @property
    def port(self) -> int | None:
        for server in self.servers:
            if getattr(server, "tcp", False):
                return int(server.server_address[1])  # type: ignore[index]
        return None

    def _unix(self, path: Path) -> _UnixServer:
        if len(os.fsencode(str(path))) > MAX_SOCKET_PATH:
            raise ServeRefused(f"the socket path {path} is too long for a Unix socket "
                               f"(at most {MAX_SOCKET_PATH} bytes): pass a shorter --socket")
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            st = path.lstat()
        except FileNotFoundError:
            st = None
        if st is not None:
            if not stat.S_ISSOCK(st.st_mode):
                raise ServeRefused(f"{path} exists and is not a socket: remove it, or pass another --socket")
            path.unlink()  # a socket left by a serve that died: the caller holds the lock, so it is no one's
        old = os.umask(0o177)
        try:
            server = _UnixServer(str(path), _Handler, bind_and_activate=True)
        except OSError as exc:
            raise ServeRefused(f"cannot listen on {path}: {exc.strerror or exc}") from None
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        return server

    def _tcp(self, host: str, port: int) -> _TcpServer:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            raise ServeRefused(f"--host {host} is not a loopback address: serve listens on 127.0.0.1 or ::1 only "
                               "(tokens pass through it)")
        server_class: type[_TcpServer] = _Tcp6Server if ":" in host else _TcpServer
        try:
            return server_class((host, port), _Handler)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ServeRefused(f"port {port} on {host} is in use: pass another --port (0 picks a free one)") \
                    from None
            raise ServeRefused(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None

    def start(self) -> None:
        for server in self.servers:
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                      name=f"serve-{'tcp' if getattr(server, 'tcp', False) else 'unix'}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def opened(self, handler: _Handler) -> None:
        with self._lock:
            self._open.add(handler)

    def closed(self, handler: _Handler) -> None:
        with self._lock:
            self._open.discard(handler)
            self._idle.notify_all()

    def stop(self, grace: float = 60.0, overdue: Callable[[], None] = lambda: None,
             cut: threading.Event | None = None) -> None:
        """Stop accepting; calls in flight finish (a write waiting for its slot too) within ``grace`` real
        seconds — or until ``cut`` is set (a second Ctrl-C) — after which ``overdue()`` (the session's
        cancel: its waits end, answered 503) and a few seconds more; then every connection closes."""
        self.stopping.set()
        if self._threads:  # shutdown() waits for serve_forever: only where it runs
            for server in self.servers:
                server.shutdown()
        with self._lock:
            for handler in list(self._open):
                if not handler.busy:
                    _shut(handler.connection)
            if not self._drained(grace, cut):
                overdue()
                self._idle.wait_for(lambda: not any(h.busy for h in self._open), timeout=OVERDUE_GRACE)
            for handler in list(self._open):
                _shut(handler.connection)
        self._close_servers()

    def _drained(self, grace: float, cut: threading.Event | None) -> bool:
        """Whether every call in flight finished within ``grace`` (False as soon as ``cut`` is set).
        Called with the lock held; waits in short slices so a cut is seen within a fifth of a second."""
        end = time.monotonic() + grace
        while any(h.busy for h in self._open):
            left = end - time.monotonic()
            if left <= 0 or (cut is not None and cut.is_set()):
                return False
            self._idle.wait(min(left, 0.2))
        return True

    def _close_servers(self) -> None:
        for server in self.servers:
            try:
                server.server_close()
            except OSError:
                pass
        if self.socket_path is not None:
            try:
                if stat.S_ISSOCK(self.socket_path.lstat().st_mode):
                    self.socket_path.unlink()
            except OSError:
                pass


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
