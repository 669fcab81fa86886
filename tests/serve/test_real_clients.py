"""The real clients against ``serve`` on the double (issue 30): Debian's ``gh`` on the Unix socket, npm's
octokit with its throttling plugin and PyPI's PyGithub on the loopback port.

What reached "GitHub" is read from the double's ledger (``gh.ledger[mark:]``).
The clients are real processes (or, for PyGithub, the real library); the time
is the test's: serve and the double share a FakeClock, and no test waits out
a real interval (a client's retry handler records and declines). A client
that is not installed fails its tests, saying how ``tests/clients/install`` installs it.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from git_sluice.double import Call
from git_sluice.forge.flight import SingleFlight
from tests.clients.gh import Gh
from tests.clients.host import fill_write_pace, hold_pause
from tests.clients.octokit import octokit, pulls
from tests.serve.conftest import TOKEN, Served

OPEN = 35
"""Open pull requests the listing tests seed: more than one page of 30 (GitHub's and PyGithub's default)."""


def seed(served: Served, count: int = OPEN) -> None:
    for i in range(1, count + 1):
        served.github.gh.open_pr("o/r", head_ref=f"topic-{i}", base="main", title=f"Topic {i}")


def listing(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.path.split("?")[0] == "/repos/o/r/pulls"]


def relayed(calls: list[Call]) -> list[Call]:
    """The calls the client made, without serve's ``GET /user`` that learns a new token's pool (once a token)."""
    return [c for c in calls if c.path != "/user"]


@pytest.fixture
def gh(served: Served, short_dir: Path) -> Gh:
    return Gh(served.socket, short_dir / "gh", TOKEN)


# --------------------------------------------------------------------------------------------- gh


def test_gh_api_twice_reaches_github_once_and_then_as_a_304(served: Served, gh: Gh) -> None:
    seed(served, 3)
    double = served.github.gh
    mark = double.mark()
    first = gh.run("api", "repos/o/r/pulls")
    second = gh.run("api", "repos/o/r/pulls")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert json.loads(first.stdout) == json.loads(second.stdout)
    assert [p["title"] for p in json.loads(second.stdout)] == ["Topic 3", "Topic 2", "Topic 1"]
    calls = listing(double.ledger[mark:])
    assert [(c.status, c.counted) for c in calls] == [(200, True), (304, False)]


def test_ten_gh_at_once_make_one_call(served: Served, gh: Gh, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten identical ``gh api`` started together: one call reaches the double, nine share its answer.

    The double holds the first call (a ``hang`` fault, real time) until all ten
    are in the forge's single flight; the single flight shares an answer with
    the callers that waited for it. Without the hold, gh's start-up spreads
    ten processes over more time than the double takes to answer, and each
    later call is its own conditional GET (a 304, free, but a call).
    """
    seed(served, 3)
    double = served.github.gh
    waiting = _count_flight_waiters(monkeypatch)
    double.fault("hang", path=r"pulls\?state=open", seconds=60)
    mark = double.mark()
    procs = [gh.start("api", "repos/o/r/pulls?state=open", "--jq", "length") for _ in range(10)]
    try:
        _until(lambda: waiting() >= 10, "ten gh calls waiting in serve's single flight")
    finally:
        double.clear_faults()  # the held call answers; the nine waiting share it
        outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 10, [err for _, err in outs]
    assert [out.strip() for out, _ in outs] == ["3"] * 10
    calls = listing(double.ledger[mark:])
    assert [(c.status, c.counted) for c in calls] == [(200, True)]


def test_gh_api_paginate_follows_serves_link_with_the_token(served: Served, short_dir: Path) -> None:
    """gh's ``--paginate`` asks ``per_page=100`` unless told; told 30, it follows the ``Link`` serve hands
    back, which names ``api.github.com`` as gh addressed it (not the double's address), so gh's token goes
    with every page (bob's here: a page without it would go with the host's, alice's). A second run is
    two 304s."""
    seed(served)
    double = served.github.gh
    double.add_user("bob")
    double.add_token("tok-bob", "bob")
    gh = Gh(served.socket, short_dir / "gh-bob", "tok-bob")
    mark = double.mark()
    runs = [gh.run("api", "--paginate", "repos/o/r/pulls?per_page=30", "--jq", ".[].number") for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    for run in runs:
        assert [int(n) for n in run.stdout.split()] == list(range(OPEN, 0, -1))
    calls = listing(double.ledger[mark:])
    assert [c.path for c in calls] == ["/repos/o/r/pulls?per_page=30", "/repos/o/r/pulls?per_page=30&page=2"] * 2
    assert [(c.status, c.counted) for c in calls] == [(200, True)] * 2 + [(304, False)] * 2
    assert {c.pool for c in double.ledger[mark:]} == {"user:bob"}  # /user too: serve learns bob's pool


def test_gh_api_paginate_by_default_asks_100_a_page(served: Served, gh: Gh) -> None:
    seed(served)
    double = served.github.gh
    mark = double.mark()
    done = gh.run("api", "--paginate", "repos/o/r/pulls", "--jq", "length")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(OPEN)]
    assert [c.path for c in listing(double.ledger[mark:])] == ["/repos/o/r/pulls?per_page=100"]


