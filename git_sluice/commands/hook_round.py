"""The hook round runner: what a hook starts, detached, to run one intake round.

The hooks (``hooks/pre-push``, ``hooks/reference-transaction``) are tiny shell
scripts that must never slow down or fail the user's git. They filter with
the shell alone, write the lines that may concern us into an *inbox*
(``<sluice dir>/hook-in.<pid of the git process>``) and start
``git sluice _hook-round`` in a new session with every standard stream on
``/dev/null`` (docs/design.md#pitfalls-it-is-built-around: a child holding git's pipes makes ``git push``
hang). Everything slow or fallible happens here, after the git command ends:

1. wait for the git process that ran the hook to exit, so a push is complete
   before its round reads anything and every hook of one command (a fetch runs
   the reference-transaction hook once per ref) shares one runner;
2. decide, exactly and from the current config, whether the lines concern a
   branch taken in, a request's head or ``refs/sluice/*``;
3. leave an *ask* and run rounds under a per-clone lock, non-blocking: an ask
   made while another runner holds the lock is taken by that runner after its
   round (it looks again after letting go), so at most one hook round runs per
   clone and the last movement is always taken in.

Every failure is one line in ``<sluice dir>/log`` and the last one is kept in
``<sluice dir>/last-failure.json`` for ``git sluice status``. Nothing reaches
the user's terminal.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..clock import Clock, default_clock, rfc3339
from ..gitcli import INTERNAL_ENV, scrub, scrub_environ
from ..procs import gone
from ..records import record
from ..statefile import file_lock, load_json, set_aside, try_acquire, write_atomic

if TYPE_CHECKING:  # the runner waits for git before importing anything heavy
    from ..intake.report import RoundReport
    from ..remote.fetched import FetchedLeases
    from ..repo import Repo

log = logging.getLogger("git_sluice")

INBOX_PREFIX = "hook-in."
ASK_PREFIX = "hook-ask."
FILTER_NAME = "hook-filter"
HEADS_NAME = "heads"
LOCK_NAME = "hook-round.lock"
RUNNER_NAME = "hook-runner"
"""The pid of a runner at work in this clone: a hook's waiter that finds it alive starts no runner
of its own and leaves its inbox to that runner's last look (:func:`_last_look`, issue 33)."""
LOG_NAME = "log"
FAILURE_NAME = "last-failure.json"
PUSH_MARK_NAME = "hook-push-mark"
"""Touched by pre-push as a push begins (see the reference-transaction script)."""
RT_SEEN_NAME = "hook-rt-seen"
"""Left by reference-transaction when git runs it: pre-push may then leave the waiter's start to it."""
WARNED_NAME = "hook-warned"
"""The pid of the git command last warned that git-sluice is not on PATH (one warning per command)."""
WAIT_LIMIT = 3600.0
"""How long a runner waits for its git command (a slow push) before it goes on anyway."""
SIBLING_WAIT = 10.0
"""How long a runner waits for this clone's other git commands that left an inbox (a burst of fetches)."""



class RoundRunner(Protocol):
    """What runs the round a hook asked for (``hook_step``; tests hand in their own)."""

    def __call__(self, repo: Repo, *, reason: str, pushed: frozenset[str] = frozenset(),
                 share: bool = False) -> object: ...


# ----------------------------------------------------------------- pure decisions


@record(frozen=True)
class HookCall:
    """What one hook invocation handed over: which hook, to where, which refs."""

    hook: str
    refs: tuple[str, ...]
    remote: str | None = None
    url: str | None = None


