"""git-sluice: keep a fleet of GitHub-automation processes inside one allowance.

The package is layered so the architecture shows in the tree:

- ``forge``   the only way to GitHub (conditional GETs, pauses, budget)
- ``remote``  the only way to the git remote (lease and pause refs)
- ``intake``  one round of one branch, and the queue it keeps
- ``cli``     one module per command; parses, calls, prints
- ``double``  the GitHub double the tests, benchmark and demo talk to
"""

__version__ = "0.1.0"

import sys as _sys

# httpx's own command line (httpx._main) is imported by `import httpx` whenever
# its extras happen to be installed, and it loads click, rich and pygments:
# ~40 ms of every process that calls GitHub (issue 15), for a CLI git-sluice
# never runs. Marked absent before anything imports httpx, httpx falls back to
# its stub `httpx.main` (its own `except ImportError` path); nothing else of
# httpx depends on it. An httpx already imported (a host program's) is left as is.
if "httpx" not in _sys.modules:
    _sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
