"""The ``git sluice`` command line: one module per command, no logic here.

Each command module attaches itself to :data:`main` when imported; asking
this package for ``main`` imports them all. The package itself imports
nothing, so :mod:`.fast` (``status``, ``queue`` and the hook runner without
click, issue 15) loads none of it. Keep heavy imports inside command
functions so ``git sluice`` starts fast from a hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._group import main as main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name != "main":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._group import main

    # Command modules (each registers itself on `main`).
    # (add one import line per command module here)
    from . import hook_cmd, setup_cmd  # noqa: F401  (issue 6)
    from . import api_cmd  # noqa: F401
    from . import intake_cmd  # noqa: F401
    from . import roles_cmd  # noqa: F401
    from . import view_cmd  # noqa: F401
    from . import demo_cmd  # noqa: F401
    from . import doctor_cmd  # noqa: F401

    globals()["main"] = main
    return main
