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
  look brought it: a commit whose tree holds its head, ``survey.json``, and
  its shards (:data:`SHARDS` at most), read only up to the survey's size
  bound (its parent, when it has one, is its holder's survey before it:
  :func:`chain_parent`);
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

# The shape of a survey's tree. What each blob says, and how requests and heads are spread over the
# shards, is :mod:`git_sluice.intake.survey`'s.
HEAD_NAME = "survey.json"
"""The survey's head in its commit's tree: whose survey of what, and the names of its shards."""
SHARDS = 64
"""A base's requests, readings and heads are spread over this many shards, each a blob of its own:
a tick where five requests moved re-encodes and pushes the few shards that hold them, not the whole
list (issue 29: one 4 MB blob at 5,000 requests was the largest part of a changed round's CPU, ours
and git's)."""
MAX_BYTES = 16 * 1024 * 1024
"""A survey's blobs together, at most (5,000 requests with their readings are about 4 MB)."""

SurveyFiles = dict[str, bytes]
"""A survey as its commit's tree holds it: blob name -> content (:data:`HEAD_NAME` and the shards)."""


@record(frozen=True)
class KeptBlob:
    """A shard a survey to publish shares with the survey before it: that one's blob, by object id."""

    oid: str


def shard_name(k: int) -> str:
    return f"shard-{k:02d}.json"


SHARD_NAMES = frozenset(shard_name(k) for k in range(SHARDS))


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

    def read(self, oid: str) -> SurveyFiles | None:
        """The survey blobs of commit ``oid`` by name; None when it is not a survey-shaped object or is
        larger than a survey may be (nothing past the bound is read)."""
        import pygit2

        with self.repo.lock:
            try:
                commit = self.repo.raw.get(oid)
                if not isinstance(commit, pygit2.Commit):
                    return None
                tree = commit.tree
                if HEAD_NAME not in tree or len(tree) > SHARDS + 1:
                    return None
                out: SurveyFiles = {}
                total = 0
                for entry in tree:
                    if entry.name != HEAD_NAME and entry.name not in SHARD_NAMES:
                        return None
                    blob = self.repo.raw.get(entry.id)
                    if not isinstance(blob, pygit2.Blob):
                        return None
                    total += blob.size
                    if total > MAX_BYTES:
                        return None
                    out[entry.name] = bytes(blob.data)
                return out
            except (ValueError, KeyError, pygit2.GitError):
                return None

    def blob_ids(self, oid: str) -> dict[str, str]:
        """The survey blobs' object ids in commit ``oid``'s tree by name (none when it is not a commit)."""
        import pygit2

        with self.repo.lock:
            try:
                commit = self.repo.raw.get(oid)
                if not isinstance(commit, pygit2.Commit):
                    return {}
                return {e.name: str(e.id) for e in commit.tree if e.name == HEAD_NAME or e.name in SHARD_NAMES}
            except (ValueError, KeyError, pygit2.GitError):
                return {}

    def publish(self, pool: str, surveys: Mapping[str, Mapping[str, bytes | KeptBlob]], *,
                expected: Mapping[str, str | None], repository: str, host: str,
                own: Mapping[str, str] | None = None, riders: Sequence[CasUpdate] = ()) -> Publication:
        """Write each base's survey and push them in one connection, each over what the look saw there;
        the bases whose survey now stands on the remote, with its object id.

        A survey whose tree is the one on the remote stands as it is. Where the
        remote holds this host's own last survey (``own``: base -> the commit it
        last pushed), the new one is that one's child (:func:`chain_parent`): git
        sends a commit's objects less those of its parents, never less those of
        an unrelated commit, so the push carries the new tree and the shards
        that moved, no more — and a mirror's fetch of it brings no more either.

        ``riders`` (the holder's lease renewals coming due) go in the same push when one goes at all,
        never alone: one push a tick per repository carries both. The commit's time is fixed
        (:data:`RECORD_TIME`), as a lease record's is: the same survey on the same parent is the same
        object, never new garbage on the remote."""
        import pygit2

        made: dict[str, str] = {}
        stands: dict[str, str] = {}
        with self.repo.lock:
            raw = self.repo.raw
            signature = pygit2.Signature(RECORD_NAME, RECORD_EMAIL, RECORD_TIME, 0)
            for base, files in sorted(surveys.items()):
                builder = raw.TreeBuilder()
                for name, blob in sorted(files.items()):
                    oid = raw.create_blob(blob) if isinstance(blob, bytes) else pygit2.Oid(hex=blob.oid)
                    builder.insert(name, oid, pygit2.GIT_FILEMODE_BLOB)
                tree = builder.write()
                now = expected.get(base)
                if now is not None and self._tree_of(now) == str(tree):
                    stands[base] = now  # the remote holds this very survey
                    continue
                parent = chain_parent((own or {}).get(base), now, self._depth(now))
                message = f"git-sluice survey of {repository} {base}\n\nHost: {host}\n"
                made[base] = str(raw.create_commit(None, signature, signature, message, tree,
                                                   [] if parent is None else [pygit2.Oid(hex=parent)]))
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

    def _tree_of(self, oid: str) -> str | None:
        import pygit2

        try:
            commit = self.repo.raw.get(oid)
        except (ValueError, pygit2.GitError):
            return None
        return str(commit.tree_id) if isinstance(commit, pygit2.Commit) else None

    def _depth(self, oid: str | None) -> int:
        """How many survey commits stand in ``oid``'s first-parent line, itself included (counted no
        further than :data:`MAX_CHAIN`)."""
        import pygit2

        depth = 0
        while oid is not None and depth < MAX_CHAIN:
            try:
                commit = self.repo.raw.get(oid)
            except (ValueError, pygit2.GitError):
                break
            if not isinstance(commit, pygit2.Commit):
                break
            depth += 1
            oid = str(commit.parent_ids[0]) if commit.parent_ids else None
        return depth


MAX_CHAIN = 32
"""A survey's line of commits is at most this long: each keeps the shards that moved in its tick
reachable on the remote, so every 32nd survey starts a line afresh (pushed whole) and the rest
become garbage for the remote's gc."""


def chain_parent(own: str | None, remote: str | None, depth: int) -> str | None:
    """The parent of a holder's new survey commit: the survey on the remote when it is the holder's own
    last one and its line is not yet :data:`MAX_CHAIN` long; otherwise none.

    Never a commit someone else wrote: a forged survey (or one an earlier
    holder left) is replaced by a survey of the holder's own with no history,
    so nothing a pusher wrote stays reachable through the holder's push.
    """
    if own is None or remote is None or own != remote or depth >= MAX_CHAIN:
        return None
    return remote
