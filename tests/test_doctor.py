"""``git sluice doctor`` against the GitHub double and real git, and the waiting countdown.

The setting is the one a user has after ``git sluice setup``: a bare remote, a
clone with the hooks installed by the real console script, a token in
GH_TOKEN. Each test then breaks one thing and asks that doctor names it with
the right status — and that no text doctor produces contains the token.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from git_sluice.clock import FakeClock
from git_sluice.countdown import ERASE_LINE, Countdown, countdown_text
from git_sluice.commands.doctor import diagnose
from git_sluice.commands.doctor.checks import (
    BudgetLine,
    Check,
    Diagnosis,
    HookState,
    ScratchTrial,
    budget_check,
    git_version_check,
    hook_check,
    lease_check,
    project,
    projection_checks,
    remote_checks,
)
from git_sluice.double.testing import ServedDouble
from git_sluice.forge.hoststore import HostStore, Wait
from git_sluice.intake.round import RoundReport, RoundsLog
from git_sluice.remote.lease_record import LeaseView
from git_sluice.repo import Repo
from git_sluice.runtime.session import open_session
from git_sluice.commands.setup import install
from tests.gitutil import git, make_clone

TOKEN = "tok-alice"
REAL_SLUICE = shutil.which("git-sluice") or str(Path(sys.executable).with_name("git-sluice"))


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture
def clone(tmp_path: Path, github: ServedDouble, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    monkeypatch.setenv("PATH", str(Path(REAL_SLUICE).parent) + os.pathsep + os.environ.get("PATH", ""))
    return make_clone(tmp_path, api=github.url)


def run_setup(clone: Path) -> None:
    """`git sluice setup` as a user runs it: git finds the git-sluice console script on PATH."""
    done = subprocess.run(["git", "sluice", "setup"], cwd=clone, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def set_up(clone: Path) -> Path:
    """The clone after setup (in-process: the same code, without a second of interpreter start-up)."""
    install(Repo.discover(clone))
    return clone


def by_name(diagnosis: Diagnosis) -> dict[str, Check]:
    return {check.name: check for check in diagnosis.checks}


def no_token_in(text: str, token: str = TOKEN) -> None:
    assert token not in text, "doctor printed the token"


def pool_of(clone: Path, github: ServedDouble) -> str:
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        return session.forge.pool


def file_clock_env(clone: Path, github: ServedDouble) -> dict[str, str]:
    """A subprocess shares the double's fake time through the test clock file."""
    clock_file = clone.parent / "clock"
    clock_file.write_text(repr(github.clock.time()))
    return dict(os.environ, GIT_SLUICE_TEST_CLOCK=str(clock_file))


# ----------------------------------------------------------------------------- healthy


