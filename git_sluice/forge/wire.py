"""The last two steps before the wire: the token goes on, and the call gets its whole deadline.

``Authorize`` attaches the token only to a URL at a configured endpoint's
exact origin (scheme, host, port), checked again here so that no caller and
no redirect-following change above can send it elsewhere; it asks the
credentials at each attempt, so an App token renewed during a long pause is
the one that goes out.

``Deadline`` bounds the whole call, not each read: httpx's timeout is per
read, so an answer trickling one byte every few seconds would never end.
Each read may wait at most what is left of the call, and the body is read
against the same deadline on the injected clock. A call past its own 30 s
fails as timed out (failure memory takes it from there); a call cut short by
its caller's nearer deadline is ``CallTimedOut`` (exit 4) and leaves the
address's record alone — one impatient caller must not make GitHub look down
to every other process of the clone.

A call on the wire is *abandonable* (:func:`abandonable`): with a cancel event
(the command's stop flag, SIGINT / SIGTERM) it runs on a thread of its own and
the caller waits for its end or the stop, whichever comes first. A stop raises
``CallCancelled`` at once — a user's Ctrl-C does not wait out GitHub's silence,
and failure memory and the host's gate, which take it for what it is, hold
nothing against GitHub for a call the user cut short.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import httpcore
import httpx

from ..clock import Clock
from ..errors import CallCancelled, CallTimedOut, ForeignURL, Interrupted, SluiceError
from . import origins, proxies
from .layers import Waits, call_of

if TYPE_CHECKING:
    import ssl


class Authorize(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport, token: Callable[[], str], endpoints: tuple[str, ...]) -> None:
        self.inner = inner
        self.token = token
        self.endpoints = endpoints

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        if not any(origins.under(url, endpoint) for endpoint in self.endpoints):
            raise ForeignURL(url, " or ".join(self.endpoints))
        request.headers["Authorization"] = f"token {self.token()}"
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


T = TypeVar("T")

CANCEL_POLL = 0.05
"""Real seconds between two looks at the stop flag while a call is on the wire (a stop is seen that soon)."""


def abandonable(work: Callable[[], T], cancel: threading.Event | None, address: str) -> T:
    """``work()`` (a call on the wire), given up at once when ``cancel`` is set: ``CallCancelled``.

    The call runs on a daemon thread and the caller waits for either its end
    or the stop; a stopped caller leaves it to finish (or time out) on its
    own, its answer unread — the process is on its way out. Without a cancel
    event the call runs here, as it always did (no thread).
    """
    if cancel is None:
        return work()
    if cancel.is_set():
        raise Interrupted("stopped before calling GitHub; nothing more was sent")
    done = threading.Event()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the caller, as if raised there
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="git-sluice-call", daemon=True).start()
    while not done.wait(CANCEL_POLL):
        if cancel.is_set():
            raise CallCancelled(address)
    if failure:
        if isinstance(failure[0], Interrupted) and not isinstance(failure[0], CallCancelled):
            raise CallCancelled(address) from None  # the call saw the stop itself (between chunks)
        raise failure[0]
    return outcome[0]


MIN_ANSWER_TIME = 5.0
"""Seconds a sent call is given to answer at least, whatever is left of its caller's deadline."""


class Deadline(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport, clock: Clock, waits: Waits, *, timeout: float) -> None:
        self.inner = inner
        self.clock = clock
        self.waits = waits
        self.timeout = timeout

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        call = call_of(request)
        left = self.timeout
        callers = call.deadline is not None and call.deadline - self.clock.time() < left
        if call.deadline is not None:
            left = min(left, call.deadline - self.clock.time())
        if left <= 0:
            raise CallTimedOut(call.address, sent=False)
        # A call once sent is counted by GitHub whether or not its answer is read: one started with a
        # moment left on its caller's deadline is still given time to answer, instead of being cut off
        # after it was paid for (a wait near its timeout re-sent its reading, each counted, every look).
        left = min(self.timeout, max(left, MIN_ANSWER_TIME))
        end = self.clock.monotonic() + left
        request.extensions = {**request.extensions, "timeout": dict.fromkeys(("connect", "read", "write", "pool"), left)}
        try:
            return abandonable(lambda: self._send(request, end), self.waits.cancel, call.address)
        except httpx.TimeoutException:
            if callers:  # the caller's own deadline, not GitHub, ran out: nothing to remember against the address
                raise CallTimedOut(call.address, sent=True) from None
            raise

    def _send(self, request: httpx.Request, end: float) -> httpx.Response:
        """The call and its whole answer, read against ``end``."""
        response = self.inner.handle_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        try:
            body = b"".join(self._chunks(stream, request, end))
        finally:
            stream.close()
        response.stream = httpx.ByteStream(body)
        return response

    def _chunks(self, stream: httpx.SyncByteStream, request: httpx.Request, end: float) -> Iterator[bytes]:
        if self.clock.monotonic() > end:
            raise httpx.ReadTimeout("no answer within the call's deadline", request=request)
        for chunk in stream:
            self.waits.check()
            if self.clock.monotonic() > end:
                raise httpx.ReadTimeout("the answer did not end within the call's deadline", request=request)
            yield chunk

    def close(self) -> None:
        self.inner.close()


