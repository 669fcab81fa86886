"""The porcelain: what each command does, as functions that return data.

The CLI (``git_sluice.cli``) parses arguments, calls these and renders what
they return; nothing here prints for a command that has a ``--json`` form.
``session`` is the one place a process is wired together (settings, host
store, forge, remote); ``step`` and ``roles`` are the three roles (step,
driver, wait); ``hookrun`` is what a hook starts, detached; ``setup``,
``doctor`` and ``demo`` are their commands.
"""
