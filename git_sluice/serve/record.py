"""Where a running ``serve`` says it listens and what passed through it: a record in the host state dir.

Light on purpose (the standard library, :mod:`git_sluice.procs` and the state
file writer): ``git sluice status`` reads these records on its fast path.
A record whose process has ended is skipped; anything in a record is bounded
and checked before it is shown.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clock import rfc3339
from ..procs import gone
from ..statefile import write_atomic

if TYPE_CHECKING:
    from ..runtime.session import Session

log = logging.getLogger("git_sluice")

RECORDS_DIR = "serve"


def record_path(state_dir: Path, socket: Path | None, port: int | None) -> Path:
    """One record per socket (or port): two serves of the host never write each other's."""
    name = str(socket) if socket is not None else f"tcp:{port}"
    return state_dir / RECORDS_DIR / f"{hashlib.sha256(name.encode()).hexdigest()[:16]}.json"


def write_record(path: Path, session: "Session", socket: Path | None, port: int | None, started: float,
                 totals: dict[str, int]) -> None:
    """Where this ``serve`` listens, since when, and its calls so far (rewritten every few seconds)."""
    doc = {"pid": os.getpid(), "socket": str(socket) if socket is not None else None, "port": port,
           "clone": str(session.repo.workdir or session.repo.git_dir), "started": started,
           "started_at": rfc3339(started), "updated": session.clock.time(), "calls": totals}
    try:
        write_atomic(path, (json.dumps(doc, indent=2) + "\n").encode())  # its folder made, anything in the way set aside
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
