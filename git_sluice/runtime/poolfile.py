"""Which pools this clone's credentials spend, kept in ``<sluice dir>/pool`` for ``status``.

``status`` reads no credentials and loads nothing heavy, yet must show only
this clone's pools (the host store holds every clone's, and an older setup's
mirror brought other teams' notes). A session that knows its pool without a
call records it here; until one has, ``status`` shows every pool.
"""

from __future__ import annotations

from pathlib import Path

from ..statefile import write_atomic

POOL_FILE = "pool"
_MAX_POOLS = 4
_MAX_NAME = 64


def recorded_pools(sluice_dir: Path) -> list[str] | None:
    """The pools last recorded for this clone (bounded: the file is ours, but only a file); None if none."""
    try:
        text = (Path(sluice_dir) / POOL_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    names = [line.strip() for line in text.splitlines()[:_MAX_POOLS]]
    pools = [name for name in names if name and len(name) <= _MAX_NAME]
    return pools or None


def record_pools(sluice_dir: Path, pools: list[str]) -> None:
    """Keep ``pools`` for ``status`` when they differ from what is kept; a write that fails is skipped."""
    if recorded_pools(sluice_dir) == pools:
        return
    try:
        write_atomic(Path(sluice_dir) / POOL_FILE, "".join(f"{p}\n" for p in pools).encode())
    except OSError:
        pass