def test_a_healthy_setup_is_all_ok_in_text_and_json_and_never_shows_the_token(
    clone: Path, github: ServedDouble
) -> None:
    run_setup(clone)
    set_up = clone
    diagnosis = diagnose(set_up, clock=github.clock)
    bad = [c.line() for c in diagnosis.checks if c.status != "ok"]
    assert bad == []
    names = by_name(diagnosis)
    for name in (
        "git version", "config sluice.remote", "config sluice.discovery", "token", "token access",
        "hook pre-push", "hook reference-transaction", "fetch refspec", "remote origin",
        "remote origin accepts refs/sluice/*", "lease main", "pause",
    ):
        assert name in names, name
    assert names["token"].found == "from GH_TOKEN (not shown)"
    assert names["proxy"].found == "calls to 127.0.0.1 go direct (no proxy variable set)"
    assert "default" in names["config sluice.discovery"].found
    assert "local" in names["config sluice.repository"].found  # where it came from
    # the scratch ref was created and deleted again, on the remote and in the mirror
    assert git(set_up, "ls-remote", "origin", "refs/sluice/*") == ""
    assert git(set_up, "for-each-ref", "refs/sluice/doctor") == ""
    # a fresh host knows nothing of the pool: one free, advisory GET /rate_limit fills the budget
    assert {line.source for line in diagnosis.budget} == {"rate_limit"}
    assert {"core", "graphql"} <= {line.resource for line in diagnosis.budget}
    assert "advisory" in names[f"budget {diagnosis.budget[0].pool} core"].found
    assert diagnosis.exit_code == 0

    # the command itself, through git, with the double's time
    mark = github.gh.mark()
    env = file_clock_env(set_up, github)
    done = subprocess.run(["git", "sluice", "doctor", "--json"], cwd=set_up, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    no_token_in(done.stdout + done.stderr)
    document = json.loads(done.stdout)
    assert document["schema"] == 1
    assert {c["status"] for c in document["checks"]} == {"ok"}
    assert set(document["checks"][0]) == {"name", "status", "found", "advice"}
    assert document["projection"]["branches"] == 1
    # second run: the ledger knows the pool now (no /rate_limit), the repository GET is a free 304
    assert github.gh.counted(since=mark) == 0
    assert all(line["source"] == "ledger" for line in document["budget"])
    text = subprocess.run(["git", "sluice", "doctor"], cwd=set_up, env=env, capture_output=True, text=True,
                          timeout=60)
    assert text.returncode == 0, text.stdout
    assert text.stdout.splitlines()[0].startswith("ok    git version: ")
    assert "0 failed, 0 warned" in text.stdout
    no_token_in(text.stdout + text.stderr)


def test_doctor_says_which_way_the_calls_go_and_fails_a_proxy_it_cannot_use() -> None:
    from git_sluice.commands.doctor.checks import proxy_check

    api = "https://api.github.com"
    through = proxy_check(api, {"HTTPS_PROXY": "http://bot:hunter2@proxy.corp:3128"})
    assert (through.status, through.found) == ("ok", "calls to api.github.com go through http://***@proxy.corp:3128 "
                                                      "(from HTTPS_PROXY)")
    listed = proxy_check(api, {"https_proxy": "http://proxy.corp:3128", "no_proxy": "github.com"})
    assert listed.found == "calls to api.github.com go direct: no_proxy lists it"
    bad = proxy_check(api, {"all_proxy": "socks5://bot:hunter2@proxy.corp:1080"})
    assert bad.status == "fail" and bad.found.startswith("all_proxy=socks5://***@proxy.corp:1080")
    assert "all_proxy" in bad.advice and "hunter2" not in bad.found + bad.advice


# ----------------------------------------------------------------------------- the token


@pytest.mark.parametrize("token", ["tok-nobody", "tok-bob"])
def test_a_token_without_access_fails_naming_the_repository(
    set_up: Path, github: ServedDouble, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    github.gh.add_token("tok-bob", user="bob", repos=["o/other"])  # a fine-grained token for another repo
    monkeypatch.setenv("GH_TOKEN", token)
    diagnosis = diagnose(set_up, clock=github.clock)
    access = by_name(diagnosis)["token access"]
    assert access.status == "fail"
    assert "token has no access to o/r" in access.found
    assert ("401" in access.found) == (token == "tok-nobody")
    assert diagnosis.exit_code == 1
    no_token_in(json.dumps(diagnosis.as_dict()), token)
    if token != "tok-nobody":
        return
    done = subprocess.run(["git", "sluice", "doctor"], cwd=set_up, env=file_clock_env(set_up, github),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "fail  token access: token has no access to o/r" in done.stdout
    no_token_in(done.stdout + done.stderr, token)


def test_no_token_anywhere_fails_with_what_to_do(set_up: Path, github: ServedDouble,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GH_TOKEN")
    monkeypatch.setenv("PATH", str(Path(shutil.which("git") or "/usr/bin/git").parent))  # no `gh` to ask
    diagnosis = diagnose(set_up, clock=github.clock)
    token = by_name(diagnosis)["token"]
    assert token.status == "fail" and token.found.startswith("none found")
    assert "GH_TOKEN" in token.advice and "gh auth login" in token.advice
    # the rest is still checked
    assert by_name(diagnosis)["hook pre-push"].status == "ok"
    assert by_name(diagnosis)["remote origin"].status == "ok"
    assert diagnosis.exit_code == 1


# ----------------------------------------------------------------------------- hooks, config, remote


def test_a_missing_or_foreign_hook_fails_and_a_chained_one_is_ok(set_up: Path, github: ServedDouble) -> None:
    hooks = set_up / ".git" / "hooks"
    (hooks / "pre-push").unlink()
    foreign = hooks / "reference-transaction"
    foreign.write_text("#!/bin/sh\nexit 0\n")
    checks = by_name(diagnose(set_up, clock=github.clock))
    assert checks["hook pre-push"].status == "fail"
    assert "not installed" in checks["hook pre-push"].found and "git sluice setup" in checks["hook pre-push"].advice
    assert checks["hook reference-transaction"].status == "fail"
    assert "another program's hook" in checks["hook reference-transaction"].found
    # setup chains the foreign hook; doctor then says so
    install(Repo.discover(set_up))
    checks = by_name(diagnose(set_up, clock=github.clock))
    assert checks["hook pre-push"].status == "ok"
    assert checks["hook reference-transaction"].status == "ok"
    assert "chained" in checks["hook reference-transaction"].found


def test_a_config_error_fails_naming_key_and_form_and_the_rest_is_still_reported(
    set_up: Path, github: ServedDouble
) -> None:
    git(set_up, "config", "sluice.discovery", "5s")
    diagnosis = diagnose(set_up, clock=github.clock)
    checks = by_name(diagnosis)
    failed = checks["config sluice.discovery"]
    assert failed.status == "fail"
    assert "sluice.discovery=5s" in failed.found and "at least 10s" in failed.advice
    assert checks["hook pre-push"].status == "ok" and checks["fetch refspec"].status == "ok"
    assert checks["token"].status == "ok"  # still found, still not shown
    assert diagnosis.exit_code == 1
    no_token_in(json.dumps(diagnosis.as_dict()))

    # a branch the remote lacks: the other keys are still listed with their origins
    git(set_up, "config", "--unset", "sluice.discovery")
    git(set_up, "config", "sluice.branch", "nope")
    checks = by_name(diagnose(set_up, clock=github.clock))
    assert checks["config sluice.branch"].status == "fail" and "nope" in checks["config sluice.branch"].found
    assert checks["config sluice.discovery"].status == "ok"
    assert checks["token access"].status == "ok"


def test_an_older_setups_refspec_warns(set_up: Path, github: ServedDouble) -> None:
    assert by_name(diagnose(set_up, clock=github.clock))["fetch refspec"].status == "ok"
    git(set_up, "config", "--add", "remote.origin.fetch", "+refs/sluice/*:refs/sluice/*")
    check = by_name(diagnose(set_up, clock=github.clock))["fetch refspec"]
    assert check.status == "warn" and "git sluice setup" in check.advice


def test_a_remote_that_refuses_refs_sluice_fails_with_its_words(set_up: Path, github: ServedDouble) -> None:
    hook = set_up.parent / "remote.git" / "hooks" / "pre-receive"
    hook.write_text('#!/bin/sh\nwhile read o n r; do case "$r" in refs/sluice/*) echo "no sluice here" >&2; '
                    'exit 1;; esac; done\nexit 0\n')
    hook.chmod(0o755)
    diagnosis = diagnose(set_up, clock=github.clock)
    checks = by_name(diagnosis)
    assert checks["remote origin"].status == "ok"
    accepts = checks["remote origin accepts refs/sluice/*"]
    assert accepts.status == "fail"
    assert "refused refs/sluice/doctor/host-a" in accepts.found and "pre-receive hook declined" in accepts.found
    assert diagnosis.exit_code == 1


def test_an_unreachable_remote_fails(set_up: Path, github: ServedDouble) -> None:
    git(set_up, "remote", "set-url", "origin", str(set_up.parent / "gone.git"))
    checks = by_name(diagnose(set_up, clock=github.clock))
    assert checks["remote origin"].status == "fail"
    assert "git ls-remote origin" in checks["remote origin"].advice


def test_a_garbage_lease_mark_is_a_warning(set_up: Path, github: ServedDouble) -> None:
    head = git(set_up, "rev-parse", "HEAD")
    git(set_up, "push", "-q", "--no-verify", "origin", f"{head}:refs/sluice/intake/main")
    diagnosis = diagnose(set_up, clock=github.clock)
    lease = by_name(diagnosis)["lease main"]
    assert lease.status == "warn" and "not a lease record" in lease.found
    assert diagnosis.exit_code == 0  # warnings do not fail


# ----------------------------------------------------------------------------- pauses and budget


def test_a_paused_pool_is_a_warning_and_doctor_makes_no_call_into_it(set_up: Path, github: ServedDouble) -> None:
    pool = pool_of(set_up, github)
    store = HostStore(clock=github.clock)
    try:
        assert store.adopt(pool, "core", github.clock.time() + 720, "secondary", source="host-b")
    finally:
        store.close()
    mark = github.gh.mark()
    diagnosis = diagnose(set_up, clock=github.clock)
    checks = by_name(diagnosis)
    pause = checks[f"pause {pool} core"]
    assert pause.status == "warn"
    assert "rate-limited until" in pause.found and "(in 12 min)" in pause.found and "host-b" in pause.found
    assert checks["token access"].status == "warn" and "not checked" in checks["token access"].found
    assert github.gh.requests(since=mark, path="/repos/o/r") == 0
    assert diagnosis.exit_code == 0


def test_a_throttle_met_by_doctor_pauses_the_pool_and_says_so(set_up: Path, github: ServedDouble) -> None:
    github.gh.fault("secondary", path="/repos/o/r", times=1, retry_after=300)
    checks = by_name(diagnose(set_up, clock=github.clock))
    assert checks["token access"].status == "warn"
    pauses = [c for c in checks.values() if c.name.startswith("pause ") and c.name.endswith(" core")]
    assert len(pauses) == 1 and pauses[0].status == "warn" and "rate-limited until" in pauses[0].found


def test_a_projection_over_half_the_allowance_warns(set_up: Path, github: ServedDouble) -> None:
    rounds = RoundsLog(set_up / ".git" / "sluice")
    rounds.record(RoundReport(branch="main", outcome="taken-in", why="discovery", counted=1, points=2))
    checks = by_name(diagnose(set_up, clock=github.clock))
    assert checks["projected hourly spend core"].status == "ok"
    assert "1 branch × 60 rounds/h × 1 counted calls/round = 60/h" in checks["projected hourly spend core"].found

    # many calls per round: 60 rounds/h × 50 = 3000 of 5000
    rounds.record(RoundReport(branch="main", outcome="taken-in", why="discovery", counted=50, points=2))
    diagnosis = diagnose(set_up, clock=github.clock)
    core = by_name(diagnosis)["projected hourly spend core"]
    assert core.status == "warn" and "60%" in core.found and "sluice.discovery" in core.advice
    assert diagnosis.projection is not None and diagnosis.projection.hourly["core"] == 3000
    assert diagnosis.exit_code == 0

    # a tiny allowance: the ledger's own limit is the one compared against
    github.gh.set_limit("user:alice", "core", 100)
    github.clock.advance(3700)  # a new window, so the double's new limit shows in its headers
    rounds.record(RoundReport(branch="main", outcome="taken-in", why="discovery", counted=1, points=0))
    diagnosis = diagnose(set_up, clock=github.clock)
    core = by_name(diagnosis)["projected hourly spend core"]
    assert core.status == "warn" and "60% of 100" in core.found, core.found


# ----------------------------------------------------------------------------- pure parts


def test_git_version_below_2_28_warns() -> None:
    assert git_version_check("git version 2.39.5").status == "ok"
    old = git_version_check("git version 2.25.1")
    assert old.status == "warn" and "2.28" in old.found
    assert git_version_check(None).status == "fail"


def test_lease_lines() -> None:
    def view(**kw: object) -> LeaseView:
        base = dict(branch="main", oid="a" * 40, holder="host-b", role="driver", age=30.0, lease=300.0,
                    garbage=False, mine=False, live=True)
        base.update(kw)
        return LeaseView(**base)  # type: ignore[arg-type]

    assert lease_check(view(oid=None)).status == "ok"
    held = lease_check(view())
    assert held.status == "ok" and "host-b (driver)" in held.found
    lapsed = lease_check(view(age=900.0, live=False))
    assert lapsed.status == "warn" and "lapsed" in lapsed.found
    mine = lease_check(view(holder="host-a", mine=True, live=False, age=600.0))
    assert mine.status == "warn" and "git sluice drive" in mine.advice


def test_hook_lines_for_config_defined_hooks_and_unrunnable_chains() -> None:
    base = dict(name="pre-push", path="/r/.git/hooks/pre-push", exists=True, ours=True, current=True,
                legacy=None, legacy_runs=False, shared_dir=False)
    assert hook_check(HookState(**base)).status == "ok"  # type: ignore[arg-type]
    stale = hook_check(HookState(**{**base, "current": False}))  # type: ignore[arg-type]
    assert stale.status == "warn" and "git sluice setup" in stale.advice
    dead = hook_check(HookState(**{**base, "legacy": "/r/.git/hooks/pre-push.legacy"}))  # type: ignore[arg-type]
    assert dead.status == "warn" and "chmod +x" in dead.advice
    config = {**base, "exists": False, "ours": False, "config_section": "hook.sluice-pre-push"}
    assert hook_check(HookState(**{**config, "config_listed": True, "config_current": True})).status == "ok"  # type: ignore[arg-type]
    assert hook_check(HookState(**config)).status == "fail"  # type: ignore[arg-type]


def test_a_scratch_ref_left_behind_is_a_warning_with_the_command_to_remove_it() -> None:
    trial = ScratchTrial("refs/sluice/doctor/h", created=True, deleted=False, words="stale info")
    checks = remote_checks("origin", None, trial)
    assert [c.status for c in checks] == ["ok", "warn"]
    assert "git push origin :refs/sluice/doctor/h" in checks[1].advice


def test_budget_lines_warn_when_spent_or_nearly() -> None:
    now = 1_800_000_000.0

    def line(used: int, remaining: int, reset: float = now + 600) -> BudgetLine:
        return BudgetLine("p", "core", 5000, used, remaining, reset, now - 5, 3, "ledger")

    assert budget_check(line(100, 4900), now).status == "ok"
    assert budget_check(line(4600, 400), now).status == "warn"
    spent = budget_check(line(5000, 0), now)
    assert spent.status == "warn" and "spent" in spent.found
    assert budget_check(line(5000, 0, reset=now - 1), now).status == "ok"  # a new window since


def test_projection_costs_unmeasured_branches_at_the_mean_and_ignores_idle_rounds() -> None:
    rounds = {
        "main": {"outcome": "taken-in", "counted": 4, "points": 2},
        "dev": {"outcome": "within-interval", "counted": 0, "points": 0},
    }
    p = project(["main", "dev"], 120.0, rounds, [])
    assert p.measured == ("main",)
    assert p.hourly == {"core": 2 * 30 * 4, "graphql": 2 * 30 * 2}
    assert p.limit_source == {"core": "assumed", "graphql": "assumed"}
    assert all(c.status == "ok" for c in projection_checks(p))
    nothing = project(["main"], 60.0, {}, [])
    assert projection_checks(nothing)[0].found == "no measured round yet on this clone"


def test_redaction_is_the_last_guard() -> None:
    d = Diagnosis([Check("token", "fail", "GitHub said ghp_secretvalue is bad", "drop ghp_secretvalue")])
    clean = d.redacted(["ghp_secretvalue"])
    assert "ghp_secretvalue" not in json.dumps(clean.as_dict())


# ----------------------------------------------------------------------------- the countdown


def wait_for_text(stream: io.StringIO, needle: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while needle not in stream.getvalue():
        assert time.monotonic() < deadline, f"{needle!r} never drawn: {stream.getvalue()!r}"
        time.sleep(0.005)


def test_countdown_plain_lines_off_a_terminal() -> None:
    clock = FakeClock()
    stream = io.StringIO()  # not a terminal
    countdown = Countdown(stream, clock=clock)
    assert countdown.tty is False
    countdown(Wait("p1", "core", clock.time() + 720, "paused"))
    countdown.stop()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and "\r" not in stream.getvalue()
    assert "rate-limited until" in lines[0] and "(in 12 min)" in lines[0] and "waiting until" in lines[0]


def test_countdown_redraws_in_place_on_a_terminal_and_ends_its_line() -> None:
    clock = FakeClock()
    stream = io.StringIO()
    countdown = Countdown(stream, clock=clock, tty=True, tick=0.005)
    until = clock.time() + 720
    countdown(Wait("p1", "core", until, "paused"))
    assert stream.getvalue() == ERASE_LINE + "git sluice: " + countdown_text(until, clock.time()) + ": waiting (core)"
    clock.advance(1)
    wait_for_text(stream, "(in 11 min 59 s)")
    clock.advance(720)
    wait_for_text(stream, "going on\n")
    assert countdown._thread is not None
    countdown._thread.join(timeout=2)
    assert not countdown._thread.is_alive()
    assert stream.getvalue().count("\n") == 1
    # stopped before the end (the command gave up): the line is finished too
    stream2 = io.StringIO()
    early = Countdown(stream2, clock=clock, tty=True, tick=0.005)
    early(Wait("p1", "core", clock.time() + 60, "paused"))
    early.stop()
    assert stream2.getvalue().endswith("stopped waiting\n")


def test_the_forge_calls_the_countdown_once_and_is_not_held_up_by_it(clone: Path, github: ServedDouble) -> None:
    stream = io.StringIO()
    countdown = Countdown(stream, clock=github.clock, tty=True, tick=0.005)
    with open_session(clone, clock=github.clock, need_branches=False, on_wait=countdown) as session:
        until = github.clock.time() + 300
        session.store.adopt(session.forge.pool, "core", until, "secondary", source="host-b")
        started = time.monotonic()
        answer = session.forge.get("repos/o/r", wait=True)
        assert time.monotonic() - started < 5  # the fake clock slept; the countdown did not delay it
    countdown.stop()
    assert answer.status == 200 and github.clock.time() >= until
    assert stream.getvalue().count("rate-limited until") >= 1
    assert stream.getvalue().endswith("\n")
    assert not any(t.name == "git-sluice-countdown" and t.is_alive() for t in threading.enumerate())


def test_api_wait_says_until_when_off_a_terminal(clone: Path, github: ServedDouble) -> None:
    with open_session(clone, clock=github.clock, need_branches=False) as session:
        session.store.adopt(session.forge.pool, "core", github.clock.time() + 600, "secondary", source="host-b")
    done = subprocess.run(["git", "sluice", "api", "--wait", "repos/o/r"], cwd=clone,
                          env=file_clock_env(clone, github), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "rate-limited until" in done.stderr and "(in 10 min)" in done.stderr
    assert "\r" not in done.stderr
    no_token_in(done.stdout + done.stderr)


def test_a_clone_of_thousands_of_branches_without_a_commit_graph_is_warned() -> None:
    """Issue 29's leftover: git's own upkeep — every fetch's connectivity check parses each ref tip
    where no commit-graph covers them, and every round fetches."""
    from git_sluice.commands.doctor.checks import GRAPH_REFS, commit_graph_check

    assert commit_graph_check(5000, has_graph=True).status == "ok"
    assert commit_graph_check(GRAPH_REFS - 1, has_graph=False).status == "ok"
    busy = commit_graph_check(5000, has_graph=False)
    assert busy.status == "warn" and "5,000" in busy.found and "git maintenance start" in busy.advice


def test_doctor_reads_the_clones_refs_and_its_commit_graph(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    from git_sluice.commands.doctor.gather import _has_graph
    from git_sluice.repo import Repo

    work = tmp_path / "w"
    env = {**__import__("os").environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=work, check=True, env=env)
    assert not _has_graph(Repo.discover(work))
    subprocess.run(["git", "commit-graph", "write", "--reachable"], cwd=work, check=True, env=env)
    assert _has_graph(Repo.discover(work))
