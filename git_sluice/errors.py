"""Every error git-sluice raises on purpose, in families a caller can catch.

As httpx keeps its exceptions in one module, so does git-sluice: a caller
catches a family (``ForgeError`` for anything about GitHub, ``RemoteError``
for the git remote, ``StateError`` for this host's files) or one member, and
every message says what happened and what a person can do about it.

::

    SluiceError                     exit 1 unless the class says otherwise
    ├── ConfigError                 2  a setting is missing or malformed (names key and form)
    │   ├── UnknownKey              2  a sluice.* key git-sluice does not know: "did you mean …?"
    │   ├── NoRemote                2  the clone has no git remote (`git remote add`)
    │   └── ProxySetting            2  a *_proxy variable git-sluice cannot use (its password never shown)
    ├── NoCredentials               2  no token anywhere git-sluice looks
    ├── AppAuthError                2  the GitHub App could not sign in
    ├── SetupRefused                2  setup will not touch what it could not put back
    ├── UsageError                  2  the command was called wrongly
    │   ├── NotARepository          2  started outside a git repository
    │   ├── UnknownBranch           2  -b names a branch neither configured nor on the remote
    │   └── AlreadyDriving          2  a second driver in one clone
    ├── ForgeError                     GitHub could not give an answer to use
    │   ├── ForgeUnavailable           the address failed; not asked again until ``until`` (DNS, TLS: told, not kept)
    │   ├── ForgeAnswered              GitHub answered with an error (404, 422, a permission 403)
    │   │   └── CredentialsRefused  2  401: the token or the App is not accepted (names where it came from)
    │   ├── AllowanceSpent          3  the allowance of (pool, resource) is spent until ``until``
    │   ├── ForeignURL                 a URL outside sluice.api / sluice.graphql: no token goes there
    │   ├── CallTimedOut            4  the caller's own deadline ran out (before the wire, or before the answer)
    │   ├── AnswerFailed               (inside the road) a 5xx or unparsable body, for failure memory
    │   └── MalformedNode              (inside a reading) a field a pull request's reading needs is absent
    ├── RemoteError                    the git remote (``refs/sluice/*``)
    │   ├── RemoteUnreachable          could not talk to it; nothing is known about the refs
    │   ├── LeaseLapsed                this host's own lease ran out in the middle of a round
    │   ├── RemoteRefused              it refused a ref by its own rule (not a race)
    │   ├── PublishFailed              a pause note kept losing races
    │   └── SurveyRejected             a survey blob this host does not take (also a ValueError)
    ├── StateError                     this host's or clone's state files
    │   ├── HostStoreError             the host's SQLite store cannot be used
    │   ├── HostStoreCorrupt           (inside the store) the file is not a usable database: moved aside
    │   ├── StateFileBusy              a state file's lock is held far longer than a save takes
    │   └── LockTimeout                (inside statefile) a FileLock stayed taken for its timeout
    ├── RepoError                      the local repository or git itself
    │   ├── ReftableUnsupported        reftable ref storage (libgit2 cannot read it)
    │   └── GitFailed                  a local git command failed
    ├── TimedOut                    4  a ``wait`` reached no outcome in time
    └── Interrupted               130  the process was asked to stop during a call
        └── CallCancelled         130  … with a call on the wire: its answer not waited for, nothing held against GitHub

Every exception class of the product (outside the GitHub double) is defined
here, so one ``except SluiceError`` sees them all; the modules that raise one
re-export it under its old name (tests/test_errors_hierarchy.py holds this).
The ones marked "inside" never reach a person: a layer raises them for the
layer above to turn into one of the others. This module imports nothing of
the package (it is the bottom layer) and nothing heavier than the standard
library's basics: the light commands import it.

Exit codes (docs/reference.md): 0 done; 1 failed; 2 usage or configuration;
3 allowance spent (the message names when it ends); 4 timed out.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from pathlib import Path


class SluiceError(Exception):
    """Base of every error git-sluice raises on purpose; ``exit_code`` is the CLI's."""

    exit_code = 1


