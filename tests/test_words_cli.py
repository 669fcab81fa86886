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


# --- issue 31's words ---------------------------------------------------------------------------

IDENT = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def _push_mark(host, holder: str = "host-a") -> None:
    """A driver's lease mark of ``holder`` on the remote, as its push leaves it."""
    import subprocess

    from git_sluice.remote.lease_record import LeaseRecord, lease_ref

    message = LeaseRecord(holder=holder, role="driver", lease=300.0, renewal=1, version="0.1.0").to_message("main")
    tree = host.git("mktree")
    oid = subprocess.run(["git", "-C", str(host.path), *IDENT, "commit-tree", tree, "-m", message],
                         capture_output=True, text=True, check=True).stdout.strip()
    host.git("push", "-q", "origin", f"{oid}:{lease_ref('main')}")


def test_lease_after_the_holder_let_go_looks_at_the_remote_and_never_says_live(tmp_path: Path) -> None:
    """Host B fetched host A's mark; A let go since. ``lease`` looks (one ls-remote), ``status`` says as of when."""
    import json

    with cli_world(tmp_path) as world:
        a, b = world.host("host-a"), world.host("host-b")
        _push_mark(a)
        assert "host-a holds the lease" in b.run("intake").stdout  # B's round fetched A's mark
        held = b.run("lease")
        assert held.stdout == "main: driver lease of host-a, 0 s old, live\n", held.stdout  # the remote agrees
        a.git("push", "-q", "origin", ":refs/sluice/intake/main")  # A lets go
        world.clock.advance(120)
        status = b.run("status").stdout
        assert "main: driver lease of host-a, 0 s old, live as last fetched 2 min ago" in status, status
        mark = world.gh.mark()
        looked = b.run("lease")
        assert looked.returncode == 0 and looked.stdout == "main: no lease (this host alone)\n", looked.stdout
        assert "live" not in looked.stdout and "main: main:" not in looked.stdout
        assert world.gh.requests(since=mark) == 0  # the remote was asked, never GitHub
        assert json.loads(b.run("lease", "--json").stdout)["leases"][0]["live"] is False


def test_lease_with_the_remote_out_of_reach_says_as_of_when(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        a, b = world.host("host-a"), world.host("host-b")
        _push_mark(a)
        b.run("intake")
        b.git("remote", "set-url", "origin", str(tmp_path / "gone.git"))
        said = b.run("lease").stdout
        assert said.startswith("main: driver lease of host-a, 0 s old, live as last fetched"), said
        assert "the remote could not be asked" in said


def test_queue_before_any_round_says_not_read_yet_and_after_one_reads_by_the_rounds_clock(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        before = host.run("queue").stdout
        assert "never read" not in before and "main: not read yet" in before, before
        host.run("intake")
        world.clock.advance(90)
        after = host.run("queue").stdout
        assert "read 1 min 30 s ago" in after and "read in" not in after, after  # the test clock, not the wall's


def test_a_git_c_value_says_the_command_line_once(tmp_path: Path) -> None:
    import subprocess

    with cli_world(tmp_path) as world:
        host = world.host("host-a")

        def sluice(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["git", *args], cwd=host.path, env=host.env, capture_output=True, text=True,
                                  timeout=120, stdin=subprocess.DEVNULL)

        doctor = sluice("-c", "sluice.discovery=90s", "sluice", "doctor")
        line = next(line for line in doctor.stdout.splitlines() if "config sluice.discovery" in line)
        assert line.endswith("90s (the command line: git -c or GIT_CONFIG_*)"), line
        typo = sluice("-c", "sluice.discovry=90s", "sluice", "intake")
        assert typo.returncode == 2
        assert "command command line" not in typo.stderr and "git config --unset" not in typo.stderr, typo.stderr
        assert "(set on the command line: git -c or GIT_CONFIG_*)" in typo.stderr
        assert "drop `-c sluice.discovry=…` from the command" in typo.stderr


def test_a_refused_token_is_told_once_and_sent_once(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a", token="tok-nobody")
        mark = world.gh.mark()
        done = host.run("intake")
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("401") == 1 and "could not tick" not in done.stderr, done.stderr
        assert len(world.gh.calls(since=mark, path="/user")) == 1


def test_status_and_doctor_colour_only_where_git_would(tmp_path: Path) -> None:
    import json

    with cli_world(tmp_path) as world:
        world.gh.open_pr("o/r", head_ref="feature")
        host = world.host("host-a")
        host.run("intake")
        assert "\x1b[" not in host.run("status").stdout + host.run("doctor").stdout  # piped: plain
        host.git("config", "color.ui", "always")
        status = host.run("status").stdout
        assert "\x1b[1mo/r on host-a\x1b[0m" in status, status
        assert "\x1b[32mok\x1b[0m    git version" in host.run("doctor").stdout
        for plain in (host.run("status", NO_COLOR="1"), host.run("doctor", NO_COLOR="1"),
                      host.run("status", "--no-color"), host.run("doctor", "--no-color"),
                      host.run("status", "--json"), host.run("doctor", "--json")):
            assert "\x1b" not in plain.stdout, plain.stdout
        json.loads(host.run("status", "--json").stdout)
        host.git("config", "color.sluice", "never")  # git-sluice's own key wins over color.ui
        assert "\x1b" not in host.run("status").stdout


def test_status_colours_on_a_terminal_by_default(tmp_path: Path) -> None:
    import os
    import pty
    import subprocess

    from tests.cliworld import SLUICE

    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        main, child = pty.openpty()
        try:
            proc = subprocess.run([SLUICE, "status"], cwd=host.path, env=host.env, stdout=child,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=120)
            os.close(child)
            child = -1
            out = b""
            while True:
                try:
                    chunk = os.read(main, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            if child >= 0:
                os.close(child)
            os.close(main)
        assert proc.returncode == 0, proc.stderr
        assert b"\x1b[1mo/r on host-a\x1b[0m" in out, out
