"""A discrete-event scheduler on an injected clock: an hour of a fleet in seconds of real time.

Every actor (a driver tick, a wait's look, a baseline poller's pass, a change
on the double) says when it wants to run next; the scheduler moves the shared
clock to the earliest such moment and runs every actor due then. Actors due at
the same moment run together on a small thread pool, as processes on
different hosts would: their git subprocesses and HTTP calls overlap, which
is what makes a 30-driver fleet affordable on two cores. Nothing sleeps
through simulated time; the clock is *set*.
"""

from __future__ import annotations

import heapq
import threading
import itertools
import logging
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger("bench")


class SettableClock(Protocol):
    def time(self) -> float: ...

    def set(self, when: float) -> None: ...


SERIAL_PREFIXES = ("wait ",)
"""Actors whose steps run one at a time, after the rest of their batch (see ``run_until``)."""

Step = Callable[[float], "float | None"]
"""An actor's step: given the moment it runs, the next moment it wants (None: done)."""


@dataclass
class Failure:
    label: str
    error: str


@dataclass
class Scheduler:
    """Run actors in simulated-time order; ``after_batch`` sees the world between moments."""

    clock: SettableClock
    workers: int = 4
    after_batch: Callable[[float, list[str]], None] | None = None
    failures: list[Failure] = field(default_factory=list)
    batches: int = 0
    steps: int = 0

    def __post_init__(self) -> None:
        self._running = 0
        self._running_lock = threading.Lock()
        self._heap: list[tuple[float, int, str, Step]] = []
        self._seq = itertools.count()
        self._pool = ThreadPoolExecutor(max_workers=self.workers) if self.workers > 1 else None

    def at(self, when: float, label: str, step: Step) -> None:
        heapq.heappush(self._heap, (float(when), next(self._seq), label, step))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def others_running(self, sleeping: int = 1) -> bool:
        """Whether an actor other than the caller is at work in this batch (a sleep then waits for it);
        ``sleeping``: the actors asleep on the clock now, the caller among them."""
        with self._running_lock:
            return self._running - max(sleeping, 1) > 0

    def _run_one(self, label: str, step: Step, when: float) -> float | None:
        with self._running_lock:
            self._running += 1
        try:
            return step(when)
        except Exception as exc:  # an actor's crash is a finding, not the end of the run
            self.failures.append(Failure(label, f"{type(exc).__name__}: {exc}"))
            log.debug("actor %s failed:\n%s", label, traceback.format_exc())
            return None
        finally:
            with self._running_lock:
                self._running -= 1

    def run_until(self, end: float) -> None:
        """Run every actor due before ``end``; leaves the clock at ``end``."""
        while self._heap and self._heap[0][0] < end:
            when = self._heap[0][0]
            batch: list[tuple[str, Step]] = []
            while self._heap and self._heap[0][0] <= when:
                _, _, label, step = heapq.heappop(self._heap)
                batch.append((label, step))
            if self.clock.time() < when:
                self.clock.set(when)
            self.batches += 1
            self.steps += len(batch)
            # A wait's look runs alone, after the batch's other actors: a wait with a 1 ms timeout sleeps
            # to its deadline, which moves the shared clock, and a wait beside it found its own deadline
            # past before its first read (TimedOut, silently retried at every look until, by chance, no
            # one slept beside it: a counted read at a random moment, into a quiet hour's window).
            alone = [i for i, (label, _) in enumerate(batch) if label.startswith(SERIAL_PREFIXES)]
            together = [i for i in range(len(batch)) if i not in alone]
            results: list[float | None] = [None] * len(batch)
            if self._pool is None or len(together) <= 1:
                for i in together:
                    results[i] = self._run_one(batch[i][0], batch[i][1], when)
            else:
                futures = {i: self._pool.submit(self._run_one, batch[i][0], batch[i][1], when) for i in together}
                for i, f in futures.items():
                    results[i] = f.result()
            for i in alone:
                results[i] = self._run_one(batch[i][0], batch[i][1], when)
            for (label, step), nxt in zip(batch, results):
                if nxt is not None:
                    self.at(max(nxt, when + 1e-3), label, step)
            if self.after_batch is not None:
                self.after_batch(when, [label for label, _ in batch])
        if self.clock.time() < end:
            self.clock.set(end)
