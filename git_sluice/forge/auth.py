"""Credentials, and the pool id that names an allowance without revealing it.

A token is looked for in the order people expect from GitHub's own tools:
``GH_TOKEN``, ``GITHUB_TOKEN``, then — where no GitHub App is configured —
``git credential fill`` for the API host, then ``gh auth token``. A GitHub App
(``sluice.appId``, ``sluice.appKeyFile``, ``sluice.installation``) mints a
short JWT locally and exchanges it for an installation token that lives in
memory only and is renewed before it expires. A token in the environment wins
over the App (issue 31): it is set for this one process, on purpose, as
``GH_TOKEN`` wins over ``gh``'s stored login; the App wins over the stored
tokens (``git credential``, ``gh auth``), which are the person's, not the
fleet's.

The **pool id** is what every host calls the allowance, in refs and output: a
short hash of the API host and the installation (App) or the user id (learned
once per token with ``GET /user`` and remembered in the host state dir under
the token's hash, never the token). ``GET /user`` is never asked while a
pause stands on the API host (forge/poolguard.py: an unknown pool obeys every
pause there); where it cannot be learned the calls go under a provisional
pool, a hash of the token's own hash, so it still reveals nothing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Callable, Mapping, Protocol
from urllib.parse import urlsplit

import httpx

from ..clock import Clock, parse_rfc3339
from ..errors import AppAuthError as AppAuthError
from ..errors import CredentialsRefused
from ..errors import NoCredentials as NoCredentials
from ..records import record
from ..statefile import JsonDocument
from . import tally
from .failures import describe
from .tokencache import SharedTokens
from .wire import abandonable, transport_for

log = logging.getLogger("git_sluice")


def token_digest(token: str) -> str:
    """A one-way name for a token, safe to write down."""
    return hashlib.sha256(b"git-sluice-token\0" + token.encode()).hexdigest()[:32]


def pool_id(api_host: str, kind: str, ident: str) -> str:
    """The pool's name on every host: the same inputs give the same 12 hex digits."""
    digest = hashlib.sha256(f"git-sluice-pool\0{api_host.lower()}\0{kind}\0{ident}".encode()).hexdigest()
    return digest[:12]


def known_pool(credentials: object) -> str | None:
    """The pool these credentials spend, when it is known without a call to GitHub.

    Which pause notes a round fetches depends on it (only this pool's); an
    unknown pool (a token never used on this host) widens that fetch to every
    pool's notes until the first call has learned it.
    """
    known = getattr(credentials, "known_pool_id", None)
    if known is None:
        return None
    try:
        value = known()
    except Exception:
        return None
    return value if isinstance(value, str) and value else None


def api_host(api: str) -> str:
    return (urlsplit(api).hostname or api).lower()


class Credentials(Protocol):
    source: str

    def token(self) -> str:
        """A token good for the next call (an App renews its own)."""

    def pool_id(self) -> str:
        """The pool this token spends."""


@record
class StaticToken:
    """A personal or OAuth token: its pool is its user's, learned once."""

    value: str
    source: str
    api: str
    resolver: "UserPoolResolver"

    def token(self) -> str:
        return self.value

    def pool_id(self) -> str:
        return self.resolver.pool_for(self.value)

    def known_pool_id(self) -> str | None:
        return self.resolver.known(self.value)

    def provisional_pool_id(self) -> str:
        """The name this token's calls go under while its user is not known (never remembered)."""
        return pool_id(api_host(self.api), "token", token_digest(self.value))

    def __repr__(self) -> str:  # never show the token, not even in a debugger or a crash trace
        return f"StaticToken(source={self.source!r})"


_REFUSED = "\0refused"  # _ask_user's word for a 401: the credentials are wrong, asking again cannot help


