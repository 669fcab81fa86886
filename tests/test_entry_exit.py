"""The process entry's quick exit (issue 15): it skips only the teardown, never what an exit writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import atexit, sys, threading\n"
        "import git_sluice.entry as entry\n"
        f"out = {str(tmp_path / 'atexit')!r}\n"
        "atexit.register(lambda: open(out, 'w').write('ran'))\n"
        f"{body}\n"
        "sys.stdout.write('buffered, not flushed')\n"
        "entry.run()\n"
        "print('never reached')\n"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("exit_code", [0, 3])
def test_the_quick_exit_keeps_the_code_the_atexit_handlers_and_the_buffered_output(tmp_path: Path,
                                                                                  exit_code: int) -> None:
    done = _run(tmp_path, f"entry.main = lambda: sys.exit({exit_code})")
    assert done.returncode == exit_code
    assert done.stdout == "buffered, not flushed"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_a_thread_still_running_gets_the_ordinary_exit(tmp_path: Path) -> None:
    body = (
        "done = threading.Event()\n"
        "def late():\n"
        "    done.wait(0.2)\n"
        f"    open({str(tmp_path / 'thread')!r}, 'w').write('finished')\n"
        "threading.Thread(target=late).start()\n"
        "entry.main = lambda: None\n"
    )
    done = _run(tmp_path, body)
    assert done.returncode == 0
    assert (tmp_path / "thread").read_text() == "finished"  # joined, not cut off
    assert (tmp_path / "atexit").read_text() == "ran"


def test_a_message_exit_is_left_to_python(tmp_path: Path) -> None:
    done = _run(tmp_path, "entry.main = lambda: sys.exit('git sluice: stopped')")
    assert done.returncode == 1 and "git sluice: stopped" in done.stderr


def test_run_marks_trio_absent_only_where_nothing_imported_it(tmp_path: Path) -> None:
    """``entry.run`` makes ``import trio`` fail as if it were not installed; a module already loaded stays.

    A stand-in trio stands first on the path, so the test means the same whether or not trio is installed.
    """
    (tmp_path / "site" / "trio").mkdir(parents=True)
    (tmp_path / "site" / "trio" / "__init__.py").write_text("mine = 'found'\n")
    probe = (
        f"sys.path.insert(0, {str(tmp_path / 'site')!r})\n"
        "def probe():\n"
        "    try:\n"
        "        import trio\n"
        "    except ImportError:\n"
        "        return 'absent'\n"
        "    return getattr(trio, 'mine', 'loaded')\n"
        "entry.main = lambda: sys.stderr.write(probe())\n"
    )
    assert _run(tmp_path, probe).stderr == "absent"
    preloaded = "import types\nsys.modules['trio'] = types.SimpleNamespace(mine='kept')\n" + probe
    assert _run(tmp_path, preloaded).stderr == "kept"
