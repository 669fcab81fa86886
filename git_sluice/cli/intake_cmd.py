"""``git sluice intake``: one round (a step) per branch, then exit."""

from __future__ import annotations

import click

from ._common import DURATION, handles_errors, print_json, setup_logging
from ._group import main


@main.command("intake")
@click.option("-b", "--branch", "branches", multiple=True, help="Branch to take in (repeatable); default: sluice.branch.")
@click.option("--wait", is_flag=True, help="Wait out a spent allowance instead of exiting 3.")
@click.option("--timeout", type=DURATION, default=None, help="With --wait: give up after this long (exit 3).")
@click.option("--json", "as_json", is_flag=True, help="Print what each round did as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Say what git-sluice decided (to stderr).")
@handles_errors
def intake_command(branches: tuple[str, ...], wait: bool, timeout: float | None, as_json: bool, verbose: bool) -> None:
    """Take the open pull requests of each branch in: one round, with the fewest calls.

    Asks GitHub only when the discovery interval has passed or something moved
    locally, and only where no other host holds the branch's lease. Exit codes:
    0 done (including "nothing to do"); 1 failed; 2 configuration; 3 allowance
    spent (nothing was sent; the message names when it ends).
    """
    from ..countdown import Countdown
    from ..commands.step import run_rounds, unknown_branches
    from ..commands.session import open_session

    from ..commands.stopper import Stopper

    setup_logging(verbose)
    stopper = Stopper()  # SIGINT / SIGTERM end a wait within a second (exit 130), never a traceback
    stopper.install()

    with Countdown() as countdown, open_session(on_wait=countdown, cancel=stopper.event) as session:
        unknown = unknown_branches(session, branches)
        if unknown:
            raise click.BadParameter(f"{', '.join(unknown)}: no such branch on {session.settings.remote}",
                                     param_hint="-b/--branch")
        deadline = session.clock.time() + timeout if timeout is not None else None
        reports = run_rounds(session, list(branches) or None, reason="intake", wait=wait, deadline=deadline)
    if as_json:
        print_json({"rounds": [r.to_json() for r in reports]})
    else:
        for report in reports:
            click.echo(report.summary())
