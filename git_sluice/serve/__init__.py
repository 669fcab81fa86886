"""``git sluice serve``'s machinery: GitHub's API answered for the host's unmodified tools.

- :mod:`.shapes` — pure: where a request goes, whose token it carries, GitHub's refusal shapes;
- :mod:`.window` — identical GraphQL queries of one token answered once within a window;
- :mod:`.relay` — one request down the forge's road, per caller's token;
- :mod:`.metrics` — ``GET /metrics`` (prometheus-client);
- :mod:`.server` — the Unix socket and the loopback port, and a clean stop.

The command itself (its lock, its record for ``status``) is :mod:`git_sluice.commands.serve`.
"""
