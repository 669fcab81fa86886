"""The ``git sluice`` command line: one module per command, no logic here.

Each command module attaches itself to :data:`main` when imported; importing
this package imports them all. Keep heavy imports inside command functions so
``git sluice`` starts fast from a hook.
"""

from __future__ import annotations

from ._group import main

# Command modules (each registers itself on `main`).
# (add one import line per command module here)
from . import hook_cmd, setup_cmd  # noqa: E402,F401  (issue 6)
from . import api_cmd  # noqa: E402,F401
from . import intake_cmd  # noqa: E402,F401
from . import roles_cmd  # noqa: E402,F401
from . import view_cmd  # noqa: E402,F401
from . import demo_cmd  # noqa: E402,F401
from . import doctor_cmd  # noqa: E402,F401

__all__ = ["main"]
