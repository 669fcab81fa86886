"""``git sluice api`` beside ``gh api`` (issue 31): every flag the two share means what it means in gh.

The console script runs against the GitHub double; what reached "GitHub" —
method, path and query, headers, body, how many calls — is read from the
double (``received()`` for what was sent, the ledger for what was answered).
gh's rules are those of ``gh api --help`` (gh 2.23 on this machine) and its
source: fields make a POST unless ``-X`` says otherwise, ``-F`` types its
values, ``--paginate`` asks ``per_page=100`` and follows ``Link: rel="next"``
(REST) or ``pageInfo`` with ``$endCursor`` (GraphQL), ``--jq`` prints text
unquoted, an error's message goes to stderr and its body to stdout.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from git_sluice.double.pipeline import Request
from tests.cliworld import CliHost, CliWorld, cli_world

PRS = 5


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    with cli_world(tmp_path_factory.mktemp("apiflags")) as world:
        for i in range(1, PRS + 1):
            world.gh.open_pr("o/r", head_ref=f"topic-{i}", title=f"Topic {i}")
        yield world


@pytest.fixture(scope="module")
def host(world: CliWorld) -> CliHost:
    return world.host("host-a")


def sent(world: CliWorld, run: subprocess.CompletedProcess[str], before: int) -> list[Request]:
    """What reached the double during ``run`` (GET /user, which learns the token's pool once, left out)."""
    assert "Traceback" not in run.stderr, run.stderr
    return [r for r in world.gh.received()[before:] if r.path != "/user"]


def call(world: CliWorld, host: CliHost, *args: str, stdin: str | None = None) -> tuple[subprocess.CompletedProcess[str], list[Request]]:
    before = len(world.gh.received())
    if stdin is None:
        done = host.run("api", *args)
    else:
        from tests.cliworld import SLUICE

        done = subprocess.run([SLUICE, "api", *args], cwd=host.path, env=host.env, capture_output=True, text=True,
                              input=stdin, timeout=120)
    return done, sent(world, done, before)


def body(request: Request) -> object:
    return json.loads(request.body)


def documents(text: str) -> list[object]:
    """The JSON documents of an output, one after another."""
    decoder, rest, found = json.JSONDecoder(), text.strip(), []
    while rest:
        value, end = decoder.raw_decode(rest)
        found.append(value)
        rest = rest[end:].strip()
    return found


# ------------------------------------------------------------------- fields and methods


def test_raw_fields_make_a_post_with_a_json_body_of_strings(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "repos/{owner}/{repo}/issues/1/comments", "-f", "body=42")
    assert done.returncode == 0, done.stderr
    assert [(r.method, r.path) for r in reached] == [("POST", "/repos/o/r/issues/1/comments")]
    assert body(reached[0]) == {"body": "42"}  # -f: a string, never typed
    assert reached[0].headers["content-type"].startswith("application/json")


def test_method_get_sends_the_fields_as_the_query(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "-X", "GET", "repos/o/r/pulls", "-f", "state=open", "-F", "per_page=2")
    assert done.returncode == 0, done.stderr
    assert [r.method for r in reached] == ["GET"] and reached[0].body == b""
    assert parse_qs(reached[0].query) == {"state": ["open"], "per_page": ["2"]}
    assert len(json.loads(done.stdout)) == 2


def test_typed_fields_convert_as_gh_does(world: CliWorld, host: CliHost, tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("from a file\n")
    done, reached = call(world, host, "-X", "PATCH", "repos/o/r/pulls/1",
                         "-F", "draft=true", "-F", "maintainer_can_modify=false", "-F", "milestone=null",
                         "-F", "n=-7", "-F", "ratio=1.5", "-F", f"body=@{note}", "-F", "title={owner}/{repo} on {branch}",
                         "-f", "labels[]=bug", "-f", "labels[]=ui", "-f", "head[ref]=topic-1", "-f", "empty[]")
    assert done.returncode in (0, 1), done.stderr  # the double has no PATCH of a pull request: what was sent counts
    assert [r.method for r in reached] == ["PATCH"]
    assert body(reached[0]) == {
        "draft": True, "maintainer_can_modify": False, "milestone": None, "n": -7,
        "ratio": "1.5",  # gh types integers only
        "body": "from a file\n", "title": "o/r on main",
        "labels": ["bug", "ui"], "head": {"ref": "topic-1"}, "empty": [],
    }


def test_a_typed_field_reads_standard_input(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "repos/o/r/issues/2/comments", "-F", "body=@-", stdin="piped in")
    assert done.returncode == 0, done.stderr
    assert body(reached[0]) == {"body": "piped in"}


def test_a_field_without_a_value_is_a_usage_error_and_nothing_is_sent(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "repos/o/r/issues/1/comments", "-f", "body")
    assert done.returncode == 2 and "requires a value separated by an '=' sign" in done.stderr, done.stderr
    assert reached == []


# ------------------------------------------------------------------------- headers, input


def test_headers_reach_github_and_are_repeatable(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "repos/o/r", "-H", "Accept: application/vnd.github.v3+json",
                         "-H", "X-GitHub-Api-Version: 2022-11-28")
    assert done.returncode == 0, done.stderr
    assert reached[0].headers["accept"] == "application/vnd.github.v3+json"
    assert reached[0].headers["x-github-api-version"] == "2022-11-28"


def test_a_header_git_sluice_does_not_send_is_refused_not_dropped(world: CliWorld, host: CliHost) -> None:
    for header in ("Authorization: token other", "X-Custom: 1", "no-colon"):
        done, reached = call(world, host, "repos/o/r", "-H", header)
        assert done.returncode == 2, done.stderr
        assert reached == []
    assert "Authorization" in call(world, host, "repos/o/r", "-H", "Authorization: x")[0].stderr


def test_input_sends_the_file_as_the_body_and_the_fields_as_the_query(world: CliWorld, host: CliHost,
                                                                        tmp_path: Path) -> None:
    payload = tmp_path / "comment.json"
    payload.write_bytes(b'{"body": "from --input"}')
    done, reached = call(world, host, "repos/o/r/issues/3/comments", "--input", str(payload), "-f", "extra=1",
                         "-H", "Content-Type: application/json")
    assert done.returncode == 0, done.stderr
    assert [(r.method, r.body) for r in reached] == [("POST", b'{"body": "from --input"}')]
    assert parse_qs(reached[0].query) == {"extra": ["1"]}
    assert world.gh.comments("o/r", 3)[-1].body == "from --input"


def test_input_from_standard_input(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "repos/o/r/issues/4/comments", "--input", "-", stdin='{"body": "stdin body"}')
    assert done.returncode == 0, done.stderr
    assert reached[0].method == "POST" and body(reached[0]) == {"body": "stdin body"}


# ------------------------------------------------------------------------------ pagination


def test_paginate_follows_every_page_and_prints_each(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "--paginate", "repos/o/r/pulls?per_page=2")
    assert done.returncode == 0, done.stderr
    assert len(reached) == 3  # 5 requests, 2 a page
    assert all(r.method == "GET" for r in reached)
    pages = documents(done.stdout)  # one JSON document a page, as gh 2.23 prints them
    assert [len(page) for page in pages] == [2, 2, 1]
    assert sorted(pr["number"] for page in pages for pr in page) == list(range(1, PRS + 1))


def test_paginate_asks_for_100_a_page_unless_told(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "--paginate", "repos/o/r/pulls", "--jq", ".[].number")
    assert done.returncode == 0, done.stderr
    assert len(reached) == 1 and parse_qs(reached[0].query) == {"per_page": ["100"]}
    assert sorted(int(n) for n in done.stdout.split()) == list(range(1, PRS + 1))


def test_paginate_with_jq_filters_each_page(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "--paginate", "repos/o/r/pulls?per_page=2", "--jq", "length")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "2", "1"] and len(reached) == 3


GRAPHQL_PAGES = """query($endCursor: String) {
  repository(owner: "o", name: "r") {
    pullRequests(first: 2, after: $endCursor, states: OPEN) { nodes { number } pageInfo { hasNextPage endCursor } }
  }
}"""


def test_paginate_graphql_passes_the_end_cursor(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "graphql", "--paginate", "-f", f"query={GRAPHQL_PAGES}")
    assert done.returncode == 0, done.stderr
    assert len(reached) == 3 and all(r.method == "POST" and r.path == "/graphql" for r in reached)
    sent_variables = [body(r).get("variables", {}) for r in reached]
    assert "endCursor" not in sent_variables[0]
    assert all(v.get("endCursor") for v in sent_variables[1:])
    numbers = [n["number"] for page in documents(done.stdout)  # one document a page, as gh prints them
               for n in page["data"]["repository"]["pullRequests"]["nodes"]]
    assert sorted(numbers) == list(range(1, PRS + 1))


def test_paginate_refuses_a_write_and_input_before_sending(world: CliWorld, host: CliHost, tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text("{}")
    for args in (("--paginate", "repos/o/r/issues/1/comments", "-f", "body=x"),
                 ("--paginate", "-X", "POST", "repos/o/r/issues/1/comments"),
                 ("--paginate", "--input", str(tmp_path / "b.json"), "repos/o/r/pulls")):
        done, reached = call(world, host, *args)
        assert done.returncode == 2 and "paginate" in done.stderr, done.stderr
        assert reached == []


# ---------------------------------------------------------------------------------- output


def test_jq_prints_text_unquoted_and_json_compact(world: CliWorld, host: CliHost) -> None:
    done, _ = call(world, host, "repos/o/r/pulls/1", "--jq", ".title, .number, .draft, .merged_at, {n: .number}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Topic 1", "1", "false", "", '{"n":1}']


def test_a_bad_jq_expression_is_a_usage_error_and_nothing_is_sent(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "repos/o/r", "--jq", ".[")
    assert done.returncode == 2 and "--jq" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert reached == []
    done, reached = call(world, host, "repos/o/r", "--jq", ".x", "--silent")
    assert done.returncode == 2 and reached == []


def test_silent_prints_no_body_but_calls(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "--silent", "repos/o/r/issues/1/comments", "-f", "body=quiet")
    assert done.returncode == 0 and done.stdout == "", done.stdout
    assert len(reached) == 1 and reached[0].method == "POST"


def test_include_prints_the_status_line_and_headers_first(world: CliWorld, host: CliHost) -> None:
    done, _ = call(world, host, "-i", "repos/o/r")
    assert done.returncode == 0, done.stderr
    head, _, rest = done.stdout.partition("\n\n")  # gh's CRLF lines, read as text
    lines = head.split("\n")
    assert lines[0].startswith("HTTP/1.1 200 OK"), lines[0]
    assert "Content-Type: application/json; charset=utf-8" in lines and lines[1:] == sorted(lines[1:])
    assert json.loads(rest)["full_name"] == "o/r"


def test_placeholders_fill_the_path_from_the_clone(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "repos/{owner}/{repo}/branches/{branch}", "--jq", ".name")
    assert [r.path for r in reached] == ["/repos/o/r/branches/main"]
    assert "{" not in reached[0].path, done.stderr


def test_graphql_fields_are_the_query_and_its_variables(world: CliWorld, host: CliHost) -> None:
    query = "query($owner: String!, $name: String!, $n: Int!) { repository(owner: $owner, name: $name) { pullRequest(number: $n) { title } } }"
    done, reached = call(world, host, "graphql", "-f", f"query={query}", "-F", "owner={owner}", "-F", "name={repo}",
                         "-F", "n=2", "--jq", ".data.repository.pullRequest.title")
    assert done.returncode == 0, done.stderr
    assert body(reached[0]) == {"query": query, "variables": {"owner": "o", "name": "r", "n": 2}}
    assert done.stdout == "Topic 2\n"


# ---------------------------------------------------------------------------------- errors


def test_an_error_prints_githubs_message_on_stderr_and_the_body_on_stdout(world: CliWorld, host: CliHost) -> None:
    done, reached = call(world, host, "repos/o/missing")
    assert done.returncode == 1 and len(reached) == 1
    assert done.stderr == "git sluice: Not Found (HTTP 404)\n"
    assert json.loads(done.stdout)["message"] == "Not Found"


def test_a_graphql_refusal_prints_its_messages(world: CliWorld, host: CliHost) -> None:
    done, _ = call(world, host, "graphql", "-f", "query={ nope }", "--jq", ".data")
    assert done.returncode == 1
    assert done.stderr.startswith("git sluice: Cannot query field 'nope'"), done.stderr
    assert "errors" in json.loads(done.stdout)  # the body, not the --jq selection, as gh prints it


def test_a_token_github_no_longer_accepts_exits_2_naming_where_it_came_from(world: CliWorld,
                                                                             tmp_path: Path) -> None:
    from git_sluice.double.auth import token_sha

    world.gh.add_token("tok-revoked", user="alice")
    revoked = world.host("host-revoked", token="tok-revoked")
    assert revoked.run("api", "user").returncode == 0  # its pool is learned and remembered
    with world.gh.lock:
        del world.gh.world.grants[token_sha("tok-revoked")]
    done = revoked.run("api", "/user")
    assert done.returncode == 2, done.stderr
    assert "GitHub refused the credentials" in done.stderr and "GH_TOKEN" in done.stderr
    assert json.loads(done.stdout)["message"] == "Bad credentials"
    bad = world.host("host-bad", token="bad")
    done = bad.run("api", "/user")  # never seen before: refused while learning its pool
    assert done.returncode == 2 and "GH_TOKEN" in done.stderr, done.stderr


def test_writes_keep_the_hosts_pace(world: CliWorld, host: CliHost) -> None:
    """Two writes from two processes go at least a second apart (GitHub's pace for writes, forge/writepace.py)."""
    mark = world.gh.mark()
    for text in ("one", "two"):
        assert host.run("api", "repos/o/r/issues/5/comments", "-f", f"body={text}").returncode == 0
    times = [c.time for c in world.gh.writes(since=mark, created=True)]
    assert len(times) == 2 and times[1] - times[0] >= 1.0


# ------------------------------------------------------------------------------------ help


def test_help_has_no_rest_markup_and_typos_suggest_the_real_flags(world: CliWorld, host: CliHost) -> None:
    shown = host.run("api", "--help").stdout
    assert "``" not in shown and "--paginate" in shown and "--jq" in shown
    done = host.run("api", "--paginat", "repos/o/r")
    assert done.returncode == 2 and "'--paginate'" in done.stderr, done.stderr
    assert host.run("api", "--paginate", "--silent", "repos/o/r").returncode == 0  # it was "did you mean --wait?"