class UserPoolResolver:
    """Learns a token's user id once (``GET /user``) and remembers it under the token's hash."""

    def __init__(self, api: str, state_dir: Path, *, transport: httpx.BaseTransport | None = None,
                 source: str | None = None, cancel: threading.Event | None = None) -> None:
        self.api = api.rstrip("/")
        self.source = source
        self.cancel = cancel  # the command's stop flag: a stop gives the call up (wire.abandonable)
        self.path = state_dir / "pools.json"
        self._doc = JsonDocument(self.path, what="token pools file")
        self.transport = transport
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()
        self._said = False  # the "not known yet" warning, once per process

    def pool_for(self, token: str) -> str:
        digest = token_digest(token)
        with self._lock:
            if digest in self._cache:
                return self._cache[digest]
            known = self._load().get(digest)
            if isinstance(known, str):
                self._cache[digest] = known
                return known
            user_id = self._ask_user(token)
            if user_id is _REFUSED:
                raise CredentialsRefused(401, f"{self.api}/user", "Bad credentials", source=self.source)
            host = api_host(self.api)
            if user_id is None:
                # not learnable now (GitHub down, limited): a provisional name, for this process only
                return pool_id(host, "token", digest)
            pid = pool_id(host, "user", user_id)
            self._cache[digest] = pid
            self._remember(digest, pid)
            return pid

    def known(self, token: str) -> str | None:
        """The token's pool if already learned (memory or ``pools.json``); never asks GitHub."""
        digest = token_digest(token)
        with self._lock:
            if digest in self._cache:
                return self._cache[digest]
        known = self._load().get(digest)
        return known if isinstance(known, str) else None

    def _ask_user(self, token: str) -> str | None:
        """The user id, None when not learnable now, ``_REFUSED`` when GitHub refuses the token itself."""
        def ask() -> httpx.Response:
            with httpx.Client(transport=self.transport or transport_for((self.api,)), timeout=10.0) as client:
                return client.get(
                    f"{self.api}/user",
                    headers={"Authorization": f"token {token}", "Accept": "application/vnd.github+json"},
                )

        try:
            answer = abandonable(ask, self.cancel, f"GET {self.api}/user")
            # GitHub counts it like any REST call (a 5xx it does not): the command's report says so
            tally.note("GET user", status=answer.status_code, counted=answer.status_code < 500, cost=1, graphql=False)
            if answer.status_code == 401:
                return _REFUSED
            if answer.status_code != 200:
                self._said, said = True, self._said
                (log.debug if said else log.warning)(
                    "GitHub answered %s to GET /user: this token's allowance is not known yet; "
                    "its calls obey every pause on %s until it is", answer.status_code, api_host(self.api),
                )
                return None
            ident = answer.json().get("id")
            return str(ident) if ident is not None else None
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            self._said, said = True, self._said
            why = (describe(exc, httpx.URL(f"{self.api}/user"), env=os.environ).reason
                   if isinstance(exc, httpx.HTTPError) else type(exc).__name__)
            (log.debug if said else log.warning)(
                "GET /user failed (%s): this token's allowance is not known yet; "
                "its calls obey every pause on %s until it is", why, api_host(self.api),
            )
            return None

    def _load(self) -> dict[str, object]:
        return self._doc.read()

    def _remember(self, digest: str, pid: str) -> None:
        """Read-modify-write under the document's lock (statefile's: the same flock filelock took here before)."""
        with self._doc.update() as data:
            data[digest] = pid


