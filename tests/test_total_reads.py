"""Every local file read is total (issue 33): nothing a host finds on its own disk raises a traceback.

A probe at 748d826 corrupted git-sluice's local state 188 ways and 39 ended
in a traceback. Here hypothesis corrupts every file and folder git-sluice
keeps — the clone's sluice dir and the host state dir, as a populated world
leaves them, and the few a drive, a serve or a failed hook round would add —
at once, each its own way: random bytes, bytes that are not UTF-8, ``[``
nested 100,000 deep, a directory where a file goes, a file where a directory
goes, a dangling symbolic link. Then the commands that read them run
in-process (click's runner, against the double): each exits 0–3 (``wait``:
its 4, timed out) with no traceback, and on the next run each works as it did
before the corruption, every corrupt file re-read from GitHub or rebuilt.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from git_sluice.cli import main
from git_sluice.commands.hook_round import run_hook_round
from git_sluice.errors import AlreadyDriving
from git_sluice.procs import PidLock
from git_sluice.repo import Repo
from git_sluice.runtime.driverlock import DriverLock
from tests.cliworld import CliHost, CliWorld, cli_world

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("intake",), ("status",), ("queue", "--json"), ("lease",), ("api", "repos/o/r"), ("wait", "1", "--timeout", "1s"),
    ("doctor",),
)
KINDS = ("random", "nonutf8", "deep", "directory", "file", "dangling")
SLUICE_EXTRAS = ("log", "drive.pid", "kept/index.json", "last-failure.json", "hook-round.lock", "serve-kept",
                 "queue/main.confirmed", "surveyed.json", "pool")
STATE_EXTRAS = ("run", "serve", "host.sqlite3-wal", "host.sqlite3-shm", "host.sqlite3.recover.lock")


@dataclass
class Kept:
    world: CliWorld
    host: CliHost
    sluice: Path
    state: Path
    snapshot: Path
    places: list[Path]
    baseline: dict[tuple[str, ...], int]


def _remove(place: Path) -> None:
    if place.is_dir() and not place.is_symlink():
        shutil.rmtree(place)
    elif os.path.lexists(place):
        place.unlink()


def corrupt(place: Path, kind: str, noise: bytes) -> None:
    """Put ``kind`` where ``place`` is (or would be)."""
    _remove(place)
    if kind == "random":
        place.write_bytes(noise)
    elif kind == "nonutf8":
        place.write_bytes(b'\xff\xfe{"a": "\x80\x81"}' + noise)
    elif kind == "deep":
        place.write_bytes(b"[" * 100_000)
    elif kind == "directory":
        place.mkdir()
        (place / "x").write_bytes(noise)
    elif kind == "file":
        place.write_text("not what git-sluice wrote\n")
    elif kind == "dangling":
        place.symlink_to(place.parent / f".nowhere-{place.name}" / "x")


def run(args: tuple[str, ...]) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    text = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        text += "Traceback\n" + "".join(traceback.format_exception(result.exception))
    return result.exit_code, text


def hook_round(kept: Kept) -> str:
    """A hook's round for a moved branch; what it added to the clone's log."""
    log = kept.sluice / "log"
    before = log.read_bytes() if log.is_file() else b""
    inbox = kept.sluice / "hook-in.4000000"
    try:
        inbox.write_text("@reference-transaction\nrefs/remotes/origin/main\n")
    except OSError:
        inbox = None  # type: ignore[assignment]  # the sluice dir itself is not one: the hook has no inbox
    run_hook_round(Repo.discover(kept.host.path), wait_pid=None, inbox=inbox)
    after = log.read_bytes() if log.is_file() else b""
    return after[len(before):].decode("utf-8", "replace") if after.startswith(before) else ""


def _restore(kept: Kept) -> None:
    for live, saved in ((kept.sluice, kept.snapshot / "sluice"), (kept.state, kept.snapshot / "state")):
        _remove(live)
        for aside in live.parent.glob(live.name + ".corrupt-*"):
            _remove(aside)
        shutil.copytree(saved, live, symlinks=True)


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kept]:
    """A clone taken in, waited on, asked, checked: every state file there is, and a snapshot of them."""
    logger = logging.getLogger("git_sluice")
    handlers, level = list(logger.handlers), logger.level
    with cli_world(tmp_path) as world:
        world.gh.open_pr("o/r", head_ref="feature")
        host = world.host("host-a")
        monkeypatch.chdir(host.path)
        for key, value in host.env.items():
            if os.environ.get(key) != value:
                monkeypatch.setenv(key, value)
        assert run(("setup",))[0] == 0
        baseline = {args: run(args)[0] for args in COMMANDS}
        assert baseline == {args: (4 if args[0] == "wait" else 0) for args in COMMANDS}, baseline
        sluice, state = host.path / ".git" / "sluice", host.state / "git-sluice"
        snapshot = tmp_path / "snapshot"
        shutil.copytree(sluice, snapshot / "sluice", symlinks=True)
        shutil.copytree(state, snapshot / "state", symlinks=True)
        found = [p for root in (sluice, state) for p in root.rglob("*")
                 if "hooks" not in p.relative_to(root).parts and not p.name.startswith("hook-in.")]
        extras = [sluice / name for name in SLUICE_EXTRAS] + [state / name for name in STATE_EXTRAS]
        places = sorted(set(found) | set(extras), key=lambda p: (len(p.parts), str(p)))
        try:
            yield Kept(world, host, sluice, state, snapshot, places, baseline)
        finally:
            for handler in set(logger.handlers) - set(handlers):
                logger.removeHandler(handler)
                handler.close()
            logger.setLevel(level)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          database=None, phases=(Phase.explicit, Phase.generate))  # no shrinking: a run takes seconds, the plan says it all
@given(data=st.data())
def test_every_state_file_corrupt_at_once_no_traceback_and_the_next_run_works(kept: Kept, data: st.DataObject) -> None:
    _restore(kept)
    kept.world.clock.advance(61)  # a round is due: the corrupt files are read, not skipped
    plan: dict[Path, tuple[str, bytes]] = {}
    for place in kept.places:
        kind = data.draw(st.sampled_from(("keep", *KINDS)), label=str(place.relative_to(kept.host.path.parent)))
        if kind != "keep":
            plan[place] = (kind, data.draw(st.binary(max_size=48)))
    for place, (kind, noise) in plan.items():  # shallow first: a folder replaced takes its files with it
        if place.parent.is_dir() and not place.parent.is_symlink():
            corrupt(place, kind, noise)
    shown = {str(place.relative_to(kept.host.path.parent)): kind for place, (kind, _) in plan.items()}
    for args in COMMANDS:
        code, text = run(args)
        assert "Traceback" not in text, (args, text, shown)
        assert code in ((0, 1, 2, 3, 4) if args[0] == "wait" else (0, 1, 2, 3)), (args, code, text, shown)
    logged = hook_round(kept)
    assert "Traceback" not in logged and "failed" not in logged, (logged, shown)
    kept.world.clock.advance(61)
    again = {args: run(args) for args in COMMANDS}
    assert {args: code for args, (code, _) in again.items()} == kept.baseline, (again, shown)
    assert "failed" not in hook_round(kept), shown


@pytest.mark.parametrize("root", ["sluice", "state"])
@pytest.mark.parametrize("kind", ["file", "dangling"])
def test_a_root_that_is_not_a_folder_is_moved_aside_and_rebuilt(kept: Kept, root: str, kind: str) -> None:
    """The sluice dir and the host state dir themselves: set aside once, made afresh, nothing deleted."""
    place = kept.sluice if root == "sluice" else kept.state
    corrupt(place, kind, b"")
    for args in (("status",), ("intake",), ("status",)):
        code, text = run(args)
        assert code == 0 and "Traceback" not in text, (args, text)
    assert place.is_dir() and os.path.lexists(place.with_name(place.name + ".corrupt-1"))


@pytest.mark.parametrize("kind", KINDS)
def test_the_drivers_pid_file_takes_its_place_whatever_stands_there(tmp_path: Path, kind: str) -> None:
    """``drive`` (long-lived, so not among the commands above) and ``serve`` hold a :class:`PidLock`."""
    (tmp_path / "sluice").mkdir()
    corrupt(tmp_path / "sluice" / "drive.pid", kind, b"\x00garbage")
    with DriverLock(tmp_path / "sluice"):
        with pytest.raises(AlreadyDriving) as caught:
            DriverLock(tmp_path / "sluice").acquire()
        assert caught.value.pid == os.getpid()
    serve_lock = PidLock(tmp_path / "sluice" / "serve.sock.lock")
    corrupt(Path(serve_lock.path), kind, b"")
    assert serve_lock.try_hold()
    serve_lock.release()


@pytest.mark.parametrize("kind", KINDS)
def test_the_drivers_log_takes_its_place_whatever_stands_there(tmp_path: Path, kind: str) -> None:
    """``drive`` appends to ``<sluice dir>/log``: a folder or a link there is moved aside, a garbled file appended to."""
    from git_sluice.cli.logfile import attach_log

    sluice = tmp_path / "sluice"
    sluice.mkdir()
    corrupt(sluice / "log", kind, b"\x00old")
    logger = logging.getLogger("git_sluice")
    handlers, level = list(logger.handlers), logger.level
    try:
        handler = attach_log(sluice)
        logger.info("a line after the corruption")
        handler.flush()
    finally:
        for extra in set(logger.handlers) - set(handlers):
            logger.removeHandler(extra)
            extra.close()
        logger.setLevel(level)
    log = sluice / "log"
    assert log.is_file() and not log.is_symlink()
    assert b"a line after the corruption" in log.read_bytes()
    assert not (tmp_path / ".nowhere-log").exists()  # a link is not followed to write elsewhere


def test_the_probes_corruptions_through_the_console_script_one_line_each(tmp_path: Path) -> None:
    """The probe's own repro (issue 33), through ``git-sluice`` itself (``status``, ``queue``, ``intake`` start
    without click): each corrupt file costs one line on stderr, naming it, and the next run is quiet."""
    with cli_world(tmp_path) as world:
        world.gh.open_pr("o/r", head_ref="feature")
        host = world.host("host-a")
        assert host.run("intake").returncode == 0
        sluice, state = host.path / ".git" / "sluice", host.state / "git-sluice"
        corrupt(sluice / "discovery.json", "nonutf8", b"")
        corrupt(sluice / "watched.json", "deep", b"")
        corrupt(sluice / "observed.json", "directory", b"")
        corrupt(sluice / "rounds.json", "nonutf8", b"")
        corrupt(sluice / "queue" / "main.json", "deep", b"")
        corrupt(sluice / "heads", "directory", b"")
        corrupt(sluice / "heads.d", "file", b"")
        corrupt(sluice / "discovery.json.lock", "directory", b"")
        corrupt(state / "pools.json", "deep", b"")
        corrupt(state / "pool-hosts.json", "nonutf8", b"")
        world.clock.advance(61)
        done = host.run("intake")
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        lines = done.stderr.splitlines()
        for name in ("discovery.json", "watched.json", "observed.json", "rounds.json", "main.json", "heads",
                     "heads.d", "discovery.json.lock", "pools.json", "pool-hosts.json"):
            said = [line for line in lines if f"/{name} " in line]
            assert len(said) == 1, (name, lines)
        assert len(lines) == 10, lines
        for args in (("status",), ("queue", "--json"), ("intake",)):
            again = host.run(*args)
            assert again.returncode == 0 and again.stderr == "", (args, again.stderr)
