"""The only way to GitHub.

Every call to GitHub passes through this package so that one spent allowance
pauses every process on the host at once, every GET is conditional, and the
budget ledger sees every counted call. The pure decisions (``rules``: what an
answer means and until when to pause; ``gate_machine``: the pause / probe / ramp
machine; ``origins``: where the token may go) are kept apart from the I/O
(``hoststore``: the host-wide SQLite store; ``kept_answers``: the kept answers) so
they can be tested exhaustively. ``client.Forge`` stacks one call's road out
of small httpx transports (``layers``: what they share) — ``flight``, ``failure_memory``, ``revalidate``,
``host_gate``, ``ledger``, ``wire`` — each one step, each tested alone.
"""
