"""doctor's gathering: the I/O that collects the facts :mod:`.checks` judges.

What doctor spends, and why it may: one conditional GET of the repository
(a 304 when nothing changed, so usually free), one ``GET /rate_limit`` only
when this host's ledger knows nothing of the pool yet (GitHub does not count
it; its figures are advisory: docs/design.md#the-throttle-rules), one fetch of ``refs/sluice/*`` and
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
import uuid
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from ... import gitcli
from ...clock import Clock, default_clock
from ...config import DEFAULT_API, Settings, load_settings
from ...errors import AllowanceSpent, ConfigError, SluiceError
from ...records import record
if TYPE_CHECKING:  # at run time each is imported where it is used: doctor starts light
    import httpx

    from ...forge.hoststore import BudgetRow, HostStore
    from ...remote.git import RemoteGit
    from ...repo import Repo
    from ...runtime.session import Session

from .checks import (
    SCRATCH_PREFIX,
    BudgetLine,
    Check,
    Diagnosis,
    HookState,
    ScratchTrial,
    access_check,
    commit_graph_check,
    budget_check,
    pace_checks,
    config_checks,
    config_error_check,
    git_version_check,
    serve_check,
    hook_check,
    lease_check,
    ledger_budget,
    pause_checks,
    proxy_check,
    project,
    projection_checks,
    rate_limit_budget,
    refspec_check,
    remote_checks,
    token_check,
)

log = logging.getLogger("git_sluice")


def gather_hooks(repo: Repo, fetch_hook: bool = True) -> list[HookState]:
    """What ``setup`` left (read-only: the setup module's own helpers and manifest); ``fetch_hook``:
    ``sluice.fetchHook``, which may leave the reference-transaction hook out."""
    from .. import setup

    wanted = setup.hooks_wanted(fetch_hook)
    directory, shared = setup.hooks_dir(repo)
    manifest = setup.load_manifest(Path(repo.common_dir) / "sluice") or {}
    states = []
    for name in setup.HOOK_NAMES:
        shipped = setup.script(name)
        found = setup.locate(repo, directory, name)
        path = Path(found["path"])
        exists = os.path.lexists(path)
        ours = found["installed"]
        current = ours and _read(path) == shipped
        legacy_path = path.with_name(path.name + setup.LEGACY_SUFFIX)
        legacy = str(legacy_path) if ours and found["how"] != "line" and os.path.lexists(legacy_path) else None
        legacy_runs = legacy is not None and os.access(legacy_path, os.X_OK)
        via = {"under-pre-commit": f"run first by pre-commit's hook at {found['runner']}",
               "line": f"run by a line in {found['runner']}"}.get(str(found["how"]))
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
                via=via,
                todo=found["todo"],
                left_out=name not in wanted,
            )
        )
    return states


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def scratch_trial(remote: RemoteGit, repo: Repo, host: str, clock: Clock) -> ScratchTrial:
    """Create, then delete, ``refs/sluice/doctor/<host>`` by compare-and-swap, as leases are written."""
    from ...remote.git import CasUpdate

    ref = SCRATCH_PREFIX + host
    current = repo.ref(ref)  # a leftover of an interrupted doctor, as just fetched
    oid = remote.write_record(
        f"git-sluice doctor: scratch ref of {host}\n\nHost: {host}\nNonce: {uuid.uuid4().hex}\n"
        f"Written: {int(clock.time())}\n"
    )
    created = False
    for update in (CasUpdate(ref, oid, current), CasUpdate(ref, None, oid)):  # create, then delete
        try:
            (outcome,) = remote.push_cas([update])
        except SluiceError as exc:
            return ScratchTrial(ref, created, False, str(exc))
        if not outcome.won:
            return ScratchTrial(ref, created, False, outcome.reason or outcome.summary, refused=outcome.refused)
        created = True
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
    transport: httpx.BaseTransport | None = None,
    store: HostStore | None = None,
) -> Diagnosis:
    """Gather every fact and build every check; no exception escapes for a broken setup."""
    from ...forge.hoststore import HostStore
    from ...repo import Repo

    clock = clock or default_clock()
    diagnosis = Diagnosis()
    checks = diagnosis.checks
    checks.append(git_version_check(gitcli.version_text()))
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


@record
class _Gathered:
    """What one section learned that a later one needs."""

    pool: str | None = None
    ledger_before: list[BudgetRow] = field(default_factory=list)


def _setup_part(repo: Repo, settings: Settings | None, remote_name: str) -> list[Check]:
    """What ``setup`` leaves — the hooks (as ``sluice.fetchHook`` wants them), no fetch refspec of ours —
    and whether git's own upkeep keeps the clone's fetches cheap (a commit-graph)."""
    fetch_hook = settings.fetch_hook if settings is not None else True
    return _guarded("hooks", lambda: [hook_check(state) for state in gather_hooks(repo, fetch_hook)]) + _guarded(
        "fetch refspec", lambda: [refspec_check(remote_name, repo.config_get_all(f"remote.{remote_name}.fetch"))]
    ) + _guarded("commit-graph", lambda: [commit_graph_check(len(repo.refs_under("refs/remotes/")), _has_graph(repo))])


def _has_graph(repo: Repo) -> bool:
    """Whether the clone's objects have a commit-graph git reads (a single file or a chain)."""
    info = Path(repo.common_dir) / "objects" / "info"
    return (info / "commit-graph").is_file() or (info / "commit-graphs" / "commit-graph-chain").is_file()


def _diagnose_with(
    diagnosis: Diagnosis,
    repo: Repo,
    settings: Settings | None,
    need_branches: bool,
    clock: Clock,
    transport: httpx.BaseTransport | None,
    store: HostStore | None,
    secrets: list[str],
) -> None:
    from ...remote.git import RemoteGit

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
        from ...runtime.session import open_session

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
        setup_part = _setup_part(repo, settings, remote_name)
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
    proxy_part = [proxy_check(settings.api, os.environ)] if settings is not None else []
    serve_part = _guarded("serve", lambda: [serve_check(_serves())])
    diagnosis.checks.extend(token_part + proxy_part + setup_part + remote_part + lease_part + state_part
                            + serve_part)


def _serves() -> list[dict[str, object]]:
    from ...paths import host_state_dir
    from ...serve.record import running

    return running(host_state_dir())


def _remote_part(remote: RemoteGit, repo: Repo, settings: Settings, clock: Clock) -> list[Check]:
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


def _token_without_settings(repo: Repo, secrets: list[str]) -> list[Check]:
    """The configuration is refused: still say whether (and where) a token is found."""
    from ...forge.auth import find_token

    api = repo.config_get("sluice.api") or _derived_api(repo) or DEFAULT_API
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


def _derived_api(repo: Repo) -> str | None:
    """The API the remote's host implies, when the configuration is refused (best effort: no ssh alias lookup)."""
    from ...config import derive_api, remote_url

    remote = repo.config_get("sluice.remote") or "origin"
    url = remote_url(root_of(repo), remote)
    found = derive_api(remote, [url], lambda _alias: None) if url else None
    return found.api if found is not None else None


def _no_session(exc: SluiceError, settings: Settings) -> list[Check]:
    from ...forge.auth import NoCredentials

    if isinstance(exc, NoCredentials):
        return [token_check(None, settings.api), access_check(settings.repository)]
    return [token_check(None, settings.api, error=str(exc)), access_check(settings.repository)]


def _token_and_access(
    session: Session, settings: Settings, store: HostStore | None, gathered: _Gathered, secrets: list[str]
) -> list[Check]:
    """Where the token came from, and one (conditional) GET of the repository with it."""
    from ...forge.auth import AppAuthError
    from ...errors import CredentialsRefused
    from ...forge.client import ForgeUnavailable

    credentials = session.credentials
    value = getattr(credentials, "value", None)
    if isinstance(value, str):
        secrets.append(value)
    token = token_check(credentials.source, settings.api, app_id=settings.app_id)
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
    except CredentialsRefused:  # GET /user, asked to name the pool, was refused: the token itself is bad
        access = access_check(settings.repository, status=401, source=credentials.source)
    except SluiceError as exc:
        access = access_check(settings.repository, error=str(exc))
    finally:
        minted = getattr(credentials, "_token", None)  # an App's installation token, held in memory
        if isinstance(minted, str):
            secrets.append(minted)
    return [token, access, *_shared_token_check(credentials)]


def _shared_token_check(credentials: object) -> list[Check]:
    """An App's token stays with git's credential-cache daemon after doctor exits: say so, and how to end it.

    Doctor shares the host's token as every other command does (a token of its own would make the
    host's kept answers its 200s, counted); what outlives it is said rather than left unsaid (issue 31).
    """
    shared = getattr(credentials, "shared", None)
    socket = getattr(shared, "socket", None)
    if not isinstance(socket, Path) or not socket.exists() or getattr(shared, "_broken", False):
        return []
    return [Check(
        "token sharing", "ok",
        f"the App's installation token is held in memory by git's credential-cache daemon on {socket} "
        "for this host's git-sluice processes, up to an hour after it was minted",
        f"git credential-cache --socket {socket} exit drops it now (the next command mints another)",
    )]


def _lease_part(repo: Repo, remote: RemoteGit, settings: Settings, clock: Clock) -> list[Check]:
    from ...remote.lease_keeper import LeaseKeeper

    keeper = LeaseKeeper.configured(repo, settings, role="step", clock=clock, remote=remote)
    return [lease_check(view) for view in keeper.read_all(list(settings.branches)).values()]


def _budget_part(
    diagnosis: Diagnosis,
    repo: Repo,
    settings: Settings | None,
    session: Session | None,
    store: HostStore,
    gathered: _Gathered,
    clock: Clock,
) -> list[Check]:
    """The ledger's figures (or GET /rate_limit's, on a host that has seen nothing), then the projection."""
    from ...intake.report import RoundsLog

    pool = gathered.pool
    lines = ledger_budget(store.budget(), pool)
    knew_nothing = pool is not None and not any(row.pool == pool for row in gathered.ledger_before)
    if session is not None and knew_nothing:
        assert pool is not None
        advisory = _rate_limit_lines(session, pool, clock)
        if advisory:
            lines = advisory + [line for line in lines if line.this_repository is False]
    diagnosis.budget = lines
    checks = [budget_check(line, clock.time()) for line in lines] + pace_checks(lines, clock.time())
    if not lines:
        checks = [Check("budget", "ok", "nothing seen yet: no call made on this host")]
    if settings is not None:
        rounds = RoundsLog(repo.sluice_dir).load()
        diagnosis.projection = project(settings.branches, settings.discovery, rounds, diagnosis.budget)
        checks += projection_checks(diagnosis.projection)
    return checks


def _rate_limit_lines(session: Session, pool: str, clock: Clock) -> list[BudgetLine]:
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


def root_of(repo: Repo) -> Path:
    return Path(repo.workdir or repo.git_dir)
