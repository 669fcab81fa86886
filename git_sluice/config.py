"""git config -> validated :class:`Settings`, refused before any call when wrong.

git-sluice is configured with git config at any level (system, global, local,
worktree, ``git -c``): the allowance is the host's, so ``--global`` is the usual
home, and a repository can override it. Everything is read with one
``git config --get-regexp`` (plus the remote's URL and its remote-tracking refs)
run locally: reading the configuration never touches the network.

Every bad value raises :class:`~git_sluice.errors.ConfigError` (exit 2) naming
the key, the value and the accepted form, because a command that guessed would
spend the shared allowance on the wrong thing. Unknown ``sluice.*`` keys are
refused too, listing the known ones: a typo such as ``sluice.discovry`` would
otherwise leave the 60 s default silently in force.

Test-only setting: the environment variable ``GIT_SLUICE_TEST_MIN_DISCOVERY``
(seconds, or any duration form) lowers the 10 s floor of ``sluice.discovery``
and ``sluice.lease`` so compressed-time tests and the benchmark can run rounds
a fraction of a second apart. It is never meant for real use: the floor exists
because a shorter discovery interval spends calls no one needs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlsplit

from .durations import ACCEPTED_FORM as DURATION_FORM
from .durations import parse_duration
from . import gitcli
from .errors import ConfigError, NoRemote, NotARepository, SluiceError, UnknownKey
from .records import record
from .reffiles import RefFiles

KNOWN_KEYS: tuple[str, ...] = (
    "sluice.remote",
    "sluice.branch",
    "sluice.discovery",
    "sluice.lease",
    "sluice.host",
    "sluice.repository",
    "sluice.api",
    "sluice.graphql",
    "sluice.appId",
    "sluice.appKeyFile",
    "sluice.installation",
    "sluice.enforce",
    "sluice.writeRate",
    "sluice.writeBurst",
    "sluice.writePatience",
    "sluice.graphqlWindow",
    "sluice.fetchHook",
)
"""Every ``sluice.*`` key git-sluice reads (``docs`` are checked against it)."""

MULTI_KEYS = frozenset({"sluice.branch"})

TEST_MIN_DISCOVERY_ENV = "GIT_SLUICE_TEST_MIN_DISCOVERY"
MIN_INTERVAL = 10.0
MIN_LEASE = 60.0
"""Twice one forge call's whole deadline (30 s): a holder renews at a third of its lease and stops
starting calls one deadline before the end, so a shorter lease would leave it no time to take in
(issue #14, point 5). The test-only floor lowers it like the discovery floor."""
DEFAULT_DISCOVERY = 60.0
DEFAULT_LEASE = 300.0
DEFAULT_API = "https://api.github.com"
DEFAULT_WRITE_PATIENCE = 30.0
"""How long a paced write waits for its slot before it is answered "come back at" instead."""
MAX_WRITE_PATIENCE = 3600.0
DEFAULT_GRAPHQL_WINDOW = 30.0
"""Identical GraphQL queries of one token within this long are answered once (``serve``; Tower's own fix)."""
MAX_GRAPHQL_WINDOW = 3600.0
DEFAULT_REMOTE = "origin"

_CANONICAL = {key.lower(): key for key in KNOWN_KEYS}
_OWNER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_HOST = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,62}$")
_DIGITS = re.compile(r"^[0-9]{1,20}$")
_TRUE = {"true", "yes", "on"}
_FALSE = {"false", "no", "off", ""}
_UNSET = "(unset)"


