"""Fuzz: random and adversarial records under ``refs/sluice/*`` (issue #14, done-when).

Every example pushes one record to a bare remote served by a loopback ``git
daemon`` — trailers missing, duplicated, huge, negative, NaN, far future or
not UTF-8; a commit, a blob, a tree or a tag; at an odd ref name — and then,
on two hosts (one with git-sluice's hooks installed), asserts:

- no ``git sluice`` command exits with a traceback;
- no pause is adopted beyond the horizon (1 h 5 min from first sight);
- no branch is held by another's mark for longer than one configured lease;
- the hook-run ``git fetch`` / ``git push`` keep their own exit status.

Examples are bounded (8, no shrinking) so the whole runs in well under a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from git_sluice.clock import FileClock
from git_sluice.forge.hoststore import ADOPT_HORIZON, HostStore
from git_sluice.remote.lease_keeper import LeaseKeeper
from git_sluice.config import load_settings
from git_sluice.repo import Repo

from tests.remote.conftest import git
from tests.remote.test_fleet_roles import fleet_factory, token_of  # noqa: F401

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
LEASE = 60.0

NUMBERS = st.sampled_from([
    "1e300", "-1e300", "nan", "NaN", "inf", "-inf", "-5", "0", "253402300799", "253402300800",
    "9" * 400, "0x10", "1_000", "", " ", "60", "86400", "86401", "3.5", "1e-300",
])
TEXTS = st.one_of(
    st.sampled_from(["evil-host", "EV\tIL", "x" * 5000, "", "host-a", "\x1b[31mred", "a\rb", "driver", "wait",
                     "primary", "secondary", "unknown", "step", "0.1.0"]),
    st.text(max_size=40),
)
KEYS = ("Until", "Class", "Epoch", "Host", "Probe", "Holder", "Role", "Lease", "Renewal", "Sluice-Version")


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    """A record's message: any subset of the trailers, each possibly twice, odd values, odd bytes."""
    lines = []
    for key in KEYS:
        for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
            value = draw(st.one_of(NUMBERS, TEXTS))
            lines.append(f"{draw(st.sampled_from([key, key.lower(), key.upper()]))}: {value}")
    body = "\n".join(draw(st.permutations(lines)) if lines else [])
    subject = draw(st.sampled_from(["git-sluice pause of core for pool x", "git-sluice lease for main", "", "junk"]))
    raw = f"{subject}\n\n{body}\n".encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        raw += draw(st.binary(max_size=30))  # not UTF-8, NULs and all
    return raw


def refs(pool: str) -> st.SearchStrategy[str]:
    return st.sampled_from([
        f"refs/sluice/pause/{pool}/core", f"refs/sluice/pause/{pool}/graphql", f"refs/sluice/pause/{pool}/x..y",
        f"refs/sluice/pause/{pool}/a/b/c", "refs/sluice/pause/other-pool/core", "refs/sluice/intake/main",
        "refs/sluice/intake/main-x", "refs/sluice/intake/a/b", "refs/sluice/weird", "refs/sluice/pause/-x/core",
    ])


def write_object(cwd: Path, kind: str, message: bytes) -> str:
    def run(args: list[str], data: bytes) -> str:
        return subprocess.run(args, cwd=cwd, input=data, capture_output=True, check=True).stdout.decode().strip()

    if kind == "blob":
        return run(["git", "hash-object", "-w", "--stdin"], message)
    if kind == "tree":
        blob = run(["git", "hash-object", "-w", "--stdin"], message)
        return run(["git", "mktree"], f"100644 blob {blob}\tUntil: 1e300\n".encode())
    raw = f"tree {EMPTY_TREE}\nauthor e <e@x> 0 +0000\ncommitter e <e@x> 0 +0000\n\n".encode() + message
    commit = run(["git", "hash-object", "-t", "commit", "-w", "--stdin", "--literally"], raw)  # NULs and all
    if kind == "commit":
        return commit
    tag = b"object " + commit.encode() + b"\ntype commit\ntag evil\ntagger e <e@x> 0 +0000\n\n" + message
    return run(["git", "hash-object", "-t", "tag", "-w", "--stdin", "--literally"], tag)


@pytest.mark.slow(seconds=45)
def test_hostile_records_never_crash_pause_past_the_horizon_block_past_a_lease_or_break_git(
    fleet_factory, git_daemon: str, tmp_path: Path
) -> None:
    clock_file = tmp_path / "clock"
    clock = FileClock(clock_file, start=1_800_000_000.0)
    fleet = fleet_factory(("host-a", "host-b"), url=git_daemon, clock=clock, lease="60s")
    pool = fleet.session("host-a").forge.pool
    bin_dir = str(Path(sys.executable).parent)
    envs = {
        name: dict(host.env, GH_TOKEN=token_of(name), GIT_SLUICE_TEST_CLOCK=str(clock_file),
                   PATH=bin_dir + os.pathsep + host.env.get("PATH", ""))
        for name, host in fleet.hosts.items()
    }
    hooked = fleet.hosts["host-b"]
    done = subprocess.run([sys.executable, "-m", "git_sluice", "setup"], cwd=hooked.path, env=envs["host-b"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    writer = fleet.hosts["host-a"]
    pushes = iter(range(10_000))

    def cli(name: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "git_sluice", *args], cwd=fleet.hosts[name].path,
                              env=envs[name], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)

    def user_git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=hooked.path, env=envs["host-b"], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)

    @settings(max_examples=8, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(message=messages(), kind=st.sampled_from(["commit", "commit", "commit", "blob", "tree", "tag"]),
           ref=refs(pool), advance=st.sampled_from([0.0, 30.0, 61.0, 4000.0]))
    def example(message: bytes, kind: str, ref: str, advance: float) -> None:
        oid = write_object(writer.path, kind, message)
        subprocess.run(["git", "push", "-q", "--force", writer.url, f"{oid}:{ref}"], cwd=writer.path,
                       capture_output=True)  # a ref git itself refuses (a name in the way) is just not there
        clock.advance(advance)
        for name in fleet.hosts:
            for args in ((("intake",), ("status",)) if name == "host-b" else (("lease",),)):
                result = cli(name, *args)
                assert "Traceback" not in result.stderr, (args, result.stderr)
            with HostStore(Path(envs[name]["XDG_STATE_HOME"]) / "git-sluice" / "host.sqlite3", clock=clock) as store:
                for pause in store.pauses():
                    assert pause.until <= clock.time() + ADOPT_HORIZON + 1, pause
            repo = Repo.discover(fleet.hosts[name].path)
            keeper = LeaseKeeper.configured(repo, load_settings(fleet.hosts[name].path), role="driver", clock=clock)
            view = keeper.read("main")
            assert view.mine or view.absent or view.lease <= LEASE, view  # judged by our own lease at most
        # the user's git keeps its own exit status with the hooks in
        n = next(pushes)
        if n % 2 == 0:
            assert user_git("fetch", "-q").returncode == 0
            assert user_git("push", "-q", "origin", f"HEAD:refs/heads/fuzz-{n}").returncode == 0
        else:
            assert user_git("fetch", "-q", "origin", "refs/heads/no-such-branch").returncode != 0
            assert user_git("push", "-q", "origin", "no-such-ref:refs/heads/x").returncode != 0

    example()
    git("fetch", "-q", cwd=hooked.path)
