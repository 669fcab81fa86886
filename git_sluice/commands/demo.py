"""``git sluice demo``: the whole story on this machine, against the built-in GitHub double.

Two hosts (two clones, each with its own host state), one bare remote, one
GitHub double on loopback. Time is compressed (the double and both hosts share
a fake clock), so an hour of discovery takes seconds. The fake clock starts
as long before now as the story lasts, so it ends about now: what ``--keep``
leaves (queues read, discoveries asked, a pause ended) reads right on the real
clock, never "read in 1 h". Every
figure printed comes from the double's own ledger: what reached "GitHub".

Nothing outside the demo's temporary directory is read or written: it runs
with its own HOME, XDG_STATE_HOME and git configuration.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from .. import gitcli
from ..clock import FakeClock
from ..double import GitHubDouble, serve
from ..errors import AllowanceSpent, local_time
from ..forge.hoststore import HostStore
from ..intake.queue import QueueStore
from ..records import record
from ..runtime.rounds import intake_for
from .intake import run_rounds
from ..runtime.watching import tick_watch
from .drive import drive
from ..runtime.session import Session, fetch_and_adopt, open_session

TOKEN = "demo-token-not-a-secret"
REPO = "octo/widgets"

Say = Callable[[str], None]


@record
class DemoResult:
    directory: Path
    figures: dict[str, int]


def _git(cwd: Path, *args: str) -> str:
    done = gitcli.run(args, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def _isolate(root: Path) -> dict[str, str | None]:
    """Point HOME, state and git config at the demo's directory; returns what to restore."""
    home = root / "home"
    home.mkdir()
    (home / "gitconfig").write_text("")
    settings = {
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Demo",
        "GIT_AUTHOR_EMAIL": "demo@sluice.invalid",
        "GIT_COMMITTER_NAME": "Demo",
        "GIT_COMMITTER_EMAIL": "demo@sluice.invalid",
        "GH_TOKEN": TOKEN,
        "GITHUB_TOKEN": None,
        "GIT_SLUICE_TEST_CLOCK": None,
        # the demo's double is on this machine's loopback: no proxy of the host's can reach it
        **{name: None for lower in ("http_proxy", "https_proxy", "all_proxy")
           for name in (lower, lower.upper())},
    }
    saved = {key: os.environ.get(key) for key in settings}
    for key, value in settings.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    return saved


