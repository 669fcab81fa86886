"""``git sluice serve``: GitHub's API on a Unix socket (and a loopback port) for the host's unmodified tools.

Every call takes the road ``git sluice api`` takes (:mod:`git_sluice.serve`).
This module is the command's life: one ``serve`` per socket (a pid lock
beside it), the socket private to the user, a record in the host state dir
that ``status`` and ``doctor`` read (where it listens, since when, what
passed through it), and a clean stop on SIGTERM or SIGINT: no new calls,
calls in flight finish, the socket file goes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..clock import rfc3339
from ..procs import PidLock, gone
from ..records import record
from ..runtime.session import Session
from ..runtime.stopper import Stopper
from ..serve.metrics import Metrics
from ..serve.relay import Relay
from ..serve.server import Listening, ServeRefused
from ..statefile import write_atomic

log = logging.getLogger("git_sluice")

SOCKET_NAME = "serve.sock"
RECORDS_DIR = "serve"
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


def record_path(state_dir: Path, socket: Path | None, port: int | None) -> Path:
    name = str(socket) if socket is not None else f"tcp:{port}"
    return state_dir / RECORDS_DIR / f"{hashlib.sha256(name.encode()).hexdigest()[:16]}.json"


def serve(session: Session, *, state_dir: Path, socket: Path | None, port: int | None, host: str = "127.0.0.1",
          stopper: Stopper, ready: Callable[[Serving], None] = lambda s: None,
          cancel: threading.Event | None = None) -> dict[str, int]:
    """Answer until stopped; returns the calls answered, by kind. Raises ServeRefused before listening.

    ``cancel``: the session's own cancel event (``open_session(cancel=…)``), set only when calls still
    wait past the stop's grace (a stop never cuts a call that is on the wire)."""
    if socket is None and port is None:
        raise ServeRefused("nothing to listen on: give --socket, --port, or neither (the default socket)")
    lock = PidLock(f"{socket}.lock") if socket is not None else None
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
        _write_record(path, session, socket, listening.port, started, metrics.totals())
        ready(Serving(socket=socket, port=listening.port, pid=os.getpid()))
        while not stopper.event.wait(RECORD_EVERY):
            _write_record(path, session, socket, listening.port, started, metrics.totals())
        log.info("serve: %s: stopping (calls in flight finish)", stopper.name)
    finally:
        if listening is not None:
            listening.stop(grace=session.settings.write_patience + session.forge.timeout,
                           overdue=cancel.set if cancel is not None else (lambda: None))
        relay.close()
        if path is not None:
            try:
                path.unlink()
            except OSError:
                pass
        if lock is not None:
            lock.release()
    return metrics.totals()


def _write_record(path: Path, session: Session, socket: Path | None, port: int | None, started: float,
                  totals: dict[str, int]) -> None:
    doc = {"pid": os.getpid(), "socket": str(socket) if socket is not None else None, "port": port,
           "clone": str(session.repo.workdir or session.repo.git_dir), "started": started,
           "started_at": rfc3339(started), "updated": session.clock.time(), "calls": totals}
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(path, (json.dumps(doc, indent=2) + "\n").encode())
    except OSError as exc:
        log.warning("serve: could not write its record for `git sluice status` (%s)", exc)


def running(state_dir: Path) -> list[dict[str, Any]]:
    """Every ``serve`` of this host that is running, as its record says (records of ended ones skipped).

    Bounded and checked like any state file: what is not a record is skipped.
    """
    out = []
    folder = state_dir / RECORDS_DIR
    try:
        names = sorted(folder.iterdir())[:64]
    except OSError:
        return []
    for name in names:
        try:
            if name.stat().st_size > 65536:
                continue
            doc = json.loads(name.read_bytes().decode("utf-8"))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            continue
        if not isinstance(doc, dict):
            continue
        pid = doc.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or not 1 < pid < 2**31 or gone(pid):
            continue
        calls = doc.get("calls") if isinstance(doc.get("calls"), dict) else {}
        out.append({
            "pid": pid,
            "socket": doc.get("socket") if isinstance(doc.get("socket"), str) else None,
            "port": doc.get("port") if isinstance(doc.get("port"), int) and 0 < doc["port"] < 65536 else None,
            "clone": doc.get("clone") if isinstance(doc.get("clone"), str) else None,
            "started_at": doc.get("started_at") if isinstance(doc.get("started_at"), str) else None,
            "calls": {str(k): int(v) for k, v in list(calls.items())[:16]  # type: ignore[union-attr]
                      if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**53},
        })
    return out
