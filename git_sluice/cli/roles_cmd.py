"""``git sluice drive``, ``git sluice wait`` and ``git sluice lease``."""

from __future__ import annotations

import sys

import click

from ._common import DURATION, handles_errors, print_json, setup_logging
from ._group import main


def _say_line(text: str) -> None:
    """Progress: one line each, on stderr (stdout stays for results)."""
    click.echo(f"git sluice: {text}", err=True)


@main.command("drive")
@click.option("-b", "--branch", "branches", multiple=True, help="Branch to drive (repeatable); default: sluice.branch.")
@click.option("-v", "--verbose", is_flag=True, help="Also log every decision to stderr.")
@handles_errors
def drive_command(branches: tuple[str, ...], verbose: bool) -> None:
    """Hold the lease of each branch and take it in on the discovery clock.

    The long-lived role, usually run as a service (contrib/systemd,
    contrib/launchd). Renews its lease every third of the lease length, takes
    over a wait's lease at once and a lapsed one after a full lease by its own
    observation, and lets go on SIGINT / SIGTERM. Exit codes: 0 stopped by a
    signal; 1 failed; 2 configuration, no token, an unknown --branch, or
    another driver already runs in this clone (named by its pid).
    """
    from ..errors import Interrupted
    from .logfile import attach_log, progress_to_log
    from ..commands.drive import drive
    from ..runtime.stopper import Stopper
    from ..runtime.session import open_session

    from ..runtime.driverlock import DriverLock
    from ..commands.intake import unknown_branches

    setup_logging(verbose)
    stopper = Stopper()
    stopper.install()
    with open_session(cancel=stopper.event) as session:
        unknown = unknown_branches(session, branches)
        if unknown:
            raise click.BadParameter(f"{', '.join(unknown)}: no such branch on {session.settings.remote}",
                                     param_hint="-b/--branch")
        with DriverLock(session.repo.sluice_dir):  # before any lease is touched: one driver per clone
            progress = progress_to_log(attach_log(session.repo.sluice_dir))

            def say(text: str) -> None:
                # stderr and the clone's log, as the reference says
                _say_line(text)
                progress.info(text)

            try:
                drive(session, list(branches) or None, stopper=stopper, say=say)
            except Interrupted:
                if not stopper.stopped:
                    raise
                # stopped inside a wait on the road (a pause, another caller's flight): drive's
                # finally let go of its marks, and a driver stopped cleanly exits 0
    if stopper.stopped:
        _say_line(f"stopped ({stopper.name})")


@main.command("wait")
@click.argument("number", type=int)
@click.option("--timeout", type=DURATION, default=None, help="Give up after this long (exit 4).")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Say what git-sluice decided (to stderr).")
@handles_errors
def wait_command(number: int, timeout: float | None, as_json: bool, verbose: bool) -> None:
    """Follow pull request NUMBER to an outcome: merged, closed, ready or blocked.

    Prints each change once. Where no driver lives, it takes the branch's
    lease as a wait and lets go when it ends; where another host takes the
    branch in, it follows NUMBER on this host's watch, asking GitHub only when
    the request moved. Exit codes: 0 merged or ready; 1 closed or blocked (or
    failed); 2 configuration, or GitHub refused the credentials; 3 allowance
    spent past the timeout; 4 timed out; 130 stopped by SIGINT / SIGTERM.
    """
    from ..countdown import Countdown
    from ..commands.wait import wait_for
    from ..runtime.stopper import Stopper
    from ..runtime.session import open_session

    setup_logging(verbose)
    stopper = Stopper()
    stopper.install()

    with Countdown() as countdown, open_session(on_wait=countdown, cancel=stopper.event) as session:
        result = wait_for(session, number, timeout=timeout, stopper=stopper,
                          say=(lambda text: None) if as_json else click.echo)
    if as_json:
        print_json({"number": result.number, "outcome": result.outcome, "history": result.history})
    sys.exit(result.exit_code)


@main.command("lease")
@click.option("-b", "--branch", "branches", multiple=True, help="Branch (repeatable); default: sluice.branch.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@handles_errors
def lease_command(branches: tuple[str, ...], as_json: bool) -> None:
    """Show who holds each branch's lease, its role, and its age by this host's observation.

    Reads the marks as the last round fetched them (a plain git fetch does not), and
    asks the remote (one git ls-remote, no GitHub call) whether it still has them: a
    mark the remote no longer has is never shown live. Where the remote cannot be
    reached, the line says as of when it speaks. A mark that is not a lease record
    is reported as garbage, and ages like any other.
    Exit codes: 0; 2 configuration or an unknown --branch.
    """
    from ..commands.lease import lease_json, lease_words, read_leases_looked

    found = read_leases_looked(".", branches)
    if as_json:
        print_json({"leases": [lease_json(v, found.look) for v in found.views]})
        return
    for view in found.views:
        click.echo(lease_words(view, fetched=found.fetched, look=found.look))
