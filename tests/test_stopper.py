"""The stop flag's signal handler takes no lock (issue 33's signals).

git forwards a terminal's Ctrl-C to the command it runs, which the terminal
already sent it: two SIGINTs in a row. The handler used to call
``Event.set``, which takes the event's lock on the main thread; the second
signal, arriving while the first handler held it, waited for it forever and
``git sluice drive`` never ended (a flake of the signals tests under load).
"""

from __future__ import annotations

import subprocess
import sys

from git_sluice.runtime.stopper import Stopper


SCRIPT = """
import os, signal, time
from git_sluice.runtime.stopper import Stopper
stopper = Stopper()
stopper.install()
with stopper.event._cond:  # what a first handler's Event.set held
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)
    deadline = time.monotonic() + 5
    while stopper.signal is None and time.monotonic() < deadline:
        pass  # the handler runs on this thread between bytecodes: it must not wait for the lock
    assert stopper.signal == signal.SIGINT and stopper.stopped
assert stopper.event.wait(5), "the event was never set"
print("stopped by", stopper.name)
"""


def test_a_signal_while_the_events_lock_is_held_is_noted_and_the_event_follows() -> None:
    # in a process of its own: the old handler deadlocked here, which must fail the test, not hang the run
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "stopped by SIGINT" in done.stdout, done.stderr


def test_a_stop_asked_in_code_sets_the_event_at_once() -> None:
    stopper = Stopper()
    assert not stopper.stopped
    stopper.stop()
    assert stopper.event.is_set() and stopper.stopped and stopper.name == "a stop request"
