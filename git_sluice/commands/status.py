"""``git sluice status``: leases, queues, last rounds, and each pool's budget and pauses, as data.

No network: it reads the clone's sluice dir, the marks as last fetched and
the host store, so a dashboard may poll it as often as it likes. The JSON
(``status --json``, schema 1) is exactly what :func:`collect_status` returns.
"""

from __future__ import annotations

from typing import Any

from ..clock import default_clock
from ..forge.hoststore import HostStore
from ..intake import pace as pacing
from ..intake.queue import QueueStore
from ..intake.report import RoundsLog
from .hook_round import last_failure
from .lease import local_keeper
from ..runtime.poolfile import recorded_pools

STATES = ("ready", "waiting", "blocked", "draft")


def collect_status(path: str = ".") -> dict[str, Any]:
    """Everything ``status`` shows, as data (no network)."""
    clock = default_clock()
    now = clock.time()
    repo, settings, keeper = local_keeper(path, clock)
    queue = QueueStore(repo.sluice_dir)
    rounds = RoundsLog(repo.sluice_dir).load()
    branches = []
    from .lease import Fetched, lease_words, since_fetch

    fetched = Fetched(since_fetch(keeper))  # no network here: say what the lease lines are as of
    for branch in settings.branches:
        doc = queue.load(branch)
        counts = {state: 0 for state in STATES}
        for entry in doc.entries.values():
            counts[entry.state] = counts.get(entry.state, 0) + 1
        try:
            view = keeper.read(branch)
            lease: dict[str, Any] = {
                "holder": view.holder, "role": view.role, "age": view.age, "live": view.live,
                "mine": view.mine, "garbage": view.garbage, "absent": view.absent, "text": lease_words(view, fetched=fetched),
            }
        except Exception as exc:  # a garbage ref is reported, never a crash
            lease = {"error": str(exc), "text": f"{branch}: lease unreadable ({exc})"}
        branches.append({
            "branch": branch, "lease": lease, "counts": counts, "withdrawn_by": doc.withdrawn_by,
            "read_at": doc.read_at, "last_round": rounds.get(branch),
        })
    store = HostStore(clock=clock)
    try:
        pauses = store.pauses()
        budget = store.budget()
    finally:
        store.close()
    # only this clone's pools: the host store also holds other clones' (and, from an
    # older setup's mirror, other teams') pools; all of them while none is known yet
    own = recorded_pools(repo.sluice_dir)
    if own is not None:
        budget = [row for row in budget if row.pool in own]
        pauses = [pause for pause in pauses if pause.pool in own]
    pools = []
    for row in budget:
        pause = next((p for p in pauses if p.pool == row.pool and p.resource == row.resource), None)
        pools.append(_pool_json(row, pause, now))
    for pause in pauses:
        if not any(p["pool"] == pause.pool and p["resource"] == pause.resource for p in pools):
            pools.append(_pool_json(None, pause, now, pool=pause.pool, resource=pause.resource))
    return {
        "schema": 1,
        "repository": settings.repository,
        "host": settings.host,
        "now": now,
        "enforce": settings.enforce,
        "branches": branches,
        "pools": pools,
        "last_hook_failure": last_failure(repo),
        "serves": _serves(),
        "leases_fetched_ago": fetched.since,
    }


def _serves() -> list[dict[str, Any]]:
    """This host's running ``git sluice serve`` processes (their records in the host state dir)."""
    from ..paths import host_state_dir
    from ..serve.record import running

    try:
        return running(host_state_dir())
    except Exception:  # status never fails for a record it cannot read
        return []


def _pool_json(row: Any, pause: Any, now: float, *, pool: str | None = None, resource: str | None = None) -> dict[str, Any]:
    forge = "ok"
    if pause is not None and not pause.observe_only:
        if pause.phase == "paused" and pause.until > now:
            forge = "rate-limited"
        elif pause.phase in ("paused", "probing"):
            forge = "probing"
        elif pause.phase == "ramp":
            forge = "ramping"
    found = None if row is None else pacing.project(
        pool=row.pool, resource=row.resource, limit=row.limit, used=row.used, reset=row.reset,
        observed_at=row.observed_at, now=now,
    )
    return {
        "pool": row.pool if row is not None else pool,
        "resource": row.resource if row is not None else resource,
        "forge": forge,
        "limit": getattr(row, "limit", None),
        "remaining": getattr(row, "remaining", None),
        "used": getattr(row, "used", None),
        "reset": getattr(row, "reset", None),
        "observed_at": getattr(row, "observed_at", None),
        "counted_last_hour": getattr(row, "counted_last_hour", 0),
        "no_limit": row is not None and pacing.reports_no_limit(row.limit, row.observed_at, row.counted_last_hour),
        "cost_last_hour": getattr(row, "cost_last_hour", 0),
        "pace": None if found is None else {
            "projected": found.projected, "limit": found.limit, "share": round(found.share, 4),
            "reset": found.reset, "stretch": round(found.stretch, 2), "text": found.describe(),
        },
        "pause": None if pause is None else {
            "phase": pause.phase, "until": pause.until, "class": pause.cls, "how": pause.how,
            "epoch": pause.epoch, "source": pause.source, "observe_only": pause.observe_only, "held": pause.held,
        },
    }
