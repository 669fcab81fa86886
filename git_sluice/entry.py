"""The ``git-sluice`` console script: the hook runner's wait comes before any heavy import.

A hook starts ``git-sluice _hook-round --wait-pid <git's pid>`` detached,
while the user's push is still running. Importing click, libgit2 or httpx
then would take CPU from that push, so this entry point (standard library
only) lowers the runner's priority and waits for git to exit first; the
command line proper (:mod:`git_sluice.cli`) is imported after, and only
when :mod:`git_sluice.cli.fast_path` leaves the command to click: the plain
spellings of ``status``, ``queue`` and ``_hook-round`` run without it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

from .procs import gone

HOOK_COMMAND = "_hook-round"
NICENESS = 10
"""How far the hook runner steps back: a round is never more urgent than the user's own work."""
WAIT_LIMIT = 3600.0
"""The longest it waits for git (as the runner's own wait: commands/hook_round.py WAIT_LIMIT)."""


def wait_pid_of(argv: Sequence[str]) -> int | None:
    """The ``--wait-pid`` a hook gave (either spelling click accepts), or None."""
    for i, arg in enumerate(argv):
        value = None
        if arg == "--wait-pid" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--wait-pid="):
            value = arg[len("--wait-pid=") :]
        if value is not None:
            return int(value) if value.isdigit() else None
    return None


def wait_for(pid: int, limit: float = WAIT_LIMIT) -> None:
    """Poll until ``pid`` ends, or ``limit`` seconds pass (a real process's exit: real time)."""
    deadline = time.monotonic() + limit
    delay = 0.005
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 1.5, 0.1)


def before_hook_round(argv: Sequence[str]) -> None:
    """Step back and wait for git, before anything heavy is imported."""
    try:
        os.nice(NICENESS)
    except (OSError, AttributeError):
        pass
    pid = wait_pid_of(argv)
    if pid is not None:
        wait_for(pid)


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == [HOOK_COMMAND]:
        before_hook_round(argv[1:])
    from .cli.fast_path import dispatch

    code = dispatch(argv)  # status, queue, intake and the hook runner, without click (issue 15)
    if code is not None:
        sys.exit(code)
    from .cli._group import main as cli  # imports the one command's module it runs

    cli()


ASYNC_ONLY = ("trio",)
"""What httpcore imports whenever it is installed, for async clients alone.

httpcore's synchronisation module runs ``import trio`` at import time, inside
``try: ... except ImportError``, so that an async client under trio finds it:
~45 ms of every process that builds a transport (issue 15: a quarter of a quiet
round's CPU on a machine whose Python has trio), for a library git-sluice never
runs (every call it makes is synchronous, on threads). Marked absent in
git-sluice's own process, httpcore takes its "not installed" path, as it does
in any environment without trio; its synchronous locks are ``threading``'s
either way. anyio is not marked: httpx depends on it and it costs ~1 ms.
"""


def sync_only() -> None:
    """Mark :data:`ASYNC_ONLY` absent, in a process that is git-sluice's own (not in a host program)."""
    for name in ASYNC_ONLY:
        if name not in sys.modules:  # already imported (never, in a fresh process): left as it is
            sys.modules[name] = None  # type: ignore[assignment]


def run() -> None:
    """The process's own entry (console script, ``python -m``): :func:`main`, then a quick exit.

    A quiet ``intake`` over a big queue spent a tenth of its CPU (~25 ms) in the
    interpreter's teardown, freeing every module and object one by one just before
    the kernel frees them all at once (issue 15). So once ``main`` is done, this runs
    what an ordinary exit would (the ``atexit`` handlers: logging's flush and close,
    a caller's own) and flushes the standard streams, then ends the process with
    ``os._exit``. Nothing is skipped that writes: SQLite commits are durable when they
    return, state files are replaced whole and closed, locks go with the process.
    When another non-daemon thread still runs, or the exit code is not a number, it
    leaves the ordinary exit to decide (threads are joined, a message is printed).
    Tests call :func:`main` and look at the interpreter afterwards, so only this entry
    ends the process, and only this entry marks :data:`ASYNC_ONLY` absent.
    """
    sync_only()
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code
    _exit_now(code)


def _exit_now(code: object) -> None:
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if not isinstance(code, int) or others:
        raise SystemExit(code)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe: the ordinary exit would not report it either
            code = code or 120
    os._exit(code)
