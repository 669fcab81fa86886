"""Single flight: one caller per address on the clone at a time, across processes.

A caller that waited while another caller asked the same address shares that
answer (its generation moved and the address did not fail): ten processes
asking at once make one call. The wait is bounded: a caller that waited
``patience`` seconds for a caller that never finishes — stopped, or itself
waiting out a pause — takes its own turn rather than crash with the lock's
timeout, and the layers below still keep every rule (a pause refuses it,
failure memory answers it); a caller whose own deadline runs out first is
told so (``CallTimedOut``, nothing sent).
"""

from __future__ import annotations

import logging
from dataclasses import field

import httpx

from ..errors import CallTimedOut
from ..records import record
from .flight_lock import FlightLock
from .layers import META, SHARED, Call, KeptLayer, Waits, call_of, kept_response

log = logging.getLogger("git_sluice")

LOCK_POLL = 0.05  # real seconds between tries of another process's lock


@record(eq=False)
class SingleFlight(KeptLayer):
    waits: Waits
    patience: float = field(default=90.0, kw_only=True)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "GET":
            return self.inner.handle_request(request)
        call = call_of(request)
        lock = self.kept.flight_lock(call.address)
        try:
            before = lock.mark()
            if not self._take(lock, call):
                if call.deadline is not None and self.clock.time() >= call.deadline:
                    raise CallTimedOut(
                        call.address, sent=False, waiting="while another caller on this clone asked it"
                    )
                log.warning("another caller has been asking %s for too long: asking it on our own", call.address)
                return self.inner.handle_request(request)
            meta = self.kept.meta(call.address)
            failing = meta.fail_until is not None and meta.fail_until > self.clock.time()
            if lock.mark() != before and not failing:
                kept = self.kept.body(call.address, meta)
                if kept is not None:  # the call we waited for answered: share it
                    self.stats.shared += 1
                    return kept_response(request, kept, **{SHARED: True})
            request.extensions = {**request.extensions, META: meta}
            return self.inner.handle_request(request)
        finally:
            lock.release()

    def _take(self, lock: FlightLock, call: Call) -> bool:
        """The lock within our patience (and our deadline), checking for a stop between tries."""
        limit = self.clock.time() + self.patience
        if call.deadline is not None:
            limit = min(limit, call.deadline)
        if lock.acquire(timeout=0):
            return True
        while True:
            if lock.acquire(timeout=LOCK_POLL):
                return True
            if self.clock.time() >= limit:
                return False
            self.waits.check()

    def close(self) -> None:
        self.inner.close()
