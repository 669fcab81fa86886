"""``git sluice api``: GitHub through git-sluice, for any tool.

A tool that calls ``git sluice api`` instead of GitHub spends nothing on an
unchanged answer (conditional GETs shared by every process of the clone),
makes no call while the allowance is spent (exit 3, naming when it ends), and
shows up in the same budget ledger as everything else.
"""

from __future__ import annotations

import json
import sys

import click

from ._common import DURATION, handles_errors, setup_logging
from ._group import main


def _fields(pairs: tuple[str, ...], typed: tuple[str, ...]) -> dict[str, object]:
    fields: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r}: expected key=value", param_hint="-f/--field")
        fields[key] = value
    for pair in typed:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r}: expected key=value", param_hint="-F/--typed-field")
        try:
            fields[key] = json.loads(value)
        except ValueError:
            fields[key] = value
    return fields


@main.command("api")
@click.argument("path")
@click.option("-X", "--method", default="GET", show_default=True, help="HTTP method (REST).",
              metavar="METHOD", type=click.Choice(["GET", "HEAD", "POST", "PATCH", "PUT", "DELETE"], case_sensitive=False))
@click.option("-f", "--field", "raw_fields", multiple=True, metavar="KEY=VALUE",
              help="A string parameter: a query parameter for GET, a JSON body field otherwise; "
              "for `graphql`, `query=` is the document and the rest are variables.")
@click.option("-F", "--typed-field", "typed_fields", multiple=True, metavar="KEY=VALUE",
              help="Like -f, but the value is parsed as JSON (numbers, true/false, null).")
@click.option("--wait", is_flag=True, help="Wait out a spent allowance instead of exiting 3.")
@click.option("--timeout", type=DURATION, default=None, help="With --wait: give up after this long (exit 3).")
@click.option("-i", "--include", is_flag=True, help="Print the status line and headers first.")
@click.option("-v", "--verbose", is_flag=True, help="Say what git-sluice decided (to stderr).")
@handles_errors
def api_command(
    path: str,
    method: str,
    raw_fields: tuple[str, ...],
    typed_fields: tuple[str, ...],
    wait: bool,
    timeout: float | None,
    include: bool,
    verbose: bool,
) -> None:
    """Call GitHub's API through git-sluice and print the JSON body.

    PATH is a REST path (``repos/o/r/pulls``) or ``graphql``. GETs are
    conditional and answered from the kept answer when GitHub says nothing
    changed (free). Exit codes: 0 success; 1 GitHub answered an error (the body
    is printed); 2 usage or configuration; 3 allowance spent, the message names
    when it ends (nothing was sent).
    """
    from ..commands.api import call_github, failed, is_graphql
    from ..runtime.session import open_session
    from ..countdown import Countdown

    setup_logging(verbose)
    fields = _fields(raw_fields, typed_fields)
    query: str | None = None
    if is_graphql(path):
        document = fields.pop("query", None)
        if not isinstance(document, str):
            raise click.UsageError("graphql needs -f query='…'")
        query = document

    from ..runtime.stopper import Stopper

    stopper = Stopper()  # SIGINT / SIGTERM end a wait within a second (exit 130), never a traceback
    stopper.install()
    with Countdown() as countdown, open_session(need_branches=False, on_wait=countdown, cancel=stopper.event) as session:
        deadline = session.clock.time() + timeout if timeout is not None else None
        answer = call_github(session, path, method=method, fields=fields, query=query, wait=wait, deadline=deadline)
    if include:
        click.echo(f"HTTP {answer.status}{' (kept answer, not modified)' if answer.from_kept else ''}")
        for key, value in answer.headers.items():
            click.echo(f"{key}: {value}")
        click.echo()
    text = answer.body.decode("utf-8", "replace")
    try:
        text = json.dumps(json.loads(text), indent=2)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to indent: printed as it came
        pass
    click.echo(text)
    if failed(answer, path):
        sys.exit(1)
