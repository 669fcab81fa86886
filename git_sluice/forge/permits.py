"""The host's gate on the road: a permit before the wire, the pause after a throttle.

``Admission`` gets a *started* permit for (pool, resource): none while the
pause stands (a caller that does not wait is told ``AllowanceSpent`` at
once), one probe at its end (claimed across hosts through ``probe_claim``),
then cohorts; a permit whose epoch a throttle moved before the wire is
dropped unsent and counted *not attempted*.

``HostGate`` sends the call under that permit and hands the permit back with
the outcome the ledger's verdict names: a throttle pauses the host (and,
through ``on_pause``, the fleet); a failure goes to failure memory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx

from ..clock import Clock
from ..errors import AllowanceSpent, CallTimedOut, Interrupted, SluiceError
from . import rules
from .hoststore import HostStore, Outcome, OutcomeKind, PauseView, Permit, Wait
from .road import PERMIT, VERDICT, AnswerFailed, Stats, Waits, call_of

log = logging.getLogger("git_sluice")

PROBE_POLL = 0.005  # real seconds: a probe or a cohort's calls end within one call's time

PauseListener = Callable[[PauseView], None]
WaitListener = Callable[[Wait], None]
ProbeClaim = Callable[[Permit], bool]
ProbeListener = Callable[[Permit], None]


class Admission:
    """Permits for (pool, resource) from the host store, waiting where the caller allows it."""

    def __init__(
        self, store: HostStore, clock: Clock, waits: Waits, stats: Stats, *, enforce: bool, permit_deadline: float,
        on_wait: WaitListener | None = None, probe_claim: ProbeClaim | None = None,
    ) -> None:
        self.store, self.clock, self.waits, self.stats = store, clock, waits, stats
        self.enforce, self.permit_deadline = enforce, permit_deadline
        self.on_wait, self.probe_claim = on_wait, probe_claim

    def admit(self, pool: str, resource: str, *, wait: bool, deadline: float | None) -> Permit:
        said_paused = False
        while True:
            self.waits.check()
            decision = self.store.acquire(pool, resource, deadline=self.permit_deadline, enforce=self.enforce)
            now = self.clock.time()
            if isinstance(decision, Permit):
                if not self.store.start(decision):
                    self.stats.not_attempted += 1  # a throttle moved the epoch since the permit: unsent
                    continue
                if decision.kind == "probe" and self.probe_claim is not None and not self.probe_claim(decision):
                    continue  # another host probes for the fleet; the claim recorded the wait
                return decision
            if decision.reason == "paused":
                if not wait or (deadline is not None and decision.until > deadline):
                    log.debug("%s of pool %s paused: not sent (no waiting %s)", resource, pool,
                             "asked" if not wait else "past the deadline")
                    raise AllowanceSpent(pool, resource, decision.until)
                if not said_paused and self.on_wait is not None:
                    self.on_wait(decision)
                said_paused = True
                self.waits.sleep(max(decision.until - now, 0.0) + 0.001)
                continue
            if deadline is not None and now > deadline:
                raise AllowanceSpent(pool, resource, decision.until, reason=f"{decision.reason} in progress")
            self.waits.poll(PROBE_POLL)  # real time: the wait is for another caller's call to end


class HostGate(httpx.BaseTransport):
    def __init__(
        self, inner: httpx.BaseTransport, admission: Admission, pool: Callable[[str], str], stats: Stats,
        *, on_pause: PauseListener | None = None, on_probed: ProbeListener | None = None,
    ) -> None:
        self.inner, self.admission, self.pool, self.stats = inner, admission, pool, stats
        self.on_pause, self.on_probed = on_pause, on_probed

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        call = call_of(request)
        resource = rules.resource_for(request.method, request.url.path)
        while True:
            # the pool per resource: a token whose pool is unknown goes under a standing pause's
            permit = self.admission.admit(self.pool(resource), resource, wait=call.wait, deadline=call.deadline)
            request.extensions = {**request.extensions, PERMIT: permit}
            try:
                response = self.inner.handle_request(request)
            except Exception as exc:
                self.admission.store.finish(permit, Outcome("failure" if _was_sent(exc) else "not_attempted"))
                raise
            verdict: rules.Verdict = response.extensions[VERDICT]
            pause = self._finish(permit, verdict)
            if verdict.kind == "throttle":
                log.debug("%s of pool %s: %s: the host pauses%s", verdict.resource, permit.pool, verdict.reason,
                         "" if self.admission.enforce else " (observe-only: it would have)")
                self.stats.throttles += 1
                if self.admission.enforce:
                    until = pause.until if pause is not None else self.admission.clock.time() + rules.FALLBACK_BASE
                    if call.wait and (call.deadline is None or until <= call.deadline):
                        continue  # admission waits the pause out
                    raise AllowanceSpent(permit.pool, verdict.resource, until, reason=verdict.reason)
            if verdict.kind == "failure":
                raise AnswerFailed(verdict.reason)
            return response

    def _finish(self, permit: Permit, verdict: rules.Verdict) -> PauseView | None:
        """Hand the permit back; tell the fleet of a pause it opened, or that a probe went well."""
        kinds: dict[str, OutcomeKind] = {"spent_ok": "spent", "throttle": "throttle", "failure": "failure"}
        kind = kinds.get(verdict.kind, "ok")
        pause = self.admission.store.finish(permit, Outcome(kind, verdict))
        if permit.kind == "probe" and kind == "ok" and self.on_probed is not None:
            try:
                self.on_probed(permit)
            except Exception as exc:
                log.warning("could not tell the fleet the pause is over: %s", exc)
        if pause is not None and self.on_pause is not None and not pause.observe_only:
            try:
                self.on_pause(pause)
            except Exception as exc:  # publishing to the fleet must never undo the host's own pause
                log.warning("could not publish the pause to the remote: %s", exc)
        return pause

    def close(self) -> None:
        self.inner.close()


def _was_sent(exc: Exception) -> bool:
    """Did the call reach the wire? A refusal of our own before it (deadline, URL, credentials) did not."""
    if isinstance(exc, CallTimedOut):
        return exc.sent
    return isinstance(exc, Interrupted) or not isinstance(exc, SluiceError)
