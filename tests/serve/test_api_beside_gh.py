"""``git sluice api`` and the real ``gh api`` (Debian's gh 2.23), side by side on one GitHub double (issue 31).

The same arguments go to both: gh through ``serve``'s socket (which relays to
the double unchanged), ``git sluice api`` straight to the double. Each case
compares what reached the double (method, path, query, JSON body), the exit
code, the output (as JSON documents where it is JSON) and the message on
stderr (gh's ``gh: `` against git-sluice's ``git sluice: ``). This is the
proof that a flag the two share means the same: not a reading of gh's manual
but gh itself.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from git_sluice.double.pipeline import Request
from tests.cliworld import SLUICE
from tests.clients.gh import Gh
from tests.serve.conftest import TOKEN, Served

QUERY_PAGES = """query($endCursor: String) {
  repository(owner: "o", name: "r") {
    pullRequests(first: 2, after: $endCursor, states: OPEN) { nodes { number } pageInfo { hasNextPage endCursor } }
  }
}"""


@pytest.fixture
def gh(served: Served, short_dir: Path) -> Gh:
    for i in range(1, 6):
        served.github.gh.open_pr("o/r", head_ref=f"topic-{i}", base="main", title=f"Topic {i}")
    return Gh(served.socket, short_dir / "gh", TOKEN)


def documents(text: str) -> list[Any] | str:
    """The JSON documents of an output, one after another; the text itself when it is not JSON."""
    decoder, rest, found = json.JSONDecoder(), text.strip(), []
    try:
        while rest:
            value, end = decoder.raw_decode(rest)
            found.append(value)
            rest = rest[end:].strip()
    except ValueError:
        return text
    return found


def shape(request: Request) -> tuple[str, str, dict[str, list[str]], Any]:
    try:
        body = json.loads(request.body) if request.body else None
    except ValueError:
        body = request.body
    return request.method, request.path, parse_qs(request.query), body


def run_both(served: Served, gh: Gh, tmp_path: Path, *args: str) -> tuple[Any, Any]:
    """(gh's, git-sluice's) (exit code, output documents, message, requests that reached the double)."""
    double = served.github.gh
    outcome = []
    env = {**os.environ, "GH_TOKEN": TOKEN, "XDG_STATE_HOME": str(tmp_path / "sluice-state")}
    for runner in (lambda: gh.run("api", *args),
                   lambda: subprocess.run([SLUICE, "api", *args], cwd=served.clone, env=env, capture_output=True,
                                          text=True, timeout=120, stdin=subprocess.DEVNULL)):
        before = len(double.received())
        done = runner()
        reached = [shape(r) for r in double.received()[before:] if r.path != "/user"]
        message = done.stderr.strip().removeprefix("gh: ").removeprefix("git sluice: ")
        # serve names itself api.github.com in the URLs of what it relays, as gh addressed it
        text = done.stdout.replace("http://api.github.com", served.github.url.rstrip("/"))
        outcome.append((done.returncode, documents(text), message, reached))
    return outcome[0], outcome[1]


CASES = {
    "a GET": ("repos/o/r/pulls/1", "--jq", ".title"),
    "fields make a POST": ("repos/o/r/issues/1/comments", "-f", "body=42", "--jq", ".body"),
    "-X GET sends the fields as the query": ("-X", "GET", "repos/o/r/pulls", "-f", "state=open", "-F", "per_page=2",
                                             "--jq", ".[].number"),
    "typed and nested fields": ("-X", "PATCH", "repos/o/r/pulls/1", "-F", "draft=true", "-F", "n=-7", "-F", "m=null",
                                "-F", "r=1.5", "-f", "labels[]=a", "-f", "labels[]=b", "-f", "head[ref]=x"),
    "paginate REST into one array": ("--paginate", "repos/o/r/pulls?per_page=2"),
    "paginate with 100 a page": ("--paginate", "repos/o/r/pulls", "--jq", ".[].title"),
    "paginate with jq per page": ("--paginate", "repos/o/r/pulls?per_page=2", "--jq", "length"),
    "paginate GraphQL": ("graphql", "--paginate", "-f", f"query={QUERY_PAGES}"),
    "graphql variables": ("graphql", "-f", "query=query($n: Int!) { repository(owner: \"o\", name: \"r\") "
                          "{ pullRequest(number: $n) { title } } }", "-F", "n=2"),
    "a header": ("repos/o/r/pulls/2", "-H", "Accept: application/vnd.github.v3+json", "--jq", ".number"),
    "silent": ("--silent", "repos/o/r"),
    "jq's scalars": ("repos/o/r/pulls/1", "--jq", ".title, .number, .draft, .merged_at, {n: .number, a: .title}"),
    "a 404": ("repos/o/missing",),
    "a GraphQL refusal": ("graphql", "-f", "query={ nope }"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_git_sluice_api_does_what_gh_api_does(served: Served, gh: Gh, tmp_path: Path, case: str) -> None:
    theirs, ours = run_both(served, gh, tmp_path, *CASES[case])
    assert ours[0] == theirs[0], (case, theirs, ours)  # exit code
    assert ours[3] == theirs[3], (case, theirs[3], ours[3])  # what reached GitHub
    assert ours[1] == theirs[1], (case, theirs[1], ours[1])  # the output
    assert ours[2] == theirs[2], (case, theirs[2], ours[2])  # the message


def test_input_sends_the_same_body(served: Served, gh: Gh, tmp_path: Path) -> None:
    payload = tmp_path / "comment.json"
    payload.write_text('{"body": "from a file"}')
    theirs, ours = run_both(served, gh, tmp_path, "repos/o/r/issues/2/comments", "--input", str(payload),
                            "--jq", ".body")
    assert ours[0] == theirs[0] == 0, (theirs, ours)
    assert [r[:3] for r in ours[3]] == [r[:3] for r in theirs[3]] and ours[1] == theirs[1]
