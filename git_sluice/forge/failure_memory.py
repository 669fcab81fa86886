"""Failure memory: an address that failed is not asked again for a while, by anyone on the clone.

A 5xx, a timeout, a refused connection or an unparsable body is remembered
in the address's kept meta (60 s, doubling while it keeps failing, at most
15 min); until then a call is refused before it takes a permit, so a broken
endpoint costs GitHub one call per window, not one per caller.

A failure of this machine's set-up — a name that does not resolve, a
certificate it does not trust — is told (failures.py names the host and what
to do) but never remembered: no request reached GitHub, and a remembered one
would repeat the old failure after the person fixed their DNS or trust store.
"""

from __future__ import annotations

import os

import httpx

from ..errors import ForgeUnavailable
from .failures import Failure, describe
from .layers import AnswerFailed, KeptLayer, call_of, meta_of


class FailureMemory(KeptLayer):
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        address = call_of(request).address
        meta = meta_of(request, self.kept)
        if meta.fail_until is not None and meta.fail_until > self.clock.time():
            raise ForgeUnavailable(address, meta.fail_until, meta.fail_reason or "failed recently")
        try:
            return self.inner.handle_request(request)
        except AnswerFailed as exc:
            failure = Failure("answer", exc.reason)
        except httpx.HTTPError as exc:
            failure = transport_failure(exc, request)
        self.stats.failures += 1
        now = self.clock.time()
        if failure.local:  # this machine's set-up: told, never remembered (failures.py)
            raise ForgeUnavailable(address, now, failure.reason, kind=failure.kind, remembered=False) from None
        meta = self.kept.fail(meta, failure.reason, now)
        raise ForgeUnavailable(address, meta.fail_until or now, failure.reason, kind=failure.kind) from None

    def close(self) -> None:
        self.inner.close()


def transport_failure(exc: httpx.HTTPError, request: httpx.Request) -> Failure:
    """A transport failure in words a person reads: the host, what went wrong, what to do."""
    timeouts = request.extensions.get("timeout")
    timeout = timeouts.get("read") if isinstance(timeouts, dict) else None
    return describe(exc, request.url, timeout=timeout if isinstance(timeout, (int, float)) else None, env=os.environ)