def parse_inbox(text: str) -> list[HookCall]:
    """Read an inbox as the hooks write it; anything unrecognisable is skipped.

    ``@reference-transaction`` is followed by a line of space-separated refs;
    ``@pre-push <remote>`` and ``@url <url>`` by the hook's own stdin lines
    (``<local ref> <local oid> <remote ref> <remote oid>``). ``@late`` and
    ``@waiter`` say only who starts the waiting fork (docs/hooks.md) and are skipped.
    """
    calls: list[HookCall] = []
    hook: str | None = None
    remote: str | None = None
    url: str | None = None
    refs: list[str] = []

    def close() -> None:
        if hook is not None:
            calls.append(HookCall(hook=hook, refs=tuple(refs), remote=remote, url=url))

    for line in text.splitlines():
        if line.startswith("@reference-transaction"):
            close()
            hook, remote, url, refs = "reference-transaction", None, None, []
        elif line.startswith("@pre-push"):
            close()
            hook, url, refs = "pre-push", None, []
            remote = line[len("@pre-push") :].strip() or None
        elif line.startswith("@url ") and hook == "pre-push":
            url = line[len("@url ") :].strip() or None
        elif hook == "reference-transaction":
            refs.extend(word for word in line.split() if word.startswith("refs/"))
        elif hook == "pre-push":
            fields = line.split()
            if len(fields) >= 4 and fields[2].startswith("refs/"):
                refs.append(fields[2])
    close()
    return calls


def filter_refs(remote: str, branches: Iterable[str]) -> list[str]:
    """The remote-tracking refs whose movement asks for a round (the hooks' filter)."""
    return [f"refs/remotes/{remote}/{branch}" for branch in dict.fromkeys(branches)]


def decide(
    calls: Sequence[HookCall],
    *,
    remote: str,
    remote_url: str | None,
    taken_in: Iterable[str],
    request_heads: Iterable[str],
) -> list[str]:
    """Why a round is asked for these calls (empty: it is not).

    A reference-transaction asks for ``refs/sluice/*`` and for the tracking ref
    of a branch taken in. A pre-push asks when it pushes a branch taken in to
    ``sluice.remote``, or the head branch of a queued request to any remote
    (a fork's head moves the request as much as the main remote's does).
    """
    tracked = set(taken_in)
    heads = {_short(head) for head in request_heads if head}
    reasons: list[str] = []
    for call in calls:
        for ref in call.refs:
            if call.hook == "reference-transaction":
                if ref.startswith("refs/sluice/"):
                    reasons.append(f"fetch {ref}")
                elif ref in tracked:
                    reasons.append(f"fetch {ref}")
            elif call.hook == "pre-push":
                branch = _short(ref)
                to_remote = call.remote in (remote, remote_url) or (
                    remote_url is not None and call.url == remote_url
                )
                if ref.startswith("refs/heads/") and to_remote and f"refs/remotes/{remote}/{branch}" in tracked:
                    reasons.append(f"push {ref} to {call.remote}")
                elif ref.startswith("refs/heads/") and branch in heads:
                    reasons.append(f"push request head {ref} to {call.remote}")
    return list(dict.fromkeys(reasons))


def step_reason(reasons: Sequence[str]) -> str:
    """The reason the round is given: ``push`` makes it ask GitHub at once (docs/design.md#one-round).

    A push to a request's head moves nothing the round could see locally, so it
    must say so. A fetch needs no word: the round sees the branch's revision
    move by itself, and a movement an earlier round already took in asks
    nothing again.
    """
    return "push" if any(reason.startswith("push") for reason in reasons) else "hook"


def pushed_heads(reasons: Sequence[str]) -> frozenset[str]:
    """The request head branches a pre-push pushed (from :func:`decide`'s reasons), for the round to read."""
    out = set()
    for reason in reasons:
        if reason.startswith("push request head refs/heads/") and " to " in reason:
            out.add(reason[len("push request head refs/heads/"):].rsplit(" to ", 1)[0])
    return frozenset(out)