def local_time(epoch: float) -> str:
    """A pause end as a person reads it: local wall time, with the date if not today.

    Any number may reach here from a hostile record (1e300, NaN, the year
    10000): what no calendar can show is said in words, never raised.
    """
    try:
        when = _dt.datetime.fromtimestamp(epoch).astimezone()
    except (OverflowError, ValueError, OSError, TypeError):
        return "an impossible time (not a date)"
    today = _dt.datetime.now().astimezone().date()
    if when.date() == today:
        return when.strftime("%H:%M:%S %Z").strip()
    return when.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


# ------------------------------------------------------------- configuration and usage


class ConfigError(SluiceError):
    """A configuration value is missing or malformed; names the key and the accepted form."""

    exit_code = 2

    def __init__(self, key: str, value: object, accepted: str) -> None:
        self.key = key
        self.value = value
        self.accepted = accepted
        super().__init__(f"{key}={value!s}: expected {accepted}")


class UnknownKey(ConfigError):
    """A ``sluice.*`` key git-sluice does not know (a typo, most likely): the nearest known one, and how to remove it.

    The value is never echoed: an unknown key is where a pasted token would land.
    """

    def __init__(self, key: str, known: "tuple[str, ...]", origin: str = "") -> None:
        import difflib

        self.suggestion = next(iter(difflib.get_close_matches(key.lower(), [k.lower() for k in known], n=1, cutoff=0.6)), None)
        if self.suggestion is not None:
            self.suggestion = next(k for k in known if k.lower() == self.suggestion)
        scope = origin.split(" ", 1)[0] if origin else ""
        flag = {"global": "--global ", "system": "--system ", "worktree": "--worktree "}.get(scope, "")
        self.unset = f"git config {flag}--unset {key}"
        by_command = origin.startswith("the command line")  # nothing to unset: the command itself sets it
        if by_command:
            self.unset = f"drop `-c {key}=…` from the command (or from GIT_CONFIG_PARAMETERS)"
        self.key, self.value = key, "(value not shown)"
        self.accepted = "one of the known keys: " + ", ".join(known)
        hint = f"did you mean `{self.suggestion}`? " if self.suggestion else ""
        where = f" (set {'on' if by_command else 'in'} {origin})" if origin else ""
        how = self.unset if by_command else f"remove it with `{self.unset}`"
        SluiceError.__init__(
            self, f"{key} is not a git-sluice setting{where}: {hint}{how} "
            f"(known keys: {', '.join(known)})"
        )


class NoRemote(ConfigError):
    """The clone has no git remote at all: the refs that coordinate the fleet need one."""

    def __init__(self) -> None:
        self.key, self.value = "sluice.remote", "origin"
        self.accepted = "a configured git remote"
        SluiceError.__init__(
            self, "this clone has no git remote: add the one the team shares (`git remote add origin URL`); "
            "git-sluice keeps its leases and pause notes there"
        )


class ProxySetting(ConfigError):
    """A ``*_proxy`` variable git-sluice cannot use; ``shown`` is its value with any password removed.

    The raiser (forge/proxies.py) redacts: this module knows no URL syntax,
    and a password must never reach a message.
    """

    ACCEPTED = "a proxy URL of the form http://host:port or https://host:port (user:password@ allowed)"

    def __init__(self, name: str, shown: str, why: str) -> None:
        self.key, self.value, self.accepted = name, shown, self.ACCEPTED
        SluiceError.__init__(self, f"{name}={shown}: {why}; expected {self.ACCEPTED}, or unset {name}")


class NoCredentials(SluiceError):
    """No token could be found anywhere git-sluice looks."""

    exit_code = 2


class AppAuthError(SluiceError):
    """The GitHub App could not be authenticated (key unreadable, exchange refused)."""

    exit_code = 2


class SetupRefused(SluiceError):
    """Setup will not touch something it could not put back, or that would not work."""

    exit_code = 2


class UsageError(SluiceError):
    exit_code = 2


