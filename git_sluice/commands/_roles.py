"""What the two long-lived roles share: the ``say`` callback and a sleep that sees a stop.

:mod:`.drive` and :mod:`.wait` both sleep on the session's clock between
their looks and say their progress through a callback. Private: this module
is no command (``tests/test_command_modules.py`` lets ``_``-modules be).
"""

from __future__ import annotations

from collections.abc import Callable

from ..runtime.session import Session
from ..runtime.stopper import Stopper

Say = Callable[[str], None]


def sleep_until(session: Session, when: float, stopper: Stopper) -> None:
    """Sleep on the session's clock in short steps so a stop is seen within a second."""
    while not stopper.stopped:
        left = when - session.clock.time()
        if left <= 0:
            return
        session.clock.sleep(min(left, 1.0))
