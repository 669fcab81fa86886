"""docs/design.md's "the one …" claims, held by reading the source (issue 32).

The design names one atomic writer, one state-file lock, one git runner, one
RFC 3339 parser and one road to GitHub. Each claim was once false for a side
path written before the shared one existed; these tests name every place
allowed to do the thing itself, with the reason, so a new one is a decision
someone makes on purpose (and writes down in the design), not an accident.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import git_sluice

ROOT = Path(git_sluice.__file__).parent


def _product_sources() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if not relative.startswith("double/"):
            yield relative, ast.parse(path.read_text(encoding="utf-8"))


def _calls(attribute: str, owner: str) -> dict[str, int]:
    """Modules calling ``owner.attribute(...)`` (``subprocess.run``, ``fcntl.flock``), with how often."""
    found: dict[str, int] = {}
    for relative, tree in _product_sources():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attribute
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == owner):
                found[relative] = found.get(relative, 0) + 1
    return found


def test_nothing_imports_the_filelock_package() -> None:
    """statefile's FileLock replaced it (the same flock, without its ~15 ms import)."""
    for relative, tree in _product_sources():
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "filelock" for n in names), relative


def test_only_statefile_and_two_lifelong_locks_call_flock() -> None:
    allowed = {
        "statefile.py",  # the state files' lock
        "forge/flight_lock.py",  # a flight lock: its holder writes the answer's mark into the lock file
        "procs.py",  # PidLock: held for a driver's or a serve's whole life, its pid inside
    }
    assert set(_calls("flock", "fcntl")) <= allowed


def test_only_clock_parses_an_iso_time() -> None:
    assert set(_calls("fromisoformat", "datetime")) <= {"clock.py"}


def test_only_gitcli_runs_git() -> None:
    """Every subprocess outside gitcli is a program that is not git, named here with why."""
    allowed = {
        "gitcli.py",
        "boot.py",  # sysctl kern.boottime, where /proc has no boot id
        "forge/auth.py",  # gh auth token
        "config.py",  # ssh -G: the host an ssh alias connects to, which the API is derived from (issue 31)
    }
    assert set(_calls("run", "subprocess")) | set(_calls("Popen", "subprocess")) <= allowed
    for relative, tree in _product_sources():
        if relative == "gitcli.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant):
                assert node.elts[0].value != "git", f"{relative}:{node.lineno} runs git itself: use gitcli.run"


def test_only_the_credential_calls_leave_the_road() -> None:
    """GET /user and the App token's mint learn what the road needs (the pool, the token): docs/design.md."""
    assert set(_calls("Client", "httpx")) <= {"forge/auth.py"}
    assert _calls("Client", "httpx").get("forge/auth.py", 0) <= 2
