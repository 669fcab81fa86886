"""Which pool a call spends while its token's pool is not known yet (docs/design.md#credentials).

A user token's pool is learned with ``GET /user`` — a call to the very
allowance that may be spent. So a token whose pool is unknown obeys **every**
pause standing on its API host, and nothing asks who it is while any such
pause stands: a call of a paused resource goes under that pause's pool (the
latest-ending one), any other call under a provisional pool named by the
token's hash, and only when nothing stands is ``GET /user`` asked.

:func:`choose` is the decision (pure, ``now``-free: the pauses given are the
ones the host store reports as standing). :class:`PoolHosts` is the small host
file that says which API host a pool belongs to, so a GitHub Enterprise pause
does not hold a github.com token; a pool of unknown host is obeyed (the safe
side: it costs a wait, never a call to a spent allowance).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from ..records import record
from ..statefile import JsonDocument
from .gate_machine import PauseView

log = logging.getLogger("git_sluice")

POOL_HOSTS_FILE = "pool-hosts.json"
_MAX_ENTRIES = 1000  # the file is ours, but only a file: a bounded read

How = Literal["known", "paused", "provisional", "ask"]


@record(frozen=True)
class Choice:
    """``pool`` None with ``how`` "ask": nothing stands, so GitHub may be asked who the token is."""

    pool: str | None
    how: How


def choose(
    known: str | None,
    pauses: Iterable[PauseView],
    resource: str,
    *,
    api_host: str,
    host_of: Callable[[str], str | None],
    provisional: str,
) -> Choice:
    """The pool a call of ``resource`` goes under; see the module docstring for the rule."""
    if known is not None:
        return Choice(known, "known")
    standing = [
        p for p in pauses
        if not p.observe_only and host_of(p.pool) in (None, api_host)
    ]
    same = [p for p in standing if p.resource == resource]
    if same:
        return Choice(max(same, key=lambda p: (p.until, p.pool)).pool, "paused")
    if standing:
        return Choice(provisional, "provisional")
    return Choice(None, "ask")


class PoolHosts:
    """``pool id -> API host``, kept in the host state dir; never a token, never a user id."""

    def __init__(self, state_dir: Path) -> None:
        self.doc = JsonDocument(Path(state_dir) / POOL_HOSTS_FILE, what="pool hosts")
        self._seen: dict[str, str] | None = None

    def _all(self) -> dict[str, str]:
        if self._seen is None:
            data = self.doc.read()
            self._seen = {
                k: v for k, v in list(data.items())[:_MAX_ENTRIES]
                if isinstance(k, str) and isinstance(v, str) and len(k) <= 64 and len(v) <= 255
            }
        return self._seen

    def host_of(self, pool: str) -> str | None:
        return self._all().get(pool)

    def remember(self, pool: str, api_host: str) -> None:
        """Record once; a file that cannot be written costs only a wider obedience later."""
        if self._all().get(pool) == api_host:
            return
        try:
            with self.doc.update() as data:
                if len(data) < _MAX_ENTRIES:
                    data[pool] = api_host
            self._all()[pool] = api_host
        except Exception as exc:  # state is rebuildable; a pause must never fail on it
            log.debug("could not record the API host of pool %s: %s", pool, exc)
