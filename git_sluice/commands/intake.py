"""A step: one round per configured branch, then exit (``git sluice intake``; the hooks'
rounds go through :func:`git_sluice.commands.hook_round.hook_step`, which fetches less).

A step reads the lease and the pause notes in the fetch it makes anyway
(``refs/sluice/*`` plus the branch), never pushes a mark, and takes a branch in
only where no other host holds a live lease.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..errors import Interrupted, SluiceError
from ..runtime.rounds import branch_refspecs, intake_for
from ..runtime.session import Session, fetch_and_adopt
from ..runtime.watching import publish_surveys
from ..intake.round import RoundReport

log = logging.getLogger("git_sluice")


def unknown_branches(session: Session, branches: Sequence[str]) -> list[str]:
    """Of the branches asked for, those neither configured nor known on the remote (a typo, most likely)."""
    settings = session.settings
    return [
        b for b in branches
        if b not in settings.branches and session.repo.ref(f"refs/remotes/{settings.remote}/{b}") is None
    ]


def run_rounds(
    session: Session,
    branches: Sequence[str] | None = None,
    *,
    reason: str = "discovery",
    wait: bool = False,
    deadline: float | None = None,
    fetch: bool = True,
    pushed: frozenset[str] = frozenset(),
    share: float | None = None,
) -> list[RoundReport]:
    """One round per branch; the fetch of ``refs/sluice/*`` and the branches comes first.

    ``pushed``: request head branches a push from this clone just moved (a hook's word).
    ``share``: a look of this host's at the remote within that many seconds stands for the fetch."""
    chosen = list(branches or session.settings.branches)
    if fetch:
        fetch_and_adopt(session, *branch_refspecs(session, chosen), share=share)
    intake, _ = intake_for(session)
    reports = []
    offered = False
    for branch in chosen:
        report = intake.round(branch, reason=reason, wait=wait, deadline=deadline, pushed=pushed)
        reports.append(report)
        offer_again = reason == "intake" and report.outcome == "taken-in"
        if offer_again and intake.ticker is not None and intake.watch is not None:
            # as a driver offers again after its rounds: the heads this round queued as waiting get their
            # checks' baseline in the step that queued them, not as a 200 at the next one
            try:
                intake.ticker(branch)
                offered = True
            except Interrupted:
                raise
            except SluiceError as exc:
                log.warning("the host watch could not take the new heads' baselines (%s)", exc)
    if offered:  # as a driver does after its rounds: what this host took in, for the hosts that mirror it
        publish_surveys(session, list(dict.fromkeys([*session.settings.branches, *chosen])))
    return reports
