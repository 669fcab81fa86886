"""The only way to the git remote: lease refs and pause notes under ``refs/sluice/``.

- :mod:`.git`      fetch / compare-and-swap push through the git CLI, porcelain parsing
- :mod:`.lease`    the lease record and the pure take / renew / take-over decisions
- :mod:`.observe`  first-seen times of lease objects, kept across processes and boots
- :mod:`.leases`   :class:`LeaseKeeper`, the I/O side of the lease
- :mod:`.notes`    pause notes: publish, merge, probe claim, close, adopt
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Where each name lives: importing the package loads none of them, so a
# reader of ``remote.lease`` (``git sluice status``) never loads libgit2.
_HOMES = {
    "INTERNAL_ENV": "git", "LEASE_REFSPEC": "git", "LEGACY_REFSPEC": "git", "TRACKING_PREFIX": "git",
    "pause_refspec": "git", "sluice_refspecs": "git", "tracking_ref": "git", "CasUpdate": "git", "RefOutcome": "git",
    "RemoteGit": "git", "RemoteRefused": "git", "RemoteUnreachable": "git", "parse_porcelain": "git",
    "Decision": "lease", "LeaseRecord": "lease", "LeaseView": "lease", "Mark": "lease",
    "Observation": "lease", "decide": "lease", "lease_ref": "lease", "lease_view": "lease",
    "LeaseKeeper": "leases",
    "PauseNote": "notes", "PauseNotes": "notes", "PublishFailed": "notes", "merge": "notes", "pause_ref": "notes",
    "ObservationStore": "observe",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{home}", __name__), name)


__all__ = [
    "INTERNAL_ENV",
    "SLUICE_REFSPEC",
    "CasUpdate",
    "Decision",
    "LeaseKeeper",
    "LeaseRecord",
    "LeaseView",
    "Mark",
    "Observation",
    "ObservationStore",
    "PauseNote",
    "PauseNotes",
    "PublishFailed",
    "RefOutcome",
    "RemoteGit",
    "RemoteRefused",
    "RemoteUnreachable",
    "decide",
    "lease_ref",
    "lease_view",
    "merge",
    "pause_ref",
    "parse_porcelain",
]
