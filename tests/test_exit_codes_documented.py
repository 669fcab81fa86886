"""Every exit code docs/reference.md gives a command is the one the command exits with (issue 31).

The test reads each command's ``Exit codes:`` line in docs/reference.md and
drives every code it lists: here, through the real console script against the
GitHub double (the exit code and the words of the message, which must also be
words the reference uses for that code), or, where a code needs a real signal
or a hung GitHub, by the named test elsewhere that drives it. A documented code
with no driver fails, and so does a driver for a code the reference no longer
gives. The ``--help`` of each command must list the same codes, and an
option's ``(exit N)`` must be the reference's too: ``api --timeout`` said
``exit 3`` in its help and the man page while the reference said 4.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import httpx
import pytest

from git_sluice.cli import main
from tests.cliworld import CliHost, CliWorld, cli_world

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference.md"


# ------------------------------------------------------------------------- the reference


def _sections() -> dict[str, str]:
    """Each command's section of the reference, by command name."""
    text = REFERENCE.read_text(encoding="utf-8")
    found = re.findall(r"^### `git sluice ([a-z]+)`\n(.*?)(?=^### |^## )", text, flags=re.M | re.S)
    return dict(found)


def codes_in(text: str) -> dict[int, str]:
    """``Exit codes: 0 done; 1 failed; …`` as {code: its words}, up to the paragraph's end."""
    match = re.search(r"Exit codes:\s*(.*?)(?:\n\s*\n|\Z)", text, flags=re.S)
    assert match is not None, "no 'Exit codes:' paragraph"
    words = " ".join(match.group(1).split())
    parts = re.split(r"(?:^|;\s*)(\d{1,3})(?=[\s;.]|$)", words)
    return {int(parts[i]): parts[i + 1].strip(" ;.") for i in range(1, len(parts) - 1, 2)}


DOCUMENTED = {name: codes_in(section) for name, section in _sections().items()}


