"""The ClawSweeper incident replayed: sibling processes, a throttle, the fence, one probe, the ramp.

Eight sibling "processes" of one host (in-process sessions with their own
host-store connections, on threads) have calls ready; the double holds every
call on the wire for a moment (a ``hang`` fault) and answers the first with a
secondary limit. What is measured, from each call's own send and receive
times on the client side (an httpx transport that notes them) and from the
double's ledger:

- calls *sent* after the first throttle reached a sibling (the fence: 0), and
  calls already on the wire then, which finish and are counted;
- at the pause's end, with four more processes on a second host that adopted
  the pause note: calls sent before the first answer (the probe: 1);
- then the waves of concurrent calls: a cohort of 1, 2, 4, 8, then free.

The baseline is the per-process conditional client (octokit-style: each
process waits ``retry-after`` on its own and retries): each sibling learns
the throttle from its own call, and at the reset every one of them retries.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from git_sluice.errors import AllowanceSpent, SluiceError
from git_sluice.runtime.session import fetch_and_adopt

from fleet_activity import Activity, NoGit
from fleet_baselines import Direct
from fleet_runs import _double
from fleet_sluice import GitWorld
from fleet_world import POOL, TOKEN, repo_name, world

PULLS = r"/pulls/\d+"


@dataclass
class Sent:
    who: str
    path: str
    t_send: float
    t_recv: float | None = None
    status: int | None = None


@dataclass
class CallLog:
    calls: list[Sent] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, who: str, path: str) -> Sent:
        sent = Sent(who, path, time.monotonic())
        with self.lock:
            self.calls.append(sent)
        return sent


class LoggingTransport(httpx.HTTPTransport):
    """Notes when each call leaves and when its answer comes back (real time)."""

    def __init__(self, log: CallLog, who: str) -> None:
        super().__init__()
        self.log = log
        self.who = who

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        sent = self.log.start(self.who, request.url.path)
        response = super().handle_request(request)
        sent.t_recv, sent.status = time.monotonic(), response.status_code
        return response


def waves(calls: list[Sent], after: float) -> list[int]:
    """Peak concurrency of each run of overlapping calls sent after ``after`` (gaps separate waves)."""
    events = []
    for c in calls:
        if c.t_send >= after and c.t_recv is not None:
            events.append((c.t_send, 1))
            events.append((c.t_recv, -1))
    events.sort(key=lambda e: (e[0], e[1]))
    peaks: list[int] = []
    level = peak = 0
    for _, delta in events:
        level += delta
        peak = max(peak, level)
        if level == 0:
            peaks.append(peak)
            peak = 0
    return peaks


def describe_waves(peaks: list[int]) -> str:
    """The first wave is the probe; each later one a cohort (or free flow once cohorts end)."""
    if not peaks:
        return "none"
    return " → ".join([f"{peaks[0]} (probe)"] + [str(p) for p in peaks[1:]])


def _fence_figures(log: CallLog, total_wanted: int) -> dict[str, Any]:
    throttles = [c for c in log.calls if c.status in (403, 429) and c.t_recv is not None]
    if not throttles:
        return {"error": "no throttle was answered"}
    first = min(c.t_recv for c in throttles if c.t_recv is not None)
    sent_after = [c for c in log.calls if c.t_send > first]
    on_wire = [c for c in log.calls if c.t_send <= first and c.t_recv is not None and c.t_recv > first]
    return {
        "calls_wanted": total_wanted,
        "calls_sent": len(log.calls),
        "sent_after_first_throttle": len(sent_after),
        "on_wire_at_first_throttle": len(on_wire),
        "not_sent": total_wanted - len(log.calls),
    }


def fence_sluice(*, siblings: int = 8, others: int = 4, calls_each: int = 3, stagger: float = 0.3,
                 hang: float = 1.0, ramp_hang: float = 0.3, ramp_calls: int = 40) -> dict[str, Any]:
    started = time.monotonic()
    with world() as w:
        name = repo_name(1)
        w.add_repo(name)
        Activity(w.gh, GitWorld(w, [])).populate(name, 20, seed=4)
        host_a = w.add_host("host-a", hooks=False)
        host_b = w.add_host("host-b", hooks=False)
        log = CallLog()
        # each sibling its own host-store connection, as separate processes have (no other process
        # touches these files, so the in-process lock hazard noted in fleet_world.World.store cannot bite)
        a = [w.session(host_a, name, transport=LoggingTransport(log, f"a{k}"), own_store=True) for k in range(siblings)]
        b = [w.session(host_b, name, transport=LoggingTransport(log, f"b{k}"), own_store=True) for k in range(others)]
        for s in a + b:
            _ = s.forge.pool  # each process names its pool first (GET /user once, then the host's record)
        log.calls.clear()
        mark = w.gh.mark()

        # -- phase A: the first throttle and the fence
        w.gh.fault("hang", path=PULLS, seconds=hang)
        w.gh.fault("secondary", path=PULLS, retry_after=300)
        errors: list[str] = []

        def sibling(k: int) -> None:
            time.sleep(k * stagger)
            for j in range(calls_each):
                try:
                    a[k].forge.get(f"repos/{name}/pulls/{1 + (k * calls_each + j) % 20}", {"sibling": k, "call": j})
                except AllowanceSpent:
                    return
                except SluiceError as exc:
                    errors.append(f"a{k}: {exc}")
                    return

        threads = [threading.Thread(target=sibling, args=(k,)) for k in range(siblings)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        phase_a = _fence_figures(log, siblings * calls_each)
        phase_a["ledger_requests"] = w.gh.requests(since=mark)
        phase_a["not_attempted"] = sum(s.forge.stats.not_attempted for s in a)
        pause = a[0].store.pause_for(a[0].forge.pool, "core")
        if pause is None:
            return {"error": "the throttle opened no pause on host-a", "phase_a": phase_a}
        until = pause.until
        fetch_and_adopt(b[0])
        b_paused = b[0].store.pause_for(b[0].forge.pool, "core") is not None

        # -- phase B: at the pause's end, one probe across hosts, then the cohorts
        w.gh.clear_faults()
        w.gh.fault("hang", path=PULLS, seconds=ramp_hang)
        w.clock.set(until + 1)
        log.calls.clear()
        reset_at = time.monotonic()
        counter = iter(range(ramp_calls))
        lock = threading.Lock()

        def ramp(k: int) -> None:
            while True:
                with lock:
                    n = next(counter, None)
                if n is None:
                    return
                try:
                    a[k].forge.get(f"repos/{name}/pulls/{1 + n % 20}", {"ramp": n}, wait=True,
                                   deadline=until + 900)
                except SluiceError as exc:
                    errors.append(f"ramp a{k}: {exc}")
                    return

        def other(k: int) -> None:
            try:
                b[k].forge.get(f"repos/{name}/pulls/{1 + k}", {"other": k})
            except AllowanceSpent:
                return
            except SluiceError as exc:
                errors.append(f"b{k}: {exc}")

        ramp_threads = [threading.Thread(target=ramp, args=(k,)) for k in range(siblings)]
        for t in ramp_threads:
            t.start()
        deadline = time.monotonic() + 20
        while not log.calls and time.monotonic() < deadline:  # the probe is on the wire
            time.sleep(0.002)
        other_threads = [threading.Thread(target=other, args=(k,)) for k in range(others)]
        for t in other_threads:
            t.start()
        for t in ramp_threads + other_threads:
            t.join(timeout=120)
        answered = [c for c in log.calls if c.t_recv is not None]
        first_answer = min((c.t_recv for c in answered if c.t_recv is not None), default=None)
        probes = len([c for c in log.calls if first_answer is not None and c.t_send <= first_answer])
        peaks = waves([c for c in log.calls if c.who.startswith("a")], reset_at)
        return {
            "phase_a": phase_a,
            "host_b_adopted_pause": b_paused,
            "probes_at_reset": probes,
            "host_b_sent_at_reset": len([c for c in log.calls if c.who.startswith("b")]),
            "waves": peaks,
            "ramp": describe_waves(peaks),
            "errors": errors[:5],
            "wall_seconds": time.monotonic() - started,
        }


def fence_baseline(*, siblings: int = 8, others: int = 4, calls_each: int = 3, stagger: float = 0.3,
                   hang: float = 1.0, ramp_hang: float = 0.3) -> dict[str, Any]:
    """Per-process clients: each learns of the throttle from its own call, waits retry-after, retries."""
    started = time.monotonic()
    clock, gh, _ = _double(float(int(time.time())), 1.0)
    name = repo_name(1)
    gh.add_repo(name)

    Activity(gh, NoGit()).populate(name, 20, seed=4)
    log = CallLog()
    retry_after: list[float] = []

    def call(who: str, target: str) -> int:
        sent = log.start(who, target)
        answer = Direct(gh, TOKEN).call("GET", target)
        sent.t_recv, sent.status = time.monotonic(), answer.status
        if answer.throttled:
            retry_after.append(answer.wait_hint(clock.time()))
        return answer.status

    gh.fault("hang", path=PULLS, seconds=hang)
    gh.fault("secondary", path=PULLS, retry_after=300)
    throttled: set[str] = set()

    def sibling(k: int) -> None:
        time.sleep(k * stagger)
        for j in range(calls_each):
            status = call(f"a{k}", f"/repos/{name}/pulls/{1 + (k * calls_each + j) % 20}?sibling={k}&call={j}")
            if status in (403, 429):
                throttled.add(f"a{k}")
                return  # octokit's throttling: this process waits retry-after, then retries this call

    threads = [threading.Thread(target=sibling, args=(k,)) for k in range(siblings)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    phase_a = _fence_figures(log, siblings * calls_each)
    phase_a["ledger_requests"] = len(gh.ledger)
    gh.clear_faults()
    gh.fault("hang", path=PULLS, seconds=ramp_hang)
    clock.advance(max(retry_after, default=300.0) + 1)
    log.calls.clear()
    reset_at = time.monotonic()

    def retry(who: str, k: int) -> None:
        call(who, f"/repos/{name}/pulls/{1 + k}?retry={who}")

    # every throttled sibling's timer ends together; the other host's processes retry on theirs
    retry_threads = [threading.Thread(target=retry, args=(f"a{k}", k)) for k in range(siblings)]
    retry_threads += [threading.Thread(target=retry, args=(f"b{k}", k)) for k in range(others)]
    for t in retry_threads:
        t.start()
    for t in retry_threads:
        t.join(timeout=60)
    answered = [c.t_recv for c in log.calls if c.t_recv is not None]
    first_answer = min(answered) if answered else None
    probes = len([c for c in log.calls if first_answer is not None and c.t_send <= first_answer])
    peaks = waves(log.calls, reset_at)
    return {
        "phase_a": phase_a,
        "probes_at_reset": probes,
        "waves": peaks,
        "ramp": " → ".join(str(p) for p in peaks) + " (all at once, no probe)" if peaks else "none",
        "wall_seconds": time.monotonic() - started,
        "pool": POOL,
    }
