"""``git sluice _hook-round``: the hidden command the hooks start, detached.

Hidden because no person runs it: the hooks start it in a new session with
every standard stream on /dev/null, and it reports only to the clone's log
(see :mod:`git_sluice.commands.hook_round`). It always exits 0.
"""

from __future__ import annotations

import click

from ._group import main


@main.command("_hook-round", hidden=True)
@click.option("--wait-pid", type=int, default=None, help="The git process to wait for before the round.")
@click.option("--inbox", type=str, default=None, help="The file the hook wrote its lines into.")
def hook_round(wait_pid: int | None, inbox: str | None) -> None:
    """Run the intake round a hook asked for, once its git command has ended."""
    from ..commands import hook_round as runner

    runner.main(wait_pid, inbox)