class NotARepository(UsageError):
    """git-sluice was started outside any git repository (a usage error: exit 2)."""

    exit_code = 2

    def __init__(self, path: "os.PathLike[str] | str", detail: str = "") -> None:
        self.path = Path(path)
        extra = f" ({detail})" if detail else ""
        super().__init__(f"{path} is not inside a git repository{extra}: run git sluice from a clone")


class UnknownBranch(UsageError):
    """Branches asked for by ``-b`` that are nowhere the command looked (a typo, most likely).

    ``looked`` says where that was (each command looks in its own places: the
    queue also counts a branch ever taken in); ``detail`` is the message
    without the option's name, for click's own "Invalid value for -b/--branch".
    """

    def __init__(self, branches: Sequence[str], remote: str,
                 looked: str = "not in sluice.branch, not fetched, never taken in") -> None:
        self.branches, self.remote = list(branches), remote
        self.detail = f"{', '.join(branches)}: no such branch on {remote}"
        super().__init__(f"-b/--branch {self.detail} ({looked})")


class AlreadyDriving(UsageError):
    """Another driver runs in this clone (exit 2): two would release each other's lease."""

    def __init__(self, pid: int | None, path: Path) -> None:
        self.pid = pid
        who = f"pid {pid}" if pid is not None else "another process"
        super().__init__(
            f"a driver already runs in this clone ({who}, {path}): one driver per clone; "
            "stop it first, or let it drive every branch (sluice.branch, -b)"
        )


# ------------------------------------------------------------------------- GitHub


class ServeRefused(UsageError):
    """``git sluice serve`` cannot listen where it was asked to (a socket in use, a path that is not a
    socket, a port taken, an address that is not loopback)."""


class ForgeError(SluiceError):
    """GitHub could not give this call an answer to use; every GitHub problem is one of these."""


class ForgeUnavailable(ForgeError):
    """GitHub did not answer usefully at an address; it is not asked again until ``until``."""

    def __init__(self, address: str, until: float, reason: str, *, kind: str = "remembered",
                 remembered: bool = True) -> None:
        self.address = address
        self.until = until
        self.reason = reason
        self.kind = kind
        """dns, tls, refused, timeout, dropped, connect, answer (a 5xx or unparsable body) or remembered."""
        self.remembered = remembered
        if not remembered:  # this machine's set-up (DNS, TLS trust): the next call tries again at once
            super().__init__(f"GitHub unreachable for {address}: {reason} "
                             "(not remembered as failing: the next call tries again)")
            return
        super().__init__(
            f"GitHub unavailable for {address}: {reason}; not asked again before {local_time(until)} "
            "(git-sluice retries by itself then; if it keeps failing, check sluice.api and GitHub's status)"
        )


class ForgeAnswered(ForgeError):
    """GitHub answered with an error that is not a throttle (404, 422, a permission 403, …)."""

    def __init__(self, status: int, address: str, message: str) -> None:
        self.status = status
        self.address = address
        self.message = message
        super().__init__(self._describe())

    def _describe(self) -> str:
        return f"GitHub answered {self.status} for {self.address}: {self.message}"


class CredentialsRefused(ForgeAnswered):
    """401: the credentials are wrong, not the call; asking again cannot help (exit 2, like bad config).

    ``source`` says where the token came from (``GH_TOKEN``, ``git credential
    (github.com)``, ``gh auth token``, the App), so the message says what to fix.
    """

    exit_code = 2

    def __init__(self, status: int, address: str, message: str, source: str | None = None) -> None:
        self.source = source
        super().__init__(status, address, message)

    def _describe(self) -> str:
        said = f"{self.status} {self.message}".strip() if self.message and self.message != "error" else str(self.status)
        if self.source is None:
            where = "the token (GH_TOKEN, GITHUB_TOKEN, `git credential`, `gh auth token`) or the App's key and installation"
        elif self.source.startswith("GitHub App"):
            where = f"the {self.source} (sluice.appId, sluice.appKeyFile, sluice.installation)"
        else:
            where = f"the token from {self.source}: it is invalid, expired or revoked; replace it"
        return f"GitHub refused the credentials ({said}); check {where} (`git sluice doctor` checks them)"


