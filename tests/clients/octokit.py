"""The real octokit (``@octokit/rest`` with ``@octokit/plugin-throttling``, from npm) against ``serve``'s port.

``node/package.json`` pins the versions (``node/package-lock.json`` the whole
tree, for ``npm ci``); ``node/client.mjs`` runs a plan of calls and prints what
came back and what the throttling plugin's handlers were called with.

What octokit sends to the port: ``Host: 127.0.0.1:PORT``, REST at the path
under ``baseUrl`` (``/repos/…``), ``Authorization: token T``, ``Accept:
application/vnd.github.v3+json``, ``Connection: keep-alive`` (one connection
for a plan's calls) and ``Accept-Encoding: gzip, deflate``; ``paginate``
follows the ``Link`` it is handed, as it is.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "client.mjs"
INSTALL = ("octokit is not installed: tests/clients/install (the README's test command) installs it with `npm ci` in tests/clients/node "
           "(package.json pins @octokit/rest and @octokit/plugin-throttling); run that, with Node.js 20 or later")


def node_binary() -> str:
    """node, with octokit installed beside the script; the test fails (never skips) without them."""
    node = shutil.which("node")
    if node is None or not (NODE_DIR / "node_modules" / "@octokit" / "rest" / "package.json").is_file() \
            or not (NODE_DIR / "node_modules" / "@octokit" / "plugin-throttling" / "package.json").is_file():
        pytest.fail(INSTALL, pytrace=False)
    return node


def octokit(base_url: str, token: str, steps: list[dict[str, Any]], *, now: float | None = None,
            timeout: float = 60) -> dict[str, Any]:
    """Run ``steps`` with one octokit; ``now`` is the test's clock (Date.now() in the script reads it)."""
    plan: dict[str, Any] = {"baseUrl": base_url, "token": token, "steps": steps}
    if now is not None:
        plan["now"] = now
    done = subprocess.run([node_binary(), str(SCRIPT)], input=json.dumps(plan), capture_output=True, text=True,
                          timeout=timeout, cwd=NODE_DIR)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def pulls(paginate: bool = False, **params: Any) -> dict[str, Any]:
    """The step that lists o/r's pull requests."""
    return {"route": "GET /repos/{owner}/{repo}/pulls", "params": {"owner": "o", "repo": "r", **params},
            "paginate": paginate}
