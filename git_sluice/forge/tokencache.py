"""One GitHub App installation token per host, shared in memory only (docs/design.md#credentials).

GitHub's ETags belong to the token that got them, so a process that mints its
own installation token revalidates nothing: every kept answer comes back a
200, counted. The host's processes therefore share one token, renewed by one
of them shortly before it expires.

Where it lives: git's own ``git credential-cache--daemon``, on a private
socket (``<host state dir>/run/credential-cache``, the folder 0700), which
holds credentials in memory only and forgets them after its timeout. The
token reaches it on a pipe (``git credential-cache --socket … store``), never
through a file, an argument or the environment; nothing else on the host
asks that socket (it is not the user's own credential cache). The expiry, by
the *injected* clock (a test's FileClock), travels beside it in the entry's
``username`` (git 2.39's daemon drops ``password_expiry_utc``). The token is
looked up under a key naming the API host, the App and the installation —
never the token itself.

Minting is serialised by a file lock beside the socket, so twenty processes
in a row, or at once, mint one token. Where the daemon cannot be used (no git,
no Unix sockets) every process mints its own, as before, and says so once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from ..records import record

log = logging.getLogger("git_sluice")

RUN_DIR = "run"
SOCKET_NAME = "credential-cache"
_EXPIRY_PREFIX = "sluice-expires-"
_HELPER_TIMEOUT = 10.0  # real seconds for one talk with the daemon


@record(frozen=True)
class Shared:
    token: str
    expires_at: float

    def __repr__(self) -> str:  # never the token, not even in a crash trace
        return f"Shared(expires_at={self.expires_at!r})"


class SharedTokens:
    """The host's installation tokens, in git's credential-cache daemon on a private socket."""

    def __init__(self, state_dir: Path, *, hold_for: float = 3600.0) -> None:
        self.run_dir = Path(state_dir) / RUN_DIR
        self.socket = self.run_dir / SOCKET_NAME
        self.hold_for = hold_for
        self._broken = False

    # -- the key ------------------------------------------------------------------
    @staticmethod
    def key(api_host: str, app_id: str, installation: str) -> str:
        return hashlib.sha256(f"{api_host}\0{app_id}\0{installation}".encode()).hexdigest()[:24]

    def _describe(self, key: str) -> str:
        return f"protocol=https\nhost=git-sluice.invalid\npath=app-installation/{key}\n"

    # -- the private folder and the minting lock ------------------------------------
    def _ensure_dir(self) -> bool:
        try:
            from ..statefile import ensure_dir

            ensure_dir(self.run_dir)  # a file in its place is moved aside
            os.chmod(self.run_dir, 0o700)  # the socket's folder is what keeps other users out
            return True
        except OSError as exc:
            self._give_up(f"cannot make {self.run_dir} ({exc.strerror})")
            return False

    @contextmanager
    def minting(self, key: str) -> Iterator[None]:
        """Held while one process looks, mints and stores: the others find its token after."""
        from ..statefile import file_lock, held

        if not self._ensure_dir():
            yield
            return
        with held(file_lock(self.run_dir / f"mint-{key}.lock", timeout=60.0), busy="the App token's mint lock"):
            yield

    # -- talking to the daemon ------------------------------------------------------------
    def get(self, key: str) -> Shared | None:
        if self._broken or not self.socket.exists():
            return None
        out = self._helper("get", self._describe(key) + "\n")
        if out is None:
            return None
        fields = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        token, user = fields.get("password", ""), fields.get("username", "")
        if not token or not user.startswith(_EXPIRY_PREFIX):
            return None
        try:
            expires = float(user[len(_EXPIRY_PREFIX):])
        except ValueError:
            return None
        return Shared(token, expires)

    def put(self, key: str, token: str, expires_at: float) -> None:
        if self._broken or "\n" in token or "\0" in token or not self._ensure_dir():
            return
        entry = f"{self._describe(key)}username={_EXPIRY_PREFIX}{int(expires_at)}\npassword={token}\n\n"
        # the daemon matches entries by username too, and ours names the expiry: drop the old token first
        self.forget(key)
        self._helper("store", entry, timeout=self.hold_for)

    def forget(self, key: str) -> None:
        """A token GitHub refused (401) is dropped, so the next caller mints afresh."""
        if not self._broken and self.socket.exists():
            self._helper("erase", self._describe(key) + "\n")

    def stop(self) -> None:
        """End the daemon (tests; ``git credential-cache exit`` by hand does the same)."""
        if self.socket.exists():
            self._helper("exit", "")

    def _helper(self, action: str, entry: str, *, timeout: float | None = None) -> str | None:
        from .. import gitcli

        args = ["credential-cache", "--socket", str(self.socket)]
        if timeout is not None:
            args += ["--timeout", str(max(60, int(timeout)))]
        try:
            # quiet: stderr to /dev/null, never a pipe: a daemon spawned by `store` inherits it and
            # would hold our pipe (and a hook's) open for its whole life; the daemon keeps this
            # environment and the folder (-C) as its working directory for that life too
            done = gitcli.run(
                [*args, action], cwd=self.run_dir, input=entry, timeout=_HELPER_TIMEOUT, quiet=True,
                here=True, drop=HELPER_DROPS, env={"GIT_TERMINAL_PROMPT": "0"},
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self._give_up(f"git credential-cache failed ({type(exc).__name__})")
            return None
        if done.returncode != 0:
            if action in ("store",):
                self._give_up(f"git credential-cache {action} exited {done.returncode}")
            return None
        return done.stdout

    def _give_up(self, why: str) -> None:
        if not self._broken:
            log.warning("the GitHub App token cannot be shared on this host (%s): each process mints its own", why)
        self._broken = True


HELPER_DROPS = ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
"""Tokens the daemon must not keep: it outlives us, with our environment, for its whole life.

gitcli's ``here`` drops what would pick a repository; these are dropped besides.
"""
