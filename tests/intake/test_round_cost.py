"""What a quiet round costs the machine, counted, not timed (issue 15).

A quiet round (nothing moved on GitHub) used to take four SQLite write
transactions per conditional GET (596 over 500 requests), rewrite and rename
a meta file per 304 and import graphql-core though it sends no GraphQL. Each
of those is counted here where it happens: the host store's write
transactions, what the kept answers write, and ``sys.modules`` of a fresh
``git sluice intake``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_sluice.clock import FileClock
from git_sluice.runtime.session import Session, open_session
from git_sluice.commands.intake import run_rounds
from git_sluice.double.testing import ServedDouble
from git_sluice.errors import AllowanceSpent
from git_sluice.forge import kept_answers as kept_module
from git_sluice.forge import rules
from git_sluice.forge.hoststore import HostStore, Outcome, Permit
from tests.gitutil import make_clone

REPO = "o/r"
TOKEN = "tok-alice"
WAITING = 30  # requests still waiting on checks: two conditional GETs each per discovery
CTX = multiprocessing.get_context("fork")


@pytest.fixture
def clone(tmp_path: Path, github: ServedDouble, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    return make_clone(tmp_path, api=github.url)


@pytest.fixture
def session(clone: Path, github: ServedDouble) -> Iterator[Session]:
    with open_session(clone, clock=github.clock) as s:
        assert s.forge.pool
        yield s


def _populate(github: ServedDouble) -> None:
    gh = github.gh
    for i in range(WAITING):
        gh.open_pr(REPO, head_ref=f"feat-{i}")  # no review, no checks yet: waits on its checks


def _quiet(github: ServedDouble, session: Session) -> None:
    """Rounds until the next one is quiet: the queue read, every check's baseline kept."""
    for _ in range(2):
        github.clock.advance(session.settings.discovery + 1)
        run_rounds(session)


