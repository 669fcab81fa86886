"""``serve`` on the double: a clone set up for git-sluice, ``serve`` in a thread on the double's clock,
a Unix socket with a short path (sun_path is ~100 bytes; pytest's tmp paths can be longer)."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from git_sluice.clock import FakeClock
from git_sluice.commands.serve import Serving, serve
from git_sluice.double.testing import ServedDouble
from git_sluice.records import record
from git_sluice.runtime.session import Session, open_session
from git_sluice.runtime.stopper import Stopper
from tests.gitutil import make_clone

TOKEN = "tok-alice"


class TickingClock(FakeClock):
    """A fake clock that moves on by itself while anyone sleeps on it: 50 ms of its time per real ms.

    :class:`FakeClock` jumps a sleeper's whole sleep at once, so four writes
    waiting for slots 1, 2 and 3 s away would move it 6 s, and a write would
    reach the double after a later slot's jump. Here a sleeper waits until the
    clock reaches its end, as on a real clock, only faster.
    """

    STEP = 0.05

    def __init__(self, start: float = 1_800_000_000.0, step: float = STEP) -> None:
        super().__init__(start)
        self.step = step
        self._sleepers = 0
        self._cond = threading.Condition()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()

    def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return super().sleep(seconds)
        end = self.time() + seconds
        with self._cond:
            self._sleepers += 1
            self._cond.notify_all()
        try:
            while self.time() < end:
                time.sleep(0.0005)
        finally:
            with self._cond:
                self._sleepers -= 1

    def _tick(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._sleepers > 0)
            self.advance(self.step)
            time.sleep(0.001)


@record
class Served:
    """A running ``serve``: where it listens, the double behind it, and how to stop it."""

    socket: Path
    port: int
    github: ServedDouble
    session: Session
    stopper: Stopper
    thread: threading.Thread
    state_dir: Path
    clone: Path

    def unix(self, **kw: object) -> httpx.Client:
        """A client on the socket, as gh is with ``http_unix_socket`` (its Host is GitHub's)."""
        return httpx.Client(transport=httpx.HTTPTransport(uds=str(self.socket)), base_url="http://api.github.com",
                            timeout=30, **kw)  # type: ignore[arg-type]

    def tcp(self, token: str | None = TOKEN) -> httpx.Client:
        headers = {"Authorization": f"token {token}"} if token else {}
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", headers=headers, timeout=30)

    def stop(self) -> None:
        self.stopper.stop()
        self.thread.join(timeout=30)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ss-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def clone(tmp_path: Path, github: ServedDouble, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    return make_clone(tmp_path, api=github.url)


def start_serving(clone: Path, github: ServedDouble, state_dir: Path, socket: Path) -> Served:
    session = open_session(clone, clock=github.clock, need_branches=False)
    stopper = Stopper()
    told: list[Serving] = []
    ready = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            serve(session, state_dir=state_dir, socket=socket, port=0, stopper=stopper,
                  ready=lambda s: (told.append(s), ready.set()))
        except BaseException as exc:  # noqa: BLE001 (handed to the test)
            failed.append(exc)
            ready.set()
        finally:
            session.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(30)
    if failed:
        raise failed[0]
    assert told and told[0].port is not None
    return Served(socket=socket, port=told[0].port, github=github, session=session, stopper=stopper,
                  thread=thread, state_dir=state_dir, clone=clone)


@pytest.fixture
def served(clone: Path, github: ServedDouble, short_dir: Path, isolated_env: Path) -> Iterator[Served]:
    state_dir = isolated_env / ".local" / "state" / "git-sluice"
    running = start_serving(clone, github, state_dir, short_dir / "s.sock")
    yield running
    running.stop()
