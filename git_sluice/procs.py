"""Whether a process on this host has ended: the hook runner waits for git's own exit.

Standard library only, so :mod:`.entry` can ask before any heavy import.
"""

from __future__ import annotations

import os


def gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie has: git's work is done); pids 0 and 1 count as gone."""
    if pid <= 1:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return False
