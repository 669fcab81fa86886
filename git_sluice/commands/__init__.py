"""The porcelain: what each command does, as functions that return data.

The CLI (``git_sluice.cli``) parses arguments, calls these and renders what
they return; nothing here prints for a command that has a ``--json`` form.
``step`` and ``roles`` are the three roles (step, driver, wait); ``hook_round``
is what a hook starts, detached; ``setup``, ``doctor`` and ``demo`` are their
commands. What they run on (a session, the host watch's wiring, the driver's
lock) is :mod:`git_sluice.runtime`.
"""
