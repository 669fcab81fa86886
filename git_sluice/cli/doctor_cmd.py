"""``git sluice doctor``: every check one line, ``ok`` / ``warn`` / ``fail``, with what to do."""

from __future__ import annotations

import sys

import click

from ._common import handles_errors, print_json, setup_logging
from ._group import main


@main.command("doctor")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"schema":1,"checks":[{"name","status","found","advice"}],"budget":[…],"projection":{…}}.')
@click.option("-v", "--verbose", is_flag=True, help="Say what git-sluice decided (to stderr).")
@click.option("--no-color", "no_color", is_flag=True,
              help="No colour, whatever color.ui says (colour is on a terminal only, as git's; NO_COLOR too).")
@handles_errors
def doctor_command(as_json: bool, verbose: bool, no_color: bool) -> None:
    """Check the set-up: git, config, token (never shown), hooks, remote, leases, pauses, budget.

    Ends with the budget per pool and resource (used / limit and the reset) and
    the projected hourly spend — branches × rounds per hour × what this clone's
    last rounds cost — warning above 50 % of the allowance. Costs at most one
    conditional GET of the repository (usually a free 304), one free
    GET /rate_limit when this host has seen nothing of the pool yet, one fetch
    and two pushes of a scratch ref (refs/sluice/doctor/<host>). Exit codes:
    0 no check failed (warnings allowed); 1 a check failed.
    """
    from ..commands.doctor import diagnose

    setup_logging(verbose)
    diagnosis = diagnose()
    if as_json:
        print_json(diagnosis.as_dict())
    else:
        from .colour import decide, painter

        on = decide(sys.stdout, flag=False if no_color else None)
        paint = painter(on)
        for check in diagnosis.checks:
            click.echo(check.line(paint), color=on or None)
        failed = sum(1 for c in diagnosis.checks if c.status == "fail")
        warned = sum(1 for c in diagnosis.checks if c.status == "warn")
        ok = len(diagnosis.checks) - failed - warned
        click.echo(f"{paint(f'{failed} failed', 'fail') if failed else '0 failed'}, "
                   f"{paint(f'{warned} warned', 'warn') if warned else '0 warned'}, {ok} ok", color=on or None)
    sys.stdout.flush()
    sys.exit(diagnosis.exit_code)
