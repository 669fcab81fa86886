"""Colour as git's porcelain colours (issue 31): who decides, and the log's one time format."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from git_sluice.cli.colour import paint_words, painter, plain, wanted
from git_sluice.cli.logfile import LogLine, attach_log
from git_sluice.clock import FakeClock, rfc3339
from git_sluice.commands.doctor.checks import Check
from git_sluice.commands.hook_round import write_log


@pytest.mark.parametrize(("setting", "tty", "expected"), [
    (None, True, True), (None, False, False),  # git's default: auto
    ("auto", True, True), ("auto", False, False), ("true", True, True), ("true", False, False),
    ("always", False, True), ("always", True, True), ("ALWAYS", False, True),
    ("false", True, False), ("never", True, False), ("off", True, False),
    ("bogus", True, True), ("bogus", False, False),  # a value git does not know reads as auto
])
def test_git_s_settings_decide_on_and_off_a_terminal(setting: str | None, tty: bool, expected: bool) -> None:
    assert wanted(setting, tty=tty) is expected


def test_no_color_and_the_flag_win_over_always() -> None:
    assert wanted("always", tty=True, no_color="1") is False
    assert wanted("always", tty=True, flag=False) is False
    assert wanted("always", tty=True, no_color="") is True  # no-color.org: an empty NO_COLOR is unset


def test_painting_is_click_styling_of_whole_words_and_nothing_when_off() -> None:
    on = painter(True)
    assert on("ok", "ok") == "\x1b[32mok\x1b[0m"
    assert painter(False) is plain
    assert paint_words("main: driver lease of host-a, 40 s old, live", on, {"live": "ok"}).endswith("\x1b[32mlive\x1b[0m")
    assert paint_words("delivered", on, {"live": "ok"}) == "delivered"  # a whole word only
    assert Check("token", "fail", "none").line(on).startswith("\x1b[31m\x1b[1mfail\x1b[0m  token: none")
    assert Check("token", "ok", "x").line(on) == "\x1b[32mok\x1b[0m    token: x"  # the columns stay where they were
    assert Check("token", "ok", "x").line() == "ok    token: x"


LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \[\d+\] \S.*$")


def test_the_clone_s_log_has_one_time_format_whoever_writes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The drive's lines (logging) and the hook rounds' (write_log) read alike: RFC 3339 UTC, the pid, the text."""
    clock_file = tmp_path / "clock"
    clock_file.write_text("1800000000.0")
    monkeypatch.setenv("GIT_SLUICE_TEST_CLOCK", str(clock_file))
    handler = attach_log(tmp_path)
    try:
        logging.getLogger("git_sluice.test").info("main: holding the lease")
        logging.getLogger("git_sluice.test").warning("could not fetch")
    finally:
        logging.getLogger("git_sluice").removeHandler(handler)
        handler.close()
    write_log(tmp_path, FakeClock(1800000000.0), "hook round start reason=push")
    lines = (tmp_path / "log").read_text().splitlines()
    assert len(lines) == 3 and all(LINE.match(line) for line in lines), lines
    assert lines[0].startswith(f"{rfc3339(1800000000.0)} [") and lines[1].endswith("] warning: could not fetch")
    assert not any("," in line.split(" ", 1)[0] or " INFO " in line for line in lines)  # logging's own format gone
    assert LogLine(FakeClock(0.0)).format(logging.makeLogRecord({"msg": "a\nb", "levelno": 20})).endswith("] a b")
