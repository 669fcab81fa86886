"""The benchmark's world: one GitHub double, real bare remotes, real host clones, one shared clock.

Why it is built this way:

- **One clock for everything.** The double, every in-process host and every
  subprocess (hook rounds, ``git sluice queue``) read the same
  :class:`~git_sluice.clock.FileClock` (``GIT_SLUICE_TEST_CLOCK``), so an hour
  of a fleet runs in seconds and every timestamp in the ledger is on one time
  line. Only the harness's scheduler moves it (and, by microseconds, the
  product's own short sleeps).
- **Isolation, as the demo does it.** ``HOME``, ``XDG_STATE_HOME``, the git
  config and the token are the world's own for its whole life; nothing of the
  user's is read or written.
- **A host is a state directory plus clones.** Each host has its own
  ``XDG_STATE_HOME`` (its host store: pauses, permits, budget) and one clone per
  repository (its kept answers, discovery clock and queue). In-process sessions
  open the host's store by path; subprocesses find it through the host's
  environment, so both see the same file, as two processes of one host do.
- **Three ways to authenticate** (issue 11): one user token on every host
  (``GH_TOKEN``); a GitHub App, each process minting its own installation
  token as the product does (``sluice.appId`` / ``sluice.appKeyFile`` /
  ``sluice.installation``; the double checks the JWT against the App's public
  key, and ETags are per token); GitHub Enterprise Server (``/api/v3``) with
  its rate limits off.
- **A state directory per host, in-process too.** The product finds the
  host state directory through ``platformdirs`` and ``XDG_STATE_HOME``
  (the host store, the host watch's answers, the pools it learned); one
  process's environment cannot say that for several in-process hosts at
  once, so :func:`as_host` names the host whose directory this thread's
  product code sees, and every actor steps under it. Subprocesses get it
  from their environment, as deployed processes do.
- **A server per host.** Every host's clones talk to their own loopback port
  of the one double, so the calls *each host* sends can be counted (the
  busiest minute per host) though the ledger holds every host's calls.
- **Git requests to the remote are counted** (issue 29), where a run asks
  (``world(count_git=True)``): each clone's ``remote.origin.uploadpack`` and
  ``remote.origin.receivepack`` name small wrapper scripts that append one
  line (the shared clock's time, host, repository, who, kind) to the world's
  log and ``exec`` git's own ``git-upload-pack`` / ``git-receive-pack``. Every
  git command git-sluice runs against ``origin`` (fetch, ls-remote, push, in
  process or in a hook round) goes through them; the harness's own git
  commands (the user's ``git push``, ``prepare_push``'s fetch, the fetch that
  brings a merge) name their own wrappers on the command line
  (``--upload-pack`` / ``--receive-pack``, which reach no child process), so
  they are logged as the harness's, apart. See :func:`git_requests`.
- **Hooks are the product's.** Every clone is set up by
  :func:`git_sluice.commands.setup.install` (what ``git sluice setup`` runs), so a
  ``git push`` or ``git fetch`` the harness runs in a clone fires the real
  pre-push / reference-transaction scripts, which start real detached
  ``git-sluice _hook-round`` processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import threading

import httpx
import pygit2

import git_sluice.paths as _paths

from git_sluice.clock import FileClock
from git_sluice.double import GitHubDouble, serve
from git_sluice.double.server import DoubleServer, _Handler
from git_sluice.forge.hoststore import HostStore
from git_sluice.repo import Repo
from git_sluice.runtime.session import Session, open_session

TOKEN = "bench-token-not-a-secret"
USER = "fleet-bot"
POOL = f"user:{USER}"
APP_ID = 4242
INSTALLATION_ID = 171576254  # the ADR's installation
APP_POOL = f"installation:{INSTALLATION_ID}"
AUTHS = ("user", "app", "ghes")
AUTH_TITLES = {"user": "one user token on every host", "app": "a GitHub App (an installation token per process)",
               "ghes": "GitHub Enterprise Server, rate limits off"}


def pool_of(auth: str) -> str:
    """The ledger's pool every call of a run spends (an App's installation, else the user's)."""
    return APP_POOL if auth == "app" else POOL