def transport_for(endpoints: tuple[str, ...], env: Mapping[str, str] | None = None) -> httpx.BaseTransport:
    """The wire to GitHub: httpx's transport, through the environment's proxy, the system's CAs loaded only for https.

    httpx honours ``https_proxy`` and its kin only in a client that builds its
    own transport; git-sluice builds this one, so it reads them itself
    (:mod:`.proxies`, curl's rules) and routes each endpoint's origin to its
    proxy or direct. Certificates are checked against the system's trust
    store (:func:`trusted_context`), so a company CA the machine trusts is
    trusted here too. Loading a CA store costs milliseconds of every process's
    start-up (issue 15); every call goes to one of ``endpoints``
    (:class:`Authorize` refuses any other origin), so when none of them is
    https no TLS is ever spoken to GitHub; the context given then trusts no
    certificate at all, so a TLS connection, were one ever tried, fails closed.
    """
    env = os.environ if env is None else env
    tls = any(endpoint.lower().startswith("https:") for endpoint in endpoints)
    pins = resolve_pins(env.get(TEST_RESOLVE_ENV, ""))
    built: dict[str | None, httpx.BaseTransport] = {}
    routes: dict[origins.Origin, httpx.BaseTransport] = {}
    for endpoint in endpoints:
        proxy = proxies.proxy_for(endpoint, env)
        if proxy not in built:
            built[proxy] = _transport(tls, proxy, pins)
        where = origins.split(endpoint)
        if where is not None:
            routes[where[0]] = built[proxy]
    if len(built) == 1:
        return next(iter(built.values()))
    return ByOrigin(routes)


def trusted_context() -> ssl.SSLContext:
    """A TLS context that trusts what this system trusts (the ``truststore`` library).

    On macOS and Windows the operating system's own store and verifier; on
    Linux OpenSSL's default locations — the distribution's bundle
    (``update-ca-certificates``), or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when
    set, which replace it. httpx's own default is certifi's bundle, which a
    GitHub Enterprise Server behind a company CA is never in.
    """
    import ssl

    import truststore

    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _transport(tls: bool, proxy: str | None, pins: Mapping[tuple[str, int], tuple[str, int]]) -> httpx.HTTPTransport:
    import ssl

    verify = trusted_context() if tls else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    transport = httpx.HTTPTransport(verify=verify, proxy=proxy)
    if pins:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            raise SluiceError(f"{TEST_RESOLVE_ENV} is set, but this httpx keeps no network backend to pin")
        pool._network_backend = _Pinned(backend, pins)  # type: ignore[union-attr]
    return transport


TEST_RESOLVE_ENV = "GIT_SLUICE_TEST_RESOLVE"
"""**Test-only.** ``HOST:PORT=127.0.0.1:PORT[,…]``: connections to HOST:PORT go to that loopback address.

Like curl's ``--resolve``: the URL, the Host header, TLS's server name and
the certificate check are all HOST's, only the TCP connection goes to the
loopback port. So a test proves that a clone whose remote is
``https://ghe.example.com/…`` talks to ``https://ghe.example.com/api/v3`` —
the derived address, unchanged, with its token — against the GitHub double
served over TLS on this machine. Only loopback targets are accepted: it can
never send a connection off the machine."""


def resolve_pins(text: str) -> dict[tuple[str, int], tuple[str, int]]:
    """``GIT_SLUICE_TEST_RESOLVE``'s value as {(host, port): (loopback address, port)}; refuses anything else."""
    pins: dict[tuple[str, int], tuple[str, int]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        source, _, target = item.partition("=")
        try:
            host, port = source.rsplit(":", 1)
            address, to_port = target.rsplit(":", 1)
            pin = (host.strip("[]").lower(), int(port)), (address.strip("[]"), int(to_port))
        except ValueError:
            raise SluiceError(f"{TEST_RESOLVE_ENV}={text!r}: expected HOST:PORT=127.0.0.1:PORT[,…] (test-only)") from None
        if not origins.is_loopback_host(pin[1][0]):
            raise SluiceError(f"{TEST_RESOLVE_ENV}: {target!r} is not a loopback address (test-only; loopback only)")
        pins[pin[0]] = pin[1]
    return pins


class _Pinned(httpcore.NetworkBackend):
    """httpcore's sockets, with the pinned (host, port)s connected to their loopback targets."""

    def __init__(self, inner: httpcore.NetworkBackend, pins: Mapping[tuple[str, int], tuple[str, int]]) -> None:
        self.inner = inner
        self.pins = pins

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        host, port = self.pins.get((host.strip("[]").lower(), port), (host, port))
        return self.inner.connect_tcp(host, port, timeout, local_address, socket_options)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return self.inner.connect_unix_socket(path, timeout, socket_options)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class ByOrigin(httpx.BaseTransport):
    """Each endpoint's origin to its own wire: when ``no_proxy`` sends one endpoint direct and the other through a proxy."""

    def __init__(self, routes: dict[origins.Origin, httpx.BaseTransport]) -> None:
        self.routes = routes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        where = origins.split(url)
        wire = self.routes.get(where[0]) if where is not None else None
        if wire is None:
            raise ForeignURL(url, " or ".join(f"{o.scheme}://{o.host}:{o.port}" for o in self.routes))
        return wire.handle_request(request)

    def close(self) -> None:
        for wire in {id(w): w for w in self.routes.values()}.values():
            wire.close()