class AllowanceSpent(ForgeError):
    """GitHub's allowance for (pool, resource) is spent; no call is made until ``until``."""

    exit_code = 3

    def __init__(self, pool: str, resource: str, until: float, reason: str = "") -> None:
        self.pool = pool
        self.resource = resource
        self.until = until
        self.reason = reason
        extra = f" ({reason})" if reason else ""
        super().__init__(
            f"GitHub allowance for {resource} (pool {pool}) is spent: "
            f"no call until {local_time(until)}{extra}"
        )


class WriteDeferred(ForgeError):
    """A write whose slot (GitHub's pace for writes, or the pool's admission) is beyond the caller's patience.

    Nothing was sent; ``until`` is when the slot comes (this host's clock).
    """

    exit_code = 3

    def __init__(self, pool: str, until: float, wait: float) -> None:
        self.pool = pool
        self.until = until
        self.wait = wait
        super().__init__(
            f"this write would go at {local_time(until)} (in {wait:.0f} s), past its patience "
            f"(sluice.writePatience): GitHub's pace for writes of pool {pool} (1 s apart, 80 a minute, "
            "500 an hour of content-creating ones) or the pool's admission (sluice.writeRate); not sent"
        )


class ForeignURL(ForgeError):
    """A full URL outside the configured endpoints: the token is never sent there."""

    def __init__(self, url: str, allowed: str) -> None:
        self.url = url
        super().__init__(
            f"{url} is not under the configured API ({allowed}); git-sluice sends its token only to "
            "sluice.api and sluice.graphql (same scheme, host and port): pass a path such as repos/o/r"
        )


class PathOutsideAPI(ForeignURL, UsageError):
    """A path with ``.`` or ``..`` segments, even percent-encoded (``%2e%2e``): refused before any call (exit 2).

    A ForeignURL too (the token is not sent there), but the caller's mistake:
    nothing was asked of GitHub, so nothing is remembered against it.
    """

    exit_code = 2

    def __init__(self, path: str, api: str) -> None:
        self.url = path
        UsageError.__init__(
            self,
            f"{path}: a path with . or .. segments (also percent-encoded, like %2e%2e) could reach outside "
            f"the API ({api}), and git-sluice sends its token only under sluice.api: pass a path such as repos/o/r",
        )


class TimedOut(SluiceError):
    exit_code = 4


class CallTimedOut(ForgeError, TimedOut):
    """The caller's own deadline ran out: before the call was sent (``sent`` False) or before its answer."""

    exit_code = 4

    def __init__(self, address: str, *, sent: bool, waiting: str = "before it could be sent") -> None:
        self.address = address
        self.sent = sent
        if sent:
            text = f"no answer from GitHub for {address} within the given timeout; try again with a longer --timeout"
        else:
            text = f"the timeout for {address} ran out {waiting}; nothing was sent"
        super().__init__(text)


