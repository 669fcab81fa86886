"""``git sluice doctor``: why data looks stale, or why nothing happens, in one screen.

Each check is data — a name, ``ok`` / ``warn`` / ``fail``, what was found and
what to do — built by a pure function from facts gathered separately, so the
wording and the thresholds are tested without a network and the gathering is
tested against the GitHub double and real git.

What doctor spends, and why it may: one conditional GET of the repository
(a 304 when nothing changed, so usually free), one ``GET /rate_limit`` only
when this host's ledger knows nothing of the pool yet (GitHub does not count
it; its figures are advisory, design §6), one fetch of ``refs/sluice/*`` and
two compare-and-swap pushes of a scratch ref on the remote (create, delete),
because "the remote accepts refs/sluice/*" is only known by trying.

A broken configuration is a ``fail`` naming the key and the accepted form,
never a crash: doctor goes on with whatever does not need that key. The token
is never shown — only where it came from — and every text doctor produces is
scrubbed of it before it is printed.
"""

from __future__ import annotations

import logging
import os
import subprocess
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import gitcli
from ..clock import Clock, default_clock
from ..config import DEFAULT_API, KNOWN_KEYS, Settings, load_settings
from ..durations import format_duration
from ..errors import AllowanceSpent, ConfigError, SluiceError, local_time

log = logging.getLogger("git_sluice")

Status = Literal["ok", "warn", "fail"]

REFERENCE_TRANSACTION_SINCE: tuple[int, int] = (2, 28)
PROJECTION_WARN_SHARE = 0.5
BUDGET_WARN_SHARE = 0.9
DEFAULT_LIMIT = 5000  # GitHub's hourly allowance of a user token, core and graphql alike
PROJECTED_RESOURCES: tuple[str, ...] = ("core", "graphql")
SCRATCH_PREFIX = "refs/sluice/doctor/"


# ============================================================================ data


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    status: Status
    found: str
    advice: str = ""

    def line(self) -> str:
        text = f"{self.status:<4}  {self.name}: {self.found}"
        return text + (f" — {self.advice}" if self.advice else "")

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "found": self.found, "advice": self.advice}


@dataclass(frozen=True)
class BudgetLine:
    """One (pool, resource) allowance as doctor knows it, and where from."""

    pool: str
    resource: str
    limit: int | None
    used: int | None
    remaining: int | None
    reset: float | None
    observed_at: float | None
    counted_last_hour: int
    source: str  # "ledger" | "rate_limit"
    this_repository: bool | None = True  # None: the repository's pool is unknown (no token)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Projection:
    """This host's hourly spend if every discovery round costs what the last measured one did."""

    branches: int
    discovery: float
    rounds_per_hour: float
    measured: tuple[str, ...]  # branches whose last round was a measured intake
    per_round: Mapping[str, float]  # resource -> counted calls (core) or points (graphql) per round
    calls_per_round: float  # counted + points, per round
    hourly: Mapping[str, float]
    limit: Mapping[str, int]
    limit_source: Mapping[str, str]  # "ledger" | "rate_limit" | "assumed"
    share: Mapping[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {
            "branches": self.branches,
            "discovery": self.discovery,
            "rounds_per_hour": self.rounds_per_hour,
            "measured": list(self.measured),
            "per_round": dict(self.per_round),
            "calls_per_round": self.calls_per_round,
            "hourly": dict(self.hourly),
            "limit": dict(self.limit),
            "limit_source": dict(self.limit_source),
            "share": dict(self.share),
            "warn_above": PROJECTION_WARN_SHARE,
        }


@dataclass
class Diagnosis:
    """Everything doctor found; ``failed`` decides the exit status (warnings do not fail)."""

    checks: list[Check] = field(default_factory=list)
    budget: list[BudgetLine] = field(default_factory=list)
    projection: Projection | None = None

    @property
    def failed(self) -> bool:
        return any(check.status == "fail" for check in self.checks)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "checks": [check.as_dict() for check in self.checks],
            "budget": [line.as_dict() for line in self.budget],
            "projection": self.projection.as_dict() if self.projection is not None else None,
        }

    def redacted(self, secrets: Iterable[str]) -> "Diagnosis":
        """The same report with every secret replaced — the last guard against showing a token."""
        hidden = [s for s in secrets if s and len(s) >= 4]
        if not hidden:
            return self

        def clean(text: str) -> str:
            for secret in hidden:
                text = text.replace(secret, "***")
            return text

        checks = [Check(clean(c.name), c.status, clean(c.found), clean(c.advice)) for c in self.checks]
        return Diagnosis(checks, list(self.budget), self.projection)


