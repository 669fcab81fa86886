"""``git sluice setup [--undo] [--json]``: install the hooks, or put back what was there."""

from __future__ import annotations

import json

import click

from ._group import main


@main.command("setup")
@click.option("--undo", is_flag=True, help="Restore every hook and the config exactly as they were.")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
def setup(undo: bool, as_json: bool) -> None:
    """Install the hooks and check the config; add no fetch refspec (the rounds fetch
    refs/sluice/* by their own), and remove the one an older setup added.

    Hooks already there keep running, first, with their exit status: they are
    moved to <hook>.legacy and git-sluice's hook calls them. Running setup
    again changes nothing; --undo puts back exactly what was there.

    Exit codes: 0 done; 1 failed (a file it cannot write); 2 a configuration error (the message names
    the key) or a hook that cannot be chained (a directory, a dangling link,
    not readable, not executable).
    """
    from ..commands import setup as installer
    from ..errors import SluiceError
    from ..repo import Repo

    try:
        repo = Repo.discover()
        report = installer.undo(repo) if undo else installer.install(repo)
    except (SluiceError, OSError) as exc:
        # OSError: a hooks folder or config file we may not write (permissions, a full disk)
        code = exc.exit_code if isinstance(exc, SluiceError) else 1
        message = str(exc) if isinstance(exc, SluiceError) else f"cannot change {exc.filename or 'a file'}: {exc.strerror}"
        if as_json:
            click.echo(json.dumps({"error": message, "exit_code": code}, indent=2))
        click.echo(f"git sluice: {message}", err=True)
        raise SystemExit(code) from None
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
        return
    for step in report.steps:
        click.echo(step.line())
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    if report.action == "setup":
        click.echo("set up; nothing changed" if not report.changed else "set up")
    else:
        click.echo("undone" if report.changed else "nothing to undo")
