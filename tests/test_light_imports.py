"""The commands a dashboard polls, and the hook runner's wait, import nothing heavy (issue 15).

``status`` and ``queue`` call no GitHub, so they never load graphql-core,
httpx or libgit2; the hook runner lowers its priority and waits for git
before importing even click. Counted in ``sys.modules`` of a fresh process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_sluice.entry import NICENESS, wait_pid_of
from git_sluice.remote.fetched import FetchedLeases, parse_for_each_ref
from git_sluice.remote.lease_record import LeaseRecord, lease_ref
from tests.gitutil import git

HEAVY = ("graphql", "httpx", "pygit2")
ALSO = ("filelock", "email", "platformdirs", "typing")  # what queue no longer loads either, nor status email (issue 15)
IDENT = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]


@pytest.fixture
def work(github_clone: Path) -> Path:
    for key, value in (("sluice.repository", "octo/widgets"), ("sluice.branch", "main"), ("sluice.host", "host-a")):
        git(github_clone, "config", key, value)
    return github_clone


def _mark(work: Path, branch: str, message: str) -> str:
    """A lease mark as a fetch leaves it: a parentless commit at ``refs/sluice/intake/<branch>``."""
    tree = subprocess.run(["git", "-C", str(work), "mktree"], input="", capture_output=True, text=True,
                          check=True).stdout.strip()
    oid = subprocess.run(["git", "-C", str(work), *IDENT, "commit-tree", tree, "-m", message],
                         capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "-C", str(work), "update-ref", lease_ref(branch), oid], check=True)
    return oid


def _run_cli(work: Path, *args: str) -> dict[str, object]:
    # what the interpreter loaded before the command (a site .pth may import certifi, and with it typing) is
    # not the command's doing: only modules it added count
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "from git_sluice.entry import main\n"
        f"sys.argv = ['git-sluice', *{list(args)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        "added = lambda names: [m for m in names if m in sys.modules and m not in before]\n"
        f"print(json.dumps({{'heavy': added({HEAVY!r}), 'code': code, 'light': added({ALSO!r}),\n"
        f"                  'click': added(('click',))}}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True, check=True)
    *printed, last = proc.stdout.strip().splitlines()
    result: dict[str, object] = json.loads(last)
    result["out"] = "\n".join(printed)
    return result


def test_status_and_queue_load_neither_graphql_nor_httpx_nor_libgit2(work: Path) -> None:
    record = LeaseRecord(holder="host-b", role="driver", lease=600.0, renewal=3, version="0.1.0")
    _mark(work, "main", record.to_message("main"))
    status = _run_cli(work, "status", "--json")
    assert status["heavy"] == [] and status["code"] == 0, status
    assert "email" not in status["light"], status  # filelock it may: it notes when it first saw a mark
    lease = json.loads(str(status["out"]))["branches"][0]["lease"]
    assert lease["holder"] == "host-b" and lease["role"] == "driver" and not lease["garbage"] and not lease["mine"]
    queue = _run_cli(work, "queue", "--json")
    assert queue["heavy"] == [] and queue["code"] == 0 and queue["light"] == [], queue
    assert status["click"] == queue["click"] == [], (status, queue)  # cli/fast_path.py runs them (issue 15)


def test_a_hook_round_that_concerns_nothing_loads_neither_graphql_nor_httpx_nor_libgit2(work: Path) -> None:
    """Most hook runs concern nothing (a branch not taken in): read the inbox, the filter, the config, end.

    Nor click: the runner's plain spelling is run by cli/fast_path.py (issue 15)."""
    sluice = work / ".git" / "sluice"
    sluice.mkdir()
    inbox = sluice / "hook-in.4242"
    inbox.write_text("@reference-transaction\nrefs/remotes/origin/not-taken-in \n")
    env = {k: v for k, v in os.environ.items() if k != "GIT_SLUICE_INTERNAL"}
    code = (
        "import json, sys\n"
        "from git_sluice.entry import main\n"
        f"sys.argv = ['git-sluice', '_hook-round', '--inbox', {str(inbox)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps([m for m in {('click', *HEAVY)!r} if m in sys.modules]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert not inbox.exists()  # it was read (and concerned nothing): no round, no ask left
    assert (sluice / "hook-filter").read_text() == "refs/remotes/origin/main\n"
    assert not list(sluice.glob("hook-ask.*"))


def test_marks_read_by_git_alone_match_libgit2(work: Path) -> None:
    from git_sluice.remote.git import RemoteGit
    from git_sluice.repo import Repo

    record = LeaseRecord(holder="host-c", role="wait", lease=90.0, renewal=0, version="9")
    oids = {
        "main": _mark(work, "main", record.to_message("main")),
        "release/1.x": _mark(work, "release/1.x", "foreign words\n\nno trailers here\n"),
        "odd": _mark(work, "odd", "x\n\nHolder: h\nRole: driver\nLease: nan\nRenewal: 1\nSluice-Version: 1\n"),
    }
    blob = subprocess.run(["git", "-C", str(work), "hash-object", "-w", "--stdin"], input="not a commit",
                          capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "-C", str(work), "update-ref", lease_ref("blob"), blob], check=True)
    oids["blob"] = blob

    fetched = FetchedLeases.read(work)
    assert fetched is not None
    repo = Repo.discover(work)
    remote = RemoteGit(repo, "origin")
    assert fetched.common_dir == repo.common_dir and fetched.workdir == repo.workdir
    for branch, oid in oids.items():
        assert fetched.ref(lease_ref(branch)) == repo.ref(lease_ref(branch)) == oid
        assert fetched.read_message(oid) == remote.read_message(oid), branch
    assert fetched.ref(lease_ref("absent")) is None


