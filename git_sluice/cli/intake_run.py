"""What ``git sluice intake`` does, without click: one body for the click command and :mod:`.fast`.

A quiet round is what a cron job or a hook-less host runs every minute, so
its start-up counts (issue 15): click and its command tree were a tenth of a
quiet round's CPU. :mod:`.fast` runs the plain spellings (``--json``,
``--wait``, ``--timeout``, ``-v``) through :func:`run_intake`; the click
command (:mod:`.intake_cmd`) calls the same function, so both print the same.
Standard library (and the errors, which are) only at import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import UnknownBranch


def setup_logging(verbose: bool = False) -> None:
    """Progress to stderr only when asked; the hooks and the log file set their own."""
    import logging
    import sys

    root = logging.getLogger("git_sluice")
    level = logging.DEBUG if verbose else logging.WARNING  # -v: every decision (debug lines never reach a log file)
    stderr = [h for h in root.handlers if getattr(h, "_sluice_stderr", False)]
    if not stderr:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("git sluice: %(message)s"))
        handler._sluice_stderr = True  # type: ignore[attr-defined]
        root.addHandler(handler)
        stderr = [handler]
    for each in stderr:
        each.setLevel(level)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)
    if verbose:
        _say_calls_at_exit()


def _say_calls_at_exit() -> None:
    """``-v``'s last line: every call the command sent to GitHub, the side calls and the watch's too."""
    import atexit
    import logging

    from ..forge import tally

    began = tally.snapshot()

    def said() -> None:
        calls = tally.snapshot().minus(began)
        logging.getLogger("git_sluice").debug("this command: %s", calls.summary())

    if not getattr(_say_calls_at_exit, "registered", False):
        _say_calls_at_exit.registered = True  # type: ignore[attr-defined]
        atexit.register(said)


def run_intake(branches: Sequence[str], wait: bool, timeout: float | None, as_json: bool, verbose: bool,
               echo: Callable[[str], None]) -> None:
    """One round per branch, then what each did through ``echo``; raises :class:`UnknownBranch` on a typo."""
    from ..runtime.session import open_session
    from ..commands.intake import run_rounds, unknown_branches
    from ..runtime.stopper import Stopper
    from ..countdown import Countdown

    from ..forge import tally

    setup_logging(verbose)
    began = tally.snapshot()
    stopper = Stopper()  # SIGINT / SIGTERM end a wait within a second (exit 130), never a traceback
    stopper.install()

    with Countdown() as countdown, open_session(on_wait=countdown, cancel=stopper.event) as session:
        unknown = unknown_branches(session, branches)
        if unknown:
            raise UnknownBranch(unknown, session.settings.remote, looked="not in sluice.branch, not on the remote")
        deadline = session.clock.time() + timeout if timeout is not None else None
        reports = run_rounds(session, list(branches) or None, reason="intake", wait=wait, deadline=deadline)
    if as_json:
        from .views import json_text

        # every call the command caused — a token's GET /user, an App's mint, the host watch's
        # query — beside the rounds' own (issue 31)
        echo(json_text({"rounds": [r.to_json() for r in reports], "calls": tally.snapshot().minus(began).to_json()}))
    else:
        for report in reports:
            echo(report.summary())
        calls = tally.snapshot().minus(began)
        if calls.requests > sum(r.requests for r in reports):
            # what the rounds' own lines leave out: the token's GET /user, the host watch's reads
            echo(f"all told, {calls.summary()}")
