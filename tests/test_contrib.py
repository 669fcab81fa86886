"""contrib/: the dashboard reads git-sluice, never GitHub; the service files say what docs promise."""

from __future__ import annotations

import configparser
import importlib.util
import json
import os
import plistlib
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from git_sluice.clock import SystemClock
from git_sluice.forge.hoststore import HostStore

from tests.gitutil import make_clone

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = [sys.executable, "-m", "git_sluice"]
# a loopback address nothing listens on: any attempt to reach "GitHub" would fail the command
NOWHERE = "http://127.0.0.1:9"


def _dashboard() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_sluice_dashboard", ROOT / "contrib" / "integrations" / "dashboard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_sluice_dashboard"] = module
    spec.loader.exec_module(module)
    return module


def _example_document() -> dict:
    text = (ROOT / "docs" / "queue-json.md").read_text()
    match = re.search(r"```json\n(\{\n  \"schema\".*?)\n```", text, flags=re.S)
    assert match, "docs/queue-json.md lost its example document"
    return json.loads(match.group(1))


def _write_queue(clone: Path, doc: dict) -> None:
    folder = clone / ".git" / "sluice" / "queue"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{doc['branch']}.json").write_text(json.dumps(doc))


@pytest.fixture
def two_clones(tmp_path: Path) -> tuple[Path, Path]:
    """widgets taken in here (build-3), gadgets taken in by build-7 elsewhere."""
    widgets = make_clone(tmp_path / "w", api=NOWHERE, host="build-3", repository="octo-org/widgets")
    gadgets = make_clone(tmp_path / "g", api=NOWHERE, host="build-3", repository="octo-org/gadgets")
    doc = _example_document()
    _write_queue(widgets, dict(doc, holder="build-3"))
    _write_queue(gadgets, dict(doc, repository="octo-org/gadgets", holder="build-7", entries=[], withdrawn_by="build-7"))
    return widgets, gadgets


def test_the_dashboard_reads_every_clone_through_git_sluice(two_clones: tuple[Path, Path], tmp_path: Path) -> None:
    dash = _dashboard()
    widgets, gadgets = two_clones
    until = time.time() + 720
    with HostStore(clock=SystemClock()) as store:  # a pause another host saw, adopted on this host
        assert store.adopt("e67ce9f1333a", "graphql", until, "primary", source="build-7")
    views = dash.collect([widgets, gadgets, tmp_path / "nowhere"], PROGRAM)
    table = dash.render(views, requests=True)

    row = next(line for line in table.splitlines() if line.startswith("octo-org/widgets"))
    assert row.split()[2:6] == ["1", "1", "1", "1"]  # ready, waiting, blocked, draft
    assert row.rstrip().endswith("this host")
    other = next(line for line in table.splitlines() if line.startswith("octo-org/gadgets"))
    assert "build-7 (read it there)" in other
    assert "#107 blocked  Drop the legacy exporter (ghost)" in table
    assert re.search(r"graphql \(pool e67ce9f1333a\): rate-limited until \d\d:\d\d \(in 1[12] min\)", table)
    assert f"cannot read {tmp_path / 'nowhere'}: no such directory" in table

    data = dash.payload(views)
    assert data["forgeStatus"] == "rate-limited" and data["resetAt"].endswith("Z")
    assert [c["error"] for c in data["clones"]][:2] == [None, None]


