"""The host's gate on the road: a permit before the wire, the pause after a throttle.

``Permits`` gets a *started* permit for (pool, resource): none while the
pause stands (a caller that does not wait is told ``AllowanceSpent`` at
once), one probe at its end (claimed across hosts through ``probe_claim``),
then cohorts; a permit whose epoch a throttle moved before the wire is
dropped unsent and counted *not attempted*.

``HostGate`` sends the call under that permit and hands the permit back with
the outcome the ledger's verdict names: a throttle pauses the host (and,
through ``on_pause``, the fleet); a failure goes to failure memory.

Permits are taken and settled in batches (issue 15): a *normal* permit (the
gate open) is kept by ``Permits`` for the process's next calls to the same
(pool, resource) until ``settle`` hands it back or it comes near its
deadline. Before each reuse the store is *read* (``HostStore.check``, no
write lock): a throttle anywhere on the host moved the epoch, and the next
call is fenced unsent exactly as an unstarted permit is. A round of 150
conditional GETs so costs a handful of write transactions, not 600. Probes
and cohort permits stay one per call: the ramp counts calls.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import httpx

from ..clock import Clock
from ..errors import AllowanceSpent, CallCancelled, CallTimedOut, Interrupted, SluiceError
from . import rules
from .gate_machine import PauseView
from .hoststore import HostStore, Outcome, OutcomeKind, Permit, Wait
from .layers import PERMIT, VERDICT, AnswerFailed, Stats, Waits, call_of

log = logging.getLogger("git_sluice")

PROBE_POLL = 0.005  # real seconds: a probe or a cohort's calls end within one call's time

PauseListener = Callable[[PauseView], None]
WaitListener = Callable[[Wait], None]
ProbeClaim = Callable[[Permit], bool]
ProbeListener = Callable[[Permit], None]


class Permits:
    """Permits for (pool, resource) from the host store, waiting where the caller allows it."""

    def __init__(
        self, store: HostStore, clock: Clock, waits: Waits, stats: Stats, *, enforce: bool, permit_deadline: float,
        on_wait: WaitListener | None = None, probe_claim: ProbeClaim | None = None,
        before_call: Callable[[str], None] | None = None,
    ) -> None:
        self.store, self.clock, self.waits, self.stats = store, clock, waits, stats
        self.enforce, self.permit_deadline = enforce, permit_deadline
        self.on_wait, self.probe_claim = on_wait, probe_claim
        # told the pool before each call asks for a permit: the fleet's pauses get a chance
        # to reach the host store first (a rate-limited check of the pause notes, issue #14 point 14)
        self.before_call = before_call
        # a started normal permit per (pool, resource), reused for the next calls (see the module's docstring)
        self._kept: dict[tuple[str, str], Permit] = {}
        self._kept_lock = threading.Lock()

    def admit(self, pool: str, resource: str, *, wait: bool, deadline: float | None) -> Permit:
        said_paused = False
        if self.before_call is not None:
            try:
                self.before_call(pool)
            except Exception:  # a check that fails must never stop a call
                pass
        while True:
            self.waits.check()
            kept = self._reuse(pool, resource)
            if kept is not None:
                return kept
            decision = self.store.acquire(pool, resource, deadline=self.permit_deadline, enforce=self.enforce)
            now = self.clock.time()
            if isinstance(decision, Permit):
                if not self.store.start(decision):
                    self.stats.not_attempted += 1  # a throttle moved the epoch since the permit: unsent
                    continue
                if decision.kind == "probe" and self.probe_claim is not None and not self.probe_claim(decision):
                    continue  # another host probes for the fleet; the claim recorded the wait
                if decision.kind == "normal":
                    with self._kept_lock:
                        self._kept.setdefault((pool, resource), decision)
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

    def _reuse(self, pool: str, resource: str) -> Permit | None:
        """The kept normal permit, if the store says its next call may still go on the wire."""
        key = (pool, resource)
        with self._kept_lock:
            permit = self._kept.get(key)
        if permit is None:
            return None
        # a call needs its whole deadline inside the permit's: near the end, hand it back and take another
        if permit.deadline_at - self.clock.time() <= self.permit_deadline / 2:
            self._drop(permit)
            self.store.finish(permit, Outcome("ok"))
            return None
        check = self.store.check(permit)
        if check == "ok":
            return permit
        self._drop(permit)
        if check == "fenced" and not self.store.start(permit):  # drops and counts it, as any fenced permit
            self.stats.not_attempted += 1
        return None

    def _drop(self, permit: Permit) -> None:
        with self._kept_lock:
            if self._kept.get((permit.pool, permit.resource)) == permit:
                del self._kept[(permit.pool, permit.resource)]

    def is_kept(self, permit: Permit) -> bool:
        with self._kept_lock:
            return self._kept.get((permit.pool, permit.resource)) == permit

    def finish(self, permit: Permit, outcome: Outcome) -> PauseView | None:
        """Hand one call's permit back. A kept permit's ``ok`` or ``failure`` changes no gate: no write.

        A call cut short by a stop hands its permit back (the process is leaving) and is counted as such.
        """
        if self.is_kept(permit):
            if outcome.kind in ("ok", "failure"):
                return None
            self._drop(permit)
        return self.store.finish(permit, outcome)

    def settle(self) -> None:
        """Hand back every kept permit and write the noted ledger (a round's end, or the forge's close)."""
        with self._kept_lock:
            kept, self._kept = list(self._kept.values()), {}
        for permit in kept:
            self.store.finish(permit, Outcome("ok"))
        self.store.flush()


class HostGate(httpx.BaseTransport):
    def __init__(
        self, inner: httpx.BaseTransport, permits: Permits, pool: Callable[[str], str], stats: Stats,
        *, on_pause: PauseListener | None = None, on_probed: ProbeListener | None = None,
    ) -> None:
        self.inner, self.permits, self.pool, self.stats = inner, permits, pool, stats
        self.on_pause, self.on_probed = on_pause, on_probed

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        call = call_of(request)
        resource = rules.resource_for(request.method, request.url.path)
        while True:
            # the pool per resource: a token whose pool is unknown goes under a standing pause's
            permit = self.permits.admit(self.pool(resource), resource, wait=call.wait, deadline=call.deadline)
            request.extensions = {**request.extensions, PERMIT: permit}
            try:
                response = self.inner.handle_request(request)
            except Exception as exc:
                self.permits.finish(permit, Outcome(_outcome_of(exc)))
                raise
            verdict: rules.Verdict = response.extensions[VERDICT]
            pause = self._finish(permit, verdict)
            if verdict.kind == "throttle":
                log.debug("%s of pool %s: %s: the host pauses%s", verdict.resource, permit.pool, verdict.reason,
                         "" if self.permits.enforce else " (observe-only: it would have)")
                self.stats.throttles += 1
                if self.permits.enforce:
                    until = pause.until if pause is not None else self.permits.clock.time() + rules.FALLBACK_BASE
                    if call.wait and (call.deadline is None or until <= call.deadline):
                        continue  # the permits wait the pause out
                    raise AllowanceSpent(permit.pool, verdict.resource, until, reason=verdict.reason)
            if verdict.kind == "failure":
                raise AnswerFailed(verdict.reason)
            return response

    def _finish(self, permit: Permit, verdict: rules.Verdict) -> PauseView | None:
        """Hand the permit back; tell the fleet of a pause it opened, or that a probe went well."""
        kinds: dict[str, OutcomeKind] = {"spent_ok": "spent", "throttle": "throttle", "failure": "failure"}
        kind = kinds.get(verdict.kind, "ok")
        pause = self.permits.finish(permit, Outcome(kind, verdict))
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


def _outcome_of(exc: Exception) -> OutcomeKind:
    """How a call that raised ends for the gate: cut short by a stop, failed on the wire, or never sent."""
    if isinstance(exc, CallCancelled):
        return "cut_short"  # the user ended it, not GitHub: it told the gate nothing
    return "failure" if _was_sent(exc) else "not_attempted"


def _was_sent(exc: Exception) -> bool:
    """Did the call reach the wire? A refusal of our own before it (deadline, URL, credentials) did not."""
    if isinstance(exc, CallTimedOut):
        return exc.sent
    return isinstance(exc, Interrupted) or not isinstance(exc, SluiceError)