@record(frozen=True)
class Settings:
    """What every command runs with; built only by :func:`load_settings`."""

    remote: str
    branches: tuple[str, ...]
    discovery: float
    lease: float
    host: str
    repository: str
    api: str
    graphql: str
    app_id: str | None
    app_key_file: str | None
    installation: str | None
    enforce: bool
    origins: Mapping[str, tuple[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    write_rate: float | None = None
    """``sluice.writeRate``: content-creating writes an hour a pool is admitted (with ``write_burst``)."""
    write_burst: int | None = None
    write_patience: float = DEFAULT_WRITE_PATIENCE
    graphql_window: float = DEFAULT_GRAPHQL_WINDOW
    fetch_hook: bool = True
    """``sluice.fetchHook``: whether setup installs the reference-transaction hook (rounds after a fetch)."""
    remote_url: str = ""
    """``remote.<remote>.url`` as configured, credentials removed (:func:`redact_url`): what names the
    remote in this host's state, read with the settings so nothing reads the config again."""

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.repository.split("/", 1)[1]


@record(frozen=True)
class _Value:
    value: str | None  # None: the key is present without "=" (git's boolean true)
    origin: str


# --------------------------------------------------------------------------- URLs


def redact_url(url: str) -> str:
    """The URL without any user:password part, so no credential reaches a message."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable URL)"
    if parts.scheme and "@" in parts.netloc:
        host = parts.netloc.rsplit("@", 1)[1]
        return parts._replace(netloc=f"***@{host}").geturl()
    return url


def repository_from_url(url: str) -> str | None:
    """``owner/name`` named by a git remote URL, or None when it names none.

    Accepts https/http, ``ssh://``, ``git://`` and scp-like ``git@host:o/r``,
    with or without ``.git`` and a trailing slash; any host, so GitHub
    Enterprise remotes work. Local paths and deeper paths name no repository.
    """
    text = url.strip()
    if not text:
        return None
    if "://" in text:
        try:
            parts = urlsplit(text)
        except ValueError:
            return None
        if parts.scheme.lower() not in {"https", "http", "ssh", "git", "git+ssh", "ssh+git"}:
            return None
        if not parts.hostname:
            return None
        path = parts.path
    else:
        scp = re.match(r"^(?:[^@/:]+@)?(?P<host>[^:/]+):(?P<path>.+)$", text)
        if scp is None:
            return None
        path = scp.group("path")
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    pieces = path.split("/")
    if len(pieces) != 2:
        return None
    owner, name = pieces
    if not _OWNER.match(owner) or not _NAME.match(name) or name in {".", ".."}:
        return None
    return f"{owner}/{name}"


def is_loopback_url(url: str) -> bool:
    """True when the URL's host is this machine: 127.0.0.0/8, ::1, or exactly ``localhost``.

    A name that merely ends in ``.localhost`` is not: it is resolved like any
    other name, and a token sent over plain http to it could leave the machine.
    """
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        import ipaddress

        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def graphql_from_api(api: str) -> str:
    """GitHub's GraphQL endpoint for a REST base: github.com, Enterprise, or anything else."""
    base = api.rstrip("/")
    if base == DEFAULT_API:
        return f"{DEFAULT_API}/graphql"
    if base.endswith("/api/v3"):
        return base[: -len("/v3")] + "/graphql"
    return base + "/graphql"


GITHUB_HOST = "github.com"
_HOST_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$")
_SCP = re.compile(r"^(?:[^@/:]+@)?(?P<host>\[[^\]/]+\]|[^:/\[\]]+):(?P<path>.*)$")


@record(frozen=True)
class RemoteHost:
    """The server a remote URL names: how git reaches it (``https``, ``http``, ``ssh``, ``git``), host, port."""

    transport: str
    host: str
    port: int | None = None


def remote_host(url: str) -> RemoteHost | None:
    """The host a git remote URL names; None for a local path, ``file://`` or a name git would not reach.

    https/http keep their port (the web server's is the API's); ssh's and
    git's port is their daemon's, not the API's, so it is not kept.
    """
    text = url.strip()
    if "://" in text:
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError:
            return None
        scheme = parts.scheme.lower()
        kinds = {"https": "https", "http": "http", "ssh": "ssh", "git+ssh": "ssh", "ssh+git": "ssh", "git": "git"}
        if scheme not in kinds or not parts.hostname:
            return None
        host, transport = parts.hostname, kinds[scheme]
        kept_port = port if transport in {"https", "http"} else None
    else:
        scp = _SCP.match(text)
        if scp is None or len(scp.group("host")) < 2:  # "C:\\…" is a Windows path, not a host
            return None
        host, transport, kept_port = scp.group("host"), "ssh", None
    host = host.strip("[]").rstrip(".").lower()
    if not _HOST_NAME.match(host) and not _is_address(host):
        return None
    return RemoteHost(transport, host, kept_port)


def _is_address(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def api_for_host(where: RemoteHost) -> tuple[str, str]:
    """(REST base, GraphQL endpoint) of the GitHub that ``where`` is, as gh derives them.

    github.com (and any of its subdomains, e.g. ``ssh.github.com``):
    ``https://api.github.com``. GHE.com (``TENANT.ghe.com``):
    ``https://api.TENANT.ghe.com``. Any other host is GitHub Enterprise
    Server: ``https://HOST/api/v3`` and ``https://HOST/api/graphql``, with the
    https remote's port; plain http only for a loopback host (a token never
    crosses a network in clear text).
    """
    host = where.host
    if host == GITHUB_HOST or host.endswith("." + GITHUB_HOST):
        return DEFAULT_API, f"{DEFAULT_API}/graphql"
    if host.endswith(".ghe.com"):
        base = f"https://api.{host.removeprefix('api.')}"
        return base, f"{base}/graphql"
    scheme = "http" if where.transport == "http" and is_loopback_url(f"http://{_bracketed(host)}/") else "https"
    port = where.port if where.transport == scheme else None
    if port == (443 if scheme == "https" else 80):
        port = None
    origin = f"{scheme}://{_bracketed(host)}" + (f":{port}" if port is not None else "")
    return f"{origin}/api/v3", f"{origin}/api/graphql"


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _check_endpoint(key: str, raw: str) -> str:
    """An API URL git-sluice may send a token to: https, or http on loopback only."""
    shown = redact_url(raw)
    form = "an https:// URL (plain http:// only for 127.0.0.0/8, ::1 or localhost)"
    try:
        parts = urlsplit(raw.strip())
    except ValueError:
        raise ConfigError(key, shown, form) from None
    scheme = parts.scheme.lower()
    if scheme not in {"https", "http"} or not parts.hostname:
        raise ConfigError(key, shown, form)
    if "@" in parts.netloc:
        raise ConfigError(key, shown, form + " without credentials in it (tokens never go in config)")
    if parts.query or parts.fragment:
        raise ConfigError(key, shown, form + " without a query or fragment")
    if scheme == "http" and not is_loopback_url(raw):
        raise ConfigError(key, shown, form)
    return raw.strip().rstrip("/")


# ----------------------------------------------------------------------- git I/O


def _git(repo_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return gitcli.run(args, cwd=repo_dir)
    except FileNotFoundError:
        raise SluiceError("git is not installed or not on PATH") from None


_CONFIG_READ = ("config", "--show-origin", "--show-scope", "-z", "--get-regexp",
                r"^(sluice\..*|remote\..*\.url|url\..*\.insteadof)$")
_REFS_READ = ("for-each-ref", "--format=%(refname)%00%(symref)", "refs/remotes/")


def _start(repo_dir: Path, args: tuple[str, ...]) -> gitcli.Started:
    try:
        return gitcli.start(args, cwd=repo_dir)
    except FileNotFoundError:
        raise SluiceError("git is not installed or not on PATH") from None


_Config = tuple[dict[str, list[_Value]], dict[str, str], bool]

COMMAND_LINE = "the command line: git -c or GIT_CONFIG_*"
"""Where a value given by ``git -c`` (or ``GIT_CONFIG_COUNT`` / ``GIT_CONFIG_PARAMETERS``) comes from."""


def config_origin(scope: str, origin: str) -> str:
    """Where a value was set, as a person reads it: ``local file:.git/config``, ``the command line: git -c or GIT_CONFIG_*``.

    git's own ``--show-scope --show-origin`` says "command" and "command line:"
    for a ``-c`` value: put side by side that read "command command line:" (issue 31).
    """
    if scope == "command" or origin.startswith("command line:"):
        return COMMAND_LINE
    return f"{scope} {origin}".strip()


def _read_config(repo_dir: Path, started: gitcli.Started | None = None) -> _Config:
    """sluice.* values (in git's order), every remote's URL, and whether any ``url.*.insteadOf`` rewrites
    one, in one git call (``started``: already running)."""
    proc = (started or _start(repo_dir, _CONFIG_READ)).result()
    if proc.returncode not in (0, 1):
        message = proc.stderr.strip().splitlines()
        raise ConfigError(
            "git config",
            "unreadable",
            "a readable configuration (" + (message[0] if message else f"exit {proc.returncode}") + ")",
        )
    sluice: dict[str, list[_Value]] = {}
    remotes: dict[str, str] = {}
    rewrites = False
    fields = proc.stdout.split("\0")
    for i in range(0, len(fields) - 2, 3):
        scope, origin, entry = fields[i], fields[i + 1], fields[i + 2]
        if "\n" in entry:
            key, value = entry.split("\n", 1)
            parsed: str | None = value
        else:
            key, parsed = entry, None
        where = config_origin(scope, origin)
        lowered = key.lower()
        if lowered.startswith("sluice."):
            sluice.setdefault(lowered, []).append(_Value(parsed, where))
        elif lowered.startswith("remote.") and lowered.endswith(".url"):
            remotes[key[len("remote.") : -len(".url")]] = parsed or ""
        elif lowered.startswith("url.") and lowered.endswith(".insteadof"):
            rewrites = True
    return sluice, remotes, rewrites


def _remote_refs(repo_dir: Path, started: gitcli.Started | None = None) -> list[tuple[str, str]]:
    """Every remote-tracking ref with its symref target (one local git call)."""
    proc = (started or _start(repo_dir, _REFS_READ)).result()
    if proc.returncode != 0:
        message = proc.stderr.strip()
        raise NotARepository(repo_dir, message)
    refs = []
    for line in proc.stdout.splitlines():
        refname, _, symref = line.partition("\0")
        refs.append((refname, symref))
    return refs


def _tracking(refs: list[tuple[str, str]], remote: str) -> tuple[list[str], str | None]:
    """The remote-tracking branches of ``remote`` and where its HEAD points, if anywhere."""
    prefix = f"refs/remotes/{remote}/"
    branches: list[str] = []
    head: str | None = None
    for refname, symref in refs:
        if not refname.startswith(prefix):
            continue
        short = refname[len(prefix) :]
        if short == "HEAD":
            if symref.startswith(prefix):
                head = symref[len(prefix) :]
            continue
        branches.append(short)
    return branches, head


def _remote_url(repo_dir: Path, remote: str, raw: str) -> str:
    """The remote's URL after ``url.*.insteadOf`` rewriting (no network)."""
    proc = _git(repo_dir, "ls-remote", "--get-url", remote)
    if proc.returncode == 0:
        url = proc.stdout.strip()
        if url:
            return url
    return raw


# -------------------------------------------------------------------- validation


def _floor() -> float:
    raw = os.environ.get(TEST_MIN_DISCOVERY_ENV)
    if raw is None or raw.strip() == "":
        return MIN_INTERVAL
    try:
        value = parse_duration(raw)
    except ValueError:
        raise ConfigError(TEST_MIN_DISCOVERY_ENV, raw, f"a duration ({DURATION_FORM}); test-only") from None
    return min(value, MIN_INTERVAL) if value > 0 else MIN_INTERVAL


def _seconds_text(value: float) -> str:
    return f"{int(value)}s" if value == int(value) else f"{value:g}s"


def _duration(key: str, raw: str | None, floor: float, ceiling: float | None = None) -> float:
    if ceiling is None:
        form = f"a duration of at least {_seconds_text(floor)} (90s, 5m, 1h or seconds)"
    else:
        form = f"a duration from {_seconds_text(floor)} to {_seconds_text(ceiling)} (30s, 2m or seconds)"
    if raw is None:
        raise ConfigError(key, "(no value)", form)
    try:
        value = parse_duration(raw)
    except ValueError:
        raise ConfigError(key, raw, form) from None
    if value < floor or (ceiling is not None and value > ceiling):
        raise ConfigError(key, raw, form)
    return value


def _flag(values: dict[str, list[_Value]], origins: _Origins, key: str) -> bool:
    """A boolean key, true when unset (``sluice.enforce``, ``sluice.fetchHook``)."""
    given = _last(values, key)
    value = True if given is None else _git_bool(key, given.value)
    _origin(origins, key, "true" if value else "false", given)
    return value


def _git_bool(key: str, raw: str | None) -> bool:
    if raw is None:
        return True
    text = raw.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if re.fullmatch(r"[+-]?[0-9]+", text):
        return int(text) != 0
    raise ConfigError(key, raw, "a git boolean (true/false, yes/no, on/off, 1/0)")


def _text(key: str, raw: str | None, form: str) -> str:
    if raw is None or not raw.strip():
        raise ConfigError(key, "(no value)" if raw is None else raw, form)
    return raw.strip()


def sanitise_host(name: str) -> str:
    """A host name usable in lease trailers and pause notes: ``[A-Za-z0-9._-]``, 63 at most."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name.strip())
    cleaned = cleaned.lstrip(".-")[:63].rstrip(".-")
    return cleaned or "localhost"


def _branch_name(raw: str | None) -> str:
    form = "a branch name of the remote (e.g. main), one per sluice.branch value"
    text = _text("sluice.branch", raw, form)
    if text.startswith("refs/heads/"):
        text = text[len("refs/heads/") :]
    if text.startswith("-") or any(c.isspace() or c in "~^:?*[\\" for c in text) or ".." in text:
        raise ConfigError("sluice.branch", raw, form)
    return text


def _last(values: dict[str, list[_Value]], key: str) -> _Value | None:
    found = values.get(key.lower())
    return found[-1] if found else None


_Read = tuple[dict[str, list[_Value]], dict[str, str], bool, list[tuple[str, str]]]
_ReadOnce = dict[str, _Read]
_read_once: _ReadOnce | None = None


@contextlib.contextmanager
def read_once() -> Iterator[None]:
    """Within this block, git's config and remote-tracking refs are read once per repository.

    The hook runner reads the settings for its filter, again per round and
    again to open the round's session: three reads, six git processes, for a
    process that lives a few seconds (issue 15). Inside the block the first
    read is kept; validation still runs for every caller. Long-lived
    processes do not use it, so a changed config is seen by their next read.
    """
    global _read_once
    outer = _read_once
    if outer is None:
        _read_once = {}
    try:
        yield
    finally:
        _read_once = outer


def _files_remote_refs(refs: RefFiles) -> list[tuple[str, str]]:
    """What :data:`_REFS_READ` lists, read from the ref files of a repository already found."""
    return [(name, target or "") for name, target in refs.listing("refs/remotes/")]


def _read_repository(root: Path, refs: RefFiles | None = None) -> _Read:
    key = str(root)
    if _read_once is not None and key in _read_once:
        values, remote_urls, rewrites, remote_refs = _read_once[key]
        return dict(values), dict(remote_urls), rewrites, list(remote_refs)
    if refs is not None:  # the repository is found already: its remote-tracking refs cost no git (issue 15)
        values, remote_urls, rewrites = _read_config(root)
        remote_refs = _files_remote_refs(refs)
    else:
        # the two gits run side by side (issue 15); their answers are read in this order
        config = _start(root, _CONFIG_READ)
        listing = _start(root, _REFS_READ)
        try:
            values, remote_urls, rewrites = _read_config(root, config)  # first: a broken config file is a config error
        finally:
            listing.result()  # reaped whatever the config said
        remote_refs = _remote_refs(root, listing)  # also proves this is a repository
    if _read_once is not None:
        _read_once[key] = (dict(values), dict(remote_urls), rewrites, list(remote_refs))
    return values, remote_urls, rewrites, remote_refs


def remote_url(repo_dir: Path | str, remote: str) -> str | None:
    """``remote.<remote>.url`` from the same read as the settings (inside :func:`read_once`, no git at all)."""
    try:
        _, remote_urls, _, _ = _read_repository(Path(repo_dir))
    except SluiceError:
        return None
    return remote_urls.get(remote)


def load_settings(repo_dir: Path | str, *, need_branches: bool = True, refs: RefFiles | None = None) -> Settings:
    """Read and validate every ``sluice.*`` setting for the repository at ``repo_dir``.

    ``refs``: the ref files of the repository, found already (a session's
    :class:`~.repo.Repo`): its remote-tracking refs are read from them
    instead of by a ``git for-each-ref``.

    With ``need_branches=False`` (commands that take no branch in, such as
    ``git sluice api``) an undeterminable default branch is not an error and
    configured branches are not checked against the remote-tracking refs.

    The reads (git, the environment, the host name) are here; what each key
    means is decided by the pure ``_choose_*`` functions, in the order their
    errors are reported.
    """
    root = Path(repo_dir)
    values, remote_urls, rewrites, remote_refs = _read_repository(root, refs)
    _single_valued(values)
    origins: _Origins = {}
    floor = _floor()
    remote = _choose_remote(values, origins, remote_urls)
    lease_floor = MIN_LEASE if floor == MIN_INTERVAL and not os.environ.get(TEST_MIN_DISCOVERY_ENV, "").strip() else floor
    discovery, lease = _choose_intervals(values, origins, floor, lease_floor)
    host = _choose_host(values, origins, _this_host)
    rewritten = _once(lambda: _remote_url(root, remote, remote_urls[remote]) if rewrites else remote_urls[remote])
    repository = _choose_repository(values, origins, remote, remote_urls, rewritten)
    api, graphql = _choose_endpoints(values, origins, lambda: derive_api(
        remote, [rewritten(), remote_urls[remote]], _ssh_hostname))
    enforce, fetch_hook = (_flag(values, origins, key) for key in ("sluice.enforce", "sluice.fetchHook"))
    app_id, app_key_file, installation = _app_settings(root, values)
    for key, value in (("sluice.appId", app_id), ("sluice.appKeyFile", app_key_file),
                       ("sluice.installation", installation)):
        _origin(origins, key, value if value is not None else "", _last(values, key))
    write_rate, write_burst, write_patience, graphql_window = _choose_pacing(values, origins)
    branch_values = values.get("sluice.branch", [])
    branches = _branches(_tracking(remote_refs, remote), remote, branch_values, need_branches)
    _origin(origins, "sluice.branch", ", ".join(branches), branch_values[-1] if branch_values else None)
    return Settings(
        remote=remote, branches=branches, discovery=discovery, lease=lease, host=host, repository=repository,
        api=api, graphql=graphql, app_id=app_id, app_key_file=app_key_file, installation=installation,
        enforce=enforce, fetch_hook=fetch_hook, origins=MappingProxyType(origins),
        write_rate=write_rate, write_burst=write_burst, write_patience=write_patience, graphql_window=graphql_window,
        remote_url=redact_url(remote_urls[remote]) if remote_urls.get(remote) else "",
    )


_Origins = dict[str, tuple[str, str]]
"""Per key: the value as shown, and where it was set ("default" when it was not)."""


def _origin(origins: _Origins, key: str, shown: str, given: _Value | None) -> None:
    origins[key] = (shown, given.origin if given is not None else "default")


def _this_host() -> str:
    import socket  # only when sluice.host is unset

    return sanitise_host(socket.gethostname())


def _single_valued(values: dict[str, list[_Value]]) -> None:
    """Refuse an unknown key; keep only the last value of a single-valued key (git's own rule)."""
    unknown = sorted(key for key in values if key not in _CANONICAL)
    if unknown:
        # the value is not echoed: an unknown key is where a pasted token would land
        raise UnknownKey(unknown[0], KNOWN_KEYS, values[unknown[0]][-1].origin)
    for key, found in values.items():
        if len(found) > 1 and _CANONICAL[key] not in MULTI_KEYS:
            values[key] = [found[-1]]


def _choose_remote(values: dict[str, list[_Value]], origins: _Origins, remote_urls: dict[str, str]) -> str:
    """``sluice.remote``: a configured git remote; none at all is :class:`NoRemote`."""
    given = _last(values, "sluice.remote")
    remote = DEFAULT_REMOTE if given is None else _text("sluice.remote", given.value, "the name of a git remote")
    if not remote_urls and given is None:
        raise NoRemote()
    if remote not in remote_urls:
        known = ", ".join(sorted(remote_urls)) or "none configured"
        raise ConfigError("sluice.remote", remote, f"the name of a configured git remote (known: {known})")
    _origin(origins, "sluice.remote", remote, given)
    return remote


def _choose_pacing(values: dict[str, list[_Value]], origins: _Origins,
                   ) -> tuple[float | None, int | None, float, float]:
    """The writes' admission (``sluice.writeRate`` a hour with ``sluice.writeBurst``, both or neither),
    a paced write's patience, and ``serve``'s window for identical GraphQL queries."""
    rate_given, burst_given = _last(values, "sluice.writeRate"), _last(values, "sluice.writeBurst")
    rate = burst = None
    if rate_given is not None:
        rate = _per_hour("sluice.writeRate", rate_given.value)
    if burst_given is not None:
        burst = _count("sluice.writeBurst", burst_given.value, "a whole number of writes from 1 to 10000")
    if (rate is None) != (burst is None):
        missing = "sluice.writeBurst" if burst is None else "sluice.writeRate"
        raise ConfigError(missing, _UNSET, "set with the other: an admission is a rate and a burst "
                          "(sluice.writeRate 300/h, sluice.writeBurst 30)")
    _origin(origins, "sluice.writeRate", f"{rate:g}/h" if rate is not None else "", rate_given)
    _origin(origins, "sluice.writeBurst", str(burst) if burst is not None else "", burst_given)
    given = _last(values, "sluice.writePatience")
    patience = DEFAULT_WRITE_PATIENCE if given is None else _duration(
        "sluice.writePatience", given.value, 0.0, MAX_WRITE_PATIENCE)
    _origin(origins, "sluice.writePatience", _seconds_text(patience), given)
    given = _last(values, "sluice.graphqlWindow")
    window = DEFAULT_GRAPHQL_WINDOW if given is None else _duration(
        "sluice.graphqlWindow", given.value, 0.0, MAX_GRAPHQL_WINDOW)
    _origin(origins, "sluice.graphqlWindow", _seconds_text(window), given)
    return rate, burst, patience, window


def _per_hour(key: str, raw: str | None) -> float:
    """A rate an hour: ``300``, ``300/h``, ``5/m`` or ``5/min`` (at most 100,000 an hour)."""
    form = "writes an hour, more than 0 and at most 100000 (300, 300/h, 5/min)"
    text = (raw or "").strip().lower().replace(" ", "")
    factor = 1.0
    for suffix, mult in (("/hour", 1.0), ("/h", 1.0), ("/min", 60.0), ("/m", 60.0)):
        if text.endswith(suffix):
            text, factor = text[: -len(suffix)], mult
            break
    try:
        value = float(text) * factor
    except ValueError:
        raise ConfigError(key, raw or "(no value)", form) from None
    if not 0 < value <= 100_000 or value != value:
        raise ConfigError(key, raw or "(no value)", form)
    return value


def _count(key: str, raw: str | None, form: str) -> int:
    text = (raw or "").strip()
    if not _DIGITS.match(text) or not 1 <= int(text) <= 10_000:
        raise ConfigError(key, raw or "(no value)", form)
    return int(text)


def _choose_intervals(values: dict[str, list[_Value]], origins: _Origins, floor: float, lease_floor: float,
                      ) -> tuple[float, float]:
    """``sluice.discovery`` and ``sluice.lease``, each at least its floor."""
    given = _last(values, "sluice.discovery")
    discovery = DEFAULT_DISCOVERY if given is None else _duration("sluice.discovery", given.value, floor)
    _origin(origins, "sluice.discovery", _seconds_text(discovery), given)
    given = _last(values, "sluice.lease")
    lease = DEFAULT_LEASE if given is None else _duration("sluice.lease", given.value, lease_floor)
    _origin(origins, "sluice.lease", _seconds_text(lease), given)
    return discovery, lease


def _choose_host(values: dict[str, list[_Value]], origins: _Origins, this_host: Callable[[], str]) -> str:
    """``sluice.host``, or ``this_host()`` (the machine's name, made safe) when unset."""
    given = _last(values, "sluice.host")
    if given is None:
        host = this_host()
    else:
        host = _text("sluice.host", given.value, "a host name of letters, digits, '.', '_' or '-' (63 at most)")
        if not _HOST.match(host):
            raise ConfigError(
                "sluice.host", given.value, "a host name of letters, digits, '.', '_' or '-' (63 at most)"
            )
    _origin(origins, "sluice.host", host, given)
    return host


def _choose_repository(values: dict[str, list[_Value]], origins: _Origins, remote: str, remote_urls: dict[str, str],
                       rewritten_url: Callable[[], str]) -> str:
    """``sluice.repository``, or the GitHub repository the remote's URL names (``rewritten_url()`` first)."""
    given = _last(values, "sluice.repository")
    repo_form = "owner/name of the repository on GitHub (e.g. octo-org/widgets)"
    if given is not None:
        repository = _text("sluice.repository", given.value, repo_form)
        pieces = repository.split("/")
        if len(pieces) != 2 or not _OWNER.match(pieces[0]) or not _NAME.match(pieces[1]):
            raise ConfigError("sluice.repository", repository, repo_form)
    else:
        url = rewritten_url()
        # the rewritten URL first (url.*.insteadOf), then the URL as written
        parsed = repository_from_url(url) or repository_from_url(remote_urls[remote])
        if parsed is None:
            raise ConfigError(
                "sluice.repository",
                _UNSET,
                f"{repo_form}; remote '{remote}' URL {redact_url(url)!r} names no GitHub repository",
            )
        repository = parsed
    _origin(origins, "sluice.repository", repository, given)
    return repository


def _choose_endpoints(values: dict[str, list[_Value]], origins: _Origins,
                      derived: Callable[[], "DerivedAPI | None"]) -> tuple[str, str]:
    """``sluice.api`` and ``sluice.graphql``: as configured, else derived from the remote's host, else github.com.

    ``derived()`` (a ``git ls-remote --get-url`` and maybe an ``ssh -G``) is
    asked only when ``sluice.api`` is unset. The GraphQL endpoint goes with
    the API it was configured or derived beside.
    """
    given = _last(values, "sluice.api")
    found = derived() if given is None else None
    if given is not None:
        api = _check_endpoint("sluice.api", given.value or "")
        _origin(origins, "sluice.api", api, given)
        beside = graphql_from_api(api)
    elif found is not None:
        api, beside = found.api, found.graphql
        origins["sluice.api"] = (api, found.origin)
    else:
        api, beside = DEFAULT_API, graphql_from_api(DEFAULT_API)
        _origin(origins, "sluice.api", api, None)
    given_graphql = _last(values, "sluice.graphql")
    graphql = beside if given_graphql is None else _check_endpoint("sluice.graphql", given_graphql.value or "")
    if given_graphql is None and found is not None:
        origins["sluice.graphql"] = (graphql, found.origin)
    else:
        _origin(origins, "sluice.graphql", graphql, given_graphql)
    return api, graphql


@record(frozen=True)
class DerivedAPI:
    """The API a remote's host implies, and the words that say so (doctor, ``-v``)."""

    api: str
    graphql: str
    host: str
    origin: str


def derive_api(remote: str, urls: list[str], ssh_hostname: Callable[[str], str | None]) -> DerivedAPI | None:
    """The API of the first of ``urls`` (git's view after ``insteadOf`` first, then as written) that names a host.

    An ssh host may be an alias of ``~/.ssh/config`` (``git@work:o/r`` with
    ``Host work`` / ``HostName github.com``): ``ssh_hostname`` says the name
    ssh connects to, as gh asks ``ssh -G``; None leaves the name as written.
    """
    for url in urls:
        where = remote_host(url)
        if where is None:
            continue
        named = where.host
        if where.transport == "ssh" and named != GITHUB_HOST and not named.endswith("." + GITHUB_HOST):
            real = remote_host(f"ssh://{_bracketed(ssh_hostname(named) or named)}/")
            if real is not None and real.host != named:
                where = RemoteHost("ssh", real.host)
                named = f"{named} (ssh: {real.host})"
        api, graphql = api_for_host(where)
        return DerivedAPI(api, graphql, where.host, f"derived from remote {remote}'s host {named}")
    return None


@functools.lru_cache(maxsize=16)
def _ssh_hostname(alias: str) -> str | None:
    """The host ssh connects to for ``alias`` (``ssh -G``: reads ~/.ssh/config, opens no connection).

    Once per process: the hook runner reads the settings three times a round.
    """
    try:
        done = subprocess.run(["ssh", "-G", "--", alias], capture_output=True, text=True, timeout=5,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key.lower() == "hostname" and value.strip():
            return value.strip()
    return None


def _once(get: Callable[[], str]) -> Callable[[], str]:
    """``get``, asked at most once (the rewritten remote URL names the repository and the API alike)."""
    kept: list[str] = []

    def once() -> str:
        if not kept:
            kept.append(get())
        return kept[0]

    return once


def _app_settings(root: Path, values: dict[str, list[_Value]]) -> tuple[str | None, str | None, str | None]:
    """GitHub App settings: all or nothing, because half an App configuration cannot sign in."""
    id_value = _last(values, "sluice.appId")
    key_value = _last(values, "sluice.appKeyFile")
    inst_value = _last(values, "sluice.installation")

    app_id = None
    if id_value is not None:
        app_id = _text("sluice.appId", id_value.value, "the GitHub App's numeric id")
        if not _DIGITS.match(app_id):
            raise ConfigError("sluice.appId", id_value.value, "the GitHub App's numeric id")
    installation = None
    if inst_value is not None:
        installation = _text("sluice.installation", inst_value.value, "the App installation's numeric id")
        if not _DIGITS.match(installation):
            raise ConfigError("sluice.installation", inst_value.value, "the App installation's numeric id")
    app_key_file = None
    if key_value is not None:
        raw = _text("sluice.appKeyFile", key_value.value, "the path of the App's private key (PEM file)")
        path = Path(os.path.expanduser(raw))
        if not path.is_absolute():
            path = (root / path).resolve()
        if not path.is_file():
            raise ConfigError(
                "sluice.appKeyFile", raw, "the path of the App's private key (PEM file); no file is there"
            )
        app_key_file = str(path)

    if app_id is not None and app_key_file is None:
        raise ConfigError("sluice.appKeyFile", _UNSET, "the path of the App's private key when sluice.appId is set")
    if app_key_file is not None and app_id is None:
        raise ConfigError("sluice.appId", _UNSET, "the GitHub App's numeric id when sluice.appKeyFile is set")
    if installation is not None and app_id is None:
        raise ConfigError("sluice.appId", _UNSET, "the GitHub App's numeric id when sluice.installation is set")
    return app_id, app_key_file, installation


def _branches(
    tracking: tuple[list[str], str | None], remote: str, given: list[_Value], need_branches: bool
) -> tuple[str, ...]:
    """The configured branches, checked against what the remote has; else its default branch."""
    configured: list[str] = []
    for value in given:
        name = _branch_name(value.value)
        if name not in configured:
            configured.append(name)
    known, head = tracking
    if configured:
        if need_branches:
            for name in configured:
                if name not in known:
                    listing = ", ".join(sorted(known)) or "none (run `git fetch " + remote + "`)"
                    raise ConfigError(
                        "sluice.branch",
                        name,
                        f"a branch of remote '{remote}' (known here: {listing})",
                    )
        return tuple(configured)
    if head is not None and head in known:
        return (head,)
    for candidate in ("main", "master"):
        if candidate in known:
            return (candidate,)
    if not need_branches:
        return ()
    listing = ", ".join(sorted(known)) or "none (run `git fetch " + remote + "`)"
    raise ConfigError(
        "sluice.branch",
        _UNSET,
        f"the branch(es) to take in: remote '{remote}' has no known default branch "
        f"(branches known here: {listing})",
    )
