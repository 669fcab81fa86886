"""Progress a person can read: a line each time a test file is done, instead of minutes of dots.

The README's test command runs ~1,700 tests for several minutes; pytest's
``-q`` prints a dot each, which says nothing about where the run is or
whether it hangs (issue 31). Here each test file that finishes prints one
line — how many files and tests are done, the time so far, the file, and
what its tests came to:

    [ 41/142 files  612/1680 tests  1:52] tests/remote/test_fleet_roles.py: 14 passed

Failures print as pytest prints them (an ``F`` where it happened, the
tracebacks at the end); ``-v`` keeps pytest's line per test; ``--dots``
gives the dots back. Works with and without pytest-xdist (the controller
prints, as it receives each worker's reports).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--dots", action="store_true", default=False,
                     help="print pytest's dot a test instead of a line a finished test file (tests/progress.py)")


class FileProgress:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.expected: dict[str, int] = {}
        self.done: dict[str, int] = defaultdict(int)
        self.outcomes: dict[str, Counter[str]] = defaultdict(Counter)
        self.started = time.monotonic()
        self.files_done = 0
        self.tests_done = 0

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and hasattr(reporter, "_show_progress_info"):
            reporter._show_progress_info = False  # no "[100%]" alone on the last line: the file lines say it

    # -- what there is to do ------------------------------------------------------------
    def expect(self, nodeids: list[str]) -> None:
        if self.expected:  # every xdist worker collects the same tests: the first one says
            return
        counts: Counter[str] = Counter(nodeid.split("::", 1)[0] for nodeid in nodeids)
        self.expected = dict(counts)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.expect([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        self.expect(ids)

    # -- what was done ------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        if report.when == "call" and report.passed and not hasattr(report, "wasxfail"):
            return "passed", "", "PASSED"  # no dot: the file's line says it
        if report.skipped and not hasattr(report, "wasxfail"):
            return "skipped", "", "SKIPPED"  # nor an "s": the line says "1 skipped"
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes[path][_outcome(report)] += 1
        elif report.when == "teardown" and report.failed:
            self.outcomes[path]["error"] += 1
        if report.when != "teardown":
            return
        self.tests_done += 1
        self.done[path] += 1
        if self.done[path] == self.expected.get(path):
            self.files_done += 1
            self._say(path)

    def _say(self, path: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        seconds = int(time.monotonic() - self.started)
        files, tests = len(self.expected), sum(self.expected.values())
        said = ", ".join(f"{n} {what}" for what, n in sorted(self.outcomes[path].items()))
        width = len(str(files))
        if reporter._tw.width_of_current_line:
            reporter.write("\n")  # after a failure's F
        reporter.write_line(
            f"[{self.files_done:>{width}}/{files} files {self.tests_done:>{len(str(tests))}}/{tests} tests "
            f"{seconds // 60}:{seconds % 60:02d}] {path}: {said}",
            red="failed" in said or "error" in said,
        )


def _outcome(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xpassed" if report.passed else "xfailed"
    if report.when == "setup" and report.failed:
        return "error"
    return report.outcome


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--dots") or config.option.verbose > 0 or hasattr(config, "workerinput"):
        return
    if config.getoption("collectonly", False):
        return
    config.pluginmanager.register(FileProgress(config), "sluice-file-progress")
