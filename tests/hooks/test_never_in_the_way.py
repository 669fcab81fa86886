"""Whatever goes wrong on git-sluice's side, the user's push and fetch behave as without hooks.

Two identical worlds (same commits, byte for byte: dates are fixed) run the
same git commands in lockstep: one with the hooks set up and something broken,
one with no hooks at all. Exit status and output must match, except for at
most one warning line on stderr.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hooks.conftest import World, base_path


@pytest.fixture(autouse=True)
def fixed_dates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_AUTHOR_DATE", "1700000000 +0000")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "1700000000 +0000")


def _refuse_sluice_refs(world: World) -> None:
    hook = world.remote / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        "while read old new ref; do\n"
        '  case $ref in refs/sluice/*) echo "refs/sluice is not allowed here" >&2; exit 1;; esac\n'
        "done\n"
        "exit 0\n"
    )
    hook.chmod(0o755)


def _no_git_sluice(world: World) -> None:
    world.env["PATH"] = base_path()


def _sluice_dir_is_a_file(world: World) -> None:
    subprocess.run(["rm", "-rf", str(world.sluice_dir)], check=True)
    world.sluice_dir.write_bytes(b"\x00\x01 not a directory\n")


def _garbage(world: World) -> None:
    sd = world.sluice_dir
    (sd / "hook-filter").write_bytes(b"\xff\xfe\x00 refs/remotes/origin/main\n*\n[\n")
    (sd / "heads").write_bytes(b"\x00\x00 main 1 \xff\n" * 50)
    (sd / "hook-warned").write_bytes(b"\xff" * 100)
    (sd / "setup.json").write_bytes(b"{not json")
    (sd / "last-failure.json").write_bytes(b"[1, 2")
    (sd / "hook-push-mark").mkdir()
    (sd / "log").mkdir()
    (sd / "hook-round.lock").mkdir()
    (sd / "hook-in.999999999").write_bytes(b"\x00@pre-push\n\xff\n")
    (sd / "hook-ask.junk").mkdir()


def _api_down(world: World) -> None:
    """Already so: every world's sluice.api is a closed loopback port."""


SCENARIOS: dict[str, Callable[[World], None]] = {
    "github-api-down": _api_down,
    "git-sluice-not-on-path": _no_git_sluice,
    "sluice-dir-is-a-file": _sluice_dir_is_a_file,
    "garbage-in-the-sluice-dir": _garbage,
    "remote-refuses-refs-sluice": _refuse_sluice_refs,
}


def _normal(world: World, proc: subprocess.CompletedProcess[str]) -> tuple[int, str, list[str]]:
    root = str(world.root)
    return (
        proc.returncode,
        proc.stdout.replace(root, "<root>"),
        proc.stderr.replace(root, "<root>").splitlines(),
    )


@pytest.mark.slow
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_push_and_fetch_behave_as_without_hooks(make_world, scenario: str) -> None:  # type: ignore[no-untyped-def]
    hooked: World = make_world()
    plain: World = make_world()
    plain.git("config", "core.hooksPath", "/dev/null")  # same config and refspec, no hooks
    if scenario == "remote-refuses-refs-sluice":
        _refuse_sluice_refs(plain)
    SCENARIOS[scenario](hooked)

    def both(*args: str, shell: bool = False) -> None:
        results = []
        for world in (hooked, plain):
            if shell:
                proc = world.run("sh", "-c", args[0], check=False)
            else:
                proc = world.git(*args, check=False)
            results.append(_normal(world, proc))
        (rc_h, out_h, err_h), (rc_p, out_p, err_p) = results
        assert rc_h == rc_p, (args, results)
        assert out_h == out_p, (args, results)
        extra = [line for line in err_h if line not in err_p]
        assert [line for line in err_h if line not in extra] == err_p, (args, results)
        if scenario == "git-sluice-not-on-path":
            assert len(extra) <= 1 and all(line.startswith("git-sluice: not found on PATH") for line in extra)
        else:
            assert extra == [], (args, results)

    for world in (hooked, plain):
        world.advance("main", "remote moves")
    both("fetch")
    both("merge", "-q", "--ff-only", "origin/main")
    both("commit", "-q", "--allow-empty", "-m", "local work")
    both("push", "origin", "HEAD:main")
    both("push", "origin", "HEAD:refs/heads/feature")
    both("push", "origin", "HEAD:main")  # up to date
    both("fetch")  # nothing to fetch
    both("git push origin HEAD:refs/heads/piped 2>&1 | cat", shell=True)
    both("push", "origin", "HEAD:refs/sluice/intake/main")  # refused where the remote refuses it
    for world in (hooked, plain):
        world.advance("main", "again")
    both("fetch", "--prune")
    both("pull", "-q", "--ff-only")

    if scenario != "sluice-dir-is-a-file":
        hooked.wait_quiet()
    if scenario == "git-sluice-not-on-path":
        assert hooked.runners() == (0, 0)
    if scenario in ("github-api-down", "remote-refuses-refs-sluice"):
        assert len(hooked.rounds()) >= 1  # the rounds were asked and ran, in the background