def _snapshot(directory: Path) -> dict[str, tuple[int, int, int]]:
    """Every kept file but the flight locks (whose holder pwrites its mark) as (inode, size, mtime)."""
    out = {}
    for path in directory.iterdir():
        if not path.name.endswith(".lock"):
            st = path.stat()
            out[path.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def test_a_quiet_round_takes_a_handful_of_write_transactions_and_writes_no_kept_file(
    session: Session, github: ServedDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    _populate(github)
    run_rounds(session)
    _quiet(github, session)
    github.clock.advance(session.settings.discovery + 1)
    kept_dir = session.forge.kept.directory
    before = _snapshot(kept_dir)
    written: list[Path] = []
    real = kept_module.write_atomic
    monkeypatch.setattr(kept_module, "write_atomic", lambda path, data: (written.append(Path(path)), real(path, data)))
    writes, index_writes, mark = session.store.writes, session.forge.kept.index_writes, github.gh.mark()

    (report,) = run_rounds(session)

    calls = github.gh.calls(since=mark)
    assert report.outcome == "taken-in" and len(calls) == 1 + 2 * WAITING  # the list, each waiting head's checks
    assert github.gh.counted(since=mark) == 0  # all 304s
    assert session.store.writes - writes <= 10  # was 4 per call: acquire, start, record_rate, finish
    assert session.forge.kept.index_writes == index_writes and written == []
    assert _snapshot(kept_dir) == before  # no meta rewritten, no rename, no new file


def test_the_noted_ledger_is_written_by_the_round_and_read_by_another_process(
    session: Session, github: ServedDouble
) -> None:
    _populate(github)
    mark = github.gh.mark()
    run_rounds(session)
    counted = [c for c in github.gh.calls(since=mark) if c.counted and c.resource == "core"]
    # the hour's ledger also holds the GET /user that named the session's pool, before the mark (issue 31)
    hour = [c for c in github.gh.calls() if c.counted and c.resource == "core"]
    with HostStore(session.store.path, clock=github.clock) as other:  # another connection: what status sees
        [row] = [r for r in other.budget() if r.resource == "core"]
    assert len(counted) > WAITING and row.counted_last_hour == len(hour)
    assert row.remaining is not None


def _throttle_elsewhere(path: str, clock_path: str, pool: str, now: float) -> None:
    """Another process on the host meets a throttle: the pause opens and the epoch moves."""
    store = HostStore(Path(path), clock=FileClock(clock_path))
    permit = store.acquire(pool, "core")
    assert isinstance(permit, Permit) and store.start(permit)
    verdict = rules.classify(403, {"retry-after": "600"}, b'{"message": "secondary rate limit"}',
                             method="GET", path="/x", now=now)
    store.finish(permit, Outcome("throttle", verdict))
    store.close()


def test_a_throttle_in_another_process_fences_the_kept_permit(
    clone: Path, github: ServedDouble, tmp_path: Path
) -> None:
    clock = FileClock(tmp_path / "clock", start=github.clock.time())
    with open_session(clone, clock=clock) as session:
        pool = session.forge.pool
        session.forge.get(f"repos/{REPO}")  # takes a normal permit and keeps it for the next call
        [kept] = session.forge.permits._kept.values()
        child = CTX.Process(target=_throttle_elsewhere,
                            args=(str(session.store.path), str(clock.path), pool, clock.time()))
        child.start()
        child.join(30)
        assert child.exitcode == 0
        mark = github.gh.mark()
        with pytest.raises(AllowanceSpent):
            session.forge.get(f"repos/{REPO}/pulls")
        assert github.gh.requests(since=mark) == 0  # never reached the wire
        assert session.forge.stats.not_attempted == 1
        assert session.store.counters()[(pool, "core")]["fenced"] == 1
        assert session.store.check(kept) == "fenced" and not session.forge.permits._kept


def test_a_quiet_intake_never_imports_graphql(clone: Path, github: ServedDouble, tmp_path: Path) -> None:
    _populate(github)
    clock_file = tmp_path / "clock"
    env = dict(os.environ, GIT_SLUICE_TEST_CLOCK=str(clock_file))
    code = (
        "import json, sys\n"
        "from git_sluice.entry import main\n"
        "sys.argv = ['git-sluice', 'intake', '--json']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        "print(json.dumps({'graphql': 'graphql' in sys.modules, 'code': code}))\n"
    )

    def intake() -> dict[str, object]:
        github.clock.advance(3600)
        clock_file.write_text(repr(github.clock.time()))
        done = subprocess.run([sys.executable, "-c", code], cwd=clone, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        *_, last = done.stdout.strip().splitlines()
        return dict(json.loads(last), rounds=json.loads("\n".join(done.stdout.strip().splitlines()[:-1]))["rounds"])

    first = intake()
    assert first["graphql"] and first["code"] == 0  # the first round reads every request: it prices a query
    github.gh.mark()
    quiet = intake()
    assert quiet["code"] == 0 and quiet["rounds"][0]["outcome"] == "taken-in"  # type: ignore[index]
    assert quiet["rounds"][0]["read"] == []  # type: ignore[index]
    assert quiet["graphql"] is False


FAKE_TRIO = "import os\nwith open(os.environ['FAKE_TRIO_MARK'], 'a') as f:\n    f.write('imported\\n')\n"


def test_a_round_that_calls_github_never_imports_trio(clone: Path, github: ServedDouble, tmp_path: Path) -> None:
    """httpcore imports trio whenever it is installed (~45 ms, for async alone): git-sluice's own process never does.

    A stand-in ``trio`` that notes each import stands first on the path. The
    control shows httpcore still imports it when asked (were that to change,
    ``entry.ASYNC_ONLY`` could go); a real ``git-sluice intake`` that builds
    its transport and calls the double leaves no note.
    """
    _populate(github)
    fake = tmp_path / "fake-site"
    (fake / "trio").mkdir(parents=True)
    (fake / "trio" / "__init__.py").write_text(FAKE_TRIO)
    mark = tmp_path / "trio-imported"
    clock_file = tmp_path / "clock"
    clock_file.write_text(repr(github.clock.time()))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(fake), os.environ.get("PYTHONPATH")])),
               FAKE_TRIO_MARK=str(mark), GIT_SLUICE_TEST_CLOCK=str(clock_file))

    control = subprocess.run([sys.executable, "-c", "import httpcore._synchronization"], env=env, capture_output=True,
                             text=True, timeout=60)
    assert control.returncode == 0, control.stderr
    assert mark.read_text() == "imported\n"  # the stand-in is what httpcore finds
    mark.unlink()

    calls = github.gh.mark()
    done = subprocess.run([sys.executable, "-m", "git_sluice", "intake", "--json"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rounds"][0]["outcome"] == "taken-in"
    assert github.gh.requests(since=calls) > 0  # the transport was built and used
    assert not mark.exists()
