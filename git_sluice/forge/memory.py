"""Failure memory: an address that failed is not asked again for a while, by anyone on the clone.

A 5xx, a timeout, a refused connection or an unparsable body is remembered
in the address's kept meta (60 s, doubling while it keeps failing, at most
15 min); until then a call is refused before it takes a permit, so a broken
endpoint costs GitHub one call per window, not one per caller.
"""

from __future__ import annotations

import httpx

from ..errors import ForgeUnavailable
from .road import AnswerFailed, KeptLayer, call_of, meta_of


class FailureMemory(KeptLayer):
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        address = call_of(request).address
        meta = meta_of(request, self.kept)
        if meta.fail_until is not None and meta.fail_until > self.clock.time():
            raise ForgeUnavailable(address, meta.fail_until, meta.fail_reason or "failed recently")
        try:
            return self.inner.handle_request(request)
        except AnswerFailed as exc:
            reason = exc.reason
        except httpx.HTTPError as exc:
            reason = transport_reason(exc)
        self.stats.failures += 1
        now = self.clock.time()
        meta = self.kept.fail(self.kept.meta(address), reason, now)
        raise ForgeUnavailable(address, meta.fail_until or now, reason) from None

    def close(self) -> None:
        self.inner.close()


def transport_reason(exc: httpx.HTTPError) -> str:
    """A failure in words a person reads in a log line."""
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "connection dropped"
    return type(exc).__name__