def shares_look(reasons: Sequence[str], remote: str | None) -> bool:
    """Whether the round may take a look at the remote this host took within a tick (issue 29).

    Every reason but a push of a branch taken in to anything other than
    ``remote`` by name: the round needs the leases and the pause notes, which a
    driver's or the host watch's look of this tick holds, and a branch's new
    revision, which the user's own command has just brought into
    ``refs/remotes/<remote>/`` (a fetch, or a push to the remote by name, which
    git follows by moving the remote-tracking ref; :mod:`git_sluice.runtime.tracking`
    takes it from there). A push by URL moves no remote-tracking ref: that round fetches.
    """
    if not reasons:
        return False
    for reason in reasons:
        if reason.startswith("push request head ") or reason.startswith("fetch "):
            continue
        if reason.startswith("push ") and remote is not None and reason.endswith(f" to {remote}"):
            continue
        return False
    return True


def _short(ref: str) -> str:
    return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref


def parse_heads(text: str) -> set[str]:
    """Head refs of queued requests from ``heads`` (``<branch> <number> <head_ref> <head_sha>``)."""
    heads: set[str] = set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1].isdigit():
            heads.add(fields[2])
    return heads


# ------------------------------------------------------------------ small I/O parts


def _redact(text: str) -> str:
    """No token reaches the log or the failure record, whatever an exception said."""
    for name in ("GH_TOKEN", "GITHUB_TOKEN"):
        value = os.environ.get(name, "").strip()
        if len(value) >= 4:
            text = text.replace(value, "***")
    return scrub(text)


class _LogFile(logging.Handler):
    """One line per record in ``<sluice dir>/log``, stamped with the injected clock."""

    def __init__(self, path: Path, clock: Clock) -> None:
        super().__init__(logging.INFO)
        self.path = path
        self.clock = clock

    def emit(self, record: logging.LogRecord) -> None:
        try:
            write_log(self.path.parent, self.clock, record.getMessage())
        except Exception:  # a log that cannot be written must not break the round
            pass


def write_log(sluice_dir: Path, clock: Clock, message: str) -> None:
    """Append one line (O_APPEND: lines of concurrent runners never interleave).

    A log that cannot be written (a directory in its place, a full disk) is
    skipped: the round matters more than its record.
    """
    text = " ".join(_redact(message).split())
    line = f"{rfc3339(clock.time())} [{os.getpid()}] {text}\n"
    fd = _open_log(sluice_dir / LOG_NAME)
    if fd is None:
        return
    try:
        os.write(fd, line.encode("utf-8", "replace"))
    except OSError:
        pass
    finally:
        os.close(fd)


_LOG_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW


def _open_log(path: Path) -> int | None:
    """The log, opened to append; a directory or a link in its place is moved aside once (None: no log)."""
    try:
        return os.open(path, _LOG_FLAGS, 0o600)
    except OSError as exc:
        if exc.errno not in (errno.EISDIR, errno.ELOOP) or not os.path.lexists(path):
            return None
    try:
        set_aside(path)
        return os.open(path, _LOG_FLAGS, 0o600)
    except OSError:
        return None


def record_failure(sluice_dir: Path, clock: Clock, *, reason: str, error: BaseException) -> dict[str, Any]:
    """Keep the last failure where ``git sluice status`` finds it, and log it."""
    now = clock.time()
    text = _redact(f"{type(error).__name__}: {error}")
    record = {
        "time": now,
        "at": rfc3339(now),
        "reason": _redact(reason),
        "error": text,
        "exit_code": int(getattr(error, "exit_code", 1)),
    }
    try:
        write_atomic(sluice_dir / FAILURE_NAME, (json.dumps(record, indent=2) + "\n").encode())
    except OSError:
        pass
    return record


def _failure_record(data: Any) -> dict[str, Any]:
    """A failure record as :func:`record_failure` writes it; ValueError for anything else."""
    if not isinstance(data, dict) or not isinstance(data.get("error"), str):
        raise ValueError("not a hook failure record")
    return data


def _read_failure(sluice_dir: Path) -> dict[str, Any] | None:
    """The kept failure; None when there is none, or it is corrupt (one warning: the next failure rewrites it)."""
    return load_json(sluice_dir / FAILURE_NAME, _failure_record, lambda: None, what="the last hook failure")