# ================================================================ pure checks


def parse_git_version(text: str) -> tuple[int, ...]:
    from .setup import parse_git_version as parse

    return parse(text)


def git_version_check(text: str | None) -> Check:
    """reference-transaction hooks (rounds after a fetch) need git >= 2.28; the rest works on older git."""
    if text is None:
        return Check("git version", "fail", "git is not installed or not on PATH", "install git (2.28 or later)")
    version = parse_git_version(text)
    shown = ".".join(str(part) for part in version)
    if version[:2] >= REFERENCE_TRANSACTION_SINCE:
        return Check("git version", "ok", f"{shown} (reference-transaction hooks need >= 2.28)")
    return Check(
        "git version",
        "warn",
        f"{shown}: older than 2.28, so git runs no reference-transaction hook and a fetch starts no round",
        "upgrade git to 2.28 or later; until then rounds start from pushes, `intake` and `drive` only",
    )


def config_checks(origins: Mapping[str, tuple[str, str]], *, enforce: bool = True) -> list[Check]:
    """Every ``sluice.*`` key: its value and where it came from (``default`` or the file that set it)."""
    checks = []
    for key in KNOWN_KEYS:
        if key not in origins:
            continue
        value, origin = origins[key]
        text = "(unset)" if value == "" and origin == "default" else f"{value or '(empty)'} ({origin})"
        if key == "sluice.enforce" and not enforce:
            checks.append(
                Check(
                    f"config {key}",
                    "warn",
                    f"{text}: observe-only, so a spent allowance stops nothing on this host",
                    "unset sluice.enforce once the observed pauses look right",
                )
            )
            continue
        checks.append(Check(f"config {key}", "ok", text))
    return checks


def config_error_check(exc: ConfigError) -> Check:
    """A value git-sluice refuses: the key, what it holds, and the accepted form."""
    key = exc.key
    if key.startswith("sluice."):
        advice = f"set it to {exc.accepted} (git config --global {key} …) or remove it (git config --unset {key})"
    else:
        advice = f"expected {exc.accepted}"
    return Check(f"config {key}", "fail", f"{key}={exc.value} is refused", advice)


def token_check(source: str | None, api: str, *, error: str | None = None) -> Check:
    """Where the token came from; never the token."""
    if error is not None:
        return Check("token", "fail", error, "fix the credentials named above, then run git sluice doctor again")
    if source is None:
        from ..forge.auth import api_host

        return Check(
            "token",
            "fail",
            "none found (looked at GH_TOKEN, GITHUB_TOKEN, git credential, gh auth token, GitHub App settings)",
            f"set GH_TOKEN or GITHUB_TOKEN, store one with `git credential approve` for {api_host(api)}, "
            "run `gh auth login`, or configure a GitHub App (sluice.appId, sluice.appKeyFile, sluice.installation)",
        )
    return Check("token", "ok", f"from {source} (not shown)")


def access_check(
    repository: str,
    *,
    status: int | None = None,
    not_modified: bool = False,
    source: str | None = None,
    paused: AllowanceSpent | None = None,
    error: str | None = None,
) -> Check:
    """What one GET of the repository said about the token's access."""
    name = "token access"
    if paused is not None:
        return Check(
            name,
            "warn",
            f"not checked: the {paused.resource} allowance of pool {paused.pool} is spent until {local_time(paused.until)}",
            "nothing to do: doctor makes no call while the pool is paused; run it again after the pause",
        )
    if error is not None:
        return Check(name, "fail", f"GitHub did not answer: {error}", "check sluice.api and this host's network")
    if status is None:
        return Check(name, "warn", "not checked (no token)")
    if status == 200:
        how = "304 from the kept answer, free" if not_modified else "200"
        return Check(name, "ok", f"the token reads {repository} ({how})")
    if status == 401:
        return Check(
            name,
            "fail",
            f"token has no access to {repository}: GitHub refused the token itself (401)",
            f"the token from {source or 'its source'} is invalid, expired or revoked: replace it",
        )
    if status in (403, 404):
        return Check(
            name,
            "fail",
            f"token has no access to {repository} ({status})",
            "give the token access to the repository (a fine-grained token: add it; an App: install it there), "
            "or fix sluice.repository",
        )
    return Check(name, "warn", f"GitHub answered {status} for {repository}", "run git sluice doctor again later")