class AnswerFailed(ForgeError):
    """GitHub's answer is unusable (5xx, an unparsable body): failure memory takes it from here.

    Raised by the host gate (forge/host_gate.py) for the failure memory above it
    (forge/failure_memory.py), which turns it into :class:`ForgeUnavailable`.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MalformedNode(ForgeError):
    """A field the reading needs is absent or null (``args[0]`` names it); the pull request is skipped."""


class Interrupted(SluiceError):
    """Asked to stop (SIGTERM, Ctrl-C) while a call waited; nothing more was sent."""

    exit_code = 130


class CallCancelled(Interrupted):
    """Asked to stop (SIGTERM, Ctrl-C) while a call was on the wire: its answer is not waited for.

    The call was sent, so GitHub may have counted it; what it would have said is
    unknown, and the user, not GitHub, ended it. So nothing is held against
    GitHub for it: failure memory does not remember the address, no pause
    opens, and its permit goes back *cut short* (a probe's turn passes to the
    next caller; a ramp's cohort does not count it as clean).
    """

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__(f"stopped during a call to GitHub ({address}): its answer was not waited for")


# ------------------------------------------------------------------------ the remote


class RemoteError(SluiceError):
    """The git remote holding ``refs/sluice/*`` could not be used as needed."""


class RemoteUnreachable(RemoteError):
    """The remote could not be talked to (network, authentication, no such remote).

    Nothing is known about the refs: no write may be assumed won or lost.
    """

    def __init__(self, remote: str, operation: str, detail: str) -> None:
        self.remote = remote
        self.operation = operation
        self.detail = detail
        super().__init__(
            f"cannot {operation} remote '{remote}': {detail or 'git gave no reason'} "
            f"(check `git ls-remote {remote}` works from this host)"
        )


class LeaseLapsed(RemoteError):
    """This host's own lease of a branch ran out (by its own clock) in the middle of a round.

    The round stops before its next call: another host may take the branch
    over from now on, and two hosts must never take one branch in at once.
    """

    def __init__(self, branch: str, view: str) -> None:
        self.branch = branch
        super().__init__(f"stopped taking {branch} in before the next call: {view}")


class RemoteRefused(RemoteError):
    """The remote refused a coordination ref by its own rule (a hook, a protection).

    This is not a race: retrying cannot help, a person must allow ``refs/sluice/*``.
    """

    def __init__(self, remote: str, ref: str, reason: str, *, views: object = None) -> None:
        self.remote = remote
        self.ref = ref
        self.reason = reason
        # the lease keeper's views after the push (each refused branch marked blocked), if any
        self.views = views
        super().__init__(
            f"remote '{remote}' refused {ref}: {reason}; git-sluice needs to create, update and "
            "delete refs under refs/sluice/ (allow them in the server's hooks or protections)"
        )


class PublishFailed(RemoteError):
    """The pause note kept losing races; the host's own pause still holds."""

    def __init__(self, ref: str, attempts: int) -> None:
        self.ref = ref
        super().__init__(
            f"could not publish {ref} after {attempts} attempts (other hosts kept moving it); "
            "this host stays paused and other hosts will learn of the pause from their own calls"
        )


class SurveyRejected(RemoteError, ValueError):
    """A survey blob that is not one this host takes (too big, not a survey, another base, malformed).

    Still a ``ValueError``, as it was before it joined this family: callers
    catch it with the other malformed-input errors.
    """


# ------------------------------------------------------------------------ state files


class StateError(SluiceError):
    """A state file of this host or clone cannot be used; says which file and what to do."""


class HostStoreError(StateError):
    """The host state file cannot be used (locked too long, unwritable); says which file and what to do."""


class HostStoreCorrupt(StateError):
    """The host state file is not (or no longer) a usable database: the store moves it aside and starts afresh."""


class StateInTheWay(StateError, OSError):
    """Something stands where a state file or folder goes and cannot be moved aside; says what to remove.

    An OSError too: every writer that goes on without a state file it cannot
    write (the log, a hook's record) goes on without this one as well.
    """


class StateFileBusy(StateError):
    """Another process kept a state file's lock far longer than a save takes."""


class LockTimeout(StateError):
    """A :class:`statefile.FileLock` stayed taken for its whole timeout (or at once, when not waiting).

    statefile turns it into :class:`StateFileBusy` (or a "no" from ``try_acquire``).
    """


# ------------------------------------------------------------------ the repository


class RepoError(SluiceError):
    """The local repository, or git itself, cannot do what was needed."""


class ReftableUnsupported(RepoError):
    """The repository stores its refs in reftable, which libgit2 cannot read."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        super().__init__(
            f"{git_dir} uses the reftable ref storage (extensions.refStorage=reftable), which "
            "git-sluice cannot read yet (libgit2 has no reftable support); use git-sluice from "
            "a clone with the files ref storage (git clone --ref-format=files)"
        )


class GitFailed(RepoError):
    """A local git command failed; names the command and what git said."""

    def __init__(self, args: tuple[str, ...], returncode: int, stderr: str) -> None:
        self.args_ = args
        self.returncode = returncode
        self.stderr = stderr
        said = stderr.strip().splitlines()
        detail = said[-1] if said else "no message"
        super().__init__(f"git {' '.join(args[:3])} failed (exit {returncode}): {detail}")
