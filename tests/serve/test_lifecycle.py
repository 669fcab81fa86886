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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from git_sluice.runtime.stopper import Stopper
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


@dataclass
class HungServe:
    """A ``serve`` in a thread, with one relayed call hanging on the wire (the double holds its answer)."""

    stopper: Stopper
    server: threading.Thread
    caller: threading.Thread
    got: list[httpx.Response]


@contextmanager
def hung_serve(clone: Path, github, short_dir: Path, isolated_env: Path, *, patience: str,
               call_timeout: float | None = None) -> Iterator[HungServe]:
    """``serve`` started on the shared test clock, its pool learned, then a call the double hangs; yields
    once that call is on the wire. ``patience`` (``sluice.writePatience``) plus the forge's timeout is
    the stop's grace."""
    from git_sluice.commands.serve import serve
    from git_sluice.runtime.session import open_session
    from tests.gitutil import git

    git(clone, "config", "sluice.writePatience", patience)
    gh = github.gh
    socket = short_dir / "s.sock"
    draining, stopper, ready = threading.Event(), Stopper(), threading.Event()
    session = open_session(clone, clock=github.clock, need_branches=False, cancel=draining)
    assert session.forge.pool  # the pool learned before the hang
    if call_timeout is not None:
        session.forge.timeout = call_timeout

    def run() -> None:
        try:
            serve(session, state_dir=isolated_env / "serve-state", socket=socket, port=None, stopper=stopper,
                  ready=lambda _s: ready.set(), cancel=draining)
        finally:
            session.close()

    server = threading.Thread(target=run, daemon=True)
    server.start()
    assert ready.wait(30)
    gh.fault("hang", path="/repos/o/r$", times=1, seconds=120)
    mark = gh.mark()
    got: list[httpx.Response] = []
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(socket)), base_url="http://api.github.com",
                      timeout=60) as client:
        caller = threading.Thread(target=lambda: got.append(client.get("/repos/o/r")), daemon=True)
        caller.start()
        deadline = time.monotonic() + 30
        while not gh.on_the_wire(since=mark) and time.monotonic() < deadline:
            time.sleep(0.02)
        yield HungServe(stopper, server, caller, got)
        caller.join(30)
    gh.clear_faults()


def assert_nothing_held(clone: Path) -> None:
    """A call the host cut short is no failure of GitHub's: failure memory holds nothing for it."""
    for index in clone.rglob("kept/index.json"):
        assert not json.loads(index.read_text()).get("failures"), index.read_text()


def test_a_relayed_call_still_on_the_wire_past_the_stops_grace_is_cut_short_and_blamed_on_no_one(
    clone: Path, github, short_dir: Path, isolated_env: Path
) -> None:
    """Issue 33: a stop lets the calls in flight finish within its grace (``sluice.writePatience`` plus
    a call's timeout); one still on the wire after it is given up (503 "stopping" to its caller) and,
    the stop being the host's doing and not GitHub's, nothing is held against the address."""
    from git_sluice.runtime.session import open_session

    gh = github.gh
    # the stop's grace: 0 s of write patience and 0.3 s (the calls' own stay 30 s)
    with hung_serve(clone, github, short_dir, isolated_env, patience="0s", call_timeout=0.3) as hung:
        sent = time.monotonic()
        hung.stopper.stop(signal.SIGTERM)
        hung.server.join(30)
        took = time.monotonic() - sent
    assert not hung.server.is_alive() and took < 0.3 + 1.0, took  # the grace, then the cut call's answer at once
    assert hung.got and hung.got[0].status_code == 503 and "stopping" in hung.got[0].text, hung.got
    assert_nothing_held(clone)
    with open_session(clone, clock=github.clock, need_branches=False) as again:
        assert again.store.pauses() == []
        before = gh.requests(path="/repos/o/r$")
        assert again.forge.get("repos/o/r").status == 200  # asked at once: failure memory holds nothing
        assert gh.requests(path="/repos/o/r$") == before + 1


def test_a_second_stop_cuts_the_grace_short(clone: Path, github, short_dir: Path, isolated_env: Path) -> None:
    """A first Ctrl-C lets the calls in flight finish within the grace (here 30 s and more); a second one —
    a person who will not wait — ends the wait at once: the call still on the wire is answered 503
    "stopping", and nothing is held against the address."""
    with hung_serve(clone, github, short_dir, isolated_env, patience="30s") as hung:
        hung.stopper.stop(signal.SIGINT)
        hung.server.join(1.0)
        assert hung.server.is_alive()  # the first stop waits for the call in flight
        again = time.monotonic()
        hung.stopper.stop(signal.SIGINT)
        hung.server.join(30)
        took = time.monotonic() - again
    assert not hung.server.is_alive() and took < 1.5, took  # the second stop: the wait ends within its slice
    assert hung.got and hung.got[0].status_code == 503 and "stopping" in hung.got[0].text, hung.got
    assert_nothing_held(clone)


def test_the_signal_handler_counts_a_second_signal_as_a_cut() -> None:
    """Two SIGINTs to the process (a terminal's Ctrl-C, then git forwarding it, or a person pressing it
    twice): the first stops, the second sets ``again``; the handler itself takes no lock."""
    from git_sluice.runtime.stopper import Stopper

    stopper = Stopper()
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        stopper.install()
        os.kill(os.getpid(), signal.SIGTERM)
        assert stopper.event.wait(5) and not stopper.again.is_set()
        os.kill(os.getpid(), signal.SIGTERM)
        assert stopper.again.wait(5)
        assert stopper.name == "SIGTERM"
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