def test_a_listing_that_cannot_be_read_for_sure_is_refused() -> None:
    oid = "a" * 40
    good = f"refs/sluice/intake/main\0{oid}\0commit\0msg\n\0\n"
    assert parse_for_each_ref(good) == {"refs/sluice/intake/main": (oid, "msg\n")}
    assert parse_for_each_ref("") == {}
    # a NUL inside a message shifts every later field: refused, not guessed
    shifted = f"refs/sluice/intake/a\0{oid}\0commit\0one\0two\0\nrefs/sluice/intake/b\0{oid}\0commit\0m\0\n"
    assert parse_for_each_ref(shifted) is None
    assert parse_for_each_ref(f"refs/heads/x\0{oid}\0commit\0m\0\n") is None


def test_the_hook_runner_steps_back_and_waits_before_importing_click(tmp_path: Path) -> None:
    code = (
        "import json, os, sys\n"
        "import git_sluice.entry as entry\n"
        "base = os.nice(0)\n"
        "seen = {}\n"
        "def wait_for(pid, limit=entry.WAIT_LIMIT):\n"
        "    seen.update(pid=pid, heavy=[m for m in ('click', *%r) if m in sys.modules], step=os.nice(0) - base)\n"
        "entry.wait_for = wait_for\n"
        "sys.argv = ['git-sluice', '_hook-round', '--wait-pid', '4242', '--inbox', 'hook-in.4242']\n"
        "try:\n    entry.main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(seen))\n"
    ) % (HEAVY,)
    env = {k: v for k, v in os.environ.items() if k != "GIT_SLUICE_INTERNAL"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=True)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["pid"] == 4242 and seen["heavy"] == []
    assert seen["step"] == NICENESS or os.nice(0) + NICENESS > 19  # capped at 19


def test_wait_pid_is_read_in_either_spelling() -> None:
    assert wait_pid_of(["--wait-pid", "17", "--inbox", "x"]) == 17
    assert wait_pid_of(["--inbox", "x", "--wait-pid=9"]) == 9
    assert wait_pid_of(["--inbox", "x"]) is None
    assert wait_pid_of(["--wait-pid", "-3"]) is None and wait_pid_of(["--wait-pid"]) is None


def test_calling_github_does_not_load_httpx_s_own_command_line() -> None:
    """httpx imports its CLI (click, rich, pygments: ~40 ms) when they are installed; git-sluice never runs it."""
    code = (
        "import json, sys\n"
        "from git_sluice.runtime.session import open_session\n"
        "import httpx\n"
        "print(json.dumps({'cli': sys.modules.get('httpx._main') is not None,\n"
        "                  'loaded': [m for m in ('click', 'rich', 'pygments') if m in sys.modules]}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == {"cli": False, "loaded": []}
