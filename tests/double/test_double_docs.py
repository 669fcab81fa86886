"""docs/double.md's examples run as written, and its tables name what the double has.

Each fenced example is taken from the page itself: the console block starts
the stand-alone double with the documented command and runs every ``curl``
line against it (``--fail-with-body``, from a private ``.curlrc``, turns an
HTTP error into a failed command); the scenario block is loaded by a
stand-alone double; the Python blocks are executed. The tables' calls must
be the double's methods with those parameter names (the old page said ``n``
where the double wants ``number``), and the control API's and knobs' lists
must be the double's own.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import select
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from git_sluice.double import control
from git_sluice.double.core import GitHubDouble

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "double.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _blocks(lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(PAGE.read_text(encoding="utf-8")) if kind == lang]


def _commands(block: str) -> list[str]:
    return [line[2:] for line in block.splitlines() if line.startswith("$ ")]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The test's Python first on PATH (``python`` in the docs is this one), curl failing on HTTP errors."""
    (tmp_path / ".curlrc").write_text("fail-with-body\nshow-error\nmax-time = 60\n")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "CURL_HOME": str(tmp_path), **extra}


def _start(command: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command}"], cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    line = proc.stdout.readline() if ready else ""
    if not line.startswith("http"):
        proc.kill()
        _, err = proc.communicate(timeout=10)
        pytest.fail(f"{command!r} printed {line!r}, stderr {err!r}")
    return proc, line.strip()


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    finally:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    (block,) = [b for b in _blocks("console") if "python -m git_sluice.double" in b]
    (start,) = _commands(block)
    env = _env(tmp_path)
    proc, url = _start(start, env)
    try:
        yield url, {**env, "URL": url}
    finally:
        _stop(proc)


def test_the_console_examples_run_as_written(standalone: tuple[str, dict[str, str]]) -> None:
    url, env = standalone
    blocks = [b for b in _blocks("console") if "$URL" in b]
    commands = [c for b in blocks for c in _commands(b)]
    assert len(commands) >= 5 and all(c.startswith("curl ") for c in commands)
    for command in commands:
        done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        words = shlex.split(command)
        if "POST" in words and "/_double/" in command:
            assert "result" in json.loads(done.stdout), command  # the documented {"result": …} wrapping
    review = [c for c in commands if "/_double/review" in c]
    assert review and '"number"' in review[0]


def test_the_scenario_example_loads_in_a_standalone_double(tmp_path: Path) -> None:
    (scenario,) = [b for b in _blocks("json") if '"repos"' in b]
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    data = json.loads(scenario)
    for app in data.get("apps", []):
        (tmp_path / app["public_key_file"]).write_bytes(pem)  # "relative to the scenario file"
    path = tmp_path / "scenario.json"
    path.write_text(scenario)
    proc, url = _start(f"python -m git_sluice.double --scenario {shlex.quote(str(path))}", _env(tmp_path))
    try:
        assert url.startswith("http://127.0.0.1:")
    finally:
        _stop(proc)


def test_the_python_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, object] = {}
    blocks = _blocks("python")
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)  # noqa: S102 - the documentation's own code
    assert isinstance(namespace["gh"], GitHubDouble) and namespace["ghes"].enterprise  # type: ignore[attr-defined]
    assert capsys.readouterr().out.startswith("http://127.0.0.1:")


_CALL = re.compile(r"`gh\.(\w+)\(([^)`]*)\)")


def test_every_documented_call_is_the_doubles_with_its_parameter_names() -> None:
    found = _CALL.findall(PAGE.read_text(encoding="utf-8"))
    assert len(found) > 30
    for name, args in found:
        method = getattr(GitHubDouble, name, None)
        assert callable(method), f"gh.{name} is documented but the double has no such method"
        params = inspect.signature(method).parameters
        for arg in (a.strip() for a in args.split(",")):
            arg = arg.split("=")[0].strip()
            if not arg or arg.startswith("*") or arg == "…":
                continue
            assert arg in params, f"gh.{name}({arg}…): the double's parameters are {list(params)[1:]}"


def test_the_control_methods_and_knobs_lists_are_the_doubles() -> None:
    text = PAGE.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `POST /_double/<method>`"))
    listed = re.findall(r"`(\w+)`", row.split("Methods:", 1)[1])
    assert listed == list(control.METHODS)
    knobs = re.findall(r"^\| `(\w+)` \|", text.split("**Rate-limit knobs**", 1)[1].split("**Faults**", 1)[0], re.M)
    assert sorted(knobs) == sorted(control.KNOBS)
