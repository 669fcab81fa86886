"""The ``git sluice`` command line: one module per command, no logic here.

Each command module attaches itself to :data:`main` when imported; asking
this package for ``main`` imports them all (the console script's entry imports
only the one it runs: ``_group.COMMAND_MODULES``). The package itself imports
nothing, so :mod:`.fast` (``status``, ``queue`` and the hook runner without
click, issue 15) loads none of it. Keep heavy imports inside command
functions so ``git sluice`` starts fast from a hook.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own flag, without importing typing (issue 15: ~2 ms of queue's start-up)

if TYPE_CHECKING:
    from typing import Any

    from ._group import main as main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name != "main":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._group import load_all, main

    load_all()  # every command on `main` (a new command module: one line in _group.COMMAND_MODULES)
    globals()["main"] = main
    return main