def test_gh_api_jq(served: Served, gh: Gh) -> None:
    seed(served, 2)
    done = gh.run("api", "repos/o/r/pulls", "--jq", ".[] | [.number, .title, .head.ref] | @tsv")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["2\tTopic 2\ttopic-2", "1\tTopic 1\ttopic-1"]


def test_gh_pr_list_is_one_graphql_query_and_kept_within_the_window(served: Served, gh: Gh) -> None:
    """``gh pr list`` is one GraphQL query (``POST /graphql``, operation PullRequestList); the double
    answers every field gh 2.23 asks for. Again within ``sluice.graphqlWindow``: nothing reaches GitHub."""
    seed(served, 3)
    double = served.github.gh
    mark = double.mark()
    runs = [gh.run("pr", "list", "-R", "o/r") for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    for run in runs:
        rows = [line.split("\t") for line in run.stdout.splitlines()]
        assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
            (str(n), f"Topic {n}", f"topic-{n}", "OPEN") for n in (3, 2, 1)]
    calls = relayed(double.ledger[mark:])
    assert [(c.method, c.path, c.resource, c.status) for c in calls] == [("POST", "/graphql", "graphql", 200)]


def test_gh_during_a_pause_reaches_nothing_and_prints_the_refusal(served: Served, gh: Gh) -> None:
    seed(served, 1)
    assert gh.run("api", "repos/o/r").returncode == 0  # the token's pool is known before the pause
    hold_pause(served, 600)
    double = served.github.gh
    mark = double.mark()
    done = gh.run("api", "repos/o/r/pulls")
    assert double.ledger[mark:] == []
    assert done.returncode != 0
    assert "API rate limit exceeded" in done.stderr and "(HTTP 403)" in done.stderr, done.stderr
    assert "git-sluice answered in GitHub's place" in done.stderr + done.stdout


# ----------------------------------------------------------------------------------------- octokit


def test_octokit_repeated_get_is_a_304_at_github(served: Served) -> None:
    seed(served, 3)
    double = served.github.gh
    mark = double.mark()
    out = octokit(f"http://127.0.0.1:{served.port}", TOKEN, [pulls(), pulls()])
    assert [(r["ok"], r["status"], r["length"]) for r in out["results"]] == [(True, 200, 3)] * 2
    assert [(c.status, c.counted) for c in listing(double.ledger[mark:])] == [(200, True), (304, False)]
    assert out["handled"] == []


def test_octokit_paginate_follows_serves_link_not_githubs(served: Served) -> None:
    """octokit follows the ``Link`` as it is: serve names itself there (the port), so page 2 comes back
    through serve (a 304 the second time) rather than going to GitHub straight, past the sluice."""
    seed(served)
    double = served.github.gh
    mark = double.mark()
    out = octokit(f"http://127.0.0.1:{served.port}", TOKEN, [pulls(paginate=True, per_page=30)] * 2)
    assert [(r["ok"], r["length"]) for r in out["results"]] == [(True, OPEN)] * 2
    calls = listing(double.ledger[mark:])
    assert [(c.path, c.status) for c in calls] == [
        ("/repos/o/r/pulls?per_page=30", 200), ("/repos/o/r/pulls?per_page=30&page=2", 200),
        ("/repos/o/r/pulls?per_page=30", 304), ("/repos/o/r/pulls?per_page=30&page=2", 304)]