def test_the_reference_gives_every_command_its_exit_codes() -> None:
    ctx = click.Context(main, info_name="git sluice")
    visible = {n for n in main.list_commands(ctx) if not main.get_command(ctx, n).hidden}  # type: ignore[union-attr]
    assert visible <= set(DOCUMENTED), visible - set(DOCUMENTED)
    assert all(0 in codes for codes in DOCUMENTED.values()), DOCUMENTED


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_help_lists_the_reference_s_exit_codes(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    help_text = command.help or ""
    assert "``" not in help_text, f"`git sluice {name} --help` shows reST markup (``…``) to a person"
    assert sorted(codes_in(help_text)) == sorted(DOCUMENTED[name]), (
        f"`git sluice {name} --help` and docs/reference.md give different exit codes"
    )
    section = _sections()[name]
    for param in command.params:
        said = re.findall(r"\bexit (\d+)", getattr(param, "help", None) or "")
        for code in said:
            opt = param.opts[-1]
            row = next((line for line in section.splitlines() if f"`{opt}`" in line and line.startswith("|")), "")
            assert re.search(rf"\bexits? {code}\b", row), (
                f"`{name} {opt}` says 'exit {code}' in its help; its row in docs/reference.md does not: {row}"
            )


# ------------------------------------------------------------------------------ drivers


@dataclass(frozen=True)
class Drive:
    """One documented (command, code): what makes it happen, and the words that must say it."""

    doc: str  # words of the reference's text for this code
    run: Callable[[CliWorld, CliHost], subprocess.CompletedProcess[str]]
    says: str  # words of the command's output (stderr, or stdout for a result)


def _spend(world: CliWorld) -> None:
    """alice's core allowance spent by another tool before git-sluice ran (its reset an hour away)."""
    world.gh.add_token("tok-spender", user="alice")
    world.gh.set_limit("user:alice", "core", 1)
    assert httpx.get(f"{world.url}/repos/o/r", headers={"Authorization": "token tok-spender"}).status_code == 200


def _ready(world: CliWorld) -> int:
    gh = world.gh
    n = gh.open_pr("o/r", head_ref="ready")
    gh.add_check_run("o/r", gh.pr("o/r", n).head_sha, "ci", status="completed", conclusion="success")
    gh.review("o/r", n, "bob", "APPROVED")
    gh.set_mergeable("o/r", n, "MERGEABLE")
    return n


def _waiting(world: CliWorld) -> int:
    gh = world.gh
    n = gh.open_pr("o/r", head_ref="slow")
    gh.add_check_run("o/r", gh.pr("o/r", n).head_sha, "ci", status="in_progress")
    return n


def _closed(world: CliWorld) -> int:
    n = world.gh.open_pr("o/r", head_ref="gone")
    world.gh.close_pr("o/r", n)
    return n


def _no_remote(host: CliHost) -> CliHost:
    host.git("remote", "remove", "origin")
    return host


def _bad_discovery(host: CliHost) -> CliHost:
    host.git("config", "sluice.discovery", "soon")
    return host


NO_STATE = {"XDG_STATE_HOME": "/dev/null/state"}  # a state dir that cannot be made: a failure, not a usage error

DRIVES: dict[tuple[str, int], list[Drive]] = {
    ("setup", 0): [Drive("done", lambda w, h: h.run("setup"), "set up")],
    ("setup", 1): [Drive("failed", lambda w, h: (h.git("config", "core.hooksPath", "/dev/null/hooks"), h.run("setup"))[1],
                         "cannot change /dev/null/hooks")],
    ("setup", 2): [Drive("configuration error", lambda w, h: _no_remote(h).run("setup"), "git remote add")],
    ("intake", 0): [Drive("done", lambda w, h: h.run("intake"), "main: ")],
    ("intake", 1): [Drive("GitHub unavailable",
                          lambda w, h: (w.gh.fault("status", path="pulls", code=502, times=5), h.run("intake"))[1],
                          "unavailable")],
    ("intake", 2): [Drive("unknown `--branch`", lambda w, h: h.run("intake", "-b", "nope"), "no such branch"),
                    Drive("refused the credentials", lambda w, h: h.run("intake", GH_TOKEN="tok-nobody"),
                          "the token from GH_TOKEN")],
    ("intake", 3): [Drive("allowance spent", lambda w, h: (_spend(w), h.run("intake"))[1], "is spent: no call until")],
    ("drive", 1): [Drive("failed", lambda w, h: h.run("drive", **NO_STATE), "cannot create the host state directory")],
    ("drive", 2): [Drive("unknown `--branch`", lambda w, h: h.run("drive", "-b", "nope"), "no such branch")],
    ("wait", 0): [Drive("merged or ready", lambda w, h: h.run("wait", str(_ready(w)), "--timeout", "1h"), ": ready")],
    ("wait", 1): [Drive("closed", lambda w, h: h.run("wait", str(_closed(w)), "--timeout", "1h"), ": closed")],
    ("wait", 2): [Drive("refused the credentials", lambda w, h: h.run("wait", "1", GH_TOKEN="tok-nobody"),
                        "the token from GH_TOKEN")],
    ("wait", 3): [Drive("allowance spent past the timeout",
                        lambda w, h: (_spend(w), h.run("wait", "1", "--timeout", "1m"))[1], "is spent")],
    ("wait", 4): [Drive("no outcome within", lambda w, h: h.run("wait", str(_waiting(w)), "--timeout", "2m"),
                        "no outcome within the timeout")],
    ("lease", 0): [Drive("", lambda w, h: h.run("lease"), "main: no lease")],
    ("lease", 2): [Drive("unknown `--branch`", lambda w, h: h.run("lease", "-b", "nope"), "no such branch")],
    ("queue", 0): [Drive("", lambda w, h: h.run("queue"), "")],
    ("queue", 2): [Drive("unknown `--branch`", lambda w, h: h.run("queue", "-b", "nope"), "no such branch")],
    ("status", 0): [Drive("", lambda w, h: h.run("status"), "main")],
    ("status", 1): [Drive("host state cannot be used", lambda w, h: h.run("status", **NO_STATE),
                          "cannot create the host state directory")],
    ("status", 2): [Drive("configuration", lambda w, h: _bad_discovery(h).run("status"), "sluice.discovery=soon")],
    ("doctor", 0): [Drive("no check failed", lambda w, h: (h.run("setup"), h.run("doctor"))[1], "0 failed")],
    ("doctor", 1): [Drive("a check failed", lambda w, h: h.run("doctor"), "2 failed")],
    ("api", 0): [Drive("success", lambda w, h: h.run("api", "repos/o/r"), '"full_name": "o/r"')],
    ("api", 1): [Drive("GitHub answered an error", lambda w, h: h.run("api", "repos/o/nope"), "Not Found (HTTP 404)"),
                 Drive("GitHub was unavailable",
                       lambda w, h: (w.gh.fault("status", path="/repos/o/r$", code=502, times=5), h.run("api", "repos/o/r"))[1],
                       "unavailable")],
    ("api", 2): [Drive("usage", lambda w, h: h.run("api", "-X", "BOGUS", "repos/o/r"), "BOGUS"),
                 Drive("refused the credentials", lambda w, h: h.run("api", "user", GH_TOKEN="tok-nobody"),
                       "the token from GH_TOKEN")],
    ("api", 3): [Drive("allowance spent", lambda w, h: (_spend(w), h.run("api", "repos/o/r"))[1],
                       "is spent: no call until")],
    ("serve", 2): [Drive("not a loopback address", lambda w, h: h.run("serve", "--no-socket", "--port", "0", "--host", "10.1.2.3"),
                         "loopback")],
}

ELSEWHERE: dict[tuple[str, int], str] = {
    ("intake", 130): "tests/test_roles_cli.py::test_every_long_running_command_stops_within_a_second_of_a_signal_while_paused",
    ("wait", 130): "tests/test_roles_cli.py::test_every_long_running_command_stops_within_a_second_of_a_signal_while_paused",
    ("api", 130): "tests/test_roles_cli.py::test_every_long_running_command_stops_within_a_second_of_a_signal_while_paused",
    ("drive", 0): "tests/test_roles_cli.py::test_every_long_running_command_stops_within_a_second_of_a_signal_while_paused",
    ("api", 4): "tests/forge/test_client.py::test_api_with_a_timeout_against_a_hang_returns_within_about_its_timeout",
    ("serve", 0): "tests/serve/test_lifecycle.py::test_one_serve_per_socket_a_private_socket_and_a_clean_stop",
    ("demo", 0): "tests/test_roles_cli.py::test_demo_keep_leaves_state_that_reads_right_on_the_real_clock",
}
"""Codes driven by a test of their own: a real signal, a hung GitHub, a real-clock demo."""

UNDRIVEN: dict[tuple[str, int], str] = {
    ("demo", 1): "the demo runs in its own directory with its own git config and its own double: nothing outside "
                 "it can make it fail on purpose, so 1 means a bug (its message is the error's)",
}


def test_every_documented_code_has_a_driver_and_every_driver_a_documented_code() -> None:
    documented = {(name, code) for name, codes in DOCUMENTED.items() for code in codes}
    driven = set(DRIVES) | set(ELSEWHERE) | set(UNDRIVEN)
    assert documented - driven == set(), f"documented but driven nowhere: {sorted(documented - driven)}"
    assert driven - documented == set(), f"driven but not in docs/reference.md: {sorted(driven - documented)}"


@pytest.mark.parametrize("row", sorted(ELSEWHERE), ids=lambda row: f"{row[0]}-{row[1]}")
def test_a_code_driven_elsewhere_names_a_test_that_exists(row: tuple[str, int]) -> None:
    path, _, name = ELSEWHERE[row].partition("::")
    assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), ELSEWHERE[row]


CASES = [(name, code, i) for (name, code), drives in sorted(DRIVES.items()) for i in range(len(drives))]


@pytest.mark.parametrize(("name", "code", "index"), CASES, ids=[f"{n}-{c}-{i}" for n, c, i in CASES])
def test_each_documented_exit_code_is_what_the_command_exits_with(tmp_path: Path, name: str, code: int,
                                                                  index: int) -> None:
    drive = DRIVES[(name, code)][index]
    assert drive.doc in DOCUMENTED[name][code], (
        f"docs/reference.md gives `{name}` exit {code} as {DOCUMENTED[name][code]!r}: not {drive.doc!r}")
    with cli_world(tmp_path) as world:
        world.gh.open_pr("o/r", head_ref="feature")
        host = world.host("host-a")
        done = drive.run(world, host)
    said = done.stdout + done.stderr
    assert done.returncode == code, (name, code, said)
    assert "Traceback" not in said, said
    results = code == 0 or (name, code) in (("doctor", 1), ("wait", 1))  # an outcome, not an error: on stdout
    assert drive.says in (said if results else done.stderr), (drive.says, said)
