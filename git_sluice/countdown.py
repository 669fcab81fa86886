"""What a waiting command shows while the allowance is spent.

A command that waits a pause out (``wait``, ``intake --wait``, ``api --wait``)
would otherwise look hung for up to an hour. On a terminal it shows one line,
``rate-limited until 14:32:05 CET (in 11 min 59 s)``, redrawn in place once a
second; anywhere else (a log, a pipe, CI) it writes one plain line per wait,
because carriage returns and per-second redraws would fill a log file.

The forge calls :class:`Countdown` once, when a wait starts, and then sleeps
on its own clock; the countdown must never delay that sleep. So the redraw
runs on a small daemon thread that stops by itself when the pause ends (by the
same injected clock the forge sleeps on) or when the command leaves its
``with`` block, which also finishes the line so later output starts clean.
"""

from __future__ import annotations

import math
import sys
import threading
from typing import Protocol, TextIO

from .clock import Clock, default_clock
from .durations import format_duration
from .errors import local_time

PREFIX = "git sluice: "
ERASE_LINE = "\r\x1b[K"


class WaitInfo(Protocol):
    """What the forge hands ``on_wait`` (a :class:`~git_sluice.forge.hoststore.Wait`, frozen: read-only here too)."""

    @property
    def pool(self) -> str: ...

    @property
    def resource(self) -> str: ...

    @property
    def until(self) -> float: ...


def countdown_text(until: float, now: float) -> str:
    """``rate-limited until 14:32:05 CET (in 12 min)``: the end as wall time and as a span."""
    left = math.ceil(max(until - now, 0.0))  # whole seconds: the line changes once a second, no more
    return f"rate-limited until {local_time(until)} (in {format_duration(left)})"


def plain_line(info: WaitInfo, now: float) -> str:
    """The one line a log gets per wait: what is spent, until when, and that the command waits."""
    return f"{PREFIX}{countdown_text(info.until, now)}: waiting until then ({info.resource}, pool {info.pool})"


class Countdown:
    """The forge's ``on_wait`` callback; use it as a context manager around the session.

    ``tty`` None asks the stream (``isatty``). ``tick`` is how often the
    thread looks at the clock; the line changes at most once per displayed
    second, so a fake clock in tests does not flood the stream.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        clock: Clock | None = None,
        tty: bool | None = None,
        tick: float = 0.1,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock if clock is not None else default_clock()
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            try:
                tty = bool(isatty()) if isatty is not None else False
            except (OSError, ValueError):
                tty = False
        self.tty = tty
        self.tick = tick
        self._lock = threading.Lock()
        self._info: WaitInfo | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = ""  # the live line as last drawn; "" when none is on screen

    # --- the callback -----------------------------------------------------------

    def __call__(self, info: WaitInfo) -> None:
        """A wait starts: say so, and on a terminal keep saying how long is left."""
        now = self.clock.time()
        if not self.tty:
            self._write(plain_line(info, now) + "\n")
            return
        with self._lock:
            self._info = info  # a second wait (a failed probe) retargets the running line
            self._draw_locked(now)
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="git-sluice-countdown", daemon=True)
                self._thread.start()

    # --- the redraw thread --------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            with self._lock:
                if self._info is None:
                    return
                now = self.clock.time()
                if now >= self._info.until:
                    self._finish_locked(now)
                    return
                self._draw_locked(now)

    def _draw_locked(self, now: float) -> None:
        assert self._info is not None
        text = f"{PREFIX}{countdown_text(self._info.until, now)}: waiting ({self._info.resource})"
        if text != self._drawn:
            self._write(ERASE_LINE + text)
            self._drawn = text

    def _finish_locked(self, now: float) -> None:
        """Replace the live line by a last plain one, so the next output starts on its own line."""
        info = self._info
        self._info = None
        if not self._drawn or info is None:
            return
        if now >= info.until:
            self._write(f"{ERASE_LINE}{PREFIX}waited until {local_time(info.until)} ({info.resource}); going on\n")
        else:
            self._write(f"{ERASE_LINE}{PREFIX}{countdown_text(info.until, now)}: stopped waiting\n")
        self._drawn = ""

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream must never break the wait
            pass

    # --- lifetime -----------------------------------------------------------------

    def stop(self) -> None:
        """End any live line now (the command is done, or about to print)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)
        with self._lock:
            self._finish_locked(self.clock.time())

    def __enter__(self) -> "Countdown":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
