"""The hook scripts git runs (POSIX sh), shipped as package data.

This folder is the package ``git_sluice.hookscripts`` (see pyproject.toml), so
``git sluice setup`` reads the scripts with :mod:`importlib.resources` from an
installed wheel and from an editable checkout alike; this file exists because
an editable install only maps a folder that is a regular package.
"""