def test_a_piped_push_returns_while_the_round_still_runs(world: World) -> None:
    # the runner sleeps before it starts: a hook that kept git's pipes would hold `| cat` that long
    world.env["SLUICE_TEST_SHIM_DELAY"] = "2"
    world.git("commit", "-q", "--allow-empty", "-m", "x")
    started = time.monotonic()
    proc = world.run("sh", "-c", "git push origin HEAD:main 2>&1 | cat")
    elapsed = time.monotonic() - started
    assert "HEAD -> main" in proc.stdout
    assert elapsed < 1.5, elapsed
    # the runner starts once git has ended (issue 15), so it may start just after the push returns
    deadline = time.monotonic() + 1.0
    while world.runners()[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert world.runners()[0] - world.runners()[1] == 1  # the runner was still busy
    world.wait_quiet()
    assert len(world.rounds()) == 1


def test_the_runner_starts_only_once_git_has_ended(world: World) -> None:
    """While the user's push runs, no Python competes with it: one shell waits for git's exit (issue 15)."""
    world.git("commit", "-q", "--allow-empty", "-m", "x")
    world.git("push", "-q", "origin", "HEAD:main")  # a branch taken in: a round is asked
    world.advance("main", "remote moves")
    world.git("fetch", "-q")
    world.wait_quiet()
    seen = Path(str(world.counter) + ".git").read_text().split()
    assert seen and set(seen) == {"ended"}, seen


def test_while_git_runs_the_hooks_start_no_program_but_sleep(world: World, tmp_path: Path) -> None:
    """The waiting runner is a fork of the hook's shell: setsid (and the runner) start once git has ended (issue 15)."""
    import shutil

    real = shutil.which("setsid", path=world.env["PATH"])
    if real is None:
        pytest.skip("no setsid here: the hooks fall back to nohup or a plain start")
    shims = tmp_path / "setsid-shim"
    shims.mkdir()
    seen = tmp_path / "setsid.seen"
    (shims / "setsid").write_text(
        "#!/bin/sh\n"
        # whatever it starts, git's pid is among its arguments: was that git still running?
        'pid=; for a in "$@"; do case $a in *[!0-9]* | "") ;; *) pid=$a; break ;; esac; done\n'
        'st=; [ -n "$pid" ] && IFS= read -r st <"/proc/$pid/stat" 2>/dev/null\n'
        f'case $st in "" | *") Z "* | *") X "*) echo "$1" ended ;; *) echo "$1" running ;; esac >>"{seen}"\n'
        f'exec "{real}" "$@"\n'
    )
    (shims / "setsid").chmod(0o755)
    world.env["PATH"] = f"{shims}{os.pathsep}{world.env['PATH']}"
    world.git("commit", "-q", "--allow-empty", "-m", "x")
    world.git("push", "-q", "origin", "HEAD:main")  # pre-push and reference-transaction: one runner
    world.advance("main", "remote moves")
    world.git("fetch", "-q")  # reference-transaction alone
    world.wait_quiet()
    # one runner per git command, or one for both: a fetch that ends while the push's runner is at
    # work leaves its inbox to that runner's last look (issue 33); either way, only after git ended
    started = seen.read_text().splitlines()
    assert started in (["git-sluice ended"], ["git-sluice ended"] * 2), started
    assert world.runners() == (len(started), len(started))
    assert not list(world.sluice_dir.glob("hook-in.*"))  # no inbox left behind


def test_a_hook_exits_zero_even_when_everything_is_broken(world: World, tmp_path: Path) -> None:
    # called by hand with nonsense: no crash, nothing printed, status 0
    hook = world.work / ".git" / "hooks" / "reference-transaction"
    for args, stdin in (
        (["committed"], "garbage\n\x00\xff\n"),
        (["committed"], f"{'0' * 40} {'1' * 40} refs/remotes/origin/main\n"),
        (["prepared"], "x y z\n"),
        ([], ""),
    ):
        proc = subprocess.run(
            # through a shell that ends right after, as git would: the runner waits for its parent
            ["sh", "-c", '"$0" "$@"; exit $?', str(hook), *args],
            input=stdin.encode(),
            cwd=world.work,
            env=dict(world.env, HOME=str(tmp_path / "nowhere")),
            capture_output=True,
        )
        assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    world.wait_quiet()
    assert os.environ.get("GIT_SLUICE_INTERNAL") is None


def _user_refs(world: World) -> str:
    return world.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes", "refs/heads", "refs/tags").stdout


def test_a_persons_fetch_is_the_same_with_and_without_git_sluice(make_world) -> None:  # type: ignore[no-untyped-def]
    """Issue #14 point 13: setup adds no refspec; only rounds fetch refs/sluice/*, by their own refspecs."""
    hooked: World = make_world()
    plain: World = make_world(with_setup=False)
    for world in (hooked, plain):
        world.git("update-ref", "refs/sluice/intake/main", "HEAD", cwd=world.other)
        world.git("update-ref", "refs/sluice/pause/0123456789ab/core", "HEAD", cwd=world.other)
        world.git("push", "-q", "origin", "refs/sluice/intake/main", "refs/sluice/pause/0123456789ab/core",
                  cwd=world.other)
        world.advance("main", "remote moves")
    results = [_normal(world, world.git("fetch", "origin", check=False)) for world in (hooked, plain)]
    assert results[0] == results[1]
    assert _user_refs(hooked) == _user_refs(plain)
    assert plain.git("for-each-ref", "refs/sluice").stdout == ""
    hooked.wait_quiet()
    assert "refs/sluice/intake/main" in hooked.git("for-each-ref", "refs/sluice").stdout
    assert _user_refs(hooked) == _user_refs(plain)  # the round wrote none of the person's refs
    results = [_normal(world, world.git("pull", "-q", "--ff-only", check=False)) for world in (hooked, plain)]
    assert results[0] == results[1]


def test_a_rounds_fetch_never_takes_a_ref_lock_the_persons_fetch_holds(world: World) -> None:
    """Issue #14 point 8: with refs/remotes/origin/main locked (a person's fetch in flight),
    a step's fetch still brings the marks and the branch, and leaves that ref alone."""
    world.advance("main", "remote moves")
    world.git("update-ref", "refs/sluice/intake/main", "HEAD", cwd=world.other)
    world.git("push", "-q", "origin", "refs/sluice/intake/main", cwd=world.other)
    before = world.git("rev-parse", "refs/remotes/origin/main").stdout
    lock = world.work / ".git" / "refs" / "remotes" / "origin" / "main.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("held by the person's own git fetch\n")
    try:
        world.sluice("intake")  # the API is down: the round fails after its fetch, as it may
        assert world.git("for-each-ref", "refs/sluice/intake/main").stdout.strip()
        assert world.git("rev-parse", "refs/sluice/tracking/origin/main").stdout == world.git(
            "rev-parse", "refs/heads/main", cwd=world.other).stdout
        assert world.git("rev-parse", "refs/remotes/origin/main").stdout == before
        assert lock.read_text() == "held by the person's own git fetch\n"
    finally:
        lock.unlink()


@pytest.mark.slow
def test_concurrent_fetches_with_the_hooks_never_fail(world: World) -> None:
    """Issue #14 point 8, scaled: waves of concurrent plain fetches (of a branch that stands
    still, as without git-sluice none of them fails) while another host's lease moves on the
    remote and rounds (hook rounds and a step) fetch in the same clone: no fetch fails."""
    failures: list[str] = []
    for wave in range(4):
        world.advance("main", f"wave {wave}")
        world.git("fetch", "-q", "origin")  # brings the branch; its hook round starts
        world.git("commit", "-q", "--allow-empty", "-m", f"renewal {wave}", cwd=world.other)
        world.git("push", "-q", "-f", "origin", "HEAD:refs/sluice/intake/main", cwd=world.other)
        step = subprocess.Popen([str(world.bin / "git-sluice"), "intake"], cwd=world.work, env=world.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs = [
            subprocess.Popen(["git", "fetch", "-q", "origin"], cwd=world.work, env=world.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(12)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            if proc.returncode != 0:
                failures.append(err)
        step.wait(timeout=60)
    world.wait_quiet(timeout=60)
    assert failures == []


def _stop_marked(hook: Path, after: str, into: Path) -> Path:
    """A copy of ``hook`` that exits 7 right after the line ``after``: reaching past it shows."""
    lines = hook.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip() == after) + 1
    into.write_text("".join(lines[:at] + ["exit 7\n"] + lines[at:]))
    into.chmod(0o755)
    return into


def test_reference_transaction_ends_before_its_body_when_nothing_can_concern_it(world: World, tmp_path: Path) -> None:
    """git runs the hook for every state of every transaction (a rebase: each step): the common
    cases end before the shell reads the rest of the file, and a chained hook still sees them all."""
    hook = world.work / ".git" / "hooks" / "reference-transaction"
    ours = f"{'1' * 40} {'2' * 40} refs/remotes/origin/main\n"
    a_commit = f"{'1' * 40} {'2' * 40} refs/heads/main\n{'1' * 40} {'2' * 40} HEAD\n"

    def status(script: Path, state: str, stdin: str) -> int:
        return subprocess.run([str(script), state], input=stdin.encode(), cwd=world.work, env=world.env,
                              capture_output=True).returncode

    first = _stop_marked(hook, '[ "${1:-}" = committed ] || [ -x "$0.legacy" ] || exit 0', tmp_path / "first")
    assert [status(first, s, ours) for s in ("prepared", "aborted", "committed")] == [0, 0, 7]
    (tmp_path / "first.legacy").write_text("#!/bin/sh\ncat >/dev/null\n")
    (tmp_path / "first.legacy").chmod(0o755)
    assert status(first, "prepared", ours) == 7  # a chained hook is run for every state

    scanned = _stop_marked(hook, '[ -n "$cand" ] || exit $status', tmp_path / "scanned")
    assert status(scanned, "committed", a_commit) == 0  # no ref of ours: ends right after reading its stdin
    assert status(scanned, "committed", ours) == 7