@dataclass(frozen=True)
class HookState:
    """What is installed for one hook, gathered by :func:`gather_hooks`."""

    name: str
    path: str
    exists: bool
    ours: bool
    current: bool  # our script, byte for byte the one this version ships
    legacy: str | None  # the chained hook, when one is there
    legacy_runs: bool
    shared_dir: bool  # core.hooksPath chose the folder
    config_section: str | None = None  # a config-defined hook setup recorded (git >= 2.54)
    config_listed: bool = False  # git lists it for the event
    config_current: bool = False


def hook_check(state: HookState) -> Check:
    """Installed, current, and chained to whatever hook was there before."""
    name = f"hook {state.name}"
    where = state.path + (" (core.hooksPath)" if state.shared_dir else "")
    if state.config_section is not None:
        if not state.config_listed:
            return Check(
                name,
                "fail",
                f"config-defined hook {state.config_section} is recorded but git does not list it",
                "run git sluice setup",
            )
        if not state.config_current:
            return Check(
                name, "warn", f"config-defined hook {state.config_section} is an older script", "run git sluice setup"
            )
        return Check(name, "ok", f"config-defined hook {state.config_section}; any hook file still runs as before")
    if not state.exists:
        return Check(name, "fail", f"not installed at {where}: rounds do not start from git", "run git sluice setup")
    if not state.ours:
        return Check(
            name,
            "fail",
            f"{where} is another program's hook, not git-sluice's: rounds do not start from it",
            "run git sluice setup (it keeps that hook and runs it first)",
        )
    if not state.current:
        return Check(name, "warn", f"{where} is an older git-sluice script", "run git sluice setup to update it")
    if state.legacy is None:
        return Check(name, "ok", f"installed at {where}")
    if not state.legacy_runs:
        return Check(
            name,
            "warn",
            f"installed at {where}; the chained {state.legacy} is not executable, so it does not run",
            f"chmod +x {state.legacy} if it should run",
        )
    return Check(name, "ok", f"installed at {where}, chained: {state.legacy} runs first, with its exit status")


def refspec_check(remote: str, fetch_specs: Sequence[str]) -> Check:
    from ..remote.git import SLUICE_REFSPEC

    name = "fetch refspec"
    key = f"remote.{remote}.fetch"
    if SLUICE_REFSPEC in fetch_specs:
        return Check(name, "ok", f"{key} has {SLUICE_REFSPEC}")
    return Check(
        name,
        "fail",
        f"{key} lacks {SLUICE_REFSPEC}: a fetch brings no lease or pause from other hosts",
        f"run git sluice setup (or git config --add {key} '{SLUICE_REFSPEC}')",
    )


@dataclass(frozen=True)
class ScratchTrial:
    """The outcome of creating then deleting ``refs/sluice/doctor/<host>`` on the remote."""

    ref: str
    created: bool
    deleted: bool
    words: str = ""  # the remote's (or git's) own words when a step did not go through
    refused: bool = False  # a rule on the remote, not a race


def remote_checks(remote: str, fetch_error: str | None, trial: ScratchTrial | None) -> list[Check]:
    reach = f"remote {remote}"
    accepts = f"remote {remote} accepts refs/sluice/*"
    if fetch_error is not None:
        return [
            Check(reach, "fail", f"fetch of refs/sluice/* failed: {fetch_error}", f"check `git ls-remote {remote}` works here"),
            Check(accepts, "warn", "not tried: the remote cannot be reached"),
        ]
    checks = [Check(reach, "ok", "reachable (fetched refs/sluice/*)")]
    if trial is None:
        checks.append(Check(accepts, "warn", "not tried"))
    elif trial.created and trial.deleted:
        checks.append(Check(accepts, "ok", f"created and deleted {trial.ref} with compare-and-swap pushes"))
    elif trial.created:
        checks.append(
            Check(
                accepts,
                "warn",
                f"created {trial.ref} but could not delete it: {trial.words}",
                f"delete it by hand: git push {remote} :{trial.ref}",
            )
        )
    else:
        checks.append(
            Check(
                accepts,
                "fail",
                f"the remote refused {trial.ref}: {trial.words}" if trial.refused
                else f"could not create {trial.ref}: {trial.words}",
                "allow git-sluice to create, update and delete refs under refs/sluice/ "
                "(the server's hooks or branch protections)",
            )
        )
    return checks


