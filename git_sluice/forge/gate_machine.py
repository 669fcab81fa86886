"""The pause / epoch / permit / probe / ramp machine of one (pool, resource).

Pure: no I/O and no clock reads — every operation is given ``now`` — so the
host store can run it inside one SQLite transaction and the tests can drive
every interleaving of many callers through it (docs/design.md#the-pause).

Why each part exists:

- **Permits** with a deadline: every call takes one before it is sent and
  hands it back after. A permit whose process died (kill -9) simply expires, so
  no crash can wedge the pool.
- **Epoch**: a new pause advances it. A permit taken under an older epoch whose
  call has not started is refused before the wire (``start`` returns False):
  siblings that claimed work before the first throttle do not each go and find
  out for themselves.
- **One window, one escalation**: throttles from calls that were already on the
  wire when the pause opened extend the same window (the later end wins) but
  neither advance the epoch nor double the fallback again.
- **Probe**: when the pause ends exactly one call goes first; if it fails the
  next caller probes (each probe under its own epoch).
- **Ramp**: after a good probe, cohorts of 1, 2, 4, 8 calls. A cohort admits at
  most its size and never refills; the next opens only when every admitted call
  finished without a throttle and the cohort is full or has stood for
  :data:`RAMP_WINDOW`. Then the gate is open and the throttle streak forgotten.
"""

from __future__ import annotations

import math
from dataclasses import field, fields
from typing import Any, Literal

from git_sluice.forge import rules
from ..records import record

Phase = Literal["open", "paused", "probing", "ramp"]
PermitKind = Literal["normal", "probe", "cohort"]
WaitReason = Literal["paused", "probe", "ramp"]
FinishKind = Literal["ok", "throttle", "spent", "failure", "not_attempted"]
Effect = Literal["none", "paused", "extended", "released", "ramp", "advanced", "closed"]

COHORT_SIZES: tuple[int, ...] = (1, 2, 4, 8)
MAX_TIME = 253402300799.0
"""The last second of the year 9999: a state holding a later time (or NaN) is malformed."""
RAMP_WINDOW = 1.0
# How soon a caller told to wait for the probe or a ramp cohort should ask
# again: short, because the answer usually comes within one call's time.
POLL = 0.5

_PHASES = ("open", "paused", "probing", "ramp")
_KINDS = ("normal", "probe", "cohort")
_AUTHORITATIVE = ("retry-after", "reset")


@record
class InFlight:
    """A permit handed out and not yet handed back."""

    epoch: int
    kind: PermitKind
    started: bool
    deadline: float
    cohort: int | None = None  # the cohort serial a cohort permit was admitted to


@record(frozen=True)
class PauseView:
    """A pause (or a ramp after one) as a person, the fleet or a call's choice of pool sees it.

The one read-only shape of a pause on this host: :class:`GateState` is the
machine's whole state (permits in flight, cohorts), which nobody but the
store should hold; a pause note (``remote.notes.PauseNote``) is the same
pause as the remote carries it between hosts, text under a ref.
"""

    pool: str
    resource: str
    phase: str
    until: float
    cls: str | None
    how: str | None
    epoch: int
    streak: int
    source: str  # "local" or the host it was adopted from
    observe_only: bool
    # calls told "paused" in this window (observe-only: calls that would have been held);
    # waits for a probe or a cohort are not counted, as callers poll for those
    held: int
    paused_at: float | None = None
    cohort_size: int | None = None  # during the ramp: the size of the cohort now admitted


