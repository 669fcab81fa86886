"""The porcelain: what each command does, as functions that return data.

One module per command, named after it (``api``, ``intake``, ``drive``,
``wait``, ``lease``, ``queue``, ``status``, ``setup``, ``doctor``, ``demo``,
and ``hook_round`` for the hidden ``_hook-round`` the hooks start, detached);
a private ``_`` module holds what two of them share. The CLI
(``git_sluice.cli``) parses arguments, calls these and renders what they
return; nothing here prints for a command that has a ``--json`` form. What
they run on (a session, its rounds, the host watch's wiring, the driver's
lock) is :mod:`git_sluice.runtime`. ``tests/test_command_modules.py`` holds
this package to it.
"""