def lease_check(view: Any) -> Check:
    """One branch's lease (a :class:`~git_sluice.remote.lease.LeaseView`) as this host sees it."""
    name = f"lease {view.branch}"
    age = format_duration(view.age) if view.age is not None else "an unknown time"
    lease = format_duration(view.lease)
    if view.oid is None:
        return Check(name, "ok", "no lease on the remote: this host takes the branch in alone")
    if view.garbage:
        return Check(
            name,
            "warn",
            f"{view.ref} holds {view.oid[:12]}, which is not a lease record (unchanged for {age} here); "
            f"it is taken over after a whole lease ({lease})",
            f"if nothing should write there, delete it: git push <remote> :{view.ref}",
        )
    role = view.role or "unknown role"
    if view.mine:
        if view.live:
            return Check(name, "ok", f"held by this host ({role}), written {age} ago")
        return Check(
            name,
            "warn",
            f"this host's {role} mark, not renewed for {age} (lease {lease}): lapsed",
            "is `git sluice drive` running here? a stopped driver's mark is taken over after a whole lease",
        )
    if view.live:
        return Check(name, "ok", f"held by {view.holder} ({role}), unchanged for {age} by this host's watch")
    return Check(
        name,
        "warn",
        f"{role} mark of {view.holder} unchanged for {age} (lease {lease}): lapsed",
        f"the next driver or wait takes it over; check `git sluice drive` on {view.holder}",
    )


def pause_checks(pauses: Sequence[Any], now: float, pool: str | None = None) -> list[Check]:
    """Every pause on this host (:class:`~git_sluice.forge.hoststore.PauseView`); none is one ok line."""
    if not pauses:
        return [Check("pause", "ok", "no pool is paused on this host")]
    checks = []
    for pause in pauses:
        whose = "" if pool is None or pause.pool == pool else " (another repository's pool)"
        name = f"pause {pause.pool} {pause.resource}"
        source = "" if pause.source == "local" else f", learned from {pause.source}"
        if pause.observe_only:
            checks.append(
                Check(
                    name,
                    "warn",
                    f"would have paused until {local_time(pause.until)} ({pause.cls}){whose}; "
                    f"{pause.held} calls would have been held",
                    "observe-only (sluice.enforce=false): nothing was stopped",
                )
            )
        elif pause.phase == "paused" and pause.until > now:
            from ..countdown import countdown_text

            checks.append(
                Check(
                    name,
                    "warn",
                    f"{countdown_text(pause.until, now)} ({pause.cls or 'unknown'}{source}){whose}",
                    "nothing to do: every process here makes no call until then and one probe goes first; "
                    "commands exit 3 meanwhile (or wait with --wait)",
                )
            )
        else:
            size = f", cohorts of {pause.cohort_size}" if getattr(pause, "cohort_size", None) else ""
            checks.append(Check(name, "ok", f"recovering after a pause: {pause.phase}{size}{whose}"))
    return checks


def ledger_budget(rows: Iterable[Any], pool: str | None) -> list[BudgetLine]:
    """The host ledger's rows (:class:`~git_sluice.forge.hoststore.BudgetRow`), this repository's pool first."""
    lines = [
        BudgetLine(
            pool=row.pool,
            resource=row.resource,
            limit=row.limit,
            used=row.used,
            remaining=row.remaining,
            reset=row.reset,
            observed_at=row.observed_at,
            counted_last_hour=row.counted_last_hour,
            source="ledger",
            this_repository=None if pool is None else row.pool == pool,
        )
        for row in rows
    ]
    return sorted(lines, key=lambda line: (line.this_repository is False, line.pool, line.resource))


def rate_limit_budget(body: Any, pool: str, now: float) -> list[BudgetLine]:
    """``GET /rate_limit``'s resources as budget lines (advisory: it has misreported GraphQL)."""
    resources = body.get("resources") if isinstance(body, dict) else None
    if not isinstance(resources, dict):
        return []
    lines = []
    for resource in sorted(resources):
        entry = resources[resource]
        if not isinstance(entry, dict):
            continue
        lines.append(
            BudgetLine(
                pool=pool,
                resource=str(resource),
                limit=_int(entry.get("limit")),
                used=_int(entry.get("used")),
                remaining=_int(entry.get("remaining")),
                reset=float(entry["reset"]) if _int(entry.get("reset")) is not None else None,
                observed_at=now,
                counted_last_hour=0,
                source="rate_limit",
            )
        )
    return lines


