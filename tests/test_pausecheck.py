"""runtime/pausecheck.py: one look at the remote's pause notes per interval per host, cheaply (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_sluice.runtime.pausecheck import PauseChecks
from git_sluice.statefile import JsonDocument


def test_a_look_this_process_knows_is_recent_costs_no_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A round asks before each of its calls; only the first in an interval reads the file."""
    checks = PauseChecks(tmp_path, interval=60.0)
    assert checks.claim("file:///remote", 1000.0)
    reads: list[str] = []
    real = JsonDocument.read

    def counted(doc: JsonDocument) -> dict[str, object]:
        reads.append(doc.what)
        return real(doc)

    monkeypatch.setattr(JsonDocument, "read", counted)
    assert not any(checks.claim("file:///remote", 1000.0 + t) for t in (1, 10, 59))
    assert reads == []
    assert checks.claim("file:///remote", 1060.0) and reads  # the interval is over: read, and claimed again
    other = PauseChecks(tmp_path, interval=60.0)  # another process of the host: sees the claim in the file
    assert not other.claim("file:///remote", 1070.0)
    reads.clear()
    assert checks.claim("file:///remote", 900.0)  # a clock set back: what it knew is ahead of now
    assert reads  # never trusted from memory when the clock is behind it


def test_a_fetch_counts_as_a_look_but_never_moves_one_back(tmp_path: Path) -> None:
    checks = PauseChecks(tmp_path, interval=10.0)
    checks.looked("file:///remote", 1000.0)
    assert not checks.claim("file:///remote", 1005.0)  # the fetch at 1000 was the look
    other = PauseChecks(tmp_path, interval=10.0)  # another process of the host sees it in the file
    assert not other.claim("file:///remote", 1009.0)
    other.looked("file:///remote", 990.0)  # an older fetch, told late: the later look stands
    other.looked("file:///remote", float("nan"))
    assert JsonDocument(tmp_path / "pause-checks.json", what="x").read()[PauseChecks.key("file:///remote")] == 1000.0
    assert checks.claim("file:///remote", 1010.0)  # the interval after the fetch is over
    assert checks.claim("file:///other", 1005.0)  # another remote's notes were not fetched