def app_key_pair() -> tuple[bytes, bytes]:
    """A fresh RSA key for the benchmark's App: (private PEM, public PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


class BenchClock(FileClock):
    """The shared clock, where a sleep beside other actors' work waits for that work in real time.

    The in-process hosts' work takes no simulated time: the scheduler sets the clock, runs a
    batch's actors (threads) at that moment, and moves on. A thread that polls for another's
    work meanwhile — a driver waiting up to 20 s for its host watch's tick that another driver
    of the host is running (``HostWatch._wait_for_other``, 0.25 s steps), a fetch retried after
    a lock — moved the shared clock for every actor with each step, by as much as the real
    seconds the other thread took: at 24 hosts, 10 drivers a host, the clock ran minutes ahead
    inside a batch, watches missed their slots and leases aged. While another actor of the batch
    is at work — running and not itself asleep on this clock (:attr:`others_running`, set by the
    scheduler) — a sleep now waits 20 ms of real time and moves the clock a millisecond; a sleep
    with no one else at work (a lone wait sleeping to its deadline, a pause waited out, every
    other actor asleep too) moves the clock as before.
    """

    others_running: Callable[[int], bool] | None = None
    """Set by the scheduler: given how many actors sleep now, whether another is still at work."""

    _sleepers = 0
    _sleepers_lock = threading.Lock()

    def sleep(self, seconds: float) -> None:
        busy = self.others_running
        if seconds <= 0 or busy is None:
            super().sleep(seconds)
            return
        with self._sleepers_lock:
            type(self)._sleepers += 1
            sleeping = type(self)._sleepers
        try:
            # two actors that both sleep wait for no one: only an actor at work is waited for
            if busy(sleeping):
                time.sleep(0.02)
                self.advance(min(seconds, 0.001))
                return
        finally:
            with self._sleepers_lock:
                type(self)._sleepers -= 1
        super().sleep(seconds)


def make_double(clock: object, auth: str) -> tuple[GitHubDouble, bytes | None]:
    """The double for one way of authenticating: (the double, the App's private key or None)."""
    gh = GitHubDouble(clock=clock, enterprise=(auth == "ghes"))  # type: ignore[arg-type]
    gh.add_user(USER)
    gh.add_token(TOKEN, user=USER)
    private = None
    if auth == "app":
        private, public = app_key_pair()
        gh.add_app(APP_ID, public)
        gh.add_installation(APP_ID, INSTALLATION_ID, [])
    return gh, private


class _CountingHandler(_Handler):
    """The double's handler, noting the shared clock's time of every API call this port receives."""

    def _serve(self) -> None:
        if "/_double/" not in self.path:
            self.server.arrivals.append(self.server.gh.clock.time())  # type: ignore[attr-defined]
        super()._serve()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve


def counting_server(gh: GitHubDouble) -> DoubleServer:
    """One more loopback port of ``gh`` whose arrivals (clock times) the harness can read."""
    server = serve(gh)
    inner = server._server
    inner.arrivals = []  # type: ignore[attr-defined]
    inner.RequestHandlerClass = _CountingHandler
    quiet_reset(server)
    return server


def quiet_reset(server: DoubleServer) -> None:
    """A client that closes its keep-alive connection is no error worth a traceback on stderr."""
    inner = server._server
    noisy = inner.handle_error

    def handle_error(request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        noisy(request, client_address)

    inner.handle_error = handle_error  # type: ignore[method-assign]


def busiest_minute_of(times: list[float]) -> int:
    """The most calls in any 60 s of ``times`` (a host's arrivals)."""
    ordered = sorted(times)
    best, lo = 0, 0
    for hi, t in enumerate(ordered):
        while ordered[lo] <= t - 60.0:
            lo += 1
        best = max(best, hi - lo + 1)
    return best
OWNER = "bench"
SIGNATURE_NAME = "Bench"
SIGNATURE_EMAIL = "bench@sluice.invalid"


_THREAD = threading.local()


class _PerHostDirs:
    """``platformdirs`` as git_sluice.paths uses it, answering the state directory of this thread's host."""

    def __init__(self, real: object) -> None:
        self._real = real

    def user_state_dir(self, appname: str | None = None, *args: object, **kwargs: object) -> str:
        home = getattr(_THREAD, "state_home", None)
        if home is None:
            return self._real.user_state_dir(appname, *args, **kwargs)  # type: ignore[attr-defined,no-any-return]
        return str(Path(home) / (appname or ""))

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)


if not isinstance(_paths.platformdirs, _PerHostDirs):
    import platformdirs as _platformdirs  # git_sluice.paths imports it on first use (issue 15)

    _paths.platformdirs = _PerHostDirs(_paths.platformdirs or _platformdirs)


@contextmanager
def as_host(host: "Host | None") -> Iterator[None]:
    """Within: this thread's git-sluice code finds ``host``'s state directory (None: the process's own)."""
    saved = getattr(_THREAD, "state_home", None)
    _THREAD.state_home = None if host is None else str(host.state_home)
    try:
        yield
    finally:
        _THREAD.state_home = saved


def repo_name(index: int) -> str:
    return f"{OWNER}/r{index:02d}"


@dataclass
class RepoSpec:
    """One repository: its name on the double and its bare remote."""

    full_name: str
    bare: Path
    branch_heads: dict[str, str] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return self.full_name.split("/", 1)[1]


@dataclass
class Host:
    """One machine of the fleet: a host-state directory and a clone per repository."""

    name: str
    root: Path
    clones: dict[str, Path] = field(default_factory=dict)
    server: DoubleServer | None = None
    # per repository: the harness's own wrappers (its git commands pass them on the command line)
    harness_wrappers: dict[str, tuple[Path, Path]] = field(default_factory=dict)

    def harness_fetch_args(self, full_name: str) -> list[str]:
        """``git fetch`` options that send the harness's own fetch through its wrapper (logged apart)."""
        wrappers = self.harness_wrappers.get(full_name)
        return [f"--upload-pack={wrappers[0]}"] if wrappers else []

    def harness_push_args(self, full_name: str) -> list[str]:
        """``git push`` options that send the harness's own push through its wrapper (logged apart)."""
        wrappers = self.harness_wrappers.get(full_name)
        return [f"--receive-pack={wrappers[1]}"] if wrappers else []

    def arrivals(self, since: float = float("-inf"), until: float = float("inf")) -> list[float]:
        """Clock times of the API calls this host's processes sent (its own port of the double)."""
        if self.server is None:
            return []
        return [t for t in list(self.server._server.arrivals) if since <= t < until]  # type: ignore[attr-defined]

    @property
    def state_home(self) -> Path:
        return self.root / "state"

    @property
    def store_path(self) -> Path:
        # platformdirs.user_state_dir("git-sluice") under XDG_STATE_HOME, as paths.py finds it
        return self.state_home / "git-sluice" / "host.sqlite3"


class World:
    """Everything one scenario run needs; build it with :func:`world`."""

    def __init__(self, root: Path, clock: FileClock, gh: GitHubDouble, api: str, env: dict[str, str],
                 auth: str = "user", app_key: Path | None = None, count_git: bool = False) -> None:
        self.auth = auth
        self.count_git = count_git
        self.git_log = root / "git-requests.log"
        self.app_key = app_key
        self.pool = pool_of(auth)
        self.root = root
        self.clock = clock
        self.gh = gh
        self.api = api
        self.env = env
        self.repos: dict[str, RepoSpec] = {}
        self.hosts: dict[str, Host] = {}
        self._stack = ExitStack()
        self._stores: list[HostStore] = []
        self._host_stores: dict[str, HostStore] = {}

    # -- subprocess environments ------------------------------------------------
    def host_env(self, host: Host) -> dict[str, str]:
        """The environment a process of ``host`` runs with (its own host state)."""
        env = dict(self.env)
        env["XDG_STATE_HOME"] = str(host.state_home)
        return env

    # -- repositories -------------------------------------------------------------
    def add_repo(self, full_name: str) -> RepoSpec:
        """A bare remote with one commit on main, and the repository on the double."""
        bare = self.root / "remotes" / f"{full_name.replace('/', '__')}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        raw = pygit2.init_repository(str(bare), bare=True, initial_head="main")
        sig = self._signature()
        tree = raw.TreeBuilder().write()
        oid = raw.create_commit("refs/heads/main", sig, sig, f"{full_name}: first commit", tree, [])
        spec = RepoSpec(full_name, bare, {"main": str(oid)})
        self.repos[full_name] = spec
        self.gh.add_repo(full_name)
        self.gh.set_branch(full_name, "main", str(oid))
        if self.auth == "app":  # the App is installed on every repository of the run (before any token)
            self.gh.add_installation(APP_ID, INSTALLATION_ID, list(self.repos))
        return spec

    def pack_remote_refs(self, full_name: str) -> None:
        """Pack the bare remote's refs and write its commit-graph, as a server's ``git gc`` keeps them
        (``gc.writeCommitGraph`` is on by default). A remote with thousands of request branches, each
        pushed as a loose ref file, made the upload-pack of every fetch read thousands of files; with no
        commit-graph, the receive-pack of every push (a survey's, a lease's) checked its connectivity
        by parsing every ref tip: 0.15 s at 5,000. Both are the server's CPU, which a ``file://``
        remote adds to the client's (GitHub's servers keep their repositories packed)."""
        bare = self.repos[full_name].bare
        subprocess.run(["git", "pack-refs", "--all", "--prune"], cwd=bare, env=self.env, check=True,
                       capture_output=True)
        subprocess.run(["git", "commit-graph", "write", "--reachable"], cwd=bare, env=self.env, check=True,
                       capture_output=True)

    def maintain_clone(self, host: Host, full_name: str) -> None:
        """Write the clone's commit-graph, as ``git gc`` (``gc.writeCommitGraph``, on by default) or
        ``git maintenance`` leaves a clone that has lived a while. Without one, every no-op fetch's
        connectivity check (``rev-list --objects --not --all``) parses each of the clone's ref tips:
        0.14 s of git's CPU at 5,000 request branches, 0.02 s with the graph (docs/benchmarks.md)."""
        subprocess.run(["git", "commit-graph", "write", "--reachable"], cwd=host.clones[full_name],
                       env=self.host_env(host), check=True, capture_output=True)

    def _signature(self) -> pygit2.Signature:
        return pygit2.Signature(SIGNATURE_NAME, SIGNATURE_EMAIL, int(self.clock.time()), 0)

    def new_commit(self, spec: RepoSpec, branch: str, message: str) -> str:
        """A new commit on ``branch`` in the bare remote (what a merge or someone else's push leaves)."""
        raw = pygit2.Repository(str(spec.bare))
        parent = spec.branch_heads.get(branch) or spec.branch_heads["main"]
        sig = self._signature()
        tree = raw.get(parent).tree.id
        oid = raw.create_commit(None, sig, sig, message, tree, [pygit2.Oid(hex=parent)])
        raw.references.create(f"refs/heads/{branch}", oid, force=True)
        spec.branch_heads[branch] = str(oid)
        return str(oid)

    def open_request(self, spec: RepoSpec, head_ref: str, *, title: str, author: str = "alice",
                     draft: bool = False) -> tuple[int, str]:
        """A head branch on the remote and its pull request on the double, with the same sha."""
        sha = self.new_commit(spec, head_ref, f"{head_ref}: work")
        number = self.gh.open_pr(spec.full_name, head_ref=head_ref, title=title, author=author,
                                 draft=draft, head_sha=sha)
        return number, sha

    # -- hosts ----------------------------------------------------------------------
    def add_host(self, name: str, repos: list[str] | None = None, *, hooks: bool = True) -> Host:
        host = Host(name, self.root / "hosts" / name)
        host.state_home.mkdir(parents=True, exist_ok=True)
        host.server = counting_server(self.gh)
        self.hosts[name] = host
        for full_name in repos if repos is not None else list(self.repos):
            self.add_clone(host, full_name, hooks=hooks)
        return host

    def add_clone(self, host: Host, full_name: str, *, hooks: bool = True) -> Path:
        spec = self.repos[full_name]
        work = host.root / spec.short
        git(self.root, "clone", "-q", str(spec.bare), str(work), env=self.host_env(host))
        api = self.api if host.server is None else host.server.url
        settings = [("sluice.repository", full_name), ("sluice.api", api), ("sluice.host", host.name)]
        if self.auth == "app":
            assert self.app_key is not None
            settings += [("sluice.appId", str(APP_ID)), ("sluice.appKeyFile", str(self.app_key)),
                         ("sluice.installation", str(INSTALLATION_ID))]
        if self.count_git:
            settings += self._wrappers(host, spec)
        for key, value in settings:
            git(work, "config", key, value, env=self.env)
        if hooks:
            from git_sluice.commands.setup import install

            install(Repo.discover(work))
        host.clones[full_name] = work
        return work

    def _wrappers(self, host: Host, spec: RepoSpec) -> list[tuple[str, str]]:
        """The clone's counting wrappers: (config key, value) pairs for git-sluice's; the harness's kept on ``host``."""
        folder = host.root / "gitwrap"
        folder.mkdir(parents=True, exist_ok=True)
        made: dict[tuple[str, str], Path] = {}
        for who in ("sluice", "harness"):
            for side, program in (("read", "git-upload-pack"), ("push", "git-receive-pack")):
                path = folder / f"{spec.short}-{side}-{who}"
                path.write_text(wrapper_script(self.git_log, host.name, spec.short, who, side, program))
                path.chmod(0o755)
                made[(who, side)] = path
        host.harness_wrappers[spec.full_name] = (made[("harness", "read")], made[("harness", "push")])
        return [("remote.origin.uploadpack", str(made[("sluice", "read")])),
                ("remote.origin.receivepack", str(made[("sluice", "push")]))]

    def git_requests(self) -> list["GitRequest"]:
        """Every git request to the bare remotes logged so far (empty unless the world counts them)."""
        return read_git_log(self.git_log)

    def store(self, host: Host, *, own: bool = False) -> HostStore:
        """``host``'s store: one connection per host shared by its in-process sessions, or (``own``) a new one.

        Shared because a second connection opened in one process drops the first one's POSIX locks
        (``HostStore._open_once`` opens and closes the database file itself), after which a hook round's
        process, closing last, deletes the WAL under it ("disk I/O error"). Separate processes, as
        deployed, never meet that; in-process hosts would, so they share (see docs/benchmarks.md).
        """
        if not own and host.name in self._host_stores:
            return self._host_stores[host.name]
        store = HostStore(host.store_path, clock=self.clock)
        self._stores.append(store)
        if not own:
            self._host_stores[host.name] = store
        return store

    def session(self, host: Host, full_name: str, transport: httpx.BaseTransport | None = None, *,
                own_store: bool = False) -> Session:
        """An in-process git-sluice session of ``host`` on its clone of ``full_name`` (one 'process')."""
        with as_host(host):
            session = open_session(host.clones[full_name], clock=self.clock, store=self.store(host, own=own_store),
                                   transport=transport)
        self._stack.callback(session.close)
        return session

    def defer(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` when the world closes, however the run ends."""
        self._stack.callback(fn)

    def close(self) -> None:
        self._stack.close()
        for store in self._stores:
            store.close()
        # a hook round still running would find its clone gone: let it end first (best effort)
        from fleet_sluice import wait_for_hook_rounds

        for host in self.hosts.values():
            for clone in host.clones.values():
                try:
                    wait_for_hook_rounds(clone, limit=30.0)
                except TimeoutError:
                    pass
        for host in self.hosts.values():
            if host.server is not None:
                host.server.close()
        _end_credential_daemons(self.root)


def _end_credential_daemons(root: Path) -> None:
    """An App world's hosts share their token in git's credential-cache daemon, which outlives every
    process by an hour: ask each host's to exit, as a person would, so a run leaves nothing behind."""
    for socket in [*root.glob("hosts/*/state/git-sluice/run/credential-cache"),
                   *root.glob("harness-state/git-sluice/run/credential-cache")]:
        subprocess.run(["git", "credential-cache", "--socket", str(socket), "exit"], capture_output=True,
                       timeout=30, check=False)


@dataclass(frozen=True)
class GitRequest:
    """One upload-pack or receive-pack the bare remotes served: when (shared clock), for whom, what."""

    at: float
    host: str
    repo: str  # the repository's short name (r01)
    who: str  # sluice (any git-sluice process) | harness (the benchmark's own git commands)
    kind: str  # fetch | ls-remote | push


def wrapper_script(log: Path, host: str, repo: str, who: str, side: str, program: str) -> str:
    """A shell script that logs one line for the request, then becomes git's own ``program``.

    The time is the shared clock's (``GIT_SLUICE_TEST_CLOCK``); a read-side request is told apart as an
    ``ls-remote`` by the command line of the git process that started it (git starts the wrapper
    through ``sh -c``: its parent or grandparent). Only the shell's own builtins run before the
    ``exec`` (``read`` of ``/proc``; dash drops the command line's NULs), so a request costs one
    shell more, no other process. One short ``>>`` line per request: appends of a few bytes are atomic.
    """
    detect = "" if side == "push" else """k=fetch
read -r _ _ _ gp _ < /proc/$PPID/stat 2>/dev/null
read -r c1 < /proc/$PPID/cmdline 2>/dev/null
[ -n "$gp" ] && read -r c2 < /proc/$gp/cmdline 2>/dev/null
case "$c1 $c2" in *ls-remote*) k=ls-remote ;; esac
"""
    kind = "push" if side == "push" else "$k"
    return f"""#!/bin/sh
t=
[ -n "$GIT_SLUICE_TEST_CLOCK" ] && read -r t < "$GIT_SLUICE_TEST_CLOCK" 2>/dev/null
{detect}echo "${{t:-0}} {host} {repo} {who} {kind}" >> '{log}'
exec {program} "$@"
"""


def read_git_log(path: Path) -> list[GitRequest]:
    try:
        text = path.read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 5:
            continue
        try:
            at = float(parts[0])
        except ValueError:
            continue
        out.append(GitRequest(at, *parts[1:]))
    return out


def git(cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env)
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd}: {done.stderr.strip()}")
    return done.stdout.strip()


def _isolated_env(root: Path, clock_file: Path, auth: str = "user") -> dict[str, str]:
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
    bin_dir = str(Path(sys.executable).parent)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GIT_", "GH_", "GITHUB_")) and not key.lower().endswith("_proxy")}
    env.update({
        "HOME": str(home),
        "XDG_STATE_HOME": str(root / "harness-state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": SIGNATURE_NAME,
        "GIT_AUTHOR_EMAIL": SIGNATURE_EMAIL,
        "GIT_COMMITTER_NAME": SIGNATURE_NAME,
        "GIT_COMMITTER_EMAIL": SIGNATURE_EMAIL,
        "GIT_TERMINAL_PROMPT": "0",
        "GH_TOKEN": TOKEN,
        "GIT_SLUICE_TEST_CLOCK": str(clock_file),
        "PATH": bin_dir + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
    })
    if auth == "app":
        del env["GH_TOKEN"]  # an App run must not fall back on the user's token anywhere
    return env


@contextmanager
def world(prefix: str = "sluice-bench-", *, start: float | None = None, keep: bool = False,
          auth: str = "user", count_git: bool = False) -> Iterator[World]:
    """An isolated world with a served double on a shared FileClock; os.environ is the world's meanwhile.

    ``auth`` is one of :data:`AUTHS`: how every process of the world authenticates. ``count_git``:
    every clone's git requests to its remote go through counting wrappers (:meth:`World.git_requests`);
    off where a scenario times git commands (S6), since a wrapper is a shell process more.
    """
    if auth not in AUTHS:
        raise ValueError(f"auth must be one of {', '.join(AUTHS)}, not {auth!r}")
    root = Path(tempfile.mkdtemp(prefix=prefix))
    clock_file = root / "clock"
    clock = BenchClock(clock_file, start=float(int(start if start is not None else time.time())))
    env = _isolated_env(root, clock_file, auth)
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    w: World | None = None
    try:
        gh, private = make_double(clock, auth)
        key_path = None
        if private is not None:
            key_path = root / "app-key.pem"
            key_path.write_bytes(private)
            key_path.chmod(0o600)
        with serve(gh) as server:
            quiet_reset(server)
            w = World(root, clock, gh, server.url, env, auth=auth, app_key=key_path, count_git=count_git)
            try:
                yield w
            finally:
                w.close()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