class AppInstallation:
    """A GitHub App installation token, minted from a local JWT and held in memory only.

    With ``shared`` (forge/tokencache.py) the host's processes share one token
    in git's credential-cache daemon: a process takes the shared one while it
    has more than ``RENEW_BEFORE`` to live, and the first to find it nearer its
    end mints the next under the mint lock, for everyone.
    """

    RENEW_BEFORE = 300.0  # seconds before expiry

    def __init__(
        self,
        *,
        api: str,
        app_id: str,
        key_file: str,
        installation: str,
        clock: Clock,
        transport: httpx.BaseTransport | None = None,
        shared: SharedTokens | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.api = api.rstrip("/")
        self.shared = shared
        self.cancel = cancel  # the command's stop flag: a stop gives the exchange up (wire.abandonable)
        self.minted = 0  # tokens this process minted (tests, -v)
        self.app_id = app_id
        self.key_file = key_file
        self.installation = installation
        self.clock = clock
        self.transport = transport
        self.source = f"GitHub App {app_id}, installation {installation}"
        self._token: str | None = None
        self._expires_at = 0.0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AppInstallation(app_id={self.app_id!r}, installation={self.installation!r})"

    def pool_id(self) -> str:
        return pool_id(api_host(self.api), "installation", str(self.installation))

    def known_pool_id(self) -> str | None:
        return self.pool_id()

    def jwt(self) -> str:
        import jwt  # PyJWT

        try:
            key = Path(self.key_file).expanduser().read_text()
        except OSError as exc:
            raise AppAuthError(
                f"sluice.appKeyFile={self.key_file}: cannot read the App's private key ({exc.strerror})"
            ) from None
        now = int(self.clock.time())
        try:
            return jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(self.app_id)}, key, algorithm="RS256")
        except Exception as exc:  # a malformed key raises several types inside cryptography
            raise AppAuthError(
                f"sluice.appKeyFile={self.key_file}: not a usable RSA private key (PEM) ({type(exc).__name__})"
            ) from None

    def _fresh(self, expires_at: float) -> bool:
        return self.clock.time() < expires_at - self.RENEW_BEFORE

    def token(self) -> str:
        with self._lock:
            if self._token is not None and self._fresh(self._expires_at):
                return self._token
            if self.shared is None:
                self._mint()
            else:
                key = SharedTokens.key(api_host(self.api), str(self.app_id), str(self.installation))
                with self.shared.minting(key):
                    got = self.shared.get(key)
                    if got is not None and self._fresh(got.expires_at):
                        self._token, self._expires_at = got.token, got.expires_at
                        log.info("GitHub App %s: the host's installation token, shared", self.app_id)
                    else:
                        self._mint()
                        assert self._token is not None
                        self.shared.put(key, self._token, self._expires_at)
            assert self._token is not None
            return self._token

    def refused(self) -> None:
        """GitHub said 401 to the token: forget it here and on the host, so the next call mints anew."""
        with self._lock:
            self._token, self._expires_at = None, 0.0
            if self.shared is not None:
                self.shared.forget(SharedTokens.key(api_host(self.api), str(self.app_id), str(self.installation)))

    def _mint(self) -> None:
        url = f"{self.api}/app/installations/{self.installation}/access_tokens"
        jwt = self.jwt()

        def exchange() -> httpx.Response:
            with httpx.Client(transport=self.transport or transport_for((self.api,)), timeout=15.0) as client:
                return client.post(url, headers={"Authorization": f"Bearer {jwt}", "Accept": "application/vnd.github+json"})

        try:
            answer = abandonable(exchange, self.cancel, f"POST {url}")
            # on the App's own (JWT) allowance, not the installation's: reached GitHub, not counted here
            tally.note("POST access_tokens", status=answer.status_code, counted=False, cost=0, graphql=False)
        except httpx.HTTPError as exc:
            why = describe(exc, httpx.URL(url), env=os.environ).reason
            raise AppAuthError(f"could not reach {self.api} to mint an installation token: {why}") from None
        if answer.status_code != 201:
            message = ""
            try:
                message = str(answer.json().get("message", ""))
            except ValueError:
                pass
            raise AppAuthError(
                f"GitHub refused an installation token for app {self.app_id}, installation "
                f"{self.installation}: {answer.status_code} {message}".strip()
            )
        data = answer.json()
        self._token = str(data["token"])
        self.minted += 1
        log.info("GitHub App %s: minted an installation token for installation %s", self.app_id, self.installation)
        try:
            self._expires_at = parse_rfc3339(str(data["expires_at"]))
        except (KeyError, ValueError):
            self._expires_at = self.clock.time() + 3600


Runner = Callable[..., subprocess.CompletedProcess[str]]


