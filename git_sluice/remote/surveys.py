"""The fleet's surveys on the remote: ``refs/sluice/survey/<pool>/<base>``, one per pool and base.

Keyed by the pool, as the pause notes are: every host computes the same pool
id for the same allowance, whatever address it reaches GitHub by, and what a
pool's tokens may see of a repository is what its survey may say.

What a survey says and when a host takes it are decided in
:mod:`git_sluice.intake.survey` (pure). This module is the git side, for one
clone of the surveyed repository on this host:

- :meth:`SurveyRemote.look` — the host's one look at the remote this tick: a
  fetch of the clone's ``refs/sluice/*`` (leases, its pools' notes, the
  surveys) and of the branches its driver takes in, unless a process of this
  host fetched them a moment ago (:mod:`.looks`); the clone's drivers then
  take this look as theirs;
- :meth:`SurveyRemote.current` / :meth:`SurveyRemote.read` — the survey as the
  look brought it: a parentless commit whose tree holds one blob,
  ``survey.json``, read only up to the survey's size bound;
- :meth:`SurveyRemote.publish` — the new surveys of the bases this host holds,
  in one push, each by compare-and-swap against the one the look saw (a lost
  race means another host wrote there: its survey stands until the next tick).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..clock import Clock
from ..errors import SluiceError
from ..repo import Repo
from ..records import record
from .git import CasUpdate, RECORD_EMAIL, RECORD_NAME, RefOutcome, RemoteGit
from .looks import SHARE_WINDOW, RemoteLooks, look_key

log = logging.getLogger("git_sluice")

SURVEY_PREFIX = "refs/sluice/survey/"
BLOB_NAME = "survey.json"
MAX_BLOB = 16 * 1024 * 1024
"""The largest survey blob read at all (the decoder bounds what is inside)."""


RECORD_TIME = 0
"""A survey holds no time (its age is never read from it), so its commit carries none."""


@record(frozen=True)
class Publication:
    """What a survey push left standing (base -> object id), and how the lease renewals it carried fared."""

    stands: dict[str, str]
    riders: list[RefOutcome]


def survey_ref(pool: str, base: str) -> str:
    return f"{SURVEY_PREFIX}{pool}/{base}"


class SurveyRemote:
    """The surveys of one repository, through one of its clones on this host."""

    def __init__(
        self, common_dir: Path, remote: str, *, clock: Clock, looks: RemoteLooks,
        pools: Sequence[str] | None, refspecs: Sequence[str] = (),
    ) -> None:
        self.common_dir = Path(common_dir)
        self.repo = Repo(self.common_dir, None, self.common_dir)
        self.remote_name = remote
        pinned = list(pools) if pools is not None else None
        self.git = RemoteGit(self.repo, remote, clock=clock, pools=lambda: pinned)
        self.refspecs = [s for s in refspecs if isinstance(s, str)]
        self.looks = looks
        self.key = look_key(self.common_dir, remote)
        self.git.on_fetched(("looks", id(looks)),
                            lambda started: looks.noted(self.key, started, self.git.last_refspecs))

    def look(self) -> bool:
        """Bring the remote's refs this tick, or take a look begun a moment ago; False when it failed."""
        try:
            self.looks.share_or_fetch(self.key, self.needs(), SHARE_WINDOW,
                                     lambda riders: self.git.fetch(*self.refspecs, *riders))
            return True
        except (SluiceError, OSError) as exc:
            log.info("could not look at %s for the fleet's survey: %s", self.remote_name, exc)
            return False

    def needs(self) -> list[str]:
        """What this clone's look must bring: its ``refs/sluice/*`` and its driver's branches."""
        return [*self.git.sluice_refspecs(), *self.refspecs]

    def current(self, pool: str, base: str) -> str | None:
        """The survey of ``base`` by ``pool`` as last fetched (None when there is none)."""
        return self.repo.ref(survey_ref(pool, base))

    def read(self, oid: str) -> bytes | None:
        """The survey blob of commit ``oid``; None when it is not a survey-shaped object or too big."""
        import pygit2

        with self.repo.lock:
            try:
                commit = self.repo.raw.get(oid)
                if not isinstance(commit, pygit2.Commit):
                    return None
                tree = commit.tree
                if BLOB_NAME not in tree:
                    return None
                entry = tree[BLOB_NAME]
                blob = self.repo.raw.get(entry.id)
                if not isinstance(blob, pygit2.Blob) or blob.size > MAX_BLOB:
                    return None
                return bytes(blob.data)
            except (ValueError, KeyError, pygit2.GitError):
                return None

    def publish(self, pool: str, blobs: Mapping[str, bytes], *, expected: Mapping[str, str | None],
                repository: str, host: str, riders: Sequence[CasUpdate] = ()) -> Publication:
        """Write each base's survey blob and push them in one connection, each over what the look saw
        there; the bases whose survey now stands on the remote, with its object id.

        ``riders`` (the holder's lease renewals coming due) go in the same push when one goes at all,
        never alone: one push a tick per repository carries both. The commit's time is fixed
        (:data:`RECORD_TIME`), as a lease record's is: the same survey is the same object, never new
        garbage on the remote."""
        import pygit2

        made: dict[str, str] = {}
        with self.repo.lock:
            raw = self.repo.raw
            signature = pygit2.Signature(RECORD_NAME, RECORD_EMAIL, RECORD_TIME, 0)
            for base, blob in sorted(blobs.items()):
                builder = raw.TreeBuilder()
                builder.insert(BLOB_NAME, raw.create_blob(blob), pygit2.GIT_FILEMODE_BLOB)
                tree = builder.write()
                message = f"git-sluice survey of {repository} {base}\n\nHost: {host}\nSurvey-Version: 1\n"
                made[base] = str(raw.create_commit(None, signature, signature, message, tree, []))
        stands = {base: oid for base, oid in made.items() if oid == expected.get(base)}
        updates = [CasUpdate(survey_ref(pool, base), oid, expected.get(base))
                   for base, oid in sorted(made.items()) if base not in stands]
        if not updates:
            return Publication(stands, [])
        try:
            outcomes = self.git.push_cas([*updates, *riders])
        except (SluiceError, OSError) as exc:
            log.info("could not publish the survey of %s: %s", repository, exc)
            return Publication(stands, [])
        for update, outcome in zip(updates, outcomes):
            if outcome.won or outcome.up_to_date:
                stands[update.ref[len(survey_ref(pool, "")):]] = str(update.new)
            else:
                log.info("the survey %s was not pushed (%s)", update.ref, outcome.reason)
        return Publication(stands, list(outcomes[len(updates):]))
