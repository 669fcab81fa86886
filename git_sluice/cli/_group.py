"""The root ``git sluice`` command group; command modules attach to it."""

from __future__ import annotations

import click

from .. import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="git-sluice", message="%(prog)s %(version)s")
def main() -> None:
    """Keep every GitHub-automation process on this account inside one allowance.

    git-sluice takes a branch's open pull requests in with the fewest calls that
    can see what moved, and coordinates every process and host through the git
    remote: a lease ref says which host takes a branch in, a pause ref stops
    every host when the allowance is spent.
    """
