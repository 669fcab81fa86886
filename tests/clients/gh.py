"""The real ``gh`` (Debian's package, 2.23) pointed at ``serve``'s Unix socket.

What gh 2.23 sends over the socket (read from serve's requests and the double's ledger):
``Host: api.github.com``; REST at ``/repos/…`` (github.com's shape, no
``/api/v3``) and GraphQL as ``POST /graphql``; ``Authorization: token T``
from ``GH_TOKEN``; ``Connection: close`` (a connection a call: its socket
transport turns keep-alive off) and ``Accept-Encoding: gzip``. Every address
it dials goes to the socket, whatever its host: a ``Link`` naming another
host is followed over the socket too, but without the token (gh sends it
only to a host it knows), which is why ``serve`` names itself as
``api.github.com`` in the links it hands back.

Each :class:`Gh` has a config dir of its own (``GH_CONFIG_DIR``) holding
only ``http_unix_socket``; a proxy that does not exist is set too, so a
call that did not take the socket would fail rather than reach the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

INSTALL = ("gh is not installed: tests/clients/install (the README's test command) installs Debian's package (`apt-get install -y gh`, gh 2.23) "
           "before the tests; install it the same way to run these tests")
NOWHERE = "http://127.0.0.1:9"
"""A proxy no one listens on (the discard port): what does not take the socket fails at once."""


def gh_binary() -> str:
    """The gh on PATH; the test fails (never skips) without it."""
    found = shutil.which("gh")
    if found is None:
        pytest.fail(INSTALL, pytrace=False)
    return found


class Gh:
    """``gh`` for one test: its own config dir, the socket, a token, no network, no prompts."""

    def __init__(self, socket: Path, config_dir: Path, token: str) -> None:
        self.binary = gh_binary()
        config_dir.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(config_dir),
            "GH_CONFIG_DIR": str(config_dir),
            "GH_TOKEN": token,
            "GH_HOST": "github.com",
            "GH_NO_UPDATE_NOTIFIER": "1",
            "GH_PROMPT_DISABLED": "1",
            "GH_PAGER": "cat",
            "NO_COLOR": "1",
            "HTTPS_PROXY": NOWHERE,
            "HTTP_PROXY": NOWHERE,
            "https_proxy": NOWHERE,
            "http_proxy": NOWHERE,
        }
        done = self.run("config", "set", "http_unix_socket", str(socket))
        assert done.returncode == 0, done.stderr

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([self.binary, *args], env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
