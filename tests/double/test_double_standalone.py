"""The stand-alone double (a process that prints its URL first) and the HTTP control API."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import git_sluice.double
from git_sluice.clock import TEST_CLOCK_ENV, FileClock
from git_sluice.double.testing import ServedDouble

EXAMPLE = Path(git_sluice.double.__file__).parent / "example_scenario.json"
T0 = 1_800_000_000.0


def _first_line(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the double printed nothing"
    return proc.stdout.readline()


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str], FileClock]]:
    clock = FileClock(tmp_path / "clock", start=T0)
    env = {**os.environ, TEST_CLOCK_ENV: str(clock.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "git_sluice.double", "--scenario", str(EXAMPLE), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        yield _first_line(proc), proc, clock
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.slow
def test_the_process_prints_its_url_first_and_serves_the_scenario(
    standalone: tuple[str, subprocess.Popen[str], FileClock], http: httpx.Client,
) -> None:
    line, proc, clock = standalone
    assert line.endswith("\n")
    url = line.strip()
    assert url.startswith("http://127.0.0.1:") and int(url.rsplit(":", 1)[1]) > 0
    alice = httpx.Client(base_url=url, headers={"Authorization": "token tok-alice"}, timeout=120)
    pulls = alice.get("/repos/acme/widgets/pulls", params={"per_page": 100})
    assert pulls.status_code == 200
    titles = {p["number"]: p["title"] for p in pulls.json()}
    assert len(titles) == 8 and titles[1].startswith("Ready") and titles[8] == "Bulk request 5"
    assert [p["draft"] for p in pulls.json() if p["number"] == 3] == [True]
    assert pulls.json()[0]["created_at"] == "2027-01-15T08:00:00Z"  # the FileClock's time
    assert alice.get("/repos/acme/secret").status_code == 200
    assert http.get(f"{url}/repos/acme/secret").status_code == 404  # private to the anonymous
    query = """{ repository(owner: "acme", name: "widgets") {
      a: pullRequest(number: 1) { reviewDecision commits(last: 1) { nodes { commit { statusCheckRollup { state } } } } }
      b: pullRequest(number: 2) { reviewDecision mergeable } } }"""
    data = alice.post("/graphql", json={"query": query}).json()["data"]["repository"]
    assert data["a"]["reviewDecision"] == "APPROVED"
    assert data["a"]["commits"]["nodes"][0]["commit"]["statusCheckRollup"]["state"] == "SUCCESS"
    assert data["b"] == {"reviewDecision": "CHANGES_REQUESTED", "mergeable": "CONFLICTING"}

    moved = http.post(f"{url}/_double/clock", json={"advance": 120}).json()
    assert moved["time"] == T0 + 120 and clock.time() == T0 + 120  # one time for every process
    ledger = http.get(f"{url}/_double/ledger", params={"since": 0}).json()
    assert [c["status"] for c in ledger["calls"]] == [200, 200, 404, 200] and ledger["next"] == 4

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0  # generous: a loaded machine is slow to schedule it


def test_a_broken_scenario_exits_2_naming_the_entry(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"repos": [{"name": "o/r", "pulls": [{"head_ref": "a", "state": "sideways"}]}]}))
    done = subprocess.run(
        [sys.executable, "-m", "git_sluice.double", "--scenario", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "repos: 'o/r'" in done.stderr and "sideways" in done.stderr
    assert done.stdout == ""


def test_sigint_stops_it_too(tmp_path: Path, http: httpx.Client) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "git_sluice.double"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = _first_line(proc).strip()
        assert http.get(f"{url}/rate_limit").status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0  # generous: a loaded machine is slow to schedule it
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()


def test_the_http_control_api_mirrors_the_python_methods(github: ServedDouble, http: httpx.Client) -> None:
    gh, url = github.gh, github.url

    def control(_call: str, **args: object) -> object:
        answer = http.post(f"{url}/_double/{_call}", json=args)
        assert answer.status_code == 200, answer.text
        return answer.json()["result"]

    assert control("open_pr", repo="o/r", head_ref="feat", title="Via HTTP", author="bob") == 1
    sha = control("push_pr", repo="o/r", number=1)
    assert isinstance(sha, str) and len(sha) == 40
    control("add_check_run", repo="o/r", sha=sha, name="ci", status="in_progress")
    control("review", repo="o/r", number=1, author="carol", state="APPROVED")
    assert gh.pr("o/r", 1).title == "Via HTTP" and gh.pr("o/r", 1).reviews[0].author == "carol"
    pr = http.get(f"{url}/_double/pr", params={"repo": "o/r", "number": 1}).json()["result"]
    assert pr["head_sha"] == sha and pr["author"] == "bob"

    fault = control("fault", kind="status", path="pulls", code=500)
    assert http.get(f"{url}/_double/faults").json()["result"][0]["id"] == fault
    auth = {"Authorization": "token tok-alice"}
    assert http.get(f"{url}/repos/o/r/pulls", headers=auth).status_code == 500
    control("clear_faults", fault_id=fault)
    assert http.get(f"{url}/repos/o/r/pulls", headers=auth).status_code == 200

    knobs = http.post(f"{url}/_double/knobs", json={"primary_status": 429}).json()["result"]
    assert knobs["primary_status"] == 429 and gh.primary_status == 429
    control("set_limit", pool="user:alice", resource="core", limit=1)
    assert http.get(f"{url}/repos/o/r", headers=auth).status_code == 429
    assert http.get(f"{url}/_double/remaining", params={"pool": "user:alice", "resource": "core"}).json() == {
        "result": 0
    }
    assert http.post(f"{url}/_double/clock", json={"advance": 3600}).json()["time"] == T0 + 3600
    assert github.clock.time() == T0 + 3600
    assert http.get(f"{url}/repos/o/r", headers=auth).status_code == 200

    mark = control("mark")
    assert mark == 4 and gh.requests() == 4  # control calls are not in the ledger
    counted = http.get(f"{url}/_double/counted", params={"pool": "user:alice"}).json()["result"]
    assert counted == gh.counted(pool="user:alice") == 2
    since = http.get(f"{url}/_double/ledger", params={"since": 2, "status": 429}).json()["calls"]
    assert [c["path"] for c in since] == ["/repos/o/r"]

    assert http.post(f"{url}/_double/open_pr", json={"repo": "x/y", "head_ref": "a"}).status_code == 400
    assert http.post(f"{url}/_double/open_pr", json={"nonsense": 1}).status_code == 400
    assert http.post(f"{url}/_double/explode", json={}).status_code == 404
    assert http.post(f"{url}/_double/knobs", json={"lock": 1}).status_code == 400
    assert gh.requests() == 4


def test_the_clock_cannot_move_on_the_system_clock(http: httpx.Client) -> None:
    from git_sluice.double import GitHubDouble, serve

    with serve(GitHubDouble()) as server:
        answer = http.post(f"{server.url}/_double/clock", json={"advance": 10})
        assert answer.status_code == 409 and "system clock" in answer.json()["error"]
        before = time.time()
        assert abs(http.get(f"{server.url}/_double/clock").json()["time"] - before) < 5