def test_the_dashboard_script_never_calls_github(two_clones: tuple[Path, Path]) -> None:
    widgets, _ = two_clones
    script = ROOT / "contrib" / "integrations" / "dashboard.py"
    ok = subprocess.run([sys.executable, str(script), "--program", f"{sys.executable} -m git_sluice", "--json",
                         str(widgets)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["forgeStatus"] == "ok" and data["clones"][0]["branches"][0]["counts"]["ready"] == 1
    # the forge keeps an answer for every address it ever asked: none means no call was made
    assert not (widgets / ".git" / "sluice" / "kept").exists()


def test_an_unreadable_clone_is_a_row_and_exit_1(tmp_path: Path) -> None:
    dash = _dashboard()

    def refuse(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 2, "", f"git sluice: {cwd} is not inside a git repository\n")

    printed: list[str] = []
    assert dash.main([str(tmp_path)], run=refuse, out=printed.append) == 1
    assert f"cannot read {tmp_path}: git sluice: {tmp_path} is not inside a git repository" in "".join(printed)


def test_the_dashboard_refuses_a_schema_it_does_not_know() -> None:
    dash = _dashboard()
    doc = dict(_example_document(), schema=2)
    with pytest.raises(dash.Unreadable, match="queue schema 2"):
        dash.branch_views(doc, "build-3")
    # unknown fields are ignored, as docs/queue-json.md asks of readers
    views = dash.branch_views([dict(_example_document(), future_field={"x": 1})], "build-7")
    assert views[0].taken_in_here and views[0].counts == {"ready": 1, "waiting": 1, "blocked": 1, "draft": 1}


def test_the_dashboard_shows_an_observe_only_pause_as_holding_nothing() -> None:
    dash = _dashboard()
    status = {"schema": 1, "host": "h", "pools": [
        {"pool": "p", "resource": "core", "forge": "ok",
         "pause": {"phase": "paused", "until": 2e9, "observe_only": True}},
        {"pool": "p", "resource": "graphql", "forge": "ok", "pause": None},
    ]}
    states = dash.forge_states(status)
    assert [(s.resource, s.state) for s in states] == [("core", "would-pause")]
    view = dash.CloneView(path="x", host="h", forge=states)
    assert "would have paused (observe-only); nothing is held" in dash.render([view], now=1.9e9)


# ------------------------------------------------------------- service files


def test_the_systemd_unit_is_a_user_unit_per_clone_that_lets_go_on_stop() -> None:
    path = ROOT / "contrib" / "systemd" / "git-sluice-drive@.service"
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(path)
    service = unit["Service"]
    assert service["WorkingDirectory"] == "%f"  # the instance is the clone's path, systemd-escape --path
    assert service["ExecStart"].endswith("git-sluice drive")
    assert service["Restart"] == "on-failure"
    assert service["KillSignal"] == "SIGTERM"
    assert service["RestartPreventExitStatus"] == "2"  # a configuration error needs a person
    assert unit["Install"]["WantedBy"] == "default.target"  # a user unit: systemctl --user
    assert "GH_TOKEN=" not in path.read_text().replace("`GH_TOKEN=...`", "")


def test_the_serve_unit_is_a_user_unit_per_clone_that_stops_after_calls_in_flight() -> None:
    path = ROOT / "contrib" / "systemd" / "git-sluice-serve@.service"
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(path)
    service = unit["Service"]
    assert service["WorkingDirectory"] == "%f" and service["ExecStart"].endswith("git-sluice serve")
    assert service["KillSignal"] == "SIGTERM" and int(service["TimeoutStopSec"]) >= 60  # patience + a call
    assert service["RestartPreventExitStatus"] == "2"
    assert unit["Install"]["WantedBy"] == "default.target"
    assert "GH_TOKEN=" not in path.read_text().replace("`GH_TOKEN=...`", "")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / ".local" / "bin").mkdir(parents=True)
    program = home / ".local" / "bin" / "git-sluice"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    (tmp_path / "man" / "man1").mkdir(parents=True)
    shutil.copy(ROOT / "man" / "git-sluice.1", tmp_path / "man" / "man1")
    (tmp_path / "run").mkdir()
    unit = tmp_path / "git-sluice-drive@home-me-src-widgets.service"
    shutil.copy(ROOT / "contrib" / "systemd" / "git-sluice-drive@.service", unit)
    env = dict(os.environ, HOME=str(home), MANPATH=str(tmp_path / "man"), XDG_RUNTIME_DIR=str(tmp_path / "run"))
    done = subprocess.run(["systemd-analyze", "verify", "--user", str(unit)], capture_output=True, text=True,
                          env=env, timeout=60)
    if "Failed to initialize manager" in done.stderr or "Failed to lookup" in done.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0 and not done.stderr.strip() and not done.stdout.strip(), done.stderr + done.stdout


def test_the_launchd_agent_restarts_on_failure_only() -> None:
    with open(ROOT / "contrib" / "launchd" / "io.github.git-sluice.drive.plist", "rb") as handle:
        agent = plistlib.load(handle)
    assert agent["Label"] == "io.github.git-sluice.drive"
    assert agent["ProgramArguments"][-1] == "drive" and agent["ProgramArguments"][0].endswith("/git-sluice")
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["RunAtLoad"] is True and agent["ThrottleInterval"] >= 10
    assert Path(agent["WorkingDirectory"]).is_absolute()  # launchd expands no ~


# ------------------------------------------------------------- completions

GIT_BASH_COMPLETION = Path("/usr/share/bash-completion/completions/git")


@pytest.mark.skipif(not GIT_BASH_COMPLETION.is_file() or shutil.which("bash") is None,
                    reason="bash or git's bash completion is not installed")
def test_bash_completes_both_git_sluice_and_git_space_sluice() -> None:
    bindir = Path(sys.executable).parent
    if not (bindir / "git-sluice").exists():
        pytest.skip("git-sluice is not installed beside this Python")
    script = f"""
source {GIT_BASH_COMPLETION}
source {ROOT / 'contrib' / 'completions' / 'git-sluice.bash'}
COMP_WORDS=(git-sluice st); COMP_CWORD=1; COMPREPLY=()
_git_sluice_completion git-sluice st git-sluice
echo "direct:${{COMPREPLY[*]}}"
COMP_LINE="git sluice intake --w"; COMP_POINT=${{#COMP_LINE}}
COMP_WORDS=(git sluice intake --w); COMP_CWORD=3; COMPREPLY=()
__git_wrap__git_main
echo "git:${{COMPREPLY[*]}}"
"""
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert "direct:status" in done.stdout, done.stdout + done.stderr
    assert "git:--wait " in done.stdout, done.stdout + done.stderr


# ------------------------------------------------------------- the fleet benchmark (issue 29)

BENCH = ROOT / "contrib" / "bench"


def _bench(name: str) -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    import importlib

    return importlib.import_module(name)


def test_the_bench_counts_git_sluices_git_requests_and_the_harness_apart() -> None:
    """Every fetch, ls-remote and push git-sluice sends to the remote goes through the counting wrappers;
    the harness's own git commands are logged as the harness's."""
    fleet_world = _bench("fleet_world")
    from git_sluice.remote.git import CasUpdate

    with fleet_world.world(count_git=True) as w:
        name = fleet_world.repo_name(1)
        w.add_repo(name)
        host = w.add_host("host-1")
        assert w.git_requests() == []  # cloning and `setup` asked nothing through the wrappers
        remote = w.session(host, name).remote
        remote.fetch()
        remote.list_remote("refs/sluice/*")
        oid = w.repos[name].branch_heads["main"]
        assert remote.push_cas([CasUpdate("refs/sluice/bench-check", oid, None)])[0].won
        clone = host.clones[name]
        fleet_world.git(clone, "-c", "core.hooksPath=/dev/null", "fetch", "-q", *host.harness_fetch_args(name),
                        "origin", env=w.host_env(host))
        fleet_world.git(clone, "-c", "core.hooksPath=/dev/null", "push", "-q", *host.harness_push_args(name),
                        "origin", f"{oid}:refs/heads/bench-check", env=w.host_env(host))
        logged = [(r.host, r.repo, r.who, r.kind) for r in w.git_requests()]
        now = w.clock.time()
        assert all(r.at == now for r in w.git_requests())  # the shared clock's time
    assert logged == [("host-1", "r01", "sluice", "fetch"), ("host-1", "r01", "sluice", "ls-remote"),
                      ("host-1", "r01", "sluice", "push"), ("host-1", "r01", "harness", "fetch"),
                      ("host-1", "r01", "harness", "push")]


def test_the_git_figures_per_host_tick_and_remote() -> None:
    runs = _bench("fleet_runs")
    GitRequest = _bench("fleet_world").GitRequest
    t0 = 1000.0
    log = [GitRequest(t0 + 5, "h1", "r01", "sluice", "fetch"), GitRequest(t0 + 6, "h1", "r01", "sluice", "ls-remote"),
           GitRequest(t0 + 65, "h2", "r01", "sluice", "fetch"), GitRequest(t0 + 70, "h1", "r01", "sluice", "push"),
           GitRequest(t0 + 80, "h2", "r01", "sluice", "push"), GitRequest(t0 + 90, "h2", "r01", "sluice", "push"),
           GitRequest(t0 + 20, "h1", "r01", "harness", "push"), GitRequest(t0 - 1, "h1", "r01", "sluice", "fetch")]
    g = runs.git_figures(log, ["h1", "h2"], ["bench/r01", "bench/r02"], t0, t0 + 120)
    assert g["read_per_hour"] == 3 * 30 and g["ls_remote_per_hour"] == 30 and g["push_per_hour"] == 3 * 30
    assert g["read_per_host_hour"] == {"max": 60, "mean": 45}
    assert g["read_per_host_tick_remote"] == 3 / (2 * 2 * 2) and g["read_busiest_host_tick_remote"] == 2
    assert g["push_busiest_minute_repo"] == 3 and g["push_busiest_repo"] == "r01"
    assert g["harness_push_per_hour"] == 30


def test_the_naive_fleet_is_paced_to_the_incidents_own_hour() -> None:
    """ADR 0071: 9,000–12,000 calls an hour against 5,200, refused about 15 minutes of every hour."""
    baselines = _bench("fleet_baselines")
    pacer = baselines.adr_pacer(5000)
    now, sent, ok = 0.0, 0, 0
    while now < 3600:
        now += pacer.delay(now)
        if now >= 3600:
            break
        refused = ok >= 5000
        pacer.answered(403 if refused else 200)
        ok += not refused
        sent += 1
    assert 9000 <= sent <= 12000 and ok == 5000
    assert pacer.ok_interval * 5000 == pytest.approx(2700)


def test_the_competent_poller_reads_every_page_in_one_query_a_page() -> None:
    baselines = _bench("fleet_baselines")
    from git_sluice.clock import FakeClock
    from git_sluice.double import GitHubDouble

    clock = FakeClock(1_000_000)
    gh = GitHubDouble(clock=clock)
    gh.add_user("u")
    gh.add_token("t", user="u")
    for name, count in (("o/a", 250), ("o/b", 3)):
        gh.add_repo(name)
        for k in range(count):
            gh.open_pr(name, head_ref=f"f{k}")
    poller = baselines.GraphQLPoller(baselines.Direct(gh, "t"), ["o/a", "o/b"], clock.time)
    mark = gh.mark()
    assert list(poller.run_pass()) == []
    assert poller.queries == 3  # both first pages together, then o/a's second and third
    assert gh.counted(resource="graphql", since=mark) == 3
    assert len(poller.views["o/a"]) == 250 and len(poller.views["o/b"]) == 3
