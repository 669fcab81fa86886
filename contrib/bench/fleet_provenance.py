"""Every figure from one commit: which tree the benchmark ran, and proof that every process ran it.

The published benchmark once mixed two code versions (the harness process
imported git-sluice from before a759667, its subprocesses the newer one), and
its S1 figure was 26 % off. So the harness names the commit it runs
(``git rev-parse HEAD``), refuses a dirty tree unless told ``--allow-dirty``
(then the report says so in bold), and checks that the ``git_sluice`` each
kind of process imports — this one, the baselines' worker, and the
``git-sluice`` console script that hooks and ``git sluice …`` commands start —
is the one in this tree, at this tree's version.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

DIGEST_CODE = (
    "def _digest(top):\n"
    "    import hashlib, pathlib\n"
    "    top = pathlib.Path(top)\n"
    "    h = hashlib.sha256()\n"
    "    for path in sorted(p for p in top.rglob('*.py') if '__pycache__' not in p.parts\n"
    "                       and 'hookscripts' not in p.relative_to(top).parts):\n"
    "        h.update(str(path.relative_to(top)).encode() + b'\\0' + path.read_bytes() + b'\\0')\n"
    "    return h.hexdigest()\n"
)
"""The package's source as one hash: an installed copy built from this tree (``pip install .``, as
CI installs it) has the same files in another place, and runs the same code."""

IDENTITY_CODE = (
    DIGEST_CODE
    + "import json, pathlib, git_sluice\n"
    "print(json.dumps({'file': git_sluice.__file__, 'version': git_sluice.__version__,\n"
    "                  'digest': _digest(pathlib.Path(git_sluice.__file__).parent)}))\n"
)

_scope: dict[str, Any] = {}
exec(DIGEST_CODE, _scope)  # noqa: S102 - our own constant, shared with the other processes' check
source_digest = _scope["_digest"]


class ProvenanceError(Exception):
    """The run would not come from one commit: a dirty tree, or modules from elsewhere."""


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise ProvenanceError(f"git {' '.join(args)} failed in {ROOT}: {done.stderr.strip()}")
    return done.stdout.strip()


def tree_state() -> dict[str, Any]:
    """The commit and whether the tree differs from it (untracked files count: they can be imported)."""
    commit = _git("rev-parse", "HEAD")
    changes = [line for line in _git("status", "--porcelain", "--untracked-files=all").splitlines() if line.strip()]
    return {"commit": commit, "short": commit[:10], "dirty": bool(changes), "changes": changes[:20],
            "change_count": len(changes)}


def identity() -> dict[str, str]:
    """This process's git_sluice: where it was imported from, and its version."""
    import git_sluice

    package = Path(git_sluice.__file__).resolve()
    return {"file": str(package), "version": str(git_sluice.__version__), "digest": source_digest(package.parent)}


def expected() -> dict[str, str]:
    """What every process must import: this tree's package, at the version its source declares."""
    init = ROOT / "git_sluice" / "__init__.py"
    version = None
    for line in init.read_text(encoding="utf-8").splitlines():
        if line.startswith("__version__"):
            version = line.split("=", 1)[1].strip().strip("\"'")
    return {"file": str(init.resolve()), "version": str(version), "digest": source_digest(init.parent)}


def mismatch(who: str, got: dict[str, str], want: dict[str, str]) -> str | None:
    """Why ``got`` is not this tree's git_sluice, or None."""
    if Path(got.get("file", "")).resolve() != Path(want["file"]).resolve() and got.get("digest") != want["digest"]:
        return (f"{who} imports git_sluice from {got.get('file')}, not from this tree ({want['file']}), "
                "and its source differs")
    if got.get("version") != want["version"]:
        return f"{who} imports git_sluice {got.get('version')}, this tree is {want['version']}"
    return None


def console_identity(env: dict[str, str] | None = None) -> dict[str, str]:
    """The git_sluice that the ``git-sluice`` console script on PATH imports (hooks and commands start it).

    The script's own interpreter (its ``#!`` line) imports the package, as the
    script would, from the same working directory the benchmark's processes use.
    """
    env = dict(env if env is not None else os.environ)
    # the benchmark's worlds put this interpreter's bin directory first (fleet_world._isolated_env)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    script = shutil.which("git-sluice", path=env.get("PATH"))
    if script is None:
        raise ProvenanceError("no git-sluice console script on PATH (install this tree: pip install -e .)")
    with open(script, "rb") as handle:
        first = handle.readline().decode(errors="replace").strip()
    interpreter = first[2:].strip().split()[0] if first.startswith("#!") else sys.executable
    done = subprocess.run([interpreter, "-c", IDENTITY_CODE], capture_output=True, text=True, env=env,
                          cwd=str(Path(env.get("HOME", "/")) if env.get("HOME") else "/"))
    if done.returncode != 0:
        raise ProvenanceError(f"{script}'s interpreter {interpreter} cannot import git_sluice: "
                              f"{done.stderr.strip()[-300:]}")
    out = json.loads(done.stdout)
    out["script"] = script
    return out


def check(allow_dirty: bool, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The run's provenance, or :class:`ProvenanceError` saying why it cannot come from one commit."""
    state = tree_state()
    if state["dirty"] and not allow_dirty:
        shown = "\n  ".join(state["changes"][:10])
        raise ProvenanceError(
            f"the tree at {ROOT} differs from its commit {state['short']} ({state['change_count']} change(s)):\n  "
            f"{shown}\ncommit or stash them, or pass --allow-dirty (the report will say the figures are not "
            "from one commit)")
    want = expected()
    problems = [p for p in (mismatch("the harness", identity(), want),
                            mismatch("the git-sluice console script", console_identity(env), want)) if p]
    if problems:
        raise ProvenanceError("; ".join(problems))
    return {**state, "allow_dirty": allow_dirty, "version": want["version"], "package": want["file"]}


def check_worker(got: dict[str, str]) -> None:
    """A worker process's identity (from :func:`identity` run there) against this tree."""
    problem = mismatch("the baselines' worker process", got, expected())
    if problem:
        raise ProvenanceError(problem)
