"""cli/fast_path.py: ``status``, ``queue`` and the hook runner without click print exactly what click would (issue 15).

Each case runs the console script's entry (the fast path where it applies)
and the click command line itself, in fresh processes over the same clone,
and compares stdout, stderr and the exit code byte for byte; the spellings
the fast path leaves to click are checked to reach click.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from git_sluice.cli.fast_path import parse
from git_sluice.intake.queue import QueueDoc, QueueStore, entry_from_reading
from git_sluice.intake.request import Request
from git_sluice.paths import clone_sluice_dir
from tests.gitutil import git

ENTRY = "import sys\nfrom git_sluice.entry import main\nsys.argv = ['git-sluice', *sys.argv[1:]]\nmain()\n"
CLICK = ("import sys\nfrom git_sluice.cli import main\n"
         "main(args=sys.argv[1:], prog_name='git-sluice')\n")
LOADED = ("import atexit, sys\n"
          "atexit.register(lambda: sys.stderr.write('LOADED ' + ' '.join(sorted(m for m in ('click', 'httpx', "
          "'pygit2', 'graphql') if m in sys.modules)) + '\\n'))\n")


@pytest.fixture
def work(github_clone: Path) -> Path:
    for key, value in (("sluice.repository", "octo/widgets"), ("sluice.branch", "main"), ("sluice.host", "host-a")):
        git(github_clone, "config", key, value)
    store = QueueStore(clone_sluice_dir(github_clone))
    # read mid-hour a month ago: "30 d 0 h ago" reads the same in both runs (the text uses the real time)
    doc = QueueDoc(repository="octo/widgets", branch="main", read_at=time.time() - 30 * 86400 - 1800)
    for number, title, review in ((7, "plain title", "APPROVED"), (8, "\x1b[31mred\x1b[0m and a very long title " * 3,
                                                                    "CHANGES_REQUESTED")):
        reading = Request(number=number, title=title, author="alice", head_ref=f"topic-{number}",
                          head_sha=f"{number:040x}", base="main", draft=False, updated_at="2026-01-01T00:00:00Z",
                          review_decision=review, checks_state="SUCCESS", mergeable="MERGEABLE")
        doc.entries[number] = entry_from_reading(reading, previous=None, now=1_700_000_000.0)
    store.save(doc)
    return github_clone


def _run(work: Path, code: str, *args: str) -> tuple[str, str, int]:
    clock = work.parent / f"{work.name}.clock"  # one time for both runs: status shows "now"
    clock.write_text("1700000600.0")
    env = {**os.environ, "GIT_SLUICE_TEST_CLOCK": str(clock)}
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=work, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env)
    return proc.stdout, proc.stderr, proc.returncode


@pytest.mark.parametrize("args", [
    ("queue",), ("queue", "--json"), ("queue", "-b", "main", "--json"), ("queue", "--branch=main"),
    ("queue", "-b", "nope"), ("queue", "-b", "main", "--branch", "main"), ("status",), ("status", "--json"),
])
def test_the_fast_path_prints_what_click_prints(work: Path, args: tuple[str, ...]) -> None:
    assert parse(args) is not None
    fast_out, fast_err, fast_code = _run(work, LOADED + ENTRY, *args)
    click_out, click_err, click_code = _run(work, CLICK, *args)
    loaded = fast_err.splitlines()[-1].strip()
    assert loaded == "LOADED", f"the fast path loaded {loaded}"
    assert (fast_out, "\n".join(fast_err.splitlines()[:-1]), fast_code) == (
        click_out, click_err.rstrip("\n"), click_code)
    if args[:1] == ("queue",) and "--json" not in args and "nope" not in args:
        assert "plain title" in fast_out and "\x1b" not in fast_out  # off a terminal, as click: no ANSI
        assert "changes requested" in fast_out
    if "nope" in args:
        assert fast_code == 2 and "nope" in fast_err


@pytest.mark.parametrize("args", [
    ("status", "--help"), ("queue", "-h"), ("queue", "--jsn"), ("queue", "-b"), ("queue", "-bmain"),
    ("queue", "-b", "--json"), ("status", "extra"), ("_hook-round", "--wait-pid", "x1"), ("--version",), (),
    ("intak",), ("intake", "--help"), ("--help",),
])
def test_every_other_spelling_is_left_to_click(work: Path, args: tuple[str, ...]) -> None:
    assert parse(args) is None
    fast_out, fast_err, fast_code = _run(work, LOADED + ENTRY, *args)
    click_out, click_err, click_code = _run(work, CLICK, *args)
    assert "click" in fast_err.splitlines()[-1]
    assert (fast_out, "\n".join(fast_err.splitlines()[:-1]), fast_code) == (
        click_out, click_err.rstrip("\n"), click_code)


def test_hook_round_options_read_as_click_reads_them() -> None:
    assert parse(["_hook-round", "--wait-pid", "12", "--inbox", "a"]) == (
        "_hook-round", {"wait_pid": 12, "inbox": "a"})
    assert parse(["_hook-round", "--inbox=b", "--wait-pid=3", "--wait-pid", "4"]) == (
        "_hook-round", {"wait_pid": 4, "inbox": "b"})
    assert parse(["_hook-round"]) == ("_hook-round", {"wait_pid": None, "inbox": None})
    assert parse(["_hook-round", "--wait-pid", "-3"]) is None  # click's int, and its error
    assert parse(["queue", "-b", "a", "-b", "b"]) == ("queue", {"branches": ("a", "b"), "as_json": False})


def test_a_closed_pipe_ends_queue_quietly_with_clicks_code(work: Path) -> None:
    code = LOADED + "import os\nos.close(1)\nr, w = os.pipe()\nos.close(r)\nos.dup2(w, 1)\n" + ENTRY
    _, fast_err, fast_code = _run(work, code, "queue")
    _, click_err, click_code = _run(work, code.replace(ENTRY, CLICK), "queue")
    assert fast_code == click_code == 1
    assert "Traceback" not in fast_err and "Traceback" not in click_err


def test_the_command_map_names_every_command_where_it_is_defined() -> None:
    """The console script imports only the module of the command it runs (cli/_group.COMMAND_MODULES)."""
    from git_sluice.cli import main
    from git_sluice.cli._group import COMMAND_MODULES

    assert set(main.commands) == set(COMMAND_MODULES)
    for name, command in main.commands.items():
        assert command.callback is not None
        assert command.callback.__module__ == f"git_sluice.cli.{COMMAND_MODULES[name]}", name


def test_a_command_run_by_click_loads_its_own_module_alone(tmp_path: Path) -> None:
    code = ("import sys\nsys.argv = ['git-sluice', 'intake', '--help']\nfrom git_sluice.entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('git_sluice.cli.') and m.endswith('_cmd')))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "['git_sluice.cli.intake_cmd']"


@pytest.mark.parametrize("args", [("queue",), ("queue", "--json"), ("status",), ("status", "--json")])
def test_outside_a_clone_the_fast_path_fails_as_click_does(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "here").mkdir()
    fast = _run(tmp_path / "here", LOADED + ENTRY, *args)
    slow = _run(tmp_path / "here", CLICK, *args)
    assert fast[0] == slow[0] == "" and fast[2] == slow[2] == 2
    assert "\n".join(fast[1].splitlines()[:-1]) == slow[1].rstrip("\n") and "not inside a git repository" in slow[1]


def test_intake_options_read_as_click_reads_them() -> None:
    assert parse(["intake"]) == ("intake", {"wait": False, "timeout": None, "as_json": False, "verbose": False})
    assert parse(["intake", "--json", "-v", "--wait", "--timeout", "90s"]) == (
        "intake", {"wait": True, "timeout": 90.0, "as_json": True, "verbose": True})
    assert parse(["intake", "--wait", "--timeout=5m", "--timeout", "1m", "--verbose"]) == (
        "intake", {"wait": True, "timeout": 60.0, "as_json": False, "verbose": True})
    for args in (["intake", "-b", "main"], ["intake", "--branch=main"], ["intake", "--timeout", "soon"],
                 ["intake", "--timeout"], ["intake", "-vv"], ["intake", "--help"], ["intake", "extra"]):
        assert parse(args) is None, args  # a branch check, a bad duration, help: click's words


def test_a_quiet_intake_runs_without_click_and_prints_what_click_prints(tmp_path: Path) -> None:
    """A quiet round by the fast path, then the fast path and click over the same clone: the same words."""
    from tests.cliworld import cli_world

    def run(code: str, *args: str) -> tuple[str, str, str]:
        done = subprocess.run([sys.executable, "-c", code, *args], cwd=host.path, env=host.env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout, "\n".join(done.stderr.splitlines()[:-1]), done.stderr.splitlines()[-1]

    with cli_world(tmp_path) as world:
        world.gh.open_pr("o/r", head_ref="feature")
        host = world.host("host-a")
        assert host.run("intake").returncode == 0  # the first round: the list, a reading
        world.clock.advance(61)
        mark = len(world.gh.ledger)
        out, err, loaded = run(LOADED + ENTRY, "intake", "-v")
        # a round calls GitHub, but never loads click, nor libgit2 when it writes nothing locally (issue 15)
        assert loaded == "LOADED httpx", loaded
        assert len(world.gh.ledger) > mark and "304, the kept answer (free)" in err, err
        for args in (("intake",), ("intake", "--json"), ("intake", "--json", "--wait", "--timeout", "1m")):
            fast, slow = run(LOADED + ENTRY, *args), run(LOADED + CLICK, *args)  # within the interval: no call
            assert fast[:2] == slow[:2] and "click" not in fast[2] and "click" in slow[2], args
            assert "main" in fast[0]


def test_intake_timeout_without_wait_is_clicks_usage_error() -> None:
    """``--timeout`` bounds a ``--wait``; alone it would change nothing, so it is refused (exit 2)."""
    from click.testing import CliRunner

    from git_sluice.cli import main

    assert parse(["intake", "--timeout", "10s"]) is None  # click reports it
    assert parse(["intake", "--wait", "--timeout", "10s"]) is not None
    result = CliRunner().invoke(main, ["intake", "--timeout", "10s"])
    assert result.exit_code == 2 and "--timeout bounds a --wait" in result.output