def _credential_fill(host: str) -> str | None:
    from .. import gitcli

    if not shutil.which("git"):
        return None
    try:
        # never prompt (no askpass helper either): a background round has no one to answer
        done = gitcli.run(
            ["-c", "credential.interactive=never", "credential", "fill"],
            input=f"protocol=https\nhost={host}\n\n",
            timeout=10,
            env={"GIT_TERMINAL_PROMPT": "0"},
            drop=("GIT_ASKPASS", "SSH_ASKPASS"),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    for line in done.stdout.splitlines():
        if line.startswith("password="):
            return line.split("=", 1)[1] or None
    return None


def _gh_auth_token(host: str, run: Runner) -> str | None:
    if not shutil.which("gh"):
        return None
    args = ["gh", "auth", "token"]
    if host != "github.com":
        args += ["--hostname", host]
    try:
        done = run(args, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    token = done.stdout.strip()
    return token if done.returncode == 0 and token else None


GITHUB_VARIABLES = ("GH_TOKEN", "GITHUB_TOKEN")
ENTERPRISE_VARIABLES = ("GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")


def web_host(api: str) -> str:
    """The host people sign in to for this API (gh's ``--hostname``, git's credential host).

    ``api.github.com`` is github.com's, ``api.TENANT.ghe.com`` is
    ``TENANT.ghe.com``'s; an Enterprise Server's API is on its own host
    (``HOST/api/v3``), with its port when not 443, as git names it.
    """
    parts = urlsplit(api)
    host = (parts.hostname or api).lower()
    if host == "api.github.com":
        return "github.com"
    if host.startswith("api.") and host.endswith(".ghe.com"):
        return host[len("api."):]
    try:
        port = parts.port
    except ValueError:
        port = None
    shown = f"[{host}]" if ":" in host else host
    if port is not None and port != (443 if parts.scheme == "https" else 80):
        return f"{shown}:{port}"
    return shown


def token_variables(api: str) -> tuple[str, ...]:
    """The environment variables a token for ``api`` is read from, in order, as gh reads them.

    ``GH_TOKEN``/``GITHUB_TOKEN`` are github.com's (and GHE.com's); an
    Enterprise Server's token is ``GH_ENTERPRISE_TOKEN``/``GITHUB_ENTERPRISE_TOKEN``,
    so a github.com token in the environment never goes to an Enterprise host,
    nor the other way round. A loopback API (the GitHub double, a local
    stand-in) takes either: its token never leaves the machine.
    """
    from .origins import is_loopback_host

    host = api_host(api)
    if host in ("github.com", "api.github.com") or host.endswith(".ghe.com"):
        return GITHUB_VARIABLES
    if is_loopback_host(host):
        return GITHUB_VARIABLES + ENTERPRISE_VARIABLES
    return ENTERPRISE_VARIABLES


def env_token(api: str, env: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(token, the variable's name) from the environment's variables for ``api``'s host
    (:func:`token_variables`), the first one set; it wins over an App, as in gh."""
    env = os.environ if env is None else env
    for name in token_variables(api):
        value = env.get(name, "").strip()
        if value:
            return value, name
    return None


def find_token(api: str, env: Mapping[str, str] | None = None, run: Runner = subprocess.run) -> tuple[str, str] | None:
    """(token, where it came from), first found; never logs or prints the token.

    The environment's variables for this host (:func:`token_variables`), then
    ``git credential fill`` and ``gh auth token`` for the host people sign in
    to (:func:`web_host`): a token is only ever looked up for, and sent to,
    the API host configured or derived. ``run`` runs ``gh`` only; git runs
    through gitcli, as every git does (its one environment scrub).
    """
    found = env_token(api, env)
    if found is not None:
        return found
    host = web_host(api)
    hosts = ["api.github.com", "github.com"] if host == "github.com" else [host]
    for candidate in hosts:
        token = _credential_fill(candidate)
        if token:
            return token, f"git credential ({candidate})"
    token = _gh_auth_token(host, run)
    if token:
        return token, "gh auth token"
    return None


def no_token_advice(api: str, env: Mapping[str, str] | None = None) -> str:
    """What to do when no token is found for ``api``: the variables for its host, and any set for another."""
    env = os.environ if env is None else env
    wanted = token_variables(api)
    host = web_host(api)
    ignored = [name for name in GITHUB_VARIABLES + ENTERPRISE_VARIABLES
               if name not in wanted and env.get(name, "").strip()]
    also = ""
    if ignored:
        meant = "github.com" if ignored[0] in GITHUB_VARIABLES else "GitHub Enterprise Server"
        also = f" ({', '.join(ignored)} is set, but is {meant}'s token, as in gh: it is not sent to {host})"
    return (f"set {' or '.join(wanted)}{also}, store one with `git credential approve` for {host}, "
            f"log in with `gh auth login --hostname {host}`, "
            "or configure a GitHub App (sluice.appId, sluice.appKeyFile, sluice.installation)")


def credentials_from_settings(
    *,
    api: str,
    app_id: str | None,
    app_key_file: str | None,
    installation: str | None,
    state_dir: Path,
    clock: Clock,
    transport: httpx.BaseTransport | None = None,
    cancel: threading.Event | None = None,
) -> Credentials:
    """The credentials the settings call for; raises NoCredentials with what to do.

    ``cancel``: the command's stop flag; their own calls to GitHub are given up when it is set.
    A token in the environment for the API's host first, then the App, then the stored tokens
    (the module's docstring says why).
    """
    if app_id and env_token(api) is None:
        if not app_key_file or not installation:
            raise NoCredentials("sluice.appId is set: also set sluice.appKeyFile and sluice.installation")
        return AppInstallation(
            api=api, app_id=app_id, key_file=app_key_file, installation=installation, clock=clock, transport=transport,
            shared=SharedTokens(state_dir), cancel=cancel,
        )
    found = find_token(api)
    if found is None:
        raise NoCredentials(f"no GitHub token found for {web_host(api)}: " + no_token_advice(api))
    token, source = found
    return StaticToken(value=token, source=source, api=api,
                       resolver=UserPoolResolver(api, state_dir, transport=transport, source=source, cancel=cancel))
