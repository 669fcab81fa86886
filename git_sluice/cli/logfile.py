"""The clone's log, ``<sluice_dir>/log``: what the background and long-lived roles decided."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from ..clock import Clock, default_clock, rfc3339
from ..statefile import ensure_dir, set_aside


class LogLine(logging.Formatter):
    """One line as the hook rounds write theirs (docs/hooks.md): ``2026-05-01T09:12:03Z [48121] text``.

    The log held two time formats (logging's local ``2026-05-01 09:12:03,123``
    beside the rounds' RFC 3339 UTC, issue 31); now one, the JSON's, read by the
    clock the rounds use (the test clock in tests). A warning or an error says so.
    """

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__()
        self.clock = clock or default_clock()

    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno <= logging.INFO else f"{record.levelname.lower()}: "
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:  # one line: the error, not a traceback
            message += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        text = " ".join(f"{level}{message}".split())
        return f"{rfc3339(self.clock.time())} [{record.process}] {text}"


def attach_log(sluice_dir: Path, level: int = logging.INFO) -> logging.Handler:
    """Send git-sluice's log lines to the clone's log file too (idempotent per path).

    Whatever is in the log's place but a file (a directory, a link) is moved
    aside first; a log that still cannot be opened is one warning, and the
    role runs on without it: the work matters more than its record.
    """
    path = Path(sluice_dir) / "log"
    root = logging.getLogger("git_sluice")
    for handler in root.handlers:
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename) == path.resolve():
            return handler
    try:
        handler = logging.FileHandler(_log_place(path), encoding="utf-8")
    except OSError as exc:
        root.warning("the log %s cannot be written (%s): going on without it", path, exc)
        return logging.NullHandler()
    handler.setFormatter(LogLine())
    handler.setLevel(level)  # -v's per-call decisions are for the terminal, not the log
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)
    return handler


def _log_place(path: Path) -> Path:
    """``path``, free for an appended file: its folder made, anything but a plain file there moved aside."""
    ensure_dir(path.parent)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    if not stat.S_ISREG(mode):
        set_aside(path)
    return path


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
