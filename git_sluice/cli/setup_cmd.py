"""``git sluice setup [--undo] [--json]``: install the hooks, or put back what was there."""

from __future__ import annotations

import json

import click

from ._group import main


@main.command("setup")
@click.option("--undo", is_flag=True, help="Restore every hook and the config exactly as they were.")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
@click.option(
    "--into-tracked-hooks",
    "into_tracked",
    is_flag=True,
    help="Write hook files even where git status shows them (a tracked hooks folder, as husky keeps).",
)
def setup(undo: bool, as_json: bool, into_tracked: bool) -> None:
    """Install the hooks and check the config; add no fetch refspec (the rounds fetch
    refs/sluice/* by their own), and remove the one an older setup added.

    Hooks already there keep running, first, with their exit status: they are
    moved to <hook>.legacy and git-sluice's hook calls them. Under pre-commit's
    hook, git-sluice's goes to <hook>.legacy, which pre-commit runs first.
    A hook file that git status would show (a tracked folder such as husky's)
    is left alone: setup prints the line to add to it, unless
    --into-tracked-hooks is given. Running setup again changes nothing;
    --undo puts back exactly what was there.

    Exit codes: 0 done; 1 failed (a file it cannot write); 2 a configuration error (the message names
    the key) or a hook that cannot be chained (a directory, a dangling link,
    not readable, not executable).
    """
    from ..commands import setup as installer
    from ..errors import SluiceError
    from ..repo import Repo

    try:
        repo = Repo.discover()
        report = installer.undo(repo) if undo else installer.install(repo, into_tracked=into_tracked)
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
    for item in report.todo:
        how = (f"create {item['file']} (executable) with #!/bin/sh and this line" if item["create"]
               else f"add this line to {item['file']}")
        click.echo(f"to finish the {item['hook']} hook, {how}:\n    {item['line']}")
    if report.action == "setup" and report.todo:
        click.echo("set up, except the line(s) above (or run git sluice setup --into-tracked-hooks)")
    elif report.action == "setup":
        click.echo("set up; nothing changed" if not report.changed else "set up")
    else:
        click.echo("undone" if report.changed else "nothing to undo")
