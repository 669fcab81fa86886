"""Errors a caller can catch, each with the exit code its command ends with.

Exit codes (design §9): 0 done; 1 failed; 2 usage or configuration; 3 allowance
spent (the message names when it ends); 4 timed out (``wait``).
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path


class SluiceError(Exception):
    """Base of every error git-sluice raises on purpose; ``exit_code`` is the CLI's."""

    exit_code = 1


class ConfigError(SluiceError):
    """A configuration value is missing or malformed; names the key and the accepted form."""

    exit_code = 2

    def __init__(self, key: str, value: object, accepted: str) -> None:
        self.key = key
        self.value = value
        self.accepted = accepted
        super().__init__(f"{key}={value!s}: expected {accepted}")


class NotARepository(SluiceError):
    """git-sluice was started outside any git repository (a usage error: exit 2)."""

    exit_code = 2

    def __init__(self, path: "os.PathLike[str] | str", detail: str = "") -> None:
        self.path = Path(path)
        extra = f" ({detail})" if detail else ""
        super().__init__(f"{path} is not inside a git repository{extra}: run git sluice from a clone")


class UsageError(SluiceError):
    exit_code = 2


def local_time(epoch: float) -> str:
    """A pause end as a person reads it: local wall time, with the date if not today."""
    when = _dt.datetime.fromtimestamp(epoch).astimezone()
    today = _dt.datetime.now().astimezone().date()
    if when.date() == today:
        return when.strftime("%H:%M:%S %Z").strip()
    return when.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


class AllowanceSpent(SluiceError):
    """GitHub's allowance for (pool, resource) is spent; no call is made until ``until``."""

    exit_code = 3

    def __init__(self, pool: str, resource: str, until: float, reason: str = "") -> None:
        self.pool = pool
        self.resource = resource
        self.until = until
        self.reason = reason
        extra = f" ({reason})" if reason else ""
        super().__init__(
            f"GitHub allowance for {resource} (pool {pool}) is spent: "
            f"no call until {local_time(until)}{extra}"
        )


class TimedOut(SluiceError):
    exit_code = 4
