"""The only way to the git remote: lease refs and pause notes under ``refs/sluice/``.

- :mod:`.git`      fetch / compare-and-swap push through the git CLI, porcelain parsing
- :mod:`.lease`    the lease record and the pure take / renew / take-over decisions
- :mod:`.observe`  first-seen times of lease objects, kept across processes and boots
- :mod:`.leases`   :class:`LeaseKeeper`, the I/O side of the lease
- :mod:`.notes`    pause notes: publish, merge, probe claim, close, adopt
"""

from __future__ import annotations

from .git import (
    INTERNAL_ENV,
    LEASE_REFSPEC,
    LEGACY_REFSPEC,
    TRACKING_PREFIX,
    CasUpdate,
    RefOutcome,
    RemoteGit,
    RemoteRefused,
    RemoteUnreachable,
    parse_porcelain,
    pause_refspec,
    sluice_refspecs,
    tracking_ref,
)
from .lease import Decision, LeaseRecord, LeaseView, Mark, Observation, decide, lease_ref, lease_view
from .leases import LeaseKeeper
from .notes import PauseNote, PauseNotes, PublishFailed, merge, pause_ref
from .observe import ObservationStore

__all__ = [
    "INTERNAL_ENV",
    "LEASE_REFSPEC",
    "LEGACY_REFSPEC",
    "TRACKING_PREFIX",
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
    "pause_refspec",
    "sluice_refspecs",
    "tracking_ref",
]