def _mark_recovered(sluice_dir: Path, clock: Clock) -> None:
    """A later good round says so on the failure, so status can tell past from present."""
    record = _read_failure(sluice_dir)
    if record is None or "recovered_at" in record:
        return
    record["recovered"] = clock.time()
    record["recovered_at"] = rfc3339(clock.time())
    try:
        write_atomic(sluice_dir / FAILURE_NAME, (json.dumps(record, indent=2) + "\n").encode())
    except OSError:
        pass


def last_failure(repo: Repo | FetchedLeases) -> dict[str, Any] | None:
    """The last failed hook round (``time``, ``at``, ``reason``, ``error``, ``exit_code``,
    and ``recovered_at`` once a later round succeeded), or None if none is recorded."""
    return _read_failure(Path(repo.common_dir) / "sluice")


# -------------------------------------------------------------- what is taken in


def taken_in(repo: Repo) -> tuple[str, list[str]]:
    """(sluice.remote, the branches taken in), as the round will see them.

    A config the round would refuse still gives the hooks a filter: they must
    keep asking, so the round can fail and say why in the log and in status.
    """
    from ..config import load_settings
    from ..errors import SluiceError

    root = repo.workdir if repo.workdir is not None else repo.git_dir
    try:
        settings = load_settings(root, need_branches=False, refs=repo.refs)
        if settings.branches:
            return settings.remote, list(settings.branches)
        remote = settings.remote
    except SluiceError:
        remote = (repo.config_get("sluice.remote") or "origin").strip() or "origin"
    configured = [_short(b.strip()) for b in repo.config_get_all("sluice.branch") if b.strip()]
    if configured:
        return remote, configured
    return remote, _default_branches(repo, remote)


def _default_branches(repo: Repo, remote: str) -> list[str]:
    """The remote's default branch; both usual names while none is known yet."""
    prefix = f"refs/remotes/{remote}/"
    try:
        target = repo.refs.target(prefix + "HEAD")
        if target is not None and target.startswith(prefix):
            return [target[len(prefix) :]]
    except Exception:
        pass
    found = [name for name in ("main", "master") if repo.ref(prefix + name) is not None]
    return found[:1] or ["main", "master"]


def refresh_filter(repo: Repo, sluice_dir: Path) -> tuple[str, list[str]]:
    """Write the hooks' filter when it differs or is no newer than the config files.

    The hooks trust the filter only while it is newer than every config file
    git reads, so it is rewritten whenever one of those changed, even if the
    content is the same: a fresh mtime is what makes the hooks cheap again.
    """
    remote, branches = taken_in(repo)
    refs = filter_refs(remote, branches)
    data = "".join(f"{ref}\n" for ref in refs).encode()
    path = sluice_dir / FILTER_NAME
    try:
        current = path.read_bytes()
        mtime = path.stat().st_mtime_ns
    except OSError:
        current, mtime = None, 0
    configs = _config_mtimes(repo)
    if current != data or any(mtime <= m for m in configs):
        write_atomic(path, data)
        newest = max(configs, default=0)
        try:
            if path.stat().st_mtime_ns <= newest:  # written within the config's own clock tick: not "newer"
                os.utime(path, ns=(newest + 1, newest + 1))
        except OSError:
            pass  # the hooks then take their slow path once more, and the next round writes it again
    return remote, refs


