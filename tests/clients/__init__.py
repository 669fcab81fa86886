"""The real clients (gh, octokit, PyGithub) as tests drive them against ``git sluice serve``.

Each is installed from its own registry by ``tests/clients/install`` (the start of the README's test command) (Debian's ``gh``, npm's
octokit under ``node/``, PyGithub in the ``test`` extra); a test whose client
is missing fails and says so, for a skipped client would prove nothing.
"""
