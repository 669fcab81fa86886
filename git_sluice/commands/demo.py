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
from .step import intake_for, run_rounds
from .watching import tick_watch
from .roles import drive
from .session import Session, fetch_and_adopt, open_session

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


def run_demo(*, keep: bool = False, say: Say = print) -> DemoResult:
    """Run the story; returns where it ran and the figures it printed."""
    root = Path(tempfile.mkdtemp(prefix="git-sluice-demo-"))
    saved = _isolate(root)
    figures: dict[str, int] = {}
    try:
        clock = FakeClock(time.time() - STORY_SPAN)
        gh = GitHubDouble(clock=clock)
        _populate(gh)
        pool = "user:demo-bot"
        with serve(gh) as server, ExitStack() as stack:
            host_a, host_b = _make_hosts(root, server.url)

            def session_for(path: Path, name: str) -> Session:
                # host-a keeps its state where git sluice status looks (the demo's own XDG_STATE_HOME);
                # host-b, another machine in the story, keeps its own beside it
                store = HostStore(None if name == "host-a" else root / "home" / f"{name}.sqlite3", clock=clock)
                stack.callback(store.close)
                return stack.enter_context(open_session(path, clock=clock, store=store))

            a = session_for(host_a, "host-a")
            b = session_for(host_b, "host-b")
            say(f"GitHub double on {server.url}; repository {REPO} with 5 open pull requests (one a draft).")
            say(f"Two hosts, host-a and host-b: two clones of one bare remote, in {root}.")
            say("")

            # 1. host-a drives: takes the lease and takes the branch in
            mark = gh.mark()
            drive(a, max_ticks=1, let_go=False, say=lambda text: say(f"  host-a: {text}"))
            figures["first_round_list"] = len(gh.calls(since=mark, path=r"/pulls\?"))
            figures["first_round_checks"] = len(gh.calls(since=mark, path=r"/commits/"))
            figures["first_round_points"] = gh.counted(pool, "graphql", since=mark)
            say(f"1. host-a drives: it holds refs/sluice/intake/main and took main in with "
                f"{figures['first_round_list']} list call (the host watch's: one discovery for every clone on the "
                f"host) and {figures['first_round_points']} GraphQL point (one query for all of them), plus "
                f"{figures['first_round_checks']} calls of the watch for the baseline of checks that may still "
                f"change (#2's are failing: a re-run moves no updated_at); GET /user, once per token, named the pool.")
            for entry in sorted(QueueStore(host_a / ".git" / "sluice").load("main").entries.values(),
                                key=lambda e: e.number):
                say(f"     #{entry.number} {entry.state:<8} {entry.title}")
            say("")

            # 2. host-b's round defers to the holder
            mark = gh.mark()
            (report,) = run_rounds(b)
            figures["host_b_calls"] = gh.requests(since=mark)
            say(f"2. host-b runs a round (as its hooks would): {report.why}. "
                f"Calls to GitHub: {figures['host_b_calls']}.")
            say("")

            # 3. an idle hour on host-a: every discovery answered 304
            mark = gh.mark()
            rounds = 0
            for _ in range(60):
                clock.advance(a.settings.discovery)
                fetch_and_adopt(a)
                intake, keeper = intake_for(a, role="driver")
                keeper.ensure(["main"], fetch=False)  # the driver renews as it goes (no GitHub call)
                tick_watch(a, ["main"])
                intake.round("main")
                rounds += 1
            figures["idle_rounds"] = rounds
            figures["idle_requests"] = gh.requests(since=mark)
            figures["idle_list_calls"] = len(gh.calls(since=mark, path=r"/pulls\?"))
            figures["idle_counted"] = gh.counted(since=mark)
            say(f"3. An idle hour: host-a ran {rounds} discovery rounds; {figures['idle_requests']} conditional "
                f"calls reached GitHub (the host watch's list each minute, and #2's failing checks less and less "
                f"often, up to every 15 min) and it counted {figures['idle_counted']} of them (every answer a 304).")
            say("")

            # 4. something moves: one list page and one query
            gh.review(REPO, 4, "carol", "APPROVED")
            clock.advance(a.settings.discovery)
            mark = gh.mark()
            intake, keeper = intake_for(a, role="driver")
            keeper.ensure(["main"])
            tick_watch(a, ["main"])
            report = intake.round("main")
            figures["change_rest"] = gh.counted(pool, "core", since=mark)
            figures["change_points"] = gh.counted(pool, "graphql", since=mark)
            say(f"4. carol approves #4: the next round spent {figures['change_rest']} REST call (the list page that "
                f"changed) and one GraphQL query ({figures['change_points']} point); read {report.read}.")
            say("")

            # 5. a throttle on host-a pauses host-a, then host-b through the pause note
            gh.fault("secondary", path="pulls", times=1, retry_after=300)
            clock.advance(a.settings.discovery)
            keeper.ensure(["main"])
            tick_watch(a, ["main"])  # the watch's list meets the throttle; the round then finds the host paused
            try:
                intake.round("main")
            except AllowanceSpent as exc:
                until = exc.until
                say(f"5. GitHub throttles host-a (secondary limit, retry-after 300 s): host-a pauses until "
                    f"{local_time(until)} and publishes a pause note:")
            for line in _git(host_a, "for-each-ref", "--format=%(refname)", "refs/sluice").splitlines():
                say(f"     {line}")
            fetch_and_adopt(b)
            mark = gh.mark()
            try:
                b.forge.get(f"repos/{REPO}/pulls")
            except AllowanceSpent as exc:
                say(f"   host-b fetched the note and refuses its own call: {exc}")
            figures["host_b_paused_calls"] = gh.requests(since=mark)
            say(f"   Calls that host-b sent while paused: {figures['host_b_paused_calls']}.")
            say("")

            # 6. at until: one probe across both hosts (claimed on the note), then calls flow again
            clock.set(until + 1)
            mark = gh.mark()
            # the probe stays on the wire until host-b has tried (clearing the fault lets it go)
            gh.fault("hang", path=f"/repos/{REPO}$", times=1, seconds=60.0)
            probe = threading.Thread(target=lambda: a.forge.get(f"repos/{REPO}"))
            probe.start()
            deadline = time.monotonic() + 10
            while not any(gh.secondary.in_flight.values()) and time.monotonic() < deadline:  # probe on the wire
                time.sleep(0.01)
            try:
                b.forge.get(f"repos/{REPO}")
                b_said = "host-b called too"
            except AllowanceSpent:
                b_said = "host-b saw host-a's claim on the note and held its call"
            gh.clear_faults()
            probe.join()
            figures["probes"] = gh.requests(since=mark)
            say(f"6. At the pause's end host-a claims the one probe on the note and sends it; {b_said}. "
                f"Calls that reached GitHub: {figures['probes']}. The probe succeeded, so the note is gone:")
            fetch_and_adopt(b)
            refs = _git(host_b, "for-each-ref", "--format=%(refname)", "refs/sluice").splitlines()
            for line in refs:
                say(f"     {line}")
            say("")
            say(f"In all, GitHub counted {gh.counted(pool, 'core')} REST calls and "
                f"{gh.counted(pool, 'graphql')} GraphQL points for {len(gh.ledger)} calls made.")
            if keep:
                say(f"The directory stays: cd {host_a} && git for-each-ref refs/sluice && git log -1 refs/sluice/intake/main")
                say(f"  (git sluice status / queue there read the demo's own state: prefix them with "
                    f"HOME={root / 'home'} XDG_STATE_HOME={root / 'home' / 'state'})")
    finally:
        _restore(saved)
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return DemoResult(root, figures)
