"""Do git-sluice's hooks add "cannot lock ref" failures to concurrent fetches? (issue 33)

    PYTHONPATH=. python contrib/bench/fetch_contention.py [--fetches 50] [--reps 6] [--branches 20]
        [--variants none,empty,sluice,sluice-noround] [--json out.json]

A bare remote whose branches keep moving (a thread re-points them with ``git update-ref``
to commits the remote already has), one clone, and ``--fetches`` concurrent ``git fetch``
in that clone per trial. Each failed fetch is counted, and those saying "cannot lock ref"
apart. The variants run in the same clone, interleaved (the order rotates every
repetition), so a machine whose load drifts favours none of them:

- ``none``: ``-c core.hooksPath=<empty folder>``: git's own contention;
- ``true``: a ``reference-transaction`` hook that is a link to ``true``: the cheapest hook
  there can be (one fork and exec of a program that does nothing, no shell);
- ``empty``: a ``reference-transaction`` hook that is ``#!/bin/sh`` + ``exit 0``: what any
  installed hook costs, git's price for starting one;
- ``sluice``: the clone's hooks after ``git sluice setup``, rounds and all;
- ``sluice-noround``: the same hooks, with a ``git-sluice`` on PATH that exits at once, so
  no round runs: the hooks' own share, apart from the rounds they start;
- ``sluice-pushonly``: what ``git sluice setup`` leaves with ``sluice.fetchHook false``
  (``pre-push`` alone, the very script setup writes) in a hooks folder of its own: a fetch
  runs no hook.

Between trials it waits until every runner the hooks started has finished, so one trial's
rounds never land in the next. The API is a closed loopback port: a round does its git work
(the fetch of refs/sluice/*) and then fails to reach GitHub, which costs it nothing more.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

VARIANTS = ("none", "true", "empty", "sluice", "sluice-noround", "sluice-pushonly")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(root: Path, shim_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GH_", "GITHUB_"))}
    home = root / "home"
    home.mkdir(exist_ok=True)
    keep = [d for d in env.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "git-sluice").exists()]
    env.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(home / ".state"),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b.invalid",
        "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b.invalid", "GIT_TERMINAL_PROMPT": "0",
        "GH_TOKEN": "ghp_" + "bench" * 7 + "0", "PATH": os.pathsep.join([str(shim_dir), *keep]),
    })
    return env


def _shim(folder: Path, counter: Path) -> None:
    """``git-sluice`` for the hooks: counts runners, and with SLUICE_BENCH_NOROUND=1 runs none."""
    real = shutil.which("git-sluice") or str(Path(sys.executable).with_name("git-sluice"))
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "git-sluice"
    shim.write_text(
        "#!/bin/sh\n"
        '[ "${SLUICE_BENCH_NOROUND:-}" = 1 ] && exit 0\n'
        f'[ "$1" = _hook-round ] && echo start >>"{counter}"\n'
        f'"{real}" "$@"; rc=$?\n'
        f'[ "$1" = _hook-round ] && echo done >>"{counter}"\n'
        "exit $rc\n"
    )
    shim.chmod(0o755)


class World:
    def __init__(self, root: Path, branches: int, pool: int, move_every: float) -> None:
        self.root = root
        self.move_every = move_every
        self.counter = root / "runners"
        self.env = _env(root, root / "bin")
        _shim(root / "bin", self.counter)
        self.remote, self.work = root / "remote.git", root / "work"
        self.branches = [f"b{i:02d}" for i in range(branches)]
        seed = root / "seed"
        self.git("init", "-q", "--bare", "-b", "main", str(self.remote))
        self.git("init", "-q", "-b", "main", str(seed))
        self.pool: list[str] = []
        for i in range(pool):  # a chain of commits the remote has, to re-point branches at
            (seed / "f").write_text(f"{i}\n")
            self.git("add", "f", cwd=seed)
            self.git("commit", "-qm", f"c{i}", cwd=seed)
            self.pool.append(self.git("rev-parse", "HEAD", cwd=seed).strip())
        self.git("push", "-q", str(self.remote), "main", *(f"HEAD:refs/heads/{b}" for b in self.branches),
                 "HEAD:refs/pool/tip", cwd=seed)
        self.git("clone", "-q", str(self.remote), str(self.work))
        for key, value in {"sluice.repository": "octo/widgets", "sluice.api": f"http://127.0.0.1:{_closed_port()}",
                           "sluice.host": "bench", "gc.auto": "0", "maintenance.auto": "false"}.items():
            self.git("config", key, value, cwd=self.work)
        for branch in self.branches:
            self.git("config", "--add", "sluice.branch", branch, cwd=self.work)
        self.no_hooks = root / "no-hooks"
        self.no_hooks.mkdir()
        self.empty_hooks = root / "empty-hooks"
        self.empty_hooks.mkdir()
        (self.empty_hooks / "reference-transaction").write_text("#!/bin/sh\nexit 0\n")
        (self.empty_hooks / "reference-transaction").chmod(0o755)
        self.true_hooks = root / "true-hooks"
        self.true_hooks.mkdir()
        (self.true_hooks / "reference-transaction").symlink_to(shutil.which("true") or "/bin/true")
        from git_sluice.commands.setup import hooks_wanted, script

        self.pushonly_hooks = root / "pushonly-hooks"
        self.pushonly_hooks.mkdir()
        for name in hooks_wanted(False):  # what setup installs with sluice.fetchHook false
            (self.pushonly_hooks / name).write_bytes(script(name))
            (self.pushonly_hooks / name).chmod(0o755)
        proc = subprocess.run(["git-sluice", "setup"], cwd=self.work, env=self.env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"git sluice setup failed: {proc.stderr}")

    def git(self, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run(["git", *args], cwd=cwd or (self.work if self.work.exists() else self.root), env=self.env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"git {' '.join(args)}: {proc.stderr}")
        return proc.stdout

    def mover(self, stop: threading.Event, moved: list[int]) -> None:
        """Re-point the remote's branches, one every few milliseconds, until told to stop."""
        proc = subprocess.Popen(["git", "update-ref", "--stdin"], cwd=self.remote, env=self.env,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        assert proc.stdin is not None
        i = 0
        while not stop.is_set():
            branch = self.branches[i % len(self.branches)]
            oid = self.pool[(i * 7 + 3) % len(self.pool)]
            proc.stdin.write(f"start\nupdate refs/heads/{branch} {oid}\ncommit\n")  # one transaction each
            proc.stdin.flush()
            i += 1
            time.sleep(self.move_every)
        proc.stdin.close()
        proc.wait()
        moved.append(i)

    def runners(self) -> tuple[int, int]:
        try:
            words = self.counter.read_text().split()
        except OSError:
            return 0, 0
        return words.count("start"), words.count("done")

    def wait_quiet(self, limit: float = 300.0) -> float:
        """Until every runner started has finished and no inbox waits; returns the seconds waited."""
        began = time.monotonic()
        calm = 0
        while time.monotonic() - began < limit:
            started, finished = self.runners()
            busy = started != finished or any((self.work / ".git" / "sluice").glob("hook-in.*"))
            calm = 0 if busy else calm + 1
            if calm >= 5:
                break
            time.sleep(0.1)
        return time.monotonic() - began

    def trial(self, variant: str, fetches: int) -> dict[str, object]:
        args = ["git"]
        env = dict(self.env)
        if variant == "none":
            args += ["-c", f"core.hooksPath={self.no_hooks}"]
        elif variant == "true":
            args += ["-c", f"core.hooksPath={self.true_hooks}"]
        elif variant == "empty":
            args += ["-c", f"core.hooksPath={self.empty_hooks}"]
        elif variant == "sluice-noround":
            env["SLUICE_BENCH_NOROUND"] = "1"
        elif variant == "sluice-pushonly":
            args += ["-c", f"core.hooksPath={self.pushonly_hooks}"]
        args += ["fetch", "-q", "origin"]
        stop, moved = threading.Event(), []  # type: ignore[var-annotated]
        thread = threading.Thread(target=self.mover, args=(stop, moved))
        thread.start()
        time.sleep(0.05)
        began = time.monotonic()
        procs = [subprocess.Popen(args, cwd=self.work, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True) for _ in range(fetches)]
        results = [(p.wait(), p.stderr.read() if p.stderr else "") for p in procs]
        wall = time.monotonic() - began
        stop.set()
        thread.join()
        failed = sum(1 for rc, _ in results if rc != 0)
        lock = sum(1 for rc, err in results if rc != 0 and "cannot lock ref" in err)
        quiet = 0.0
        if variant == "sluice":
            quiet = self.wait_quiet()
        elif variant == "sluice-noround":  # no runner took these: drop them, not the next trial's
            for inbox in (self.work / ".git" / "sluice").glob("hook-in.*"):
                inbox.unlink()
        return {"variant": variant, "failed": failed, "cannot_lock": lock, "wall": round(wall, 3),
                "moves": moved[0] if moved else 0, "rounds_wait": round(quiet, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetches", type=int, default=50)
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--branches", type=int, default=20)
    parser.add_argument("--move-every", type=float, default=5.0, help="ms between two moves on the remote")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json", dest="json_out")
    opts = parser.parse_args(argv)
    variants = [v for v in opts.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            parser.error(f"unknown variant {v}; expected one of {', '.join(VARIANTS)}")
    root = Path(tempfile.mkdtemp(prefix="fetch-contention-"))
    world = World(root, opts.branches, pool=40, move_every=opts.move_every / 1000)
    rows: list[dict[str, object]] = []
    for rep in range(opts.reps):
        order = variants[rep % len(variants):] + variants[: rep % len(variants)]
        if rep % 2:
            order.reverse()
        for variant in order:
            row = world.trial(variant, opts.fetches)
            row["rep"] = rep
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"\n{opts.fetches} concurrent fetches, {opts.reps} repetitions, load {os.getloadavg()[0]:.1f}")
    print(f"{'variant':16} {'failed (mean)':>14} {'cannot lock':>12} {'per rep':>24}")
    summary = {}
    for variant in variants:
        mine = [r for r in rows if r["variant"] == variant]
        mean_failed = sum(int(r["failed"]) for r in mine) / len(mine)  # type: ignore[call-overload]
        mean_lock = sum(int(r["cannot_lock"]) for r in mine) / len(mine)  # type: ignore[call-overload]
        summary[variant] = {"failed": mean_failed, "cannot_lock": mean_lock}
        per = " ".join(str(r["cannot_lock"]) for r in mine)
        print(f"{variant:16} {mean_failed:14.1f} {mean_lock:12.1f} {per:>24}")
    if opts.json_out:
        Path(opts.json_out).write_text(json.dumps({"rows": rows, "summary": summary}, indent=2) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
