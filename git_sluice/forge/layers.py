"""What the layers of one call's road share: the call's options, the marks, the counters, the waits.

The road is a stack of httpx transports (``client.Forge`` builds it); each
layer learns the call's options from ``request.extensions[CALL]`` and tells
the layers above what happened through ``response.extensions`` — the way
hishel marks a cached answer (``hishel_from_cache``, ``hishel_revalidated``,
``hishel_stored``), so a reader who knows hishel knows these.
"""

from __future__ import annotations

import threading
import time
from dataclasses import field

import httpx

from ..clock import Clock, SystemClock
from ..errors import AnswerFailed as AnswerFailed
from ..errors import Interrupted
from ..records import record
from .kept_answers import KeptAnswers, KeptBody, Meta

CALL = "sluice_call"  # request: the Call below
PERMIT = "sluice_permit"  # request: the hoststore.Permit the call goes out under
META = "sluice_meta"  # request: the address's kept meta, as single flight read it under the lock
VERDICT = "sluice_verdict"  # response: rules.Verdict of a wire answer
COUNTED = "sluice_counted"  # response: whether GitHub counted it
COST = "sluice_cost"  # response: what it cost (GraphQL points, else 1)
SHARED = "sluice_shared"  # response: another caller's flight answered it
FROM_CACHE = "hishel_from_cache"  # response: the body is the kept one
REVALIDATED = "hishel_revalidated"  # response: GitHub said 304 for it
STORED = "hishel_stored"  # response: this answer was kept


@record(eq=False)
class KeptLayer(httpx.BaseTransport):
    """A layer that reads the kept answers: the next layer down, the kept answers, the clock, the counters.

    Single flight, failure memory and revalidation each take these four, in
    this order; said once here so each layer's file holds only its step.
    """

    inner: httpx.BaseTransport
    kept: KeptAnswers
    clock: Clock
    stats: Stats


@record(frozen=True)
class Call:
    """One call's options: its kept-answer address, whether to wait out a pause, and until when."""

    address: str
    wait: bool = False
    deadline: float | None = None  # wall-clock seconds (the injected clock's time())


def call_of(request: httpx.Request) -> Call:
    call = request.extensions.get(CALL)
    if isinstance(call, Call):
        return call
    return Call(address=f"{request.method} {request.url}")


def meta_of(request: httpx.Request, kept: KeptAnswers) -> Meta:
    """The kept meta single flight read under the lock (nothing moves it while held), else read now."""
    address = call_of(request).address
    meta = request.extensions.get(META)
    if isinstance(meta, Meta) and meta.address == address:
        return meta
    return kept.meta(address)


@record
class Stats:
    """What this client did, for a round's report and the tests."""

    requests: int = 0  # calls that reached the wire
    counted: int = 0  # of them, counted against the allowance (REST calls)
    points: int = 0  # GraphQL points spent
    not_modified: int = 0  # 304s
    shared: int = 0  # answers shared from another caller's flight
    not_attempted: int = 0  # permits fenced before the wire
    failures: int = 0
    throttles: int = 0
    paced_writes: int = 0  # writes that waited for their slot (forge/writepace.py)
    calls: list[tuple[str, int]] = field(default_factory=list)  # (address, status)


def kept_response(request: httpx.Request, kept: KeptBody, **marks: bool) -> httpx.Response:
    """The kept answer as a response, marked as hishel marks one served from its cache."""
    extensions: dict[str, object] = {FROM_CACHE: True, COUNTED: False, COST: 0, **marks}
    # a stream, not content=: httpx would add a Content-Length the kept answer never had
    return httpx.Response(
        kept.status, headers=kept.headers, stream=httpx.ByteStream(kept.body), request=request, extensions=extensions
    )


class Waits:
    """Every wait of a call, in slices short enough to notice ``cancel`` (SIGTERM's business).

    Waits for a pause's end run on the injected clock (a test's fake clock
    jumps); waits for another caller's call to end run in real time, as that
    call does. Without a cancel event a wait is one sleep, as it always was.
    """

    SLICE = 1.0

    def __init__(self, clock: Clock, cancel: threading.Event | None = None) -> None:
        self.clock = clock
        self.cancel = cancel

    def check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Interrupted("stopped while waiting to call GitHub; nothing more was sent")

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on the injected clock."""
        self.check()
        if self.cancel is None:
            self.clock.sleep(seconds)
            return
        if isinstance(self.clock, SystemClock):
            self.cancel.wait(max(seconds, 0.0))
        else:
            end = self.clock.time() + seconds
            while (left := end - self.clock.time()) > 0:
                self.check()
                self.clock.sleep(min(left, self.SLICE))
        self.check()

    def poll(self, seconds: float) -> None:
        """A short real-time pause while another caller's call ends."""
        self.check()
        if self.cancel is not None:
            self.cancel.wait(seconds)
        else:
            time.sleep(seconds)
        self.check()
