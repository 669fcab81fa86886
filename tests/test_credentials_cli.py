"""Credentials under real conditions, through the real console script (issue 13 points 1, 2, 3)."""

from __future__ import annotations

import json

import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from git_sluice.errors import local_time
from git_sluice.forge.tokencache import SharedTokens
from tests.cliworld import cli_world


# --------------------------------------------------------- point 1: a token whose pool is unknown


def test_with_the_allowance_spent_before_anything_ran_a_new_host_with_a_new_token_sends_nothing(
    tmp_path: Path,
) -> None:
    with cli_world(tmp_path) as world:
        gh = world.gh
        for token in ("tok-a", "tok-b", "tok-spender"):
            gh.add_token(token, user="alice")
        gh.set_limit("user:alice", "core", 1)
        # someone else spent alice's allowance before any git-sluice process ran
        assert httpx.get(f"{world.url}/repos/o/r", headers={"Authorization": "token tok-spender"}).status_code == 200
        reset = gh.reset_at("user:alice", "core")
        a = world.host("host-a", token="tok-a")
        b = world.host("host-b", token="tok-b")

        first = a.run("intake")
        assert first.returncode == 3, first.stderr
        assert "hash for now" not in first.stderr
        assert a.git("ls-remote", "origin", "refs/sluice/pause/*") != ""  # published to the fleet

        mark = gh.mark()
        again = a.run("intake")  # a second process on host A: the pause stands, so nobody asks GET /user
        assert again.returncode == 3, again.stderr
        assert gh.requests(since=mark) == 0

        mark = gh.mark()
        step = b.run("intake")  # a new host, a token never seen: fetches the note, then obeys it
        assert step.returncode == 3, step.stderr
        api = b.run("api", "repos/o/r")
        assert api.returncode == 3, api.stderr
        assert local_time(reset) in api.stderr  # names the end
        assert gh.requests(since=mark) == 0  # not even GET /user

        # the pause over, host B learns whose token it is and the call goes
        gh.set_limit("user:alice", "core", 5000)
        world.clock.set(reset + 1)
        done = b.run("api", "repos/o/r")
        assert done.returncode == 0, done.stderr


# --------------------------------------------------------- point 2: one App token per host

TOKEN_SHAPE = re.compile(rb"ghs_[A-Za-z0-9]{36}")


def _app(world, tmp_path: Path) -> Path:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    key_file = tmp_path / "app.pem"
    key_file.write_bytes(pem)
    key_file.chmod(0o600)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    world.gh.add_app(7, public)
    world.gh.add_installation(7, 42, ["o/r"])
    return key_file


def _mints(gh, since: int = 0) -> int:
    return len(gh.calls(since=since, method="POST", path=r"^/app/installations/42/access_tokens"))


def _statuses(gh, since: int) -> list[int]:
    return [c.status for c in gh.calls(since=since, method="GET", path=r"^/repos/o/r$")]


