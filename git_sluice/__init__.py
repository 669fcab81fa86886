"""git-sluice: keep a fleet of GitHub-automation processes inside one allowance.

The package is layered so the architecture shows in the tree:

- ``forge``   the only way to GitHub (conditional GETs, pauses, budget)
- ``remote``  the only way to the git remote (lease and pause refs)
- ``intake``  one round of one branch, and the queue it keeps
- ``cli``     one module per command; parses, calls, prints
- ``double``  the GitHub double the tests, benchmark and demo talk to
"""

__version__ = "0.1.0"