def budget_check(line: BudgetLine, now: float) -> Check:
    name = f"budget {line.pool} {line.resource}"
    limit = line.limit if line.limit is not None else "?"
    used = line.used if line.used is not None else "?"
    text = f"used {used} / {limit}"
    if line.reset is not None:
        if line.reset > now:
            text += f", resets {local_time(line.reset)} (in {format_duration(line.reset - now)})"
        else:
            text += f" before the reset at {local_time(line.reset)} (a new window since)"
    if line.source == "rate_limit":
        text += "; from GET /rate_limit (free, advisory: it has misreported GraphQL)"
    else:
        seen = _seen(now - line.observed_at) if line.observed_at else "no rate headers seen yet"
        text += f"; {seen}, {line.counted_last_hour} counted here in the last hour"
    if line.this_repository is False:
        text += " (another repository's pool)"
    current = line.reset is None or line.reset > now
    if current and line.remaining == 0:
        return Check(name, "warn", text + ": spent", "nothing to do: calls wait for the reset (commands exit 3)")
    if current and line.limit and line.used is not None and line.used >= BUDGET_WARN_SHARE * line.limit:
        return Check(name, "warn", text, "the allowance is nearly spent: look for what else spends it")
    return Check(name, "ok", text)


def project(
    branches: Sequence[str],
    discovery: float,
    rounds: Mapping[str, Mapping[str, Any]],
    budget: Sequence[BudgetLine],
) -> Projection:
    """branches × rounds per hour × what a round costs, from this clone's own last measured rounds.

    Only a round that took the branch in (outcome ``taken-in``) measures what a
    discovery round costs; a round that found itself within the interval, was
    deferred to another host or was paused spent nothing and says nothing. A
    branch without a measured round is costed at the mean of those with one.
    """
    rounds_per_hour = 3600.0 / discovery if discovery > 0 else 0.0
    measured = [b for b in branches if (rounds.get(b) or {}).get("outcome") == "taken-in"]
    per_round: dict[str, float] = {}
    for resource, key in (("core", "counted"), ("graphql", "points")):
        figures = [float((rounds[b] or {}).get(key) or 0) for b in measured]
        per_round[resource] = sum(figures) / len(figures) if figures else 0.0
    hourly = {r: len(branches) * rounds_per_hour * per_round[r] for r in PROJECTED_RESOURCES}
    limit: dict[str, int] = {}
    limit_source: dict[str, str] = {}
    for resource in PROJECTED_RESOURCES:
        known = [b for b in budget if b.this_repository is True and b.resource == resource and b.limit]
        if known:
            limit[resource] = int(known[0].limit or DEFAULT_LIMIT)
            limit_source[resource] = known[0].source
        else:
            limit[resource] = DEFAULT_LIMIT
            limit_source[resource] = "assumed"
    share = {r: hourly[r] / limit[r] if limit[r] else 0.0 for r in PROJECTED_RESOURCES}
    return Projection(
        branches=len(branches),
        discovery=discovery,
        rounds_per_hour=rounds_per_hour,
        measured=tuple(measured),
        per_round=per_round,
        calls_per_round=sum(per_round.values()),
        hourly=hourly,
        limit=limit,
        limit_source=limit_source,
        share=share,
    )


def projection_checks(p: Projection) -> list[Check]:
    if not p.branches:
        return [Check("projected hourly spend", "warn", "no branch is taken in", "set sluice.branch")]
    if not p.measured:
        return [
            Check(
                "projected hourly spend",
                "ok",
                "no measured round yet on this clone",
                "run `git sluice intake` once, then git sluice doctor again, to measure a round",
            )
        ]
    checks = []
    unit = {"core": "counted calls", "graphql": "points"}
    for resource in PROJECTED_RESOURCES:
        limit_note = {"ledger": "", "rate_limit": " (from GET /rate_limit)", "assumed": " (assumed: GitHub's usual)"}
        found = (
            f"{p.branches} branch{'es' if p.branches != 1 else ''} × {p.rounds_per_hour:g} rounds/h × "
            f"{p.per_round[resource]:g} {unit[resource]}/round = {p.hourly[resource]:g}/h, "
            f"{p.share[resource]:.0%} of {p.limit[resource]}{limit_note[p.limit_source[resource]]}"
        )
        name = f"projected hourly spend {resource}"
        if p.share[resource] > PROJECTION_WARN_SHARE:
            checks.append(
                Check(
                    name,
                    "warn",
                    found,
                    f"above {PROJECTION_WARN_SHARE:.0%} of the allowance: lengthen sluice.discovery, take in "
                    "fewer branches, or find what makes each round read so much",
                )
            )
        else:
            checks.append(Check(name, "ok", found))
    return checks


