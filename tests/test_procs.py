"""tests/procs.py finds what a test left running, and ends it (issue 31: no process left behind)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import procs

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")


def test_a_detached_process_carrying_the_tests_mark_is_found_and_ended(tmp_path: Path) -> None:
    since = procs.now()
    # detached as a hook round is: its own session, its parent gone at once
    subprocess.run([sys.executable, "-c", "import subprocess, sys; subprocess.Popen(['sleep', '300'], "
                    "start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)"], check=True)
    found = procs.left(mark=(procs.OWNER, str(tmp_path)), since=since)
    assert [p.cmdline for p in found] == [["sleep", "300"]]
    assert procs.reap(mark=(procs.OWNER, str(tmp_path)), since=since, grace=0.1) == found
    assert procs.left(mark=(procs.OWNER, str(tmp_path)), since=since) == []


def test_a_process_with_an_environment_of_its_own_is_found_by_its_folder(tmp_path: Path) -> None:
    since = procs.now()
    proc = subprocess.Popen(["sleep", "300"], cwd=tmp_path, env={"PATH": os.environ["PATH"]})
    try:
        found = procs.left(under=tmp_path, since=since)
        assert [p.pid for p in found] == [proc.pid]
        assert procs.left(under=tmp_path.parent / "elsewhere", since=since) == []
    finally:
        proc.kill()
        proc.wait()


def test_the_credential_cache_daemon_is_asked_to_exit_on_its_socket(tmp_path: Path) -> None:
    from git_sluice.forge.tokencache import SharedTokens

    since = procs.now()
    shared = SharedTokens(tmp_path / "state")
    shared.put("k", "not-a-real-token", expires_at=2_000_000_000.0)
    found = procs.left(mark=(procs.OWNER, str(tmp_path)), since=since)
    assert [p.credential_socket for p in found] == [str(shared.socket)]
    assert procs.stop_credential_daemons(found) == []
    assert procs.gone(found, 10.0) == []  # ended by its own `exit`, not a signal
