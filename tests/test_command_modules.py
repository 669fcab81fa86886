"""Every command has a module of its name under commands/, and commands/ holds commands alone (issue 32).

A reader looking for what ``git sluice wait`` does opens ``commands/wait.py``.
Names map as the command line spells them: ``-`` is ``_``, and the hidden
``_hook-round`` (no person runs it; the hooks start it) is ``hook_round``. A
module of commands/ whose name starts with ``_`` is a private helper two
commands share; anything else there must be a command. What several commands
run on lives in ``git_sluice.runtime`` (import-linter keeps it below commands/).
"""

from __future__ import annotations

from pathlib import Path

import click

import git_sluice.commands
from git_sluice.cli import main

COMMANDS = Path(git_sluice.commands.__file__).parent


def _module_name(command: str) -> str:
    return command.lstrip("_").replace("-", "_")


def _commands(*, hidden: bool) -> dict[str, click.Command]:
    """The root group's commands; ``hidden=False``: those ``git sluice --help`` lists."""
    ctx = click.Context(main)
    found = {}
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None, name
        if hidden or not command.hidden:
            found[name] = command
    return found


def _module_names() -> set[str]:
    """The modules and packages of commands/ (``__init__`` and private ``_`` helpers left out)."""
    names = {p.stem for p in COMMANDS.glob("*.py")} | {
        p.name for p in COMMANDS.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }
    return {n for n in names if not n.startswith("_")}


def test_help_lists_the_commands_this_test_knows_of() -> None:
    """The check below reads the same list ``--help`` prints (a sanity check that it is not empty)."""
    listed = set(_commands(hidden=False))
    assert {"api", "intake", "drive", "wait", "lease", "queue", "status", "setup", "doctor", "demo"} <= listed


def test_every_command_has_a_module_of_its_name() -> None:
    missing = []
    for name in _commands(hidden=True):
        module = _module_name(name)
        if not ((COMMANDS / f"{module}.py").is_file() or (COMMANDS / module / "__init__.py").is_file()):
            missing.append(f"{name}: commands/{module}.py")
    assert not missing, f"commands without a module of their name: {missing}"


def test_every_module_of_commands_is_a_command() -> None:
    names = {_module_name(name) for name in _commands(hidden=True)}
    strays = sorted(_module_names() - names)
    assert not strays, (
        f"commands/ holds modules that are no command: {strays} "
        "(what commands run on goes to git_sluice/runtime/, a helper two commands share to a private _module)"
    )
