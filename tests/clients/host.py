"""What the host holds while a client calls: a standing pause, a write pace with no slot left.

Made in the host store as another process of the host (or another host, through
its pause note) would leave them, so ``serve`` meets them as it would in the
fleet; the clock is the test's (the double's FakeClock).
"""

from __future__ import annotations

from git_sluice.forge import pacing
from tests.serve.conftest import Served


def token_pool(served: Served) -> str:
    """The pool the test's token spends (the host's credentials are the same user's token)."""
    return served.session.forge.pool


def hold_pause(served: Served, seconds: float = 600.0, resource: str = "core") -> float:
    """A pause of the token's pool for ``resource``, as host-b published it; returns when it ends."""
    until = served.github.clock.time() + seconds
    assert served.session.store.adopt(token_pool(served), resource, until, "primary", source="host-b")
    return until


def fill_write_pace(served: Served) -> int:
    """Content-creating writes given slots until the next would wait past the host's patience
    (``sluice.writePatience``): the next write of the pool is deferred unsent. Returns how many."""
    store, pool = served.session.store, token_pool(served)
    rules = pacing.WriteRules()
    patience = served.session.settings.write_patience
    taken = 0
    while store.reserve_write(pool, creating=True, rules=rules, patience=patience).granted:
        taken += 1
        assert taken <= pacing.PER_HOUR, "the write pace never filled"
    return taken