@record
class GateState:
    """Everything the machine knows about one (pool, resource); JSON-able via to_dict/from_dict."""

    pool_id: str = ""
    epoch: int = 0
    phase: Phase = "open"
    until: float = 0.0
    cls: str | None = None
    how: str | None = None
    streak: int = 0
    paused_at: float | None = None
    source: str = "local"
    origin: str | None = None  # adopted: where the note came from (a clone's remote), else None
    observe_only: bool = False
    held: int = 0  # callers told "paused" in this window (probe and ramp waits poll; not counted)
    probe: str | None = None
    cohort: int = 0
    cohort_serial: int = 0
    cohort_admitted: list[str] = field(default_factory=list)
    cohort_finished: int = 0
    cohort_clean: int = 0
    cohort_opened_at: float = 0.0
    permits: dict[str, InFlight] = field(default_factory=dict)

    @property
    def cohort_size(self) -> int:
        return COHORT_SIZES[self.cohort]

    def view(self, pool: str, resource: str) -> PauseView:
        """The pause as the rest of the host sees it (the ramp's cohort size only during the ramp)."""
        return PauseView(
            pool=pool, resource=resource, phase=self.phase, until=self.until, cls=self.cls, how=self.how,
            epoch=self.epoch, streak=self.streak, source=self.source, observe_only=self.observe_only,
            held=self.held, paused_at=self.paused_at,
            cohort_size=self.cohort_size if self.phase == "ramp" else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """Every field under its own name, in order; the permits as lists (what from_dict reads back)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["cohort_admitted"] = list(self.cohort_admitted)
        data["permits"] = {pid: [p.epoch, p.kind, p.started, p.deadline, p.cohort] for pid, p in self.permits.items()}
        return data

    @classmethod
    def from_dict(cls, data: Any) -> GateState:
        """Rebuild a state; raises ValueError on anything malformed (the store then starts afresh)."""
        try:
            if not isinstance(data, dict):
                raise TypeError("not an object")
            permits: dict[str, InFlight] = {}
            for pid, (epoch, kind, started, deadline, cohort) in dict(data.get("permits", {})).items():
                if kind not in _KINDS:
                    raise ValueError(f"permit kind {kind!r}")
                permits[str(pid)] = InFlight(
                    int(epoch), kind, bool(started), float(deadline), None if cohort is None else int(cohort)
                )
            state = cls(
                pool_id=str(data.get("pool_id", "")),
                epoch=int(data["epoch"]),
                phase=data["phase"],
                until=float(data["until"]),
                cls=_opt_str(data.get("cls")),
                how=_opt_str(data.get("how")),
                streak=int(data.get("streak", 0)),
                paused_at=None if data.get("paused_at") is None else float(data["paused_at"]),
                source=str(data.get("source", "local")),
                origin=_opt_str(data.get("origin")),
                observe_only=bool(data.get("observe_only", False)),
                held=int(data.get("held", 0)),
                probe=_opt_str(data.get("probe")),
                cohort=int(data.get("cohort", 0)),
                cohort_serial=int(data.get("cohort_serial", 0)),
                cohort_admitted=[str(x) for x in data.get("cohort_admitted", [])],
                cohort_finished=int(data.get("cohort_finished", 0)),
                cohort_clean=int(data.get("cohort_clean", 0)),
                cohort_opened_at=float(data.get("cohort_opened_at", 0.0)),
                permits=permits,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed gate state: {exc}") from exc
        if state.phase not in _PHASES or not 0 <= state.cohort < len(COHORT_SIZES):
            raise ValueError(f"malformed gate state: phase {state.phase!r}, cohort {state.cohort}")
        times = [state.until, state.cohort_opened_at, *(p.deadline for p in state.permits.values())]
        if state.paused_at is not None:
            times.append(state.paused_at)
        if not all(math.isfinite(t) and 0 <= t <= MAX_TIME for t in times):
            raise ValueError("malformed gate state: a time that is no time (not finite, negative or past 9999)")
        return state


def sane(state: GateState, now: float, horizon: float) -> bool:
    """Could this state have come from this host's own rules? Every pause ends within ``horizon``.

    A row that fails this (a pause until the year 9999 written by an older
    version, say) is discarded by the store, not obeyed (issue #14, point 1).
    """
    return state.phase == "open" or state.until <= now + horizon


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


@record(frozen=True)
class Grant:
    kind: PermitKind
    epoch: int


@record(frozen=True)
class Deferred:
    """The gate's "not now": ask again at ``until``. hoststore turns it into the
    :class:`~git_sluice.forge.hoststore.Wait` callers see, which also names the
    (pool, resource); a distinct name, so ``Wait`` means that one only."""

    until: float
    reason: WaitReason


@record(frozen=True)
class Finished:
    """How a permitted call ended. ``until``/``cls``/``how`` only for throttle and spent."""

    kind: FinishKind
    until: float | None = None
    cls: str | None = None
    how: str | None = None


OK = Finished("ok")
FAILURE = Finished("failure")
NOT_ATTEMPTED = Finished("not_attempted")


def throttled(until: float, cls: str, how: str) -> Finished:
    return Finished("throttle", until, cls, how)


def spent(until: float, how: str = "reset") -> Finished:
    return Finished("spent", until, "primary", how)


# --- transitions -----------------------------------------------------------------------


def _reset_cohort(state: GateState) -> None:
    state.cohort = 0
    state.cohort_admitted = []
    state.cohort_finished = 0
    state.cohort_clean = 0
    state.cohort_opened_at = 0.0


def _open_pause(
    state: GateState,
    now: float,
    until: float,
    cls: str | None,
    how: str | None,
    *,
    escalate: bool,
    source: str = "local",
) -> None:
    """A new pause window: the epoch advances, fencing every permit not yet on the wire."""
    state.epoch += 1
    state.phase = "paused"
    state.until = until
    state.cls = cls
    state.how = how
    if escalate:
        state.streak += 1
    state.paused_at = now
    state.source = source
    state.origin = None
    state.observe_only = False
    state.held = 0
    state.probe = None
    _reset_cohort(state)


def _release_probe(state: GateState, now: float) -> None:
    """The probe told us nothing (failed, not sent, or its process died): the next caller probes.

    The epoch advances so that each probe has an epoch of its own: a late
    answer from the released probe can then never be taken for the new one's.
    """
    state.epoch += 1
    state.phase = "paused"
    state.until = now
    state.probe = None


def _start_ramp(state: GateState, now: float) -> None:
    state.phase = "ramp"
    state.probe = None
    _reset_cohort(state)
    state.cohort_serial += 1
    state.cohort_opened_at = now


def _maybe_advance(state: GateState, now: float) -> Effect:
    """Open the next cohort (or the gate) once the current one has finished clean."""
    if state.phase != "ramp":
        return "none"
    admitted = len(state.cohort_admitted)
    if admitted == 0 or state.cohort_finished < admitted:
        return "none"
    if state.cohort_clean == 0:
        # Every admitted call was handed back unsent: nothing reached GitHub, so
        # nothing was learned and the same cohort starts over, empty.
        state.cohort_admitted = []
        state.cohort_finished = 0
        state.cohort_serial += 1
        state.cohort_opened_at = now
        return "none"
    if admitted < state.cohort_size and now - state.cohort_opened_at < RAMP_WINDOW:
        return "none"
    if state.cohort + 1 >= len(COHORT_SIZES):
        state.phase = "open"
        state.streak = 0
        _reset_cohort(state)
        return "closed"
    state.cohort += 1
    state.cohort_serial += 1
    state.cohort_admitted = []
    state.cohort_finished = 0
    state.cohort_clean = 0
    state.cohort_opened_at = now
    return "advanced"


def expire(state: GateState, now: float) -> list[str]:
    """Drop permits past their deadline; returns their ids.

    An expired probe frees the probe; an expired cohort call pauses again (the
    ramp cannot tell a hung call from a throttled one, and a dead process must
    not hold the ramp forever).
    """
    expired: list[str] = []
    for pid, permit in list(state.permits.items()):
        if now < permit.deadline:
            continue
        del state.permits[pid]
        expired.append(pid)
        if state.phase == "probing" and state.probe == pid:
            _release_probe(state, now)
        elif (
            state.phase == "ramp"
            and permit.kind == "cohort"
            and permit.epoch == state.epoch
            and permit.cohort == state.cohort_serial
        ):
            until = now + rules.fallback_delay(state.streak) + rules.jitter(state.pool_id, state.epoch + 1)
            _open_pause(state, now, until, "unknown", "fallback", escalate=True)
    return expired


def acquire(state: GateState, now: float, permit_id: str, deadline: float) -> Grant | Deferred:
    """Admit a call (recording its permit until ``deadline``) or say until when to wait."""
    if permit_id in state.permits:
        raise ValueError(f"permit {permit_id} is already in flight")
    expire(state, now)
    _maybe_advance(state, now)
    if state.phase == "open":
        return _grant(state, permit_id, "normal", deadline)
    if state.phase == "paused":
        if now < state.until:
            state.held += 1
            return Deferred(state.until, "paused")
        state.phase = "probing"
        state.probe = permit_id
        return _grant(state, permit_id, "probe", deadline)
    if state.phase == "probing":
        probe = state.permits.get(state.probe or "")
        if probe is None:  # cannot happen through these functions; never let it wedge
            _release_probe(state, now)
            return acquire(state, now, permit_id, deadline)
        # not counted in ``held``: callers poll for the probe's end, many times a second
        return Deferred(min(now + POLL, probe.deadline), "probe")
    # ramp
    if len(state.cohort_admitted) < state.cohort_size:
        state.cohort_admitted.append(permit_id)
        return _grant(state, permit_id, "cohort", deadline, cohort=state.cohort_serial)
    pending = [p.deadline for p in state.permits.values() if p.kind == "cohort" and p.epoch == state.epoch]
    return Deferred(min([now + POLL, *pending]), "ramp")


def _grant(
    state: GateState, permit_id: str, kind: PermitKind, deadline: float, cohort: int | None = None
) -> Grant:
    state.permits[permit_id] = InFlight(state.epoch, kind, False, deadline, cohort)
    return Grant(kind, state.epoch)


def start(state: GateState, permit_id: str, now: float) -> bool:
    """May this permit's call go on the wire now? False = fenced: do not send it.

    A fenced permit is dropped here; its caller counts the call as not
    attempted (it charges no retry budget).
    """
    expire(state, now)
    permit = state.permits.get(permit_id)
    if permit is None:
        return False
    fenced = (
        permit.epoch < state.epoch
        or state.phase == "paused"
        or (state.phase == "probing" and state.probe != permit_id)
    )
    if fenced:
        del state.permits[permit_id]
        return False
    permit.started = True
    return True


def finish(
    state: GateState, permit_id: str, now: float, outcome: Finished, *, epoch: int | None = None
) -> Effect:
    """Hand a permit back with how its call ended; returns what that did to the gate.

    ``epoch`` is the permit's own epoch, used when the permit is no longer
    known here (it expired, or was never recorded): without it such an answer
    is taken as one from before the current window.
    """
    expire(state, now)
    permit = state.permits.pop(permit_id, None)
    permit_epoch = permit.epoch if permit is not None else (epoch if epoch is not None else state.epoch - 1)
    current = permit_epoch >= state.epoch
    is_probe = permit is not None and state.phase == "probing" and state.probe == permit_id
    is_cohort = (
        permit is not None
        and permit.kind == "cohort"
        and state.phase == "ramp"
        and current
        and permit.cohort == state.cohort_serial
    )

    if outcome.kind in ("throttle", "spent"):
        until = outcome.until if outcome.until is not None else now
        if current:
            _open_pause(state, now, until, outcome.cls, outcome.how, escalate=outcome.kind == "throttle")
            return "paused"
        # dispatched before the current window opened: the same window, no new escalation
        if state.phase == "paused":
            # GitHub's own answer confirms the window: it is this host's now, whatever the notes say
            state.source, state.origin = "local", None
            if until > state.until:
                state.until = until
                state.how = outcome.how
                return "extended"
            return "none"
        if outcome.how in _AUTHORITATIVE and until > now:
            # GitHub's own word says not before ``until``: honour it even though
            # the window this call belonged to has been probed past.
            _open_pause(state, now, until, outcome.cls, outcome.how, escalate=False)
            return "paused"
        return "none"

    if is_probe:
        if outcome.kind == "ok":
            _start_ramp(state, now)
            return "ramp"
        _release_probe(state, now)
        return "released"
    if is_cohort:
        state.cohort_finished += 1
        if outcome.kind != "not_attempted":
            state.cohort_clean += 1
        return _maybe_advance(state, now)
    return "none"


def adopt(
    state: GateState, until: float, cls: str | None, now: float, *, source: str = "remote", origin: str | None = None
) -> bool:
    """Take on a pause another host observed, if it ends later than what we have.

    The caller bounds ``until`` (by this host's horizon from when it first saw
    the note); ``origin`` names where the note lives, so that its removal there
    can end the pause (:func:`release_adopted`).
    """
    if not math.isfinite(until) or until <= now:
        return False
    if state.phase != "open" and until <= state.until:
        return False
    _open_pause(state, now, until, cls, "remote", escalate=False, source=source)
    state.origin = origin
    return True


def release_adopted(state: GateState, now: float, origin: str) -> bool:
    """The note an adopted pause came from is gone from ``origin``: end the pause now.

    Only a pause still as adopted (no local answer confirmed or extended it:
    those make it the host's own) and taken from that same ``origin``. Its
    end is the usual one: the next call is the one probe.
    """
    if state.phase != "paused" or state.source == "local" or state.origin != origin or state.until <= now:
        return False
    state.until = now
    return True


def pause_until_for(
    state: GateState, verdict: rules.Verdict | None, *, now: float, permit_epoch: int
) -> tuple[float, str]:
    """Until when a throttle (or spent answer) from a permit of ``permit_epoch`` pauses.

    A call of the current epoch opens a new window: the fallback is the one for
    the current streak, jittered by the epoch that window will have. A call
    from before the current window belongs to that window: it gets the same
    step, so parallel failures never escalate the fallback more than once.
    """
    if permit_epoch >= state.epoch:
        streak, epoch = state.streak, state.epoch + 1
    else:
        streak, epoch = max(state.streak - 1, 0), state.epoch
    if verdict is None:
        return now + rules.fallback_delay(streak) + rules.jitter(state.pool_id, epoch), "fallback"
    return rules.pause_until(verdict, now=now, streak=streak, pool_id=state.pool_id, epoch=epoch)
