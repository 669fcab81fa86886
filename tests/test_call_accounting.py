"""A command's report says every call it caused, as GitHub's ledger has them (issue 31).

On a fresh host ``git sluice intake --json`` once said "requests 1, counted 0,
points 1" where the double's ledger held six calls: the token's ``GET /user``,
the list, check runs, the status and the query. A tool whose promise is an
honest budget reports them all; these tests hold its words to the ledger.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cliworld import cli_world


def ledger_of(gh, since: int) -> dict[str, int]:  # noqa: ANN001 (the double)
    calls = gh.ledger[since:]
    return {
        "requests": len(calls),
        "counted": sum(c.cost for c in calls if c.counted and c.resource != "graphql"),
        "not_modified": sum(1 for c in calls if c.status == 304),
        "points": sum(c.cost for c in calls if c.counted and c.resource == "graphql"),
    }


def world_with_requests(tmp_path: Path):  # noqa: ANN201
    world_cm = cli_world(tmp_path)
    world = world_cm.__enter__()
    for head in ("a", "b"):
        n = world.gh.open_pr("o/r", head_ref=head)
        world.gh.add_check_run("o/r", world.gh.pr("o/r", n).head_sha, "ci", status="completed", conclusion="success")
    return world_cm, world


def test_intake_json_on_a_fresh_host_accounts_for_every_call_the_ledger_has(tmp_path: Path) -> None:
    world_cm, world = world_with_requests(tmp_path)
    try:
        host = world.host("a")
        for round_ in range(2):  # a fresh host (GET /user, first reads), then a quiet round
            mark = world.gh.mark()
            done = host.run("intake", "--json")
            assert done.returncode == 0, done.stderr
            calls = json.loads(done.stdout)["calls"]
            assert {k: calls[k] for k in ("requests", "counted", "not_modified", "points")} == ledger_of(world.gh, mark)
            assert sum(calls["by_kind"].values()) == calls["requests"]
            if round_ == 0:
                assert calls["by_kind"].get("GET user") == 1  # the token's pool, learned once
                assert calls["requests"] > sum(r["requests"] for r in json.loads(done.stdout)["rounds"])
    finally:
        world_cm.__exit__(None, None, None)


def test_verbose_says_the_commands_calls_last_and_they_match_the_ledger(tmp_path: Path) -> None:
    world_cm, world = world_with_requests(tmp_path)
    try:
        host = world.host("a")
        for args in (("intake", "-v"), ("api", "-v", "repos/o/r/pulls")):
            mark = world.gh.mark()
            done = host.run(*args)
            assert done.returncode == 0, done.stderr
            last = [line for line in done.stderr.splitlines() if "this command:" in line][-1]
            found = re.search(r"(\d+) calls? reached GitHub \((\d+) counted, (\d+) not modified, (\d+) GraphQL point", last)
            assert found, last
            said = dict(zip(("requests", "counted", "not_modified", "points"), map(int, found.groups())))
            assert said == ledger_of(world.gh, mark), (args, last)
    finally:
        world_cm.__exit__(None, None, None)


def test_status_counts_what_github_counted_the_side_calls_included(tmp_path: Path) -> None:
    """``status``'s "counted here last hour" is the host's ledger: the token's GET /user is in it."""
    world_cm, world = world_with_requests(tmp_path)
    try:
        host = world.host("a")
        mark = world.gh.mark()
        done = host.run("intake")
        assert done.returncode == 0, done.stderr
        assert "all told, " in done.stdout and "GET user 1" in done.stdout  # the text says what rounds leave out
        status = host.run("status")
        counted = {m.group(1): int(m.group(2)) for m in
                   re.finditer(r"pool \w+ (\w+) .*counted here last hour: (\d+)", status.stdout)}
        calls = world.gh.ledger[mark:]
        assert counted.get("core") == sum(c.cost for c in calls if c.counted and c.resource == "core"), status.stdout
        assert counted.get("graphql") == sum(c.cost for c in calls if c.counted and c.resource == "graphql")
    finally:
        world_cm.__exit__(None, None, None)
