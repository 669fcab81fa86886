"""The clone's log, ``<sluice_dir>/log``: what the background and long-lived roles decided."""

from __future__ import annotations

import logging
from pathlib import Path

_FORMAT = "%(asctime)s %(process)d %(levelname)s %(message)s"


def attach_log(sluice_dir: Path, level: int = logging.INFO) -> logging.Handler:
    """Send git-sluice's log lines to the clone's log file too (idempotent per path)."""
    path = Path(sluice_dir) / "log"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    root = logging.getLogger("git_sluice")
    for handler in root.handlers:
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename) == path.resolve():
            return handler
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.setLevel(level)  # -v's per-call decisions are for the terminal, not the log
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)
    return handler


def progress_to_log(handler: logging.Handler) -> logging.Logger:
    """A logger for a role's progress lines that reaches the clone's log only.

    The lines are printed to stderr by the role itself; sending them through
    ``git_sluice`` as well would print them twice with ``-v``.
    """
    progress = logging.getLogger("git_sluice_progress")
    progress.propagate = False
    progress.setLevel(logging.INFO)
    if handler not in progress.handlers:
        progress.addHandler(handler)
    return progress
