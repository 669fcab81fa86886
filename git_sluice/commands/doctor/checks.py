"""doctor's checks: facts in, verdicts out (no I/O, no clock: ``now`` is passed in).

Each check is data — a name, ``ok`` / ``warn`` / ``fail``, what was found and
what to do — built by a pure function from the facts :mod:`.gather` collects,
so the wording and the thresholds are tested without a network, git or store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, field
from typing import TYPE_CHECKING, Any, Literal

from ...config import KNOWN_KEYS
from ...durations import format_duration
from ...errors import AllowanceSpent, ConfigError, local_time
from ...gitcli import parse_version
from ...records import record

if TYPE_CHECKING:  # the checks are pure: facts in, verdicts out; nothing of the road is loaded
    from ...forge.gate_machine import PauseView
    from ...forge.hoststore import BudgetRow
    from ...remote.lease_record import LeaseView

Status = Literal["ok", "warn", "fail"]

REFERENCE_TRANSACTION_SINCE: tuple[int, int] = (2, 28)
PROJECTION_WARN_SHARE = 0.5
BUDGET_WARN_SHARE = 0.9
DEFAULT_LIMIT = 5000  # GitHub's hourly allowance of a user token, core and graphql alike
PROJECTED_RESOURCES: tuple[str, ...] = ("core", "graphql")
SCRATCH_PREFIX = "refs/sluice/doctor/"


# ============================================================================ data


@record(frozen=True)
class Check:
    """One line of the report."""

    name: str
    status: Status
    found: str
    advice: str = ""

    def line(self, paint: Callable[[str, str], str] | None = None) -> str:
        """``fail  name: found — advice``; ``paint(text, role)`` colours the status word (the role is the status)."""
        status = f"{self.status:<4}"
        if paint is not None:
            status = paint(self.status, self.status) + status[len(self.status):]
        text = f"{status}  {self.name}: {self.found}"
        return text + (f" — {self.advice}" if self.advice else "")

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "found": self.found, "advice": self.advice}


@record(frozen=True)
class BudgetLine:
    """One (pool, resource) allowance as doctor knows it, and where from.

    A type of its own, not :class:`~git_sluice.forge.hoststore.BudgetRow`: a
    line also comes from ``GET /rate_limit``, which has no ledger row behind
    it (no cost, no count), and says which source and whose repository it is.
    """

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


@record(frozen=True)
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
    limit_source: Mapping[str, str]  # "ledger" | "rate_limit" | "assumed" | "none" (the server reports no limit)
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


@record
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


def git_version_check(text: str | None) -> Check:
    """reference-transaction hooks (rounds after a fetch) need git >= 2.28; the rest works on older git."""
    if text is None:
        return Check("git version", "fail", "git is not installed or not on PATH", "install git (2.28 or later)")
    version = parse_version(text)
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
    from ...errors import NoRemote, UnknownKey

    key = exc.key
    if isinstance(exc, NoRemote):
        return Check("remote", "fail", "this clone has no git remote",
                     "add the remote the team shares: git remote add origin URL")
    if isinstance(exc, UnknownKey):
        hint = f"did you mean {exc.suggestion}? " if exc.suggestion else ""
        return Check(f"config {key}", "fail", f"{key} is not a git-sluice setting",
                     (f"{hint}{exc.unset}" if exc.unset.startswith("drop") else f"{hint}remove it ({exc.unset})") + (f" and set {exc.suggestion} instead" if exc.suggestion else ""))
    if key.startswith("sluice."):
        advice = f"set it to {exc.accepted} (git config --global {key} …) or remove it (git config --unset {key})"
    else:
        advice = f"expected {exc.accepted}"
    return Check(f"config {key}", "fail", f"{key}={exc.value} is refused", advice)


def token_check(source: str | None, api: str, *, error: str | None = None, app_id: str | None = None) -> Check:
    """Where the token came from; never the token. A token in the environment over a configured App is said."""
    if error is not None:
        return Check("token", "fail", error, "fix the credentials named above, then run git sluice doctor again")
    if source is None:
        from ...forge.auth import no_token_advice, token_variables, web_host

        looked = ", ".join(token_variables(api))
        return Check(
            "token",
            "fail",
            f"none found for {web_host(api)} (looked at {looked}, git credential, gh auth token, "
            "GitHub App settings)",
            no_token_advice(api),
        )
    if app_id and source in ("GH_TOKEN", "GITHUB_TOKEN"):
        return Check("token", "warn", f"from {source} (not shown), not the GitHub App of sluice.appId={app_id}",
                     f"a token in the environment wins over the App, as GH_TOKEN does in gh; unset {source} "
                     "for git-sluice to use the App")
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
        return Check(name, "fail", f"GitHub did not answer: {error}",
                     "do what the message says (docs/operations.md, \"When GitHub cannot be reached\"); "
                     "doctor shows sluice.api and where it came from above")
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


@record(frozen=True)
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
    via: str | None = None  # another program's hook runs ours (pre-commit's, a line in a husky script)
    todo: str | None = None  # what to run or add when ours does not run
    left_out: bool = False  # the config leaves it out (sluice.fetchHook false)


def hook_check(state: HookState) -> Check:
    """Installed, current, and chained to whatever hook was there before (or left out, as the config says)."""
    name = f"hook {state.name}"
    where = state.path + (" (core.hooksPath)" if state.shared_dir else "")
    if state.left_out:
        if state.ours or state.config_section is not None:
            return Check(name, "warn", f"installed at {where}, but sluice.fetchHook is false",
                         "run git sluice setup (it takes the hook back and restores what was there)")
        return Check(name, "ok", "left out (sluice.fetchHook false): a fetch runs no hook and starts no round; "
                                 "the driver's ticks and pushes start them")
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
        return Check(name, "fail", f"not installed at {where}: rounds do not start from git",
                     state.todo or "run git sluice setup")
    if not state.ours:
        return Check(
            name,
            "fail",
            f"{where} is another program's hook, not git-sluice's: rounds do not start from it",
            state.todo or "run git sluice setup (it keeps that hook and runs it first)",
        )
    if not state.current:
        return Check(name, "warn", f"{where} is an older git-sluice script", "run git sluice setup to update it")
    if state.via is not None:
        where = f"{where}, {state.via}"
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
    """git-sluice needs no fetch refspec: its rounds fetch refs/sluice/* by their own.

    The one an older setup added makes every person's fetch carry every mark
    and note (and fail when a hostile ref blocks it): a warning, fixed by setup.
    """
    from ...remote.git import LEGACY_REFSPEC

    name = "fetch refspec"
    key = f"remote.{remote}.fetch"
    if LEGACY_REFSPEC in fetch_specs:
        return Check(
            name,
            "warn",
            f"{key} has {LEGACY_REFSPEC}: every plain git fetch brings every mark and pause note",
            f"run git sluice setup (it removes the refspec an older setup added), or "
            f"git config --fixed-value --unset {key} '{LEGACY_REFSPEC}'",
        )
    return Check(name, "ok", f"{key} leaves refs/sluice/* to the rounds' own fetch")


GRAPH_REFS = 1000
"""Remote-tracking refs past which a clone without a commit-graph pays for it in every fetch."""


def commit_graph_check(refs: int, has_graph: bool) -> Check:
    """A clone with thousands of remote-tracking refs wants a commit-graph (issue 29).

    Without one, the connectivity check of every fetch that brings nothing
    (``rev-list --objects --not --all``) parses each ref tip: 0.14 s of git's
    CPU at 5,000 request branches, 0.02 s with the graph (docs/benchmarks.md,
    "Git's own upkeep"). Every round fetches, so the clone pays it each time.
    """
    name = "commit-graph"
    if has_graph:
        return Check(name, "ok", f"{refs:,} remote-tracking refs, and a commit-graph for them")
    if refs < GRAPH_REFS:
        return Check(name, "ok", f"{refs:,} remote-tracking refs: a commit-graph would save little")
    return Check(name, "warn", f"{refs:,} remote-tracking refs and no commit-graph: every fetch (each round's too) "
                               "parses each ref tip to check connectivity (0.14 s of git's CPU at 5,000)",
                 "git maintenance start (it keeps one), or once: git commit-graph write --reachable")


@record(frozen=True)
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


def lease_check(view: LeaseView) -> Check:
    """One branch's lease (a :class:`~git_sluice.remote.lease_record.LeaseView`) as this host sees it."""
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
    if view.live and view.mine:
        return Check(name, "ok", f"held by this host ({role}), written {age} ago")
    if view.live:
        return Check(name, "ok", f"held by {view.holder} ({role}), unchanged for {age} by this host's watch")
    if view.mine:
        found = f"this host's {role} mark, not renewed for {age} (lease {lease}): lapsed"
        advice = "is `git sluice drive` running here? a stopped driver's mark is taken over after a whole lease"
    else:
        found = f"{role} mark of {view.holder} unchanged for {age} (lease {lease}): lapsed"
        advice = f"the next driver or wait takes it over; check `git sluice drive` on {view.holder}"
    return Check(name, "warn", found, advice)


def pause_checks(pauses: Sequence[PauseView], now: float, pool: str | None = None) -> list[Check]:
    """Every pause on this host (:class:`~git_sluice.forge.gate_machine.PauseView`); none is one ok line."""
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
            from ...countdown import countdown_text

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


def ledger_budget(rows: Iterable[BudgetRow], pool: str | None) -> list[BudgetLine]:
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
    from ...intake.pace import NO_LIMIT_WORDS, reports_no_limit

    name = f"budget {line.pool} {line.resource}"
    if line.source == "ledger" and reports_no_limit(line.limit, line.observed_at, line.counted_last_hour):
        other = " (another repository's pool)" if line.this_repository is False else ""
        return Check(name, "ok", f"{NO_LIMIT_WORDS}; {line.counted_last_hour} counted here in the last hour{other}")
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


def pace_checks(lines: Sequence[BudgetLine], now: float) -> list[Check]:
    """The host watch's pace: a pool whose spend, projected to its reset, passes 80 % of the allowance.

    From the ledger's rate headers only (what the host already read); the
    watch stretches its tick up to 4× for it, and says so here before any
    refusal could.
    """
    from ...intake.pace import paces

    checks = []
    for pace in paces((line for line in lines if line.source == "ledger" and line.this_repository is not False), now):
        if pace.stretched:
            checks.append(Check(
                f"pace {pace.pool} {pace.resource}", "warn", pace.describe(),
                "the host is spending its allowance faster than it lasts: look for what else spends it "
                "(doctor's budget lines), or lengthen sluice.discovery",
            ))
    return checks


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
    from ...intake.pace import reports_no_limit

    for resource in PROJECTED_RESOURCES:
        known = [b for b in budget if b.this_repository is True and b.resource == resource and b.limit]
        unlimited = [b for b in budget if b.this_repository is True and b.resource == resource and b.source == "ledger"
                     and reports_no_limit(b.limit, b.observed_at, b.counted_last_hour)]
        if unlimited and not known:  # the server reports no limit: no share of one to project
            limit[resource] = 0
            limit_source[resource] = "none"
        elif known:
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
        of = ("; this server reports no limit" if p.limit_source[resource] == "none" else
              f", {p.share[resource]:.0%} of {p.limit[resource]}{limit_note[p.limit_source[resource]]}")
        found = (
            f"{p.branches} branch{'es' if p.branches != 1 else ''} × {p.rounds_per_hour:g} rounds/h × "
            f"{p.per_round[resource]:g} {unit[resource]}/round = {p.hourly[resource]:g}/h{of}"
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


def serve_check(serves: Sequence[Mapping[str, Any]]) -> Check:
    """Whether ``git sluice serve`` runs on this host, where, and what passed through it (never a failure:
    serve is optional)."""
    if not serves:
        return Check("serve", "ok", "not running (optional: the host's own tools through git-sluice, docs/serve.md)")
    parts = []
    for s in serves:
        where = " and ".join(w for w in (s.get("socket") and f"socket {s['socket']}",
                                         s.get("port") and f"port {s['port']}") if w) or "?"
        calls = s.get("calls") or {}
        total = sum(v for v in calls.values() if isinstance(v, int))
        free = sum(calls.get(k, 0) for k in ("not_modified", "kept", "shared"))
        parts.append(f"pid {s.get('pid')} on {where}, {total} calls ({free} answered without a counted call, "
                     f"{calls.get('refused', 0)} refused, {calls.get('deferred', 0)} writes deferred)")
    return Check("serve", "ok", "running: " + "; ".join(parts))


def proxy_check(api: str, env: Mapping[str, str]) -> Check:
    """Which way the calls to GitHub go: a call failing behind a proxy is the first thing to rule out."""
    from urllib.parse import urlsplit

    from ...forge.proxies import ProxySetting, redact, route

    host = urlsplit(api).hostname or api
    try:
        name, proxy = route(api, env)
    except ProxySetting as exc:
        return Check("proxy", "fail", str(exc), f"set {exc.key} to an http:// or https:// proxy, or unset it")
    if proxy is not None:
        return Check("proxy", "ok", f"calls to {host} go through {redact(proxy)} (from {name})")
    if name is not None:
        return Check("proxy", "ok", f"calls to {host} go direct: {name} lists it")
    return Check("proxy", "ok", f"calls to {host} go direct (no proxy variable set)")
