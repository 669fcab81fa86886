"""The only way to the git remote: lease refs, pause notes and surveys under ``refs/sluice/``.

- :mod:`.git`      fetch / compare-and-swap push through the git CLI, porcelain parsing
- :mod:`.lease_record`  the lease record and the pure take / renew / take-over decisions
- :mod:`.observe`  first-seen times of lease objects, kept across processes and boots
- :mod:`.lease_keeper`  :class:`LeaseKeeper`, the I/O side of the lease
- :mod:`.notes`    pause notes: publish, merge, probe claim, close, adopt
- :mod:`.surveys`  the lease holder's survey of a branch: a clone's look, reading one, pushing one
- :mod:`.looks`    when this host last fetched each clone's remote (one look per host per tick)
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Where each name lives: importing the package loads none of them, so a
# reader of ``remote.lease_record`` (``git sluice status``) never loads libgit2.
_HOMES = {
    "INTERNAL_ENV": "git", "LEASE_REFSPEC": "git", "LEGACY_REFSPEC": "git", "TRACKING_PREFIX": "git",
    "SURVEY_REFSPEC": "git", "tracking_refspecs": "git",
    "pause_refspec": "git", "sluice_refspecs": "git", "tracking_ref": "git", "CasUpdate": "git", "RefOutcome": "git",
    "RemoteGit": "git", "RemoteRefused": "git", "RemoteUnreachable": "git", "parse_porcelain": "git",
    "Decision": "lease_record", "LeaseRecord": "lease_record", "LeaseView": "lease_record", "Mark": "lease_record",
    "Observation": "lease_record", "decide": "lease_record", "lease_ref": "lease_record", "lease_view": "lease_record",
    "LeaseKeeper": "lease_keeper",
    "PauseNote": "notes", "PauseNotes": "notes", "PublishFailed": "notes", "merge": "notes", "pause_ref": "notes",
    "ObservationStore": "observe",
    "SurveyRemote": "surveys", "survey_ref": "surveys",
    "RemoteLooks": "looks", "look_key": "looks",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{home}", __name__), name)


__all__ = sorted(_HOMES)
"""Every name the package gives, each from its home: ``from git_sluice.remote import *`` imports them all."""