def _seen(ago: float) -> str:
    return "seen just now" if ago < 1 else f"seen {format_duration(ago)} ago"


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


# ================================================================ gathering (I/O)


def git_version_text() -> str | None:
    try:
        proc = gitcli.run(["version"], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def gather_hooks(repo: Any) -> list[HookState]:
    """What ``setup`` left (read-only: the setup module's own helpers and manifest)."""
    from . import setup

    directory, shared = setup.hooks_dir(repo)
    manifest = setup.load_manifest(Path(repo.common_dir) / "sluice") or {}
    states = []
    for name in setup.HOOK_NAMES:
        shipped = setup.script(name)
        path = directory / name
        exists = os.path.lexists(path)
        ours = setup.is_ours(path)
        current = ours and _read(path) == shipped
        legacy_path = path.with_name(name + setup.LEGACY_SUFFIX)
        legacy = str(legacy_path) if ours and os.path.lexists(legacy_path) else None
        legacy_runs = legacy is not None and os.access(legacy_path, os.X_OK)
        section = None
        listed = config_current = False
        for entry in manifest.get("config_hooks", []):
            if isinstance(entry, dict) and entry.get("name") == name:
                section = str(entry.get("section"))
                listed = setup.verify_config_hook(repo, name)
                config_current = _read(Path(str(entry.get("script", "")))) == shipped
        states.append(
            HookState(
                name=name,
                path=str(path),
                exists=exists,
                ours=ours,
                current=current,
                legacy=legacy,
                legacy_runs=legacy_runs,
                shared_dir=shared,
                config_section=section,
                config_listed=listed,
                config_current=config_current,
            )
        )
    return states


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def scratch_trial(remote: Any, repo: Any, host: str, clock: Clock) -> ScratchTrial:
    """Create, then delete, ``refs/sluice/doctor/<host>`` by compare-and-swap, as leases are written."""
    from ..remote.git import CasUpdate

    ref = SCRATCH_PREFIX + host
    current = repo.ref(ref)  # a leftover of an interrupted doctor, as just fetched
    oid = remote.write_record(
        f"git-sluice doctor: scratch ref of {host}\n\nHost: {host}\nNonce: {uuid.uuid4().hex}\n"
        f"Written: {int(clock.time())}\n"
    )
    try:
        (created,) = remote.push_cas([CasUpdate(ref, oid, current)])
    except SluiceError as exc:
        return ScratchTrial(ref, False, False, str(exc))
    if not created.won:
        return ScratchTrial(ref, False, False, created.reason or created.summary, refused=created.refused)
    try:
        (deleted,) = remote.push_cas([CasUpdate(ref, None, oid)])
    except SluiceError as exc:
        return ScratchTrial(ref, True, False, str(exc))
    if not deleted.won:
        return ScratchTrial(ref, True, False, deleted.reason or deleted.summary, refused=deleted.refused)
    return ScratchTrial(ref, True, True)


def _guarded(name: str, build: Callable[[], list[Check]]) -> list[Check]:
    """A check that broke is reported as a failed check, never as doctor crashing."""
    try:
        return build()
    except SluiceError as exc:
        return [Check(name, "fail", str(exc))]
    except Exception as exc:  # doctor runs when things are broken: report, don't die
        log.debug("doctor: %s failed", name, exc_info=True)
        return [Check(name, "fail", f"could not check: {type(exc).__name__}: {exc}")]


def diagnose(
    path: str | Path = ".",
    *,
    clock: Clock | None = None,
    transport: Any = None,
    store: Any = None,
) -> Diagnosis:
    """Gather every fact and build every check; no exception escapes for a broken setup."""
    from ..forge.hoststore import HostStore
    from ..repo import Repo

    clock = clock or default_clock()
    diagnosis = Diagnosis()
    checks = diagnosis.checks
    checks.append(git_version_check(git_version_text()))
    try:
        repo = Repo.discover(path)
    except SluiceError as exc:
        checks.append(Check("repository", "fail", str(exc), "run git sluice doctor inside a clone"))
        return diagnosis
    root = repo.workdir or repo.git_dir

    # --- configuration ----------------------------------------------------------
    settings: Settings | None = None
    need_branches = True
    config_failures: list[Check] = []
    try:
        settings = load_settings(root)
    except ConfigError as exc:
        config_failures.append(config_error_check(exc))
        if exc.key == "sluice.branch":
            try:  # the rest of the configuration is still worth checking
                settings = load_settings(root, need_branches=False)
                need_branches = False
            except ConfigError:
                settings = None
    except SluiceError as exc:
        config_failures.append(Check("config", "fail", str(exc)))
    if settings is not None:
        checks.extend(config_checks(settings.origins, enforce=settings.enforce))
    checks.extend(config_failures)

    own_store = store is None
    try:
        store = store or HostStore(clock=clock)
    except SluiceError as exc:
        checks.append(Check("host state", "fail", str(exc), "fix the file named above"))
        store = None
    secrets: list[str] = []
    try:
        _diagnose_with(diagnosis, repo, settings, need_branches, clock, transport, store, secrets)
    finally:
        if own_store and store is not None:
            store.close()
    return diagnosis.redacted(secrets)


@dataclass
class _Gathered:
    """What one section learned that a later one needs."""

    pool: str | None = None
    ledger_before: list[Any] = field(default_factory=list)


def _diagnose_with(
    diagnosis: Diagnosis,
    repo: Any,
    settings: Settings | None,
    need_branches: bool,
    clock: Clock,
    transport: Any,
    store: Any,
    secrets: list[str],
) -> None:
    from ..remote.git import RemoteGit

    remote_name = settings.remote if settings is not None else (repo.config_get("sluice.remote") or "origin")
    remote = RemoteGit(repo, remote_name, clock=clock) if settings is not None else None
    gathered = _Gathered()
    session = None
    token_part: list[Check] = []

    # the remote first, so the session adopts the pause notes just fetched
    remote_part: list[Check] = []
    if remote is not None and settings is not None:
        remote_part = _guarded(f"remote {remote_name}", lambda: _remote_part(remote, repo, settings, clock))

    if settings is None:
        token_part = _guarded("token", lambda: _token_without_settings(repo, secrets))
    else:
        from .session import open_session

        try:
            session = open_session(
                root_of(repo), clock=clock, need_branches=need_branches, transport=transport, store=store
            )
        except SluiceError as exc:
            token_part = _no_session(exc, settings)
    try:
        if session is not None and settings is not None:
            live = session
            token_part = _guarded("token", lambda: _token_and_access(live, settings, store, gathered, secrets))
        hooks_part = _guarded("hooks", lambda: [hook_check(state) for state in gather_hooks(repo)])
        refspec_part = _guarded(
            "fetch refspec",
            lambda: [refspec_check(remote_name, repo.config_get_all(f"remote.{remote_name}.fetch"))],
        )
        lease_part: list[Check] = []
        if settings is not None and remote is not None:
            lease_part = _guarded("lease", lambda: _lease_part(repo, remote, settings, clock))
        state_part: list[Check] = []
        if store is not None:
            pool = gathered.pool
            state_part = _guarded("pause", lambda: pause_checks(store.pauses(), clock.time(), pool))
            state_part += _guarded(
                "budget", lambda: _budget_part(diagnosis, repo, settings, session, store, gathered, clock)
            )
    finally:
        if session is not None:
            session.close()
    diagnosis.checks.extend(token_part + hooks_part + refspec_part + remote_part + lease_part + state_part)


def _remote_part(remote: Any, repo: Any, settings: Settings, clock: Clock) -> list[Check]:
    """Reachable (a fetch of refs/sluice/*), then accepting (a scratch ref created and deleted)."""
    try:
        remote.fetch()
    except SluiceError as exc:
        return remote_checks(settings.remote, str(exc), None)
    try:
        trial = scratch_trial(remote, repo, settings.host, clock)
    except Exception as exc:  # a local object-store problem, say: report it as the trial's outcome
        trial = ScratchTrial(SCRATCH_PREFIX + settings.host, False, False, f"{type(exc).__name__}: {exc}")
    return remote_checks(settings.remote, None, trial)


def _token_without_settings(repo: Any, secrets: list[str]) -> list[Check]:
    """The configuration is refused: still say whether (and where) a token is found."""
    from ..forge.auth import find_token

    api = repo.config_get("sluice.api") or DEFAULT_API
    found = find_token(api)
    if found is not None:
        secrets.append(found[0])
    return [
        token_check(found[1] if found else None, api),
        Check(
            "remote, token access, leases",
            "warn",
            "not checked: the configuration above must be fixed first",
            "fix the failed config key, then run git sluice doctor again",
        ),
    ]


def _no_session(exc: SluiceError, settings: Settings) -> list[Check]:
    from ..forge.auth import NoCredentials

    if isinstance(exc, NoCredentials):
        return [token_check(None, settings.api), access_check(settings.repository)]
    return [token_check(None, settings.api, error=str(exc)), access_check(settings.repository)]


def _token_and_access(
    session: Any, settings: Settings, store: Any, gathered: _Gathered, secrets: list[str]
) -> list[Check]:
    """Where the token came from, and one (conditional) GET of the repository with it."""
    from ..forge.auth import AppAuthError
    from ..forge.client import ForgeUnavailable

    credentials = session.credentials
    value = getattr(credentials, "value", None)
    if isinstance(value, str):
        secrets.append(value)
    token = token_check(credentials.source, settings.api)
    try:
        if store is not None:
            gathered.ledger_before = store.budget()
        gathered.pool = session.forge.pool
        owner, name = settings.repository.split("/", 1)
        answer = session.forge.get(f"repos/{owner}/{name}")
        access = access_check(
            settings.repository, status=answer.status, not_modified=answer.not_modified, source=credentials.source
        )
    except AllowanceSpent as exc:
        access = access_check(settings.repository, paused=exc)
    except ForgeUnavailable as exc:
        access = access_check(settings.repository, error=exc.reason)
    except AppAuthError as exc:
        token, access = token_check(None, settings.api, error=str(exc)), access_check(settings.repository)
    except SluiceError as exc:
        access = access_check(settings.repository, error=str(exc))
    finally:
        minted = getattr(credentials, "_token", None)  # an App's installation token, held in memory
        if isinstance(minted, str):
            secrets.append(minted)
    return [token, access]


def _lease_part(repo: Any, remote: Any, settings: Settings, clock: Clock) -> list[Check]:
    from ..remote.leases import LeaseKeeper

    keeper = LeaseKeeper.configured(repo, settings, role="step", clock=clock, remote=remote)
    return [lease_check(view) for view in keeper.read_all(list(settings.branches)).values()]


def _budget_part(
    diagnosis: Diagnosis,
    repo: Any,
    settings: Settings | None,
    session: Any,
    store: Any,
    gathered: _Gathered,
    clock: Clock,
) -> list[Check]:
    """The ledger's figures (or GET /rate_limit's, on a host that has seen nothing), then the projection."""
    from ..intake.round import RoundsLog

    pool = gathered.pool
    lines = ledger_budget(store.budget(), pool)
    knew_nothing = pool is not None and not any(row.pool == pool for row in gathered.ledger_before)
    if session is not None and knew_nothing:
        assert pool is not None
        advisory = _rate_limit_lines(session, pool, clock)
        if advisory:
            lines = advisory + [line for line in lines if line.this_repository is False]
    diagnosis.budget = lines
    checks = [budget_check(line, clock.time()) for line in lines]
    if not lines:
        checks = [Check("budget", "ok", "nothing seen yet: no call made on this host")]
    if settings is not None:
        rounds = RoundsLog(repo.sluice_dir).load()
        diagnosis.projection = project(settings.branches, settings.discovery, rounds, diagnosis.budget)
        checks += projection_checks(diagnosis.projection)
    return checks


def _rate_limit_lines(session: Any, pool: str, clock: Clock) -> list[BudgetLine]:
    """ONE ``GET /rate_limit`` (GitHub does not count it) when the ledger knows nothing of the pool."""
    try:
        answer = session.forge.get("rate_limit")
    except SluiceError as exc:
        log.info("GET /rate_limit: %s", exc)
        return []
    if answer.status != 200:
        return []
    try:
        body = answer.json()
    except ValueError:
        return []
    return rate_limit_budget(body, pool, clock.time())


def root_of(repo: Any) -> Path:
    return Path(repo.workdir or repo.git_dir)