def config_files(repo: Repo) -> list[Path]:
    """The files the hooks compare with the filter (same list as in the scripts)."""
    home = Path(os.environ.get("HOME", "/"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return [
        Path(repo.common_dir) / "config",
        Path(repo.git_dir) / "config.worktree",
        Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"),
        Path(xdg) / "git" / "config",
        Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"),
    ]


def _config_mtimes(repo: Repo) -> list[int]:
    found = []
    for path in config_files(repo):
        try:
            found.append(path.stat().st_mtime_ns)
        except OSError:
            continue
    return found


def read_heads(sluice_dir: Path) -> set[str]:
    try:
        return parse_heads((sluice_dir / HEADS_NAME).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return set()


# ---------------------------------------------------------------- the runner


def wait_for_exit(pid: int, clock: Clock, limit: float = WAIT_LIMIT) -> bool:
    """Poll until ``pid`` ends (True) or ``limit`` seconds pass (False)."""
    deadline = clock.monotonic() + limit
    delay = 0.005
    while not gone(pid):
        if clock.monotonic() >= deadline:
            return False
        clock.sleep(delay)
        delay = min(delay * 1.5, 0.1)
    return True


def wait_for_siblings(sluice_dir: Path, clock: Clock, own: Path | None, limit: float = SIBLING_WAIT) -> None:
    """Wait, at most ``limit`` seconds in all, for the other git commands of this clone that left an inbox.

    Concurrent fetches in one clone contend for the same ref locks, and a
    round that starts while the others still run competes with them for the
    processor, so each holds its locks a little longer (issue 33). Waiting for
    the burst to end also folds it into one round: the first runner then takes
    every inbox, and the others find theirs taken.
    """
    deadline = clock.monotonic() + limit
    for path in sorted(sluice_dir.glob(INBOX_PREFIX + "*")):
        pid = _inbox_pid(path)
        if pid is None or (own is not None and path.name == own.name):
            continue
        remaining = deadline - clock.monotonic()
        if remaining <= 0:
            return
        wait_for_exit(pid, clock, remaining)


def _take(path: Path) -> str | None:
    """Claim a file by renaming it first: of two runners, exactly one reads it."""
    claimed = path.with_name(f".{path.name}.taken.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        os.rename(path, claimed)
    except OSError:
        return None
    try:
        return claimed.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    finally:
        try:
            claimed.unlink()
        except OSError:
            pass


def _inbox_pid(path: Path) -> int | None:
    tail = path.name[len(INBOX_PREFIX) :]
    return int(tail) if tail.isdigit() else None


def collect(sluice_dir: Path, inbox: Path | None) -> str:
    """This runner's inbox, and any orphan (its git gone, no runner took it).

    An orphan is left when a runner could not start or died early; taking it
    here means a movement is never lost, only taken in by the next runner.
    """
    texts: list[str] = []
    if inbox is not None:
        taken = _take(inbox)
        if taken:
            texts.append(taken)
    for path in sorted(sluice_dir.glob(INBOX_PREFIX + "*")):
        pid = _inbox_pid(path)
        if pid is None or not gone(pid):
            continue
        taken = _take(path)
        if taken:
            texts.append(taken)
    return "\n".join(texts)


def ask(sluice_dir: Path, reasons: Sequence[str]) -> None:
    """Leave an ask; whoever holds the round lock (maybe us) will take it."""
    name = f"{ASK_PREFIX}{os.getpid()}.{os.urandom(16).hex()}"
    write_atomic(sluice_dir / name, ("\n".join(reasons) + "\n").encode())


def _pending(sluice_dir: Path) -> bool:
    return any(sluice_dir.glob(ASK_PREFIX + "*"))


def take_asks(sluice_dir: Path) -> list[str]:
    """Every ask left so far, claimed (later asks wait for the next round)."""
    reasons: list[str] = []
    for path in sorted(sluice_dir.glob(ASK_PREFIX + "*")):
        text = _take(path)
        if text:
            reasons.extend(line.strip() for line in text.splitlines() if line.strip())
    return list(dict.fromkeys(reasons))


def _ref_state(repo: Repo, refs: Sequence[str]) -> str:
    """Where the filtered refs point as the round starts (the log's evidence of what it saw)."""
    shown = []
    for ref in refs:
        oid = repo.ref(ref)
        shown.append(f"{ref}@{oid[:12] if oid else '-'}")
    return " ".join(shown)


def hook_step(repo: Repo, *, reason: str, pushed: frozenset[str] = frozenset(),
              share: bool = False) -> list[RoundReport]:
    """The round a hook asks for: ``intake.step.run_rounds`` with the rounds' own fetch, or with
    ``share`` a look of this host's within the discovery interval (:func:`shares_look`), the
    branches' new revisions taken from the user's remote-tracking refs (:mod:`..runtime.tracking`).

    The user's fetch no longer brings ``refs/sluice/*`` (setup adds no refspec:
    a person's fetch is the same with and without git-sluice), so the round
    fetches the leases, this clone's pause notes and its branches itself, each
    by an explicit refspec into git-sluice's own refs (``--refmap=``): it never
    writes a ref the user's git writes, so it cannot make their next fetch
    fail with "cannot lock ref" nor take its news away.
    """
    from .intake import run_rounds
    from ..runtime.session import open_session
    from ..runtime.tracking import adopt_user_tracking

    path = repo.workdir if repo.workdir is not None else repo.git_dir
    with open_session(path) as session:
        if share:  # the branch's new revision from the user's command; else the round's own fetch
            share = adopt_user_tracking(session.repo, session.settings.remote, session.settings.branches)
        reports = run_rounds(session, reason=reason, fetch=True, pushed=pushed,
                             share=session.settings.discovery if share else None)
    for report in reports:
        log.info("round %s", report.summary())
    return reports


def run_round(repo: Repo, sluice_dir: Path, reasons: Sequence[str], clock: Clock, step: RoundRunner) -> bool:
    """One round for every configured branch; a failure is logged and kept, never raised."""
    reason = "; ".join(reasons) or "hook"
    remote: str | None = None
    try:
        remote, refs = refresh_filter(repo, sluice_dir)
        state = _ref_state(repo, refs)
    except Exception:
        state = ""
    write_log(sluice_dir, clock, f"hook round start reason={reason} {state}")
    try:
        step(repo, reason=step_reason(reasons), pushed=pushed_heads(reasons), share=shares_look(reasons, remote))
    except Exception as exc:
        record_failure(sluice_dir, clock, reason=reason, error=exc)
        write_log(sluice_dir, clock, f"hook round end failed: {type(exc).__name__}: {exc}")
        return False
    _mark_recovered(sluice_dir, clock)
    write_log(sluice_dir, clock, "hook round end")
    return True


def drain(repo: Repo, sluice_dir: Path, clock: Clock, step: RoundRunner) -> int:
    """Run rounds while asks are left, if no other runner holds the lock; returns rounds run.

    The lock is tried without waiting. A runner that does not get it leaves
    its ask behind; the holder looks for asks again after letting go, so an
    ask made at any moment is taken by some round that starts after it.
    """
    rounds = 0
    lock = file_lock(sluice_dir / LOCK_NAME)
    while True:
        if not try_acquire(lock):
            return rounds
        try:
            while True:
                reasons = take_asks(sluice_dir)
                if not reasons:
                    break
                run_round(repo, sluice_dir, reasons, clock, step)
                rounds += 1
        finally:
            lock.release()
        if not _pending(sluice_dir):
            return rounds


def run_hook_round(
    repo: Repo,
    *,
    wait_pid: int | None,
    inbox: Path | None,
    clock: Clock | None = None,
    step: RoundRunner | None = None,
    wait_limit: float = WAIT_LIMIT,
) -> int:
    """What ``git sluice _hook-round`` does; returns the rounds this runner ran.

    Raises nothing: it runs with no one to tell but the log.
    """
    from ..config import read_once

    with read_once():  # the filter, each round's session: one read of git's config (issue 15)
        return _run_hook_round(repo, wait_pid=wait_pid, inbox=inbox, clock=clock, step=step, wait_limit=wait_limit)


def _run_hook_round(
    repo: Repo, *, wait_pid: int | None, inbox: Path | None, clock: Clock | None, step: RoundRunner | None,
    wait_limit: float,
) -> int:
    clock = clock or default_clock()
    sluice_dir = Path(repo.common_dir) / "sluice"
    if not sluice_dir.is_dir():
        return 0
    handler = _LogFile(sluice_dir / LOG_NAME, clock)
    log.addHandler(handler)
    if log.level == logging.NOTSET or log.level > logging.INFO:
        log.setLevel(logging.INFO)
    marker = _at_work(sluice_dir)
    try:
        if wait_pid is not None:
            wait_for_exit(wait_pid, clock, wait_limit)
            wait_for_siblings(sluice_dir, clock, inbox, min(wait_limit, SIBLING_WAIT))
        if inbox is not None:
            inbox = inbox.resolve()
        if inbox is not None and (inbox.parent != sluice_dir.resolve() or not inbox.name.startswith(INBOX_PREFIX)):
            inbox = None  # only ever claim our own inboxes
        rounds = _take_in(repo, sluice_dir, inbox, clock, step)
        _done_at_work(marker)
        return rounds + _take_in(repo, sluice_dir, None, clock, step)  # the last look: inboxes left to us
    except Exception as exc:
        try:
            record_failure(sluice_dir, clock, reason="hook runner", error=exc)
            write_log(sluice_dir, clock, f"hook runner failed: {type(exc).__name__}: {exc}")
        except Exception:
            pass
        return 0
    finally:
        _done_at_work(marker)
        log.removeHandler(handler)


def _at_work(sluice_dir: Path) -> Path | None:
    """Say this runner is at work (its pid in ``hook-runner``); None if it cannot be said."""
    marker = sluice_dir / RUNNER_NAME
    try:
        write_atomic(marker, f"{os.getpid()}\n".encode())
    except OSError:
        return None
    return marker


def _done_at_work(marker: Path | None) -> None:
    """Let go of ``hook-runner`` if it still names this runner (a later runner's stays)."""
    if marker is None:
        return
    try:
        if marker.read_text(encoding="utf-8", errors="replace").strip() == str(os.getpid()):
            marker.unlink()
    except OSError:
        pass


def _take_in(repo: Repo, sluice_dir: Path, inbox: Path | None, clock: Clock, step: RoundRunner | None) -> int:
    """The rounds the inboxes ask for: ``inbox`` and every orphan (its git gone, no runner took it)."""
    calls = parse_inbox(collect(sluice_dir, inbox))
    if not calls:
        return 0
    remote, refs = refresh_filter(repo, sluice_dir)
    reasons = decide(
        calls,
        remote=remote,
        remote_url=_remote_url(repo, remote),
        taken_in=refs,
        request_heads=read_heads(sluice_dir),
    )
    if not reasons:
        return 0
    ask(sluice_dir, reasons)
    return drain(repo, sluice_dir, clock, step or hook_step)


def _remote_url(repo: Repo, remote: str) -> str | None:
    from ..config import remote_url

    found = remote_url(repo.workdir if repo.workdir is not None else repo.git_dir, remote)
    # the config read does not answer (a broken file): ask libgit2, as before
    return found if found is not None else repo.config_get(f"remote.{remote}.url")


def main(wait_pid: int | None, inbox: str | None) -> int:
    """The process entry point: find the clone the hook ran in, run, never fail."""
    if os.environ.get(INTERNAL_ENV):
        return 0
    try:
        from ..repo import Repo

        repo = Repo.discover()  # one `git rev-parse`; libgit2 is loaded only if the round writes
    except Exception:
        return 0
    # our own git commands (the round's fetch and push) must not ask again,
    # and the hook's relative GIT_DIR / GIT_WORK_TREE must not leak into them
    os.environ[INTERNAL_ENV] = "1"
    scrub_environ()
    run_hook_round(repo, wait_pid=wait_pid, inbox=Path(inbox) if inbox else None)
    return 0

