"""The root ``git sluice`` command group; command modules attach to it."""

from __future__ import annotations

import importlib

import click

from .. import __version__

COMMAND_MODULES = {
    "_hook-round": "hook_cmd",
    "setup": "setup_cmd",
    "api": "api_cmd",
    "intake": "intake_cmd",
    "drive": "roles_cmd",
    "wait": "roles_cmd",
    "lease": "roles_cmd",
    "queue": "view_cmd",
    "status": "view_cmd",
    "demo": "demo_cmd",
    "doctor": "doctor_cmd",
    "serve": "serve_cmd",
}
"""Which module of this package defines each command (tests/test_cli_fast_path.py checks it against the modules)."""


def load_all() -> None:
    """Import every command module (each attaches its commands to :data:`main`)."""
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        importlib.import_module(f"{__package__}.{module}")


class _Commands(click.Group):
    """A group that imports a command's module when that command is asked for (issue 15).

    ``git sluice intake`` then loads the intake's module alone, not every
    command's; listing the commands (``--help``), or a name that is not one,
    loads them all first, so help and errors read as before.
    """

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            module = COMMAND_MODULES.get(cmd_name)
            if module is None:
                load_all()
            else:
                importlib.import_module(f"{__package__}.{module}")
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        load_all()
        return super().list_commands(ctx)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="git-sluice", message="%(prog)s %(version)s")
def main() -> None:
    """Keep every GitHub-automation process on this account inside one allowance.

    git-sluice takes a branch's open pull requests in with the fewest calls that
    can see what moved, and coordinates every process and host through the git
    remote: a lease ref says which host takes a branch in, a pause ref stops
    every host when the allowance is spent.
    """