def _restore(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _make_hosts(root: Path, api: str) -> tuple[Path, Path]:
    bare = root / "remote.git"
    gitcli.run(["init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    seed = root / "seed"
    gitcli.run(["init", "-q", "-b", "main", str(seed)], check=True)
    (seed / "README").write_text("widgets\n")
    _git(seed, "add", "README")
    _git(seed, "commit", "-qm", "widgets")
    _git(seed, "push", "-q", str(bare), "main")
    shutil.rmtree(seed)
    clones = []
    for name in ("host-a", "host-b"):
        work = root / name
        gitcli.run(["clone", "-q", str(bare), str(work)], check=True)
        _git(work, "config", "sluice.repository", REPO)
        _git(work, "config", "sluice.api", api)
        _git(work, "config", "sluice.host", name)
        _git(work, "config", "--add", "remote.origin.fetch", "+refs/sluice/*:refs/sluice/*")
        clones.append(work)
    return clones[0], clones[1]


def _populate(gh: GitHubDouble) -> None:
    gh.add_user("demo-bot")
    gh.add_token(TOKEN, user="demo-bot")
    gh.add_repo(REPO)
    titles = ["Add rate-limit dashboard", "Fix flaky merge test", "Bump httpx", "Teach the bot to wait", "WIP: new queue UI"]
    for i, title in enumerate(titles, start=1):
        n = gh.open_pr(REPO, head_ref=f"topic-{i}", title=title, author="alice" if i % 2 else "bob", draft=(i == 5))
        sha = gh.pr(REPO, n).head_sha
        if i != 5:
            gh.add_check_run(REPO, sha, "ci", status="completed", conclusion="failure" if i == 2 else "success")
            gh.set_mergeable(REPO, n, "MERGEABLE")
        if i in (1, 3):
            gh.review(REPO, n, "carol", "APPROVED")


# How far the story moves the fake clock: 62 discovery intervals of 60 s (steps 3 to 5), then the
# 300 s retry-after of step 5 and a second past it; and a minute more, so it ends just before now.
STORY_SPAN = 62 * 60 + 300 + 1 + 60


def first_round_words(figures: dict[str, int]) -> str:
    """What step 1 tells, from the double's figures alone (no I/O: tested without a demo)."""
    return (
        f"1. host-a drives: it holds refs/sluice/intake/main and took main in with "
        f"{figures['first_round_list']} list call (the host watch's: one discovery for every clone on the "
        f"host) and {figures['first_round_points']} GraphQL point (one query for all of them), plus "
        f"{figures['first_round_checks']} calls of the watch for the baseline of checks that may still "
        f"change (#2's are failing: a re-run moves no updated_at); GET /user, once per token, named the pool."
    )


def idle_hour_words(figures: dict[str, int]) -> str:
    """What step 3 tells, from the double's figures alone."""
    return (
        f"3. An idle hour: host-a ran {figures['idle_rounds']} discovery rounds; {figures['idle_requests']} "
        f"conditional calls reached GitHub (the host watch's list each minute, and #2's failing checks less and "
        f"less often, up to every 15 min) and it counted {figures['idle_counted']} of them (every answer a 304)."
    )


def change_words(figures: dict[str, int], moved: list[int], read: list[int]) -> str:
    """What step 4 tells: the calls, and what was read, in words (never a raw ``[]``).

    The round may read nothing itself: the host watch's query already read the
    request that moved, for every clone of the host, so the round took that in.
    """
    rest, points = figures["change_rest"], figures["change_points"]
    moved_words = _numbers(moved) or "nothing"
    if read:
        reading = f"the round read {_numbers(read)} itself"
    else:
        reading = "the round read nothing more itself: the host watch's query had read it"
    return (
        f"4. carol approves #4: the next round spent {_plural(rest, 'REST call')} (the list page that changed) and "
        f"{_plural(points, 'GraphQL point')} (one query); {moved_words} moved, and {reading}."
    )


def _numbers(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class _Story:
    """What every step of the story shares: the double, the clock, the two hosts, the figures so far.

    One step per method, so each reads as the paragraph it prints; ``intake``,
    ``keeper`` and ``until`` carry from one step to the next, as in the story.
    """

    POOL = "user:demo-bot"

    def __init__(self, root: Path, gh: GitHubDouble, clock: FakeClock, stack: ExitStack, url: str, say: Say,
                 figures: dict[str, int]) -> None:
        self.root, self.gh, self.clock, self.stack, self.say, self.figures = root, gh, clock, stack, say, figures
        self.host_a, self.host_b = _make_hosts(root, url)
        self.a = self._session(self.host_a, "host-a")
        self.b = self._session(self.host_b, "host-b")
        self.until = 0.0

    def _session(self, path: Path, name: str) -> Session:
        # host-a keeps its state where git sluice status looks (the demo's own XDG_STATE_HOME);
        # host-b, another machine in the story, keeps its own beside it
        store = HostStore(None if name == "host-a" else self.root / "home" / f"{name}.sqlite3", clock=self.clock)
        self.stack.callback(store.close)
        return self.stack.enter_context(open_session(path, clock=self.clock, store=store))

    def drive(self) -> None:
        """1. host-a drives: takes the lease and takes the branch in."""
        gh, figures = self.gh, self.figures
        mark = gh.mark()
        drive(self.a, max_ticks=1, let_go=False, say=lambda text: self.say(f"  host-a: {text}"))
        figures["first_round_list"] = len(gh.calls(since=mark, path=r"/pulls\?"))
        figures["first_round_checks"] = len(gh.calls(since=mark, path=r"/commits/"))
        figures["first_round_points"] = gh.counted(self.POOL, "graphql", since=mark)
        self.say(first_round_words(figures))
        for entry in sorted(QueueStore(self.host_a / ".git" / "sluice").load("main").entries.values(),
                            key=lambda e: e.number):
            self.say(f"     #{entry.number} {entry.state:<8} {entry.title}")
        self.say("")

    def defer(self) -> None:
        """2. host-b's round defers to the holder."""
        mark = self.gh.mark()
        (report,) = run_rounds(self.b)
        self.figures["host_b_calls"] = self.gh.requests(since=mark)
        self.say(f"2. host-b runs a round (as its hooks would): {report.why}. "
                 f"Calls to GitHub: {self.figures['host_b_calls']}.")
        self.say("")

    def idle_hour(self) -> None:
        """3. an idle hour on host-a: every discovery answered 304."""
        gh, a = self.gh, self.a
        mark = gh.mark()
        rounds = 0
        for _ in range(60):
            self.clock.advance(a.settings.discovery)
            fetch_and_adopt(a)
            intake, keeper = intake_for(a, role="driver")
            keeper.ensure(["main"], fetch=False)  # the driver renews as it goes (no GitHub call)
            tick_watch(a, ["main"])
            intake.round("main")
            rounds += 1
        self.figures["idle_rounds"] = rounds
        self.figures["idle_requests"] = gh.requests(since=mark)
        self.figures["idle_list_calls"] = len(gh.calls(since=mark, path=r"/pulls\?"))
        self.figures["idle_counted"] = gh.counted(since=mark)
        self.say(idle_hour_words(self.figures))
        self.say("")

    def change(self) -> None:
        """4. something moves: one list page and one query."""
        gh, a = self.gh, self.a
        gh.review(REPO, 4, "carol", "APPROVED")
        self.clock.advance(a.settings.discovery)
        mark = gh.mark()
        self.intake, self.keeper = intake_for(a, role="driver")
        self.keeper.ensure(["main"])
        tick_watch(a, ["main"])
        report = self.intake.round("main")
        self.figures["change_rest"] = gh.counted(self.POOL, "core", since=mark)
        self.figures["change_points"] = gh.counted(self.POOL, "graphql", since=mark)
        moved = sorted({*report.added, *report.changed, *report.left})
        self.say(change_words(self.figures, moved, report.read))
        self.say("")

    def throttle(self) -> None:
        """5. a throttle on host-a pauses host-a, then host-b through the pause note."""
        gh, a, say = self.gh, self.a, self.say
        gh.fault("secondary", path="pulls", times=1, retry_after=300)
        self.clock.advance(a.settings.discovery)
        self.keeper.ensure(["main"])
        tick_watch(a, ["main"])  # the watch's list meets the throttle; the round then finds the host paused
        try:
            self.intake.round("main")
        except AllowanceSpent as exc:
            self.until = exc.until
            say(f"5. GitHub throttles host-a (secondary limit, retry-after 300 s): host-a pauses until "
                f"{local_time(self.until)} and publishes a pause note:")
        for line in _git(self.host_a, "for-each-ref", "--format=%(refname)", "refs/sluice").splitlines():
            say(f"     {line}")
        fetch_and_adopt(self.b)
        mark = gh.mark()
        try:
            self.b.forge.get(f"repos/{REPO}/pulls")
        except AllowanceSpent as exc:
            say(f"   host-b fetched the note and refuses its own call: {exc}")
        self.figures["host_b_paused_calls"] = gh.requests(since=mark)
        say(f"   Calls that host-b sent while paused: {self.figures['host_b_paused_calls']}.")
        say("")

    def probe(self) -> None:
        """6. at until: one probe across both hosts (claimed on the note), then calls flow again."""
        gh, say = self.gh, self.say
        self.clock.set(self.until + 1)
        mark = gh.mark()
        # the probe stays on the wire until host-b has tried (clearing the fault lets it go)
        gh.fault("hang", path=f"/repos/{REPO}$", times=1, seconds=60.0)
        probe = threading.Thread(target=lambda: self.a.forge.get(f"repos/{REPO}"))
        probe.start()
        deadline = time.monotonic() + 10
        while not any(gh.secondary.in_flight.values()) and time.monotonic() < deadline:  # probe on the wire
            time.sleep(0.01)
        try:
            self.b.forge.get(f"repos/{REPO}")
            b_said = "host-b called too"
        except AllowanceSpent:
            b_said = "host-b saw host-a's claim on the note and held its call"
        gh.clear_faults()
        probe.join()
        self.figures["probes"] = gh.requests(since=mark)
        say(f"6. At the pause's end host-a claims the one probe on the note and sends it; {b_said}. "
            f"Calls that reached GitHub: {self.figures['probes']}. The probe succeeded, so the note is gone:")
        fetch_and_adopt(self.b)
        for line in _git(self.host_b, "for-each-ref", "--format=%(refname)", "refs/sluice").splitlines():
            say(f"     {line}")
        say("")


def run_demo(*, keep: bool = False, say: Say = print) -> DemoResult:
    """Run the story; returns where it ran and the figures it printed."""
    root = Path(tempfile.mkdtemp(prefix="git-sluice-demo-"))
    saved = _isolate(root)
    figures: dict[str, int] = {}
    try:
        clock = FakeClock(time.time() - STORY_SPAN)
        gh = GitHubDouble(clock=clock)
        _populate(gh)
        with serve(gh) as server, ExitStack() as stack:
            story = _Story(root, gh, clock, stack, server.url, say, figures)
            say(f"GitHub double on {server.url}; repository {REPO} with 5 open pull requests (one a draft).")
            say(f"Two hosts, host-a and host-b: two clones of one bare remote, in {root}.")
            say("")
            for step in (story.drive, story.defer, story.idle_hour, story.change, story.throttle, story.probe):
                step()
            say(f"In all, GitHub counted {gh.counted(_Story.POOL, 'core')} REST calls and "
                f"{gh.counted(_Story.POOL, 'graphql')} GraphQL points for {len(gh.ledger)} calls made.")
            if keep:
                say(f"The directory stays: cd {story.host_a} && git for-each-ref refs/sluice && "
                    "git log -1 refs/sluice/intake/main")
                say(f"  (git sluice status / queue there read the demo's own state: prefix them with "
                    f"HOME={root / 'home'} XDG_STATE_HOME={root / 'home' / 'state'})")
    finally:
        _restore(saved)
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return DemoResult(root, figures)