def _scan_for_tokens(roots: list[Path], remote: Path) -> list[str]:
    """Every place a token could have been written: files (any depth), the remote's objects, environments."""
    found = []
    for root in roots:
        for path in root.rglob("*"):
            try:
                if path.is_file() and not path.is_symlink() and TOKEN_SHAPE.search(path.read_bytes()):
                    found.append(str(path))
            except OSError:
                pass
    objects = subprocess.run(["git", "-C", str(remote), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    if TOKEN_SHAPE.search(objects):
        found.append(f"{remote} objects")
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if TOKEN_SHAPE.search(environ.read_bytes()):
                found.append(str(environ))
        except OSError:
            pass
    return found


def test_a_github_app_host_mints_one_token_for_twenty_processes_keeps_it_nowhere_and_renews_it_once(
    tmp_path: Path,
) -> None:
    with cli_world(tmp_path) as world:
        key_file = _app(world, tmp_path)
        host = world.host("host-a", token=None, **{"sluice.appId": "7", "sluice.appKeyFile": str(key_file),
                                                   "sluice.installation": "42"})
        gh = world.gh
        started = time.time()
        try:
            mark = gh.mark()
            for _ in range(20):
                done = host.run("api", "repos/o/r")
                assert done.returncode == 0, done.stderr
            assert _mints(gh, mark) == 1
            assert _statuses(gh, mark) == [200] + [304] * 19

            # near the token's hour: renewed once, by the first process that needs it, not per process
            world.clock.advance(3600 - 200)
            mark = gh.mark()
            for _ in range(3):
                done = host.run("api", "repos/o/r")
                assert done.returncode == 0, done.stderr
            assert _mints(gh, mark) == 1
            assert _statuses(gh, mark) == [200, 304, 304]  # ETags are per token: one 200 for the new one

            leaks = _scan_for_tokens([tmp_path], tmp_path / "remote.git")
            tmp = Path(tempfile.gettempdir())  # the temp dir itself: anything written there during the test
            for path in tmp.iterdir():
                try:
                    if path.is_file() and path.stat().st_mtime >= started and TOKEN_SHAPE.search(path.read_bytes()):
                        leaks.append(str(path))
                except OSError:
                    pass
            assert leaks == []
        finally:
            SharedTokens(host.state / "git-sluice").stop()


def test_a_token_in_the_environment_wins_over_a_configured_app_and_doctor_says_so(tmp_path: Path) -> None:
    """Issue 31: GH_TOKEN set for a process is used, as gh uses it over its stored login; the docs say the same."""
    with cli_world(tmp_path) as world:
        key_file = _app(world, tmp_path)
        host = world.host("host-a", token="tok-alice", **{"sluice.appId": "7", "sluice.appKeyFile": str(key_file),
                                                          "sluice.installation": "42"})
        mark = world.gh.mark()
        done = host.run("api", "repos/o/r")
        assert done.returncode == 0, done.stderr
        assert _mints(world.gh, mark) == 0
        assert {c.pool for c in world.gh.calls(since=mark)} == {"user:alice"}
        doctor = host.run("doctor")
        line = next(line for line in doctor.stdout.splitlines() if line.split()[1:2] == ["token:"])
        assert line.startswith("warn") and "from GH_TOKEN" in line and "sluice.appId=7" in line, doctor.stdout
        setup = host.run("setup", "--json")
        assert json.loads(setup.stdout)["token"]["source"] == "GH_TOKEN", setup.stdout


def test_doctor_as_a_github_app_says_the_token_outlives_it_in_gits_daemon_and_how_to_end_it(tmp_path: Path) -> None:
    """Issue 31: doctor left git's credential-cache daemon holding the App token up to an hour, unsaid."""
    from tests import procs

    with cli_world(tmp_path) as world:
        key_file = _app(world, tmp_path)
        host = world.host("host-a", token=None, **{"sluice.appId": "7", "sluice.appKeyFile": str(key_file),
                                                   "sluice.installation": "42"})
        since = procs.now()
        doctor = host.run("doctor")
        socket = host.state / "git-sluice" / "run" / "credential-cache"
        line = next(line for line in doctor.stdout.splitlines() if line.split()[1:3] == ["token", "sharing:"])
        assert "git's credential-cache daemon" in line and "up to an hour" in line, doctor.stdout
        assert f"git credential-cache --socket {socket} exit" in line, line
        daemons = [p for p in procs.left(mark=(procs.OWNER, str(tmp_path)), since=since) if p.credential_socket]
        assert [p.credential_socket for p in daemons] == [str(socket)]
        subprocess.run(["git", "credential-cache", "--socket", str(socket), "exit"], check=True, timeout=30)
        assert procs.gone(daemons, 10.0) == []  # the command doctor gave ends it


# --------------------------------------------------------- point 3: a token GitHub refuses


def test_one_shot_commands_with_a_refused_token_exit_2_naming_where_the_token_came_from(tmp_path: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a", token="tok-revoked")
        for args in (("intake",), ("wait", "1", "--timeout", "1m"), ("api", "repos/o/r")):
            done = host.run(*args)
            assert done.returncode == 2, (args, done.stderr)
            assert "GH_TOKEN" in done.stderr and "refused" in done.stderr, done.stderr
            assert "http://" not in done.stderr, done.stderr  # no raw URL: what to fix, not where it failed


def test_a_driver_with_a_refused_token_lets_go_backs_off_and_a_good_host_takes_the_branch_in(
    tmp_path: Path,
) -> None:
    with cli_world(tmp_path) as world:
        bad = world.host("host-bad", token="tok-revoked")
        good = world.host("host-good", token="tok-alice")
        start = world.clock.time()
        proc = bad.popen("drive")
        try:
            deadline = time.monotonic() + 120
            while world.clock.time() < start + 1000 and proc.poll() is None:
                assert time.monotonic() < deadline, "the driver did not get through 1,000 s"
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "GH_TOKEN" in err and "asking GitHub nothing until" in err, err
        refused = [c for c in world.gh.ledger if c.status == 401]
        # backed off 60 s, 2 min, 4 min, 8 min: five tries in 1,000 s, not one or two a tick (60 s)
        assert 2 <= len(refused) <= 6, [round(c.time - start) for c in refused]
        # it let go: no mark of the bad host stands, so a host with a good token takes the branch in
        assert good.git("ls-remote", "origin", "refs/sluice/intake/main") == ""
        done = good.run("intake")
        assert done.returncode == 0, done.stderr
        assert "taken in" in done.stdout or "open" in done.stdout, done.stdout
