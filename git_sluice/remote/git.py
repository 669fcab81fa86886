"""Every network operation on the git remote, through the user's own git CLI.

Why the CLI and not libgit2 (docs/design.md#pitfalls-it-is-built-around): only git's ``push --force-with-lease``
gives a compare-and-swap that the *receiving* side checks under its ref lock,
and only the CLI honours the user's credential helpers and ssh config.

Outcomes are read from ``--porcelain`` per ref, never from the exit status
alone: an "up to date" push exits 0 even when the expectation was "absent"
(docs/protocols.md#talking-to-the-remote-remotegitpy), and a push that loses a race must be told apart from a remote
that cannot be reached, because the first means "read again" and the second
means "assume nothing".
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence

from ..clock import Clock, default_clock
from ..errors import RemoteRefused as RemoteRefused, RemoteUnreachable as RemoteUnreachable
from ..gitcli import INTERNAL_ENV, GitFailed, scrub
from ..records import record
from ..repo import Repo

LEGACY_REFSPEC = "+refs/sluice/*:refs/sluice/*"
"""What older ``setup`` added to the remote's fetch refspecs: every person's fetch brought
every mark and note. ``setup`` now removes it (issue #14, point 13); only rounds fetch them."""

LEASE_REFSPEC = "+refs/sluice/intake/*:refs/sluice/intake/*"
"""The leases of this repository's branches (one ref per branch: bounded by the branches)."""

SURVEY_REFSPEC = "+refs/sluice/survey/*:refs/sluice/survey/*"
"""The fleet's surveys of this repository (one ref per watch group: bounded by the pools)."""

TRACKING_PREFIX = "refs/sluice/tracking/"
"""Where a round's fetch puts the branches it takes in: never a ref the user's git writes.

A round that fetched into ``refs/remotes/<remote>/*`` raced the user's own
``git fetch`` for the same ref locks ("cannot lock ref"), and took the news of
that fetch away from them (issue #14, point 8). The remote has no such refs,
so nothing of it is ever pruned here by a round's fetch.
"""


def pause_refspec(pool: str | None) -> str:
    """The pause notes of one pool; ``None`` (the pool not known yet) means every pool's."""
    if pool is None:
        return "+refs/sluice/pause/*:refs/sluice/pause/*"
    return f"+refs/sluice/pause/{pool}/*:refs/sluice/pause/{pool}/*"


def tracking_ref(remote: str, branch: str) -> str:
    return f"{TRACKING_PREFIX}{remote}/{branch}"


def tracking_refspecs(remote: str, branches: Sequence[str]) -> list[str]:
    """The branches into git-sluice's own namespace, never ``refs/remotes/*`` (the user's)."""
    return [f"+refs/heads/{b}:{tracking_ref(remote, b)}" for b in branches]


def sluice_refspecs(pools: Sequence[str] | None) -> list[str]:
    """What a round fetches of ``refs/sluice/*``: the leases and this clone's pools' notes.

    Other teams' pools sharing the remote are never fetched (issue #14, point
    9): the cost of a round does not grow with refs that do not concern it.
    """
    specs = [LEASE_REFSPEC, SURVEY_REFSPEC]
    if pools is None:
        specs.append(pause_refspec(None))
    else:
        specs.extend(pause_refspec(pool) for pool in dict.fromkeys(pools))
    return specs

RECORD_NAME = "git-sluice"
RECORD_EMAIL = "sluice@localhost"

_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_WON_FLAGS = frozenset(" +*-")
_RACE_MARKERS = (
    "stale info",  # our client saw a different value than we expected
    "cannot lock ref",  # the receiving side's ref lock or old-value check failed
    "failed to update ref",  # git < 2.45 reports the lock failure above only this way
    "fetch first",
    "already exists",
    "incorrect old value",  # other servers' words for the same check
    "lock error",
)
_UNKNOWN_MARKERS = ("remote failure", "failed to report status", "no report")
_PORCELAIN_LINE = re.compile(r"^([ +\-*!=])\t([^\t]*)\t(.*)$")
_LOCAL_CONTENTION = (
    "cannot lock ref",
    "unable to create",
    ".lock': file exists",
    "unable to update local ref",
    "some local refs could not be updated",
)




@record(frozen=True)
class CasUpdate:
    """Move ``ref`` to ``new`` only if the remote holds ``expected``.

    ``new`` None deletes; ``expected`` None means the ref must be absent.
    """

    ref: str
    new: str | None
    expected: str | None


@record(frozen=True)
class RefOutcome:
    """What the remote said about one ref of a push (one ``--porcelain`` line)."""

    ref: str
    flag: str
    summary: str
    reason: str

    @property
    def won(self) -> bool:
        """Updated, forced, created or deleted as asked."""
        return self.flag in _WON_FLAGS

    @property
    def up_to_date(self) -> bool:
        return self.flag == "="

    @property
    def unknown(self) -> bool:
        """The remote may or may not have applied it (it failed to report): read again."""
        if self.flag == "?":
            return True
        text = f"{self.summary} {self.reason}".lower()
        return self.flag == "!" and any(marker in text for marker in _UNKNOWN_MARKERS)

    @property
    def lost_race(self) -> bool:
        """Another writer moved the ref first: read again, never retry blindly.

        "Up to date" counts here: :meth:`RemoteGit.push_cas` never sends an
        update whose new value equals its expected one, so ``=`` means the remote
        already held our object *without our expectation having been checked*
        (git skips the lease for a ref it need not move). Only a re-read tells
        whose it is.
        """
        if self.flag == "=":
            return True
        if self.flag != "!" or self.unknown:
            return False
        text = f"{self.summary} {self.reason}".lower()
        return any(marker in text for marker in _RACE_MARKERS)

    @property
    def refused(self) -> bool:
        """Rejected for a reason that no re-read can change (hook, protection, policy)."""
        return self.flag == "!" and not self.lost_race and not self.unknown


def parse_porcelain(stdout: str) -> list[RefOutcome]:
    """Read ``git push --porcelain`` output: ``<flag>\\t<from>:<to>\\t<summary> (<reason>)``.

    Lines must not be stripped: the flag of a fast-forward is a space.
    """
    outcomes: list[RefOutcome] = []
    for line in stdout.splitlines():
        match = _PORCELAIN_LINE.match(line)
        if match is None:
            continue
        flag, spec, rest = match.groups()
        _, _, ref = spec.rpartition(":")
        summary, reason = rest, ""
        if rest.endswith(")") and " (" in rest:
            summary, _, reason = rest.partition(" (")
            reason = reason[:-1]
        outcomes.append(RefOutcome(ref=ref, flag=flag, summary=summary.strip(), reason=reason.strip()))
    return outcomes


def _remote_lock_detail(stderr: str, ref: str) -> str:
    """git < 2.45 prints the real reason of a failed ref update only on stderr."""
    needle = f"'{ref}'"
    for line in stderr.splitlines():
        if needle in line and "lock" in line:
            text = line.strip()
            if text.startswith("remote:"):
                text = text[len("remote:") :].strip()
            if text.startswith("error:"):
                text = text[len("error:") :].strip()
            return text
    return ""


class RemoteGit:
    """The git remote that holds ``refs/sluice/*``, reached only through the git CLI."""

    def __init__(
        self,
        repo: Repo,
        remote: str = "origin",
        *,
        clock: Clock | None = None,
        timeout: float = 120.0,
        pools: Callable[[], Sequence[str] | None] | None = None,
    ) -> None:
        self.repo = repo
        self.remote = remote
        # which pools' notes concern this clone; None (or it answering None): all of them
        self.pools = pools
        # Records carry this clock's time, so tests with fake time get distinct records.
        self.clock = clock if clock is not None else default_clock()
        self.timeout = timeout
        # told the monotonic start of every successful fetch (the observation stores: a mark
        # is known unchanged only as far as a fetch that succeeded, issue #14 point 11)
        self._on_fetched: dict[object, Callable[[float], None]] = {}
        self.last_refspecs: tuple[str, ...] = ()
        """What the last successful fetch of this process brought (its listeners may record it)."""

    def on_fetched(self, key: object, listener: Callable[[float], None]) -> None:
        """Call ``listener(started)`` after every successful fetch; one listener per ``key``."""
        self._on_fetched[key] = listener

    def fetched_elsewhere(self, started: float) -> None:
        """Another process of this host fetched these refs into this clone, starting at ``started``
        (monotonic): its look is this process's own (:mod:`.looks`), so the listeners hear of it."""
        for listener in list(self._on_fetched.values()):
            listener(started)

    # --- running git ---------------------------------------------------------

    def _run_network(
        self, operation: str, args: list[str], *, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {INTERNAL_ENV: "1", "GIT_TERMINAL_PROMPT": "0"}
        limit = self.timeout if timeout is None else timeout
        try:
            return self.repo.git("-c", "core.hooksPath=/dev/null", *args, check=False, env=env, timeout=limit)
        except subprocess.TimeoutExpired as exc:
            raise RemoteUnreachable(self.remote, operation, f"no answer within {limit:g} s") from exc
        except OSError as exc:
            raise RemoteUnreachable(self.remote, operation, f"cannot run git: {exc}") from exc

    @staticmethod
    def _last_words(stderr: str) -> str:
        lines = [line.strip() for line in scrub(stderr).splitlines() if line.strip()]
        fatal = [line for line in lines if line.lower().startswith(("fatal:", "error:"))]
        chosen = fatal[:2] if fatal else lines[-2:]
        return "; ".join(chosen)

    # --- fetch ---------------------------------------------------------------

    def sluice_refspecs(self) -> list[str]:
        pools: Sequence[str] | None = None
        if self.pools is not None:
            try:
                pools = self.pools()
            except Exception:  # an unknown pool only costs a wider fetch
                pools = None
        return sluice_refspecs(pools)

    def fetch(self, *extra_refspecs: str) -> None:
        """Bring the leases and this clone's pause notes (pruned: a lease deleted there
        disappears here) and extras, each by an explicit refspec of its own.

        Never the remote's fetch refspecs (``--refmap=``): a round's fetch writes
        no ref the user's own ``git fetch`` writes.

        Local ref-lock contention with another process of this clone fetching at
        the same moment is retried a few times; anything else is the remote's fault.
        """
        args = [
            "fetch",
            "--quiet",
            "--no-tags",
            "--prune",
            "--no-write-fetch-head",
            "--no-auto-gc",
            "--no-recurse-submodules",
            "--refmap=",
            self.remote,
            *dict.fromkeys([*self.sluice_refspecs(), *extra_refspecs]),  # each once, whoever asked
        ]
        attempts = 4
        for attempt in range(1, attempts + 1):
            started = self.clock.monotonic()
            proc = self._run_network("fetch from", args)
            if proc.returncode == 0:
                self.last_refspecs = tuple(a for a in args if a.startswith("+"))
                for listener in list(self._on_fetched.values()):
                    listener(started)
                return
            said = proc.stderr.lower()
            local = any(marker in said for marker in _LOCAL_CONTENTION)
            if not local:
                raise RemoteUnreachable(self.remote, "fetch from", self._last_words(proc.stderr))
            if attempt == attempts:
                raise GitFailed(("fetch", self.remote), proc.returncode, scrub(proc.stderr))
            self.clock.sleep(0.02 * attempt)

    def list_remote(self, pattern: str, *, timeout: float = 5.0) -> dict[str, str]:
        """``git ls-remote --refs`` of one pattern: the remote's refs there, without fetching them.

        The cheap look between fetches at whether the pause notes moved (issue #14,
        point 14); its short ``timeout`` keeps a remote out of reach from delaying
        the call it precedes by more than that.
        """
        proc = self._run_network("list refs of", ["ls-remote", "--refs", self.remote, pattern], timeout=timeout)
        if proc.returncode != 0:
            raise RemoteUnreachable(self.remote, "list refs of", self._last_words(proc.stderr))
        found: dict[str, str] = {}
        for line in proc.stdout.splitlines():
            oid, _, ref = line.partition("\t")
            if ref and _OID.fullmatch(oid):
                found[ref] = oid
        return found

    # --- compare-and-swap push ----------------------------------------------

    def push_cas(self, updates: Sequence[CasUpdate]) -> list[RefOutcome]:
        """Push every update in ONE connection, each ref under its own lease.

        Not ``--atomic``: each ref is its own lease, and one lost race must not
        undo a host's renewal of its other branches. Never ``--force`` or a ``+``
        refspec, which would switch the lease off. Returns one outcome per update,
        in order; a ref git said nothing about comes back with flag ``?``.
        Won refs under ``refs/sluice/`` are mirrored locally at once.
        """
        if not updates:
            return []
        seen: set[str] = set()
        for update in updates:
            if not update.ref.startswith("refs/"):
                raise ValueError(f"not a full ref name: {update.ref}")
            if update.ref in seen:
                raise ValueError(f"two updates of {update.ref} in one push")
            seen.add(update.ref)
            if update.new == update.expected:
                # git would answer "up to date" without checking the lease at all.
                raise ValueError(f"update of {update.ref} changes nothing; it would prove nothing")
        args = ["push", "--porcelain", "--no-verify", "--no-recurse-submodules"]
        for update in updates:
            args.append(f"--force-with-lease={update.ref}:{update.expected or ''}")
        args.append(self.remote)
        for update in updates:
            args.append(f"{update.new}:{update.ref}" if update.new else f":{update.ref}")
        proc = self._run_network("push to", args)
        reported = {o.ref: o for o in parse_porcelain(proc.stdout)}
        if not reported and proc.returncode != 0:
            raise RemoteUnreachable(self.remote, "push to", self._last_words(proc.stderr))
        outcomes: list[RefOutcome] = []
        for update in updates:
            outcome = reported.get(update.ref)
            if outcome is None:
                outcome = RefOutcome(update.ref, "?", "[no report]", "git reported nothing for this ref")
            elif outcome.flag == "!" and outcome.reason == "failed to update ref":
                detail = _remote_lock_detail(proc.stderr, update.ref)
                if detail:
                    outcome = RefOutcome(outcome.ref, outcome.flag, outcome.summary, f"{outcome.reason}: {detail}")
            outcomes.append(outcome)
            if (outcome.won or outcome.up_to_date) and update.ref.startswith("refs/sluice/"):
                # "=" too: the remote demonstrably holds `new`, whoever put it there.
                self._mirror(update.ref, update.new)
        return outcomes

    def _mirror(self, ref: str, oid: str | None) -> None:
        """Best effort: a fetch in flight may hold the lock; the next fetch corrects the mirror."""
        import pygit2

        for _ in range(3):
            try:
                self.repo.set_ref(ref, oid)
                return
            except pygit2.GitError:
                self.clock.sleep(0.01)

    # --- records -------------------------------------------------------------

    def write_record(self, message: str, *, when: int | None = None) -> str:
        """A parentless commit on the empty tree: a record ``git log -1`` can read.

        ``when`` fixes the commit time (lease records: the same record is then the
        same object, never new garbage); by default this clock's time.
        """
        import pygit2

        when = int(self.clock.time()) if when is None else int(when)
        signature = pygit2.Signature(RECORD_NAME, RECORD_EMAIL, when, 0)
        with self.repo.lock:
            raw = self.repo.raw
            tree = raw.TreeBuilder().write()
            oid = raw.create_commit(None, signature, signature, message, tree, [])
        return str(oid)

    def read_message(self, oid: str) -> str | None:
        """The commit message of ``oid``; None for a missing object or a non-commit."""
        import pygit2

        with self.repo.lock:
            try:
                obj = self.repo.raw.get(oid)
            except (ValueError, pygit2.GitError, KeyError):
                return None
            if isinstance(obj, pygit2.Commit):
                return obj.message
        return None
