"""``git sluice intake``: one round (a step) per branch, then exit."""

from __future__ import annotations

import click

from ._common import DURATION, handles_errors
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
    0 done (including "nothing to do"); 1 failed; 2 configuration, an unknown
    --branch, or GitHub refused the credentials; 3 allowance spent (nothing was
    sent; the message names when it ends); 130 stopped while waiting (--wait).
    """
    from ..errors import UnknownBranch
    from .intake_run import run_intake

    if timeout is not None and not wait:
        raise click.UsageError("--timeout bounds a --wait: give --wait too (without it a spent allowance "
                               "exits 3 at once, and each call gives up after 30 s on its own)")

    try:
        run_intake(branches, wait, timeout, as_json, verbose, click.echo)
    except UnknownBranch as exc:
        raise click.BadParameter(exc.detail, param_hint="-b/--branch") from None
