"""A driver whose credentials GitHub refuses (401) stops asking, lets go, and tries again later.

A 401 says the credentials are wrong, not the call: asking every tick cannot
help, and a driver that keeps renewing its lease meanwhile holds the branch
from every host whose token is good. So the driver lets go of its leases,
asks nothing — GitHub nor the remote — for a back-off (60 s, doubling to
15 min while the refusals go on), then reads the credentials again (a token
replaced in `git credential` or `gh auth`, an App's new token) and tries
once. Pure: ``now`` is passed in.
"""

from __future__ import annotations

from ..records import record

BACKOFF_BASE = 60.0
BACKOFF_CAP = 900.0


@record
class Refusal:
    """The back-off after a 401: ``until`` no call and no lease; ``streak`` refusals in a row."""

    streak: int = 0
    until: float | None = None

    def refused(self, now: float) -> float:
        """A 401 now: until when to ask nothing."""
        delay = min(BACKOFF_BASE * 2 ** min(self.streak, 10), BACKOFF_CAP)
        self.streak += 1
        self.until = now + delay
        return self.until

    def holding_off(self, now: float) -> bool:
        return self.until is not None and now < self.until

    def due(self, now: float) -> bool:
        """The back-off is over and the credentials should be read again before the next tick."""
        return self.until is not None and now >= self.until

    def retried(self) -> None:
        """The credentials were read again; the next refusal backs off longer, a success forgets it all."""
        self.until = None

    def accepted(self) -> None:
        self.streak = 0
        self.until = None
