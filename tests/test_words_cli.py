"""What a person reads, through the real console script (issue 13 point 7)."""

from __future__ import annotations

from pathlib import Path

from tests.cliworld import cli_world


def test_verbose_prints_the_decisions(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        world.gh.open_pr("o/r", head_ref="feature")
        host = world.host("host-a")
        first = host.run("intake", "-v")
        assert first.returncode == 0, first.stderr
        assert "main: asking GitHub" in first.stderr
        assert "GET /repos/o/r/pulls" in first.stderr and "counted" in first.stderr
        assert "reading #1" in first.stderr
        world.clock.advance(61)
        again = host.run("intake", "-v")
        assert "304, the kept answer (free)" in again.stderr, again.stderr
        quiet = host.run("intake")
        assert quiet.stderr == "", quiet.stderr  # without -v: nothing but results
        api = host.run("api", "-v", "repos/o/r")
        assert "GET /repos/o/r:" in api.stderr, api.stderr
        log = (host.path / ".git" / "sluice" / "log")
        assert not log.exists() or "GET /repos" not in log.read_text()  # -v's lines are for the terminal


def test_a_misspelt_key_gets_did_you_mean_and_doctor_says_remove_it_not_set_it(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        host.git("config", "sluice.discovry", "30s")
        done = host.run("intake")
        assert done.returncode == 2
        assert "did you mean `sluice.discovery`?" in done.stderr, done.stderr
        assert "git config --unset sluice.discovry" in done.stderr
        assert "30s" not in done.stderr  # an unknown key's value is never echoed
        doctor = host.run("doctor")
        line = next(line for line in doctor.stdout.splitlines() if "sluice.discovry" in line)
        assert "did you mean sluice.discovery" in line and "--global sluice.discovry" not in line, line
        assert "git config --unset sluice.discovry" in line


def test_with_no_remote_doctor_and_the_commands_say_git_remote_add(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        host.git("remote", "remove", "origin")
        doctor = host.run("doctor")
        assert "git remote add" in doctor.stdout, doctor.stdout
        assert "sluice.remote" not in doctor.stdout, doctor.stdout  # never set: not the thing to blame
        done = host.run("intake")
        assert done.returncode == 2 and "git remote add" in done.stderr, done.stderr


def test_setup_speaks_as_git_sluice_like_every_other_command(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        host.git("remote", "remove", "origin")
        done = host.run("setup")
        assert done.returncode == 2
        assert done.stderr.startswith("git sluice: "), done.stderr


def test_api_with_a_bogus_method_is_a_usage_error_and_sends_nothing(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        mark = world.gh.mark()
        done = host.run("api", "-X", "BOGUS", "repos/o/r")
        assert done.returncode == 2, done.stderr
        assert "BOGUS" in done.stderr and "unavailable" not in done.stderr.lower(), done.stderr
        assert world.gh.requests(since=mark) == 0
        assert host.run("api", "-X", "get", "repos/o/r").returncode == 0  # any case, as curl and gh take it


def test_api_refuses_a_path_that_would_leave_the_api_prefix_and_sends_nothing(tmp_path: Path) -> None:
    """Issue 33: ``…/api/v3/%2e%2e/%2e%2e/x`` starts with ``/api/v3/``; a server that decodes it serves ``/x``."""
    with cli_world(tmp_path, enterprise=True) as world:
        host = world.host("host-a")
        assert host.run("api", "repos/o/r").returncode == 0
        mark = world.gh.mark()
        for path in ("%2e%2e/%2e%2e/x", "%2E%2E/user", "..%2f..%2fx", "repos/../../x", "%252e%252e/x",
                     f"{world.url}/%2e%2e/%2e%2e/x"):
            done = host.run("api", path)
            assert done.returncode == 2, (path, done.stderr)
            assert "outside the API" in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert world.gh.requests(since=mark) == 0
        assert host.run("api", "repos/o/r").returncode == 0  # nothing remembered against GitHub
