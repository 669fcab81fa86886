"""``serve`` on the double: a clone set up for git-sluice, ``serve`` in a thread on the double's clock,
a Unix socket with a short path (sun_path is ~100 bytes; pytest's tmp paths can be longer)."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from git_sluice.commands.serve import Serving, serve
from git_sluice.double.testing import ServedDouble
from git_sluice.records import record
from git_sluice.runtime.session import Session, open_session
from git_sluice.runtime.stopper import Stopper
from tests.gitutil import make_clone

TOKEN = "tok-alice"


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
