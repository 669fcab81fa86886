"""What a command runs on, none of it a command: one process's wiring and the pieces its roles share.

``session`` wires a process together (settings, host store, forge, remote);
``rounds`` wires a session's intake, reading leases as its role sees them;
``watching`` wires the host watch into a session; ``pausecheck`` paces the
looks at the remote's pause notes; ``poolfile`` records which pools the
clone's credentials spend; ``driverlock``, ``refusal`` and ``stopper`` are
one driver per clone, a driver's back-off after a 401, and how a
long-running command stops. ``git_sluice.commands`` builds its commands on
these; nothing here imports a command.
"""
