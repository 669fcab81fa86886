"""``git sluice queue`` and ``git sluice status``: what was taken in, and why data may be stale.

Neither command calls GitHub or the remote: they read the clone's sluice dir
and the host store, so a dashboard may poll them as often as it likes.
"""

from __future__ import annotations

import sys

import click

from ._common import handles_errors
from ._group import main
from .views import show_queue, show_status


@main.command("queue")
@click.option("-b", "--branch", "branches", multiple=True, help="Branch (repeatable); default: sluice.branch.")
@click.option("--json", "as_json", is_flag=True,
              help="The versioned queue document (schema 1, docs/queue-json.md); a list of them for several branches.")
@handles_errors
def queue_command(branches: tuple[str, ...], as_json: bool) -> None:
    """The taken-in pull requests, with their state: ready, waiting, blocked or draft.

    Reads the queue the last round left (no call to GitHub): tools should read
    this instead of calling GitHub themselves. Exit codes: 0; 2 configuration
    or an unknown --branch.
    """
    show_queue(branches, as_json, click.echo)


@main.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON (schema 1).")
@click.option("--no-color", "no_color", is_flag=True,
              help="No colour, whatever color.ui says (colour is on a terminal only, as git's; NO_COLOR too).")
@handles_errors
def status_command(as_json: bool, no_color: bool) -> None:
    """Leases, queues, last rounds, and the budget and pauses of each pool (no network).

    A rate-limited forge says so with the time it ends; an observe-only host
    (sluice.enforce=false) shows what would have been paused. Exit codes: 0;
    1 failed (the host state cannot be used); 2 configuration.
    """
    show_status(as_json, click.echo, no_color=no_color)
    sys.stdout.flush()
