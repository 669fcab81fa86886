"""``serve``'s life as a process: one per socket, a private socket, ``status`` shows it, SIGTERM ends it
cleanly (the call in flight finishes, the socket goes), and no token is written anywhere."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

import httpx

from tests.cliworld import cli_world

TOKEN = "tok-alice"
CALLER = "ghp_callerOwnTokenNeverWritten0123"


def start(host, socket: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    proc = host.popen("serve", "--socket", str(socket), "--port", "0", *args)
    assert proc.stdout is not None
    said = [proc.stdout.readline(), proc.stdout.readline()]
    assert said[0].strip() == f"socket {socket}", said
    assert said[1].startswith("port "), said
    return proc, int(said[1].split()[1])


def test_one_serve_per_socket_a_private_socket_and_a_clean_stop(tmp_path: Path, short_dir: Path) -> None:
    with cli_world(tmp_path) as world:
        host = world.host("host-a")
        socket = short_dir / "s.sock"
        proc, port = start(host, socket)
        try:
            assert stat.S_IMODE(socket.stat().st_mode) == 0o600
            second = host.run("serve", "--socket", str(socket), timeout=60)
            assert second.returncode == 2
            assert f"pid {proc.pid} already serves on {socket}" in second.stderr
            assert "Traceback" not in second.stderr
            answer = httpx.get(f"http://127.0.0.1:{port}/repos/o/r", headers={"Authorization": f"token {TOKEN}"})
            assert answer.status_code == 200
            status = host.run("status", "--json")
            serves = json.loads(status.stdout)["serves"]
            assert [s["pid"] for s in serves] == [proc.pid] and serves[0]["port"] == port
            assert f"serve: pid {proc.pid} on socket {socket}" in host.run("status").stdout
            doctor = json.loads(host.run("doctor", "--json").stdout)
            serve_row = next(c for c in doctor["checks"] if c["name"] == "serve")
            assert serve_row["status"] == "ok" and f"running: pid {proc.pid} on socket {socket}" in serve_row["found"]
            assert re.search(r", \d+ calls \(\d+ answered without a counted call, 0 refused, 0 writes deferred\)",
                             serve_row["found"]), serve_row
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        assert not socket.exists()
        assert json.loads(host.run("status", "--json").stdout)["serves"] == []
        restarted, port = start(host, socket, "-v")  # the lock went with the process
        world.gh.add_user("carol")
        world.gh.add_token(CALLER, user="carol")
        for auth in (f"token {CALLER}", f"Bearer {CALLER}"):
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": auth}) as client:
                assert client.get("/user").json()["login"] == "carol"
                assert client.post("/graphql", json={"query": "{ viewer { login } }"}).status_code == 200
                metrics = client.get("/metrics").text
                assert CALLER not in metrics
        restarted.send_signal(signal.SIGINT)
        assert restarted.wait(timeout=30) == 0
        said = restarted.stdout.read() + restarted.stderr.read()  # type: ignore[union-attr]
        assert "GET /user" in said  # -v logged the calls ...
        assert CALLER not in said and TOKEN not in said  # ... and no token
        for path in [*tmp_path.rglob("*"), *short_dir.rglob("*")]:
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                assert TOKEN.encode() not in data and CALLER.encode() not in data, path


def test_sigterm_lets_the_call_in_flight_finish(tmp_path: Path, short_dir: Path) -> None:
    with cli_world(tmp_path, real_clock=True) as world:
        host = world.host("host-a")
        socket = short_dir / "s.sock"
        proc, port = start(host, socket)
        world.gh.fault("hang", path="/repos/o/r", times=1, seconds=1.5)
        got: list[httpx.Response] = []
        caller = threading.Thread(target=lambda: got.append(httpx.get(
            f"http://127.0.0.1:{port}/repos/o/r", headers={"Authorization": f"token {TOKEN}"}, timeout=30)))
        caller.start()
        time.sleep(0.5)  # the call is at the double, held
        proc.send_signal(signal.SIGTERM)
        caller.join(30)
        assert proc.wait(timeout=30) == 0
        assert got and got[0].status_code == 200
        assert not socket.exists()
