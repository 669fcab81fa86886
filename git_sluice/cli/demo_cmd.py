"""``git sluice demo``: see git-sluice work on this machine, with no token and no GitHub."""

from __future__ import annotations

import click

from ._common import handles_errors
from ._group import main


@main.command("demo")
@click.option("--keep", is_flag=True, help="Leave the demo's directory to explore (git for-each-ref refs/sluice).")
@handles_errors
def demo_command(keep: bool) -> None:
    """Run the whole story against the built-in GitHub double: two hosts, one lease, 304s,
    a throttle, a pause that reaches the other host, one probe. Under a minute; touches
    nothing outside a temporary directory. Exit codes: 0 the story ran; 1 it failed."""
    from ..commands.demo import run_demo

    run_demo(keep=keep, say=click.echo)
