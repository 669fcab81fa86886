"""``git sluice serve``: GitHub's API on a Unix socket (and a loopback port) for the host's unmodified tools.

Every call takes the road ``git sluice api`` takes (:mod:`git_sluice.serve`).
This module is the command's life: one ``serve`` per socket (a pid lock
beside it), the socket private to the user, a record in the host state dir
that ``status`` and ``doctor`` read (where it listens, since when, what
passed through it), and a clean stop on SIGTERM or SIGINT: no new calls,
calls in flight finish, the socket file goes.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from ..procs import PidLock
from ..records import record
from ..runtime.session import Session
from ..runtime.stopper import Stopper
from ..serve.metrics import Metrics
from ..serve.record import record_path, write_record
from ..serve.relay import Relay
from ..errors import ServeRefused
from ..serve.server import Listening

log = logging.getLogger("git_sluice")

SOCKET_NAME = "serve.sock"
RECORD_EVERY = 10.0
"""Real seconds between two updates of the record ``status`` reads."""


@record(frozen=True)
class Serving:
    """Where a ``serve`` listens (told once it does)."""

    socket: Path | None
    port: int | None
    pid: int


def default_socket(state_dir: Path) -> Path:
    return state_dir / SOCKET_NAME


def serve(session: Session, *, state_dir: Path, socket: Path | None, port: int | None, host: str = "127.0.0.1",
          stopper: Stopper, ready: Callable[[Serving], None] = lambda s: None,
          cancel: threading.Event | None = None) -> dict[str, int]:
    """Answer until stopped; returns the calls answered, by kind. Raises ServeRefused before listening.

    ``cancel``: the session's own cancel event (``open_session(cancel=…)``), set only when calls still
    wait past the stop's grace (a stop never cuts a call that is on the wire)."""
    if socket is None and port is None:
        raise ServeRefused("nothing to listen on: give --socket, --port, or neither (the default socket)")
    own = socket is not None and socket == default_socket(state_dir)  # else a person's path: nothing moved aside
    lock = PidLock(f"{socket}.lock", own=own) if socket is not None else None
    if lock is not None and not lock.try_hold():
        who = f"pid {lock.holder}" if lock.holder else "another process"
        raise ServeRefused(f"{who} already serves on {socket}: stop it first, or pass another --socket")
    metrics = Metrics(session.store)
    relay = Relay(session, state_dir, metrics=metrics)
    listening = None
    path = None
    try:
        listening = Listening(relay, socket_path=socket, port=port, host=host)
        listening.start()
        path = record_path(state_dir, socket, listening.port)
        started = session.clock.time()
        write_record(path, session, socket, listening.port, started, metrics.totals())
        ready(Serving(socket=socket, port=listening.port, pid=os.getpid()))
        while not stopper.event.wait(RECORD_EVERY):
            write_record(path, session, socket, listening.port, started, metrics.totals())
        log.info("serve: %s: stopping (calls in flight finish)", stopper.name)
    finally:
        if listening is not None:
            listening.stop(grace=session.settings.write_patience + session.forge.timeout,
                           overdue=cancel.set if cancel is not None else (lambda: None), cut=stopper.again)
        relay.close()
        if path is not None:
            try:
                path.unlink()
            except OSError:
                pass
        if lock is not None:
            lock.release()
    return metrics.totals()
