"""Why a call never got an answer, in words that name the host and what to do.

Before issue 31 every transport failure read "connection refused": a name
that does not resolve and a certificate this machine does not trust too, so
a person fixing the wrong thing. The cause is found by walking the exception
chain down to what the socket said (httpx wraps httpcore's error, which wraps
the ``OSError``/``ssl`` error), and sorted into kinds:

========== ============================================ =========
kind       what happened                                 remembered
========== ============================================ =========
dns        the host name does not resolve                no
tls        the certificate is not trusted, is not for    no
           that name, or the handshake failed
refused    nothing listens at host:port                  yes
timeout    no connection or no answer within the time    yes
dropped    the connection closed before the answer       yes
connect    any other failure to connect                  yes
========== ============================================ =========

**Remembered** is failure memory's (failure_memory.py): an address that failed is not
asked again for 60 s, doubling. A DNS or TLS failure is this machine's
set-up, not GitHub's state: no request reached GitHub, so asking again costs
it nothing, and remembering it would repeat the old failure for up to 15
minutes after the person fixed their DNS or trust store (issue 31). So those
two are never remembered; the others are, as before. A changed ``sluice.api``
is a changed address, so a remembered failure never outlives that either.

Pure: the exception and the request's URL in, a :class:`Failure` out.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator, Mapping

import httpx

from ..records import record
from . import proxies

LOCAL_KINDS = frozenset({"dns", "tls"})
"""Failures of this machine's set-up: never remembered by failure memory."""

_UNTRUSTED_HELP = (
    "if {host} uses a certificate of your company's own CA, add that CA to this system's trust store "
    "(git-sluice trusts the system's CAs, through truststore) or point SSL_CERT_FILE at a PEM file "
    "that holds it (see \"GitHub Enterprise Server\" in docs/operations.md)"
)
_HOSTNAME_MISMATCH = {62, 64}  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH


@record(frozen=True)
class Failure:
    """One transport failure: ``reason`` names the host and says what to do."""

    kind: str
    reason: str

    @property
    def local(self) -> bool:
        """Caused by this machine's set-up (DNS, TLS trust): not remembered against the address."""
        return self.kind in LOCAL_KINDS


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and everything it was raised from or during, outermost first."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def _where(url: httpx.URL) -> tuple[str, int]:
    port = url.port if url.port is not None else (443 if url.scheme == "https" else 80)
    return url.host, port


def _seconds(timeout: float | None) -> str:
    return "" if timeout is None else f" within {timeout:g} s"


def describe(exc: BaseException, url: httpx.URL, *, timeout: float | None = None,
             env: Mapping[str, str] | None = None) -> Failure:
    """What ``exc``, raised calling ``url``, means (``timeout``: the call's, for the words; ``env``: for the proxy)."""
    host, port = _where(url)
    try:
        proxy = proxies.proxy_for(str(url), env) if env is not None else None
    except Exception:  # a proxy setting it cannot use was told when the wire was built; here, only words
        proxy = None
    if proxy is not None:
        proxied = httpx.URL(proxy)
        host, port = _where(proxied)
        via = f" (the proxy for {url.host}, from the environment's https_proxy/all_proxy)"
    else:
        via = ""
    chain = list(_chain(exc))
    for cause in chain:
        if isinstance(cause, socket.gaierror):
            return Failure("dns", f"the name {host}{via} does not resolve (DNS: {cause.strerror or cause}); "
                                  "check the host name in sluice.api, or in the remote's URL it is derived from, "
                                  "and this machine's DNS, VPN or /etc/hosts")
        if isinstance(cause, ssl.SSLCertVerificationError):
            return _certificate(cause, host, via)
        if isinstance(cause, ssl.SSLError):
            return Failure("tls", f"the TLS handshake with {host}:{port}{via} failed ({getattr(cause, 'reason', None) or cause}); "
                                  "check that sluice.api's scheme and port are the server's https ones")
    if any(isinstance(cause, httpx.TimeoutException) for cause in chain):
        if any(isinstance(cause, httpx.ConnectTimeout) for cause in chain):
            return Failure("timeout", f"timed out: could not connect to {host}:{port}{via}{_seconds(timeout)}; "
                                      "the server, or the network to it, is down or slow (a proxy may be needed: "
                                      "https_proxy)")
        return Failure("timeout", f"timed out: no answer from {host}{via}{_seconds(timeout)}; "
                                  "the server is slow or stuck (git-sluice asks again later)")
    for cause in chain:
        if isinstance(cause, ConnectionRefusedError):
            return Failure("refused", f"connection refused by {host}:{port}{via}: nothing listens there; "
                                      "check the host and port in sluice.api and that the server is up")
    if any(isinstance(cause, httpx.RemoteProtocolError) for cause in chain):
        return Failure("dropped", f"the connection to {host}{via} closed before an answer")
    for cause in chain:
        if isinstance(cause, OSError) and cause.strerror:
            return Failure("connect", f"could not connect to {host}:{port}{via} ({cause.strerror})")
    return Failure("connect", f"could not connect to {host}:{port}{via} ({type(exc).__name__}: {exc})")


def _certificate(cause: ssl.SSLCertVerificationError, host: str, via: str) -> Failure:
    said = cause.verify_message or getattr(cause, "reason", None) or str(cause)
    if cause.verify_code in _HOSTNAME_MISMATCH:
        return Failure("tls", f"TLS: the certificate of {host}{via} is not for that name ({said}); "
                              "use the name the certificate is for in sluice.api, or have the server's "
                              f"certificate cover {host}")
    return Failure("tls", f"TLS: the certificate of {host}{via} is not trusted ({said}); "
                          + _UNTRUSTED_HELP.format(host=host))
