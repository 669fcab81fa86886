"""How a long-running command stops: SIGINT and SIGTERM set one flag that every wait watches.

``drive``, ``wait``, ``intake --wait`` and ``api --wait`` may sit for an hour
in a pause. Each installs a :class:`Stopper`; the forge's waits (a pause, a
probe, another caller's flight) watch its ``event`` between short slices, and
the roles' own sleeps watch ``stopped``, so a stop is seen within a second in
every state and the command leaves by its ``finally`` blocks, letting go of
what it holds. A light module: ``api`` and ``intake`` import it without the roles.
"""

from __future__ import annotations

import os
import signal
import threading

SIGNAL_NAMES: dict[int, str] = {int(signal.SIGINT): "SIGINT", int(signal.SIGTERM): "SIGTERM"}


class Stopper:
    """A stop flag set by SIGINT / SIGTERM (or a test), checked between short sleeps."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._again = threading.Event()
        self._signals = 0  # counted by the handler (no lock there), read by the relay thread
        self.signal: int | None = None

    def stop(self, signum: int | None = None) -> None:
        if self._event.is_set():
            self._again.set()
        self.signal = signum
        self._event.set()

    @property
    def again(self) -> threading.Event:
        """Set by a second stop (a second Ctrl-C): what a stop's own grace watches, to end it at once
        (``serve`` stops waiting for the calls in flight)."""
        return self._again

    @property
    def event(self) -> threading.Event:
        """What the forge's waits watch (``open_session(cancel=…)``)."""
        return self._event

    @property
    def stopped(self) -> bool:
        return self._event.is_set() or self.signal is not None

    @property
    def name(self) -> str:
        return SIGNAL_NAMES.get(self.signal, "a stop request") if self.signal is not None else "a stop request"

    def install(self) -> None:
        """Handle SIGINT and SIGTERM. The handler takes no lock: it notes the signal and writes a byte to
        a pipe, and a thread of its own sets the event. ``Event.set`` from the handler itself took the
        event's lock on the main thread, and a second signal — git forwards a terminal's Ctrl-C to the
        command it runs, which the terminal already sent it — arriving while the first handler held
        that lock waited for it forever (a drive that never ended)."""
        if threading.current_thread() is not threading.main_thread():
            return
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        threading.Thread(target=self._relay, args=(read_end,), name="git-sluice-stopper", daemon=True).start()

        def handler(signum: int, _frame: object) -> None:
            if self.signal is None:
                self.signal = signum
            self._signals += 1
            try:
                os.write(write_end, b"!")
            except OSError:  # a full pipe: a byte is already on its way
                pass

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, handler)

    def _relay(self, read_end: int) -> None:
        while os.read(read_end, 64):
            self._event.set()
            if self._signals >= 2:
                self._again.set()
