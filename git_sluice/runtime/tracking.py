"""The rounds' own view of a branch, advanced from the user's remote-tracking ref after their git command.

A hook round runs after the user's ``git fetch`` or ``git push`` of a branch
taken in. Its rounds read the branch from ``refs/sluice/tracking/<remote>/<b>``
(git-sluice's own, written only by its fetch), and until issue 29 that meant a
fetch of its own, off the tick: at 24 hosts, 4 % more reads of the remote than
one per host and tick. The user's command has just brought the same revision
into ``refs/remotes/<remote>/<b>`` (and its objects into the clone), so the
round takes it from there and the host's look of this tick stands for the
rest (the leases and the pause notes).

Only forward: the user's ref is taken when it descends from what the rounds
saw (a remote-tracking ref behind ours is an older view, kept out). A branch
whose two views have diverged (a force push) asks for the round's own fetch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from enum import Enum

from ..remote.git import tracking_ref
from ..repo import Repo

log = logging.getLogger("git_sluice")


class Move(Enum):
    KEEP = "keep"
    ADVANCE = "advance"
    FETCH = "fetch"


def tracking_move(ours: str | None, theirs: str | None, descends: Callable[[str, str], bool]) -> Move:
    """What the rounds' view of a branch does with the user's: ``descends(a, b)`` is "a descends from b".

    Nothing to take (KEEP) when the user has no such ref or the same revision,
    or theirs is behind ours; ADVANCE when ours is missing or theirs is ahead;
    FETCH when they diverged (only the remote can say which is current).
    """
    if theirs is None or theirs == ours:
        return Move.KEEP
    if ours is None or descends(theirs, ours):
        return Move.ADVANCE
    if descends(ours, theirs):
        return Move.KEEP
    return Move.FETCH


def adopt_user_tracking(repo: Repo, remote: str, branches: Sequence[str]) -> bool:
    """Advance the rounds' view of ``branches`` to the user's remote-tracking refs where it is behind.

    False when a branch needs the round's own fetch (diverged views, or an
    object or ref that cannot be read): the caller then fetches, as before.
    """
    import pygit2

    def descends(a: str, b: str) -> bool:
        with repo.lock:
            return bool(repo.raw.descendant_of(pygit2.Oid(hex=a), pygit2.Oid(hex=b)))

    try:
        for branch in dict.fromkeys(branches):
            ours = repo.ref(tracking_ref(remote, branch))
            theirs = repo.ref(f"refs/remotes/{remote}/{branch}")
            move = tracking_move(ours, theirs, descends)
            if move is Move.FETCH:
                return False
            if move is Move.ADVANCE and theirs is not None:
                repo.set_ref(tracking_ref(remote, branch), theirs)
        return True
    except (pygit2.GitError, KeyError, ValueError, OSError) as exc:
        log.info("could not take the branch from the user's fetch (%s); the round fetches it", exc)
        return False