def test_octokit_during_a_pause_reaches_nothing_and_its_plugin_hears_the_wait(served: Served) -> None:
    """The throttling plugin reads serve's 403 as a spent limit (``x-ratelimit-remaining: 0``) and calls
    ``onRateLimit`` with ``x-ratelimit-reset`` minus its clock plus one second (the plugin's own margin):
    serve's ``retry-after`` + 1 on the test's clock."""
    base = f"http://127.0.0.1:{served.port}"
    octokit(base, TOKEN, [pulls()])  # the token's pool is known before the pause
    hold_pause(served, 600)
    double = served.github.gh
    mark = double.mark()
    out = octokit(base, TOKEN, [pulls()], now=served.github.clock.time())
    assert double.ledger[mark:] == []
    [result] = out["results"]
    assert not result["ok"] and result["status"] == 403
    assert result["headers"]["x-ratelimit-remaining"] == "0" and result["headers"]["retry-after"] == "600"
    assert [(h["event"], h["retryAfter"], h["method"], h["url"]) for h in out["handled"]] == [
        ("onRateLimit", int(result["headers"]["retry-after"]) + 1, "GET", "/repos/{owner}/{repo}/pulls")]


def test_octokit_deferred_write_calls_on_secondary_rate_limit(served: Served) -> None:
    base = f"http://127.0.0.1:{served.port}"
    octokit(base, TOKEN, [pulls()])  # the token's pool is known
    fill_write_pace(served)
    double = served.github.gh
    mark = double.mark()
    write = {"route": "POST /repos/{owner}/{repo}/issues", "params": {"owner": "o", "repo": "r", "title": "t"}}
    out = octokit(base, TOKEN, [write], now=served.github.clock.time())
    assert double.ledger[mark:] == []
    [result] = out["results"]
    assert not result["ok"] and result["status"] == 403 and "secondary rate limit" in result["message"]
    wait = int(result["headers"]["retry-after"])
    assert wait > served.session.settings.write_patience
    assert [(h["event"], h["retryAfter"], h["method"]) for h in out["handled"]] == [
        ("onSecondaryRateLimit", wait, "POST")]


# ---------------------------------------------------------------------------------------- PyGithub


def pygithub(served: Served) -> Any:
    """PyGithub on serve's port. ``retry=None``: PyGithub's default retry sleeps a 403's ``Retry-After``
    in real time (and asks again, up to 10 times); the test's clock is fake and must not wait."""
    try:
        import github
    except ImportError:
        pytest.fail("PyGithub is not installed: the README's test command installs it with the test extra "
                    "(pip install '.[test]', pyproject.toml)", pytrace=False)
    return github.Github(auth=github.Auth.Token(TOKEN), base_url=f"http://127.0.0.1:{served.port}", retry=None)


def test_pygithub_repeated_listing_is_304s_at_github(served: Served) -> None:
    """Two pages (30 a page, PyGithub's default); the second listing is all 304s. Page 2 and the
    repository's ``url`` name serve's port: PyGithub refuses an address off its base URL's port."""
    seed(served)
    client = pygithub(served)
    double = served.github.gh
    mark = double.mark()
    first = [p.number for p in client.get_repo("o/r").get_pulls()]
    again = double.mark()
    second = [p.number for p in client.get_repo("o/r").get_pulls()]
    assert first == second == list(range(OPEN, 0, -1))
    assert [(c.path, c.status) for c in relayed(double.ledger[mark:again])] == [
        ("/repos/o/r", 200), ("/repos/o/r/pulls", 200), ("/repos/o/r/pulls?page=2", 200)]
    assert [(c.path, c.status, c.counted) for c in double.ledger[again:]] == [
        ("/repos/o/r", 304, False), ("/repos/o/r/pulls", 304, False), ("/repos/o/r/pulls?page=2", 304, False)]


def test_pygithub_during_a_pause_reaches_nothing_and_raises_rate_limit_exceeded(served: Served) -> None:
    client = pygithub(served)
    import github

    client.get_repo("o/r")  # the token's pool is known before the pause
    hold_pause(served, 600)
    double = served.github.gh
    mark = double.mark()
    with pytest.raises(github.RateLimitExceededException) as raised:
        client.get_repo("o/r").get_pulls().get_page(0)
    assert double.ledger[mark:] == []
    assert raised.value.status == 403 and raised.value.headers is not None
    assert raised.value.headers["retry-after"] == "600"


# ------------------------------------------------------------------------------------------ helpers


def _count_flight_waiters(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Instrumentation: how many calls have entered the single flight's wait for an address (each has
    read the lock's mark by then, so an answer given after this counts as one it waited for)."""
    entered = [0]
    lock = threading.Lock()
    take = SingleFlight._take

    def counting(self: SingleFlight, *args: Any, **kwargs: Any) -> bool:
        with lock:
            entered[0] += 1
        return take(self, *args, **kwargs)

    monkeypatch.setattr(SingleFlight, "_take", counting)
    return lambda: entered[0]


def _until(condition: Any, what: str, timeout: float = 60.0) -> None:
    """Poll (real time: processes starting) until ``condition()``; fail naming ``what``."""
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)
