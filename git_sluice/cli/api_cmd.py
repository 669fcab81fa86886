"""``git sluice api``: GitHub through git-sluice, for any tool, with ``gh api``'s flags.

A tool that calls ``git sluice api`` instead of GitHub spends nothing on an
unchanged answer (conditional GETs shared by every process of the clone),
makes no call while the allowance is spent (exit 3, naming when it ends), and
shows up in the same budget ledger as everything else. A flag that ``gh api``
also has means what it means there (issue 31), so a script moves from one to
the other by its first word.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import CredentialsRefused, SluiceError, UsageError
from ._common import DURATION, handles_errors, setup_logging
from ._group import main

if TYPE_CHECKING:
    from ..forge.client import Answer
    from ..runtime.session import Session

METHODS = ["GET", "HEAD", "POST", "PATCH", "PUT", "DELETE"]


@main.command("api")
@click.argument("path")
@click.option("-X", "--method", default=None, metavar="METHOD", type=click.Choice(METHODS, case_sensitive=False),
              help="The HTTP method (default GET, or POST once a field or --input is given).")
@click.option("-f", "--raw-field", "raw_fields", multiple=True, metavar="KEY=VALUE",
              help="Add a string parameter (a GET's query, else the JSON body; for graphql, query= is the "
              "document and the others are variables). key[sub]=value and key[]=value nest.")
@click.option("-F", "--field", "--typed-field", "typed_fields", multiple=True, metavar="KEY=VALUE",
              help="Add a typed parameter: true, false, null and integers become JSON; @FILE is the file's text "
              "(@- standard input); {owner}, {repo} and {branch} are filled.")
@click.option("-H", "--header", "headers", multiple=True, metavar="NAME:VALUE",
              help="Add a request header (Accept, X-GitHub-Api-Version or Content-Type).")
@click.option("--input", "input_file", metavar="FILE", default=None,
              help="The request body from FILE (- for standard input); fields then go in the query string.")
@click.option("--paginate", is_flag=True,
              help="Ask for every page: Link rel=next (REST), or pageInfo with $endCursor (graphql); one document a page.")
@click.option("-q", "--jq", "jq_filter", metavar="EXPR", default=None,
              help="Print what this jq expression selects from the answer (text unquoted).")
@click.option("--silent", is_flag=True, help="Do not print the answer's body.")
@click.option("--wait", is_flag=True, help="Wait out a spent allowance instead of exiting 3.")
@click.option("--timeout", type=DURATION, default=None,
              help="Give up after this long: exit 4 if GitHub has not answered; with --wait, a pause that "
              "outlasts it exits 3 at once.")
@click.option("-i", "--include", is_flag=True, help="Print the status line and the answer's headers first.")
@click.option("-v", "--verbose", is_flag=True, help="Say what git-sluice decided (to stderr).")
@handles_errors
def api_command(path: str, method: str | None, raw_fields: tuple[str, ...], typed_fields: tuple[str, ...],
                headers: tuple[str, ...], input_file: str | None, paginate: bool, jq_filter: str | None,
                silent: bool, wait: bool, timeout: float | None, include: bool, verbose: bool) -> None:
    """Call GitHub's API through git-sluice and print the answer, as gh api does.

    PATH is a REST path (repos/{owner}/{repo}/pulls) or graphql. GETs are
    conditional and answered from the kept answer when GitHub says nothing
    changed (free); writes keep the host's pace. Exit codes: 0 success; 1
    GitHub answered an error (its message on stderr, the body on stdout) or
    was unavailable; 2 usage or configuration, or GitHub refused the
    credentials; 3 allowance spent (nothing was sent; the message names when
    it ends); 4 --timeout ran out; 130 stopped while waiting.
    """
    from ..commands import api as calls
    from ..countdown import Countdown
    from ..runtime.session import open_session
    from ..runtime.stopper import Stopper

    setup_logging(verbose)
    graphql = calls.is_graphql(path)
    sent_headers = _checked(raw_fields, typed_fields, headers, input_file, paginate, jq_filter, silent, graphql)
    program = _jq_program(jq_filter)
    stopper = Stopper()  # SIGINT / SIGTERM end a wait within a second (exit 130), never a traceback
    stopper.install()
    printer = Printer(include=include, silent=silent, jq=program)
    with Countdown() as countdown, open_session(need_branches=False, on_wait=countdown, cancel=stopper.event) as session:
        values = _placeholders(session)
        params = calls.build_params(raw_fields, typed_fields, _read_file, lambda text: calls.fill_placeholders(text, values))
        endpoint = calls.fill_placeholders(path, values)
        verb = calls.method_for(method, params, input_file is not None)
        if graphql and "query" not in params and input_file is None:
            raise UsageError("graphql needs -f query='…' (or the whole body with --input)")
        if paginate and not graphql and verb != "GET":
            raise UsageError(f"--paginate follows the pages of a GET, not a {verb}: give -X GET to send the fields "
                             "as the query")
        if paginate and not graphql:
            endpoint = calls.with_per_page(endpoint, params)
        content = _read_input(input_file)
        deadline = session.clock.time() + timeout if timeout is not None else None
        last: Answer | None = None
        for last in pages(session, endpoint, graphql=graphql, method=verb, params=params, headers=sent_headers,
                          content=content, wait=wait, deadline=deadline, paginate=paginate):
            printer.page(last, path)
    if last is not None:
        _end(last, path)


def _checked(raw: Sequence[str], typed: Sequence[str], headers: Sequence[str], input_file: str | None,
             paginate: bool, jq_filter: str | None, silent: bool, graphql: bool) -> dict[str, str]:
    """The flags' combinations gh refuses, refused before anything is read or sent (exit 2); the headers to send."""
    from ..commands import api as calls

    if paginate and input_file is not None:
        raise UsageError("--paginate cannot be used with --input")
    if silent and jq_filter is not None:
        raise UsageError("only one of --jq or --silent may be used")
    for text in (*raw, *typed):
        calls.field_pair(text)  # its syntax, before a token is looked for
    return calls.header_pairs(headers)


def _jq_program(expr: str | None) -> Any:
    """The compiled ``--jq`` expression (the ``jq`` package: jq's own C library), or None; a typo is exit 2, unsent."""
    if expr is None:
        return None
    import jq

    try:
        return jq.compile(expr)
    except ValueError as exc:
        raise UsageError(f"--jq {expr!r}: {exc}") from None


def _placeholders(session: Session) -> Any:
    """``{owner}``, ``{repo}`` (sluice.repository, or the remote's URL) and ``{branch}`` (the current branch)."""

    def value(name: str) -> str:
        owner, repo = session.owner_name
        if name == "owner":
            return owner
        if name == "repo":
            return repo
        from ..gitcli import run

        where = session.repo.workdir or session.repo.git_dir
        done = run(["symbolic-ref", "--short", "-q", "HEAD"], cwd=where)
        if done.returncode != 0 or not done.stdout.strip():
            raise UsageError("{branch}: HEAD is detached here, so there is no current branch to fill it with")
        return done.stdout.strip()

    return value


def _read_file(name: str) -> str:
    """A ``-F key=@FILE`` value: the file's text (``-``: standard input)."""
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"-F …=@{name}: cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from None


def _read_input(name: str | None) -> bytes | None:
    """The ``--input`` body, as bytes (``-``: standard input)."""
    if name is None:
        return None
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as exc:
        raise UsageError(f"--input {name}: cannot read it: {exc.strerror or exc}") from None


def pages(session: Session, endpoint: str, *, graphql: bool, method: str, params: dict[str, Any],
          headers: dict[str, str], content: bytes | None, wait: bool, deadline: float | None,
          paginate: bool) -> Iterator[Answer]:
    """Each answer in turn: one, or with ``--paginate`` every page until GitHub says there is no next (or fails)."""
    from ..commands import api as calls

    fields = dict(params)
    while True:
        answer = calls.call_github(session, endpoint, method=method, fields=fields, wait=wait, deadline=deadline,
                                   headers=headers or None, content=content)
        yield answer
        if not paginate or calls.failed(answer, endpoint):
            return
        if graphql:
            try:
                cursor = calls.end_cursor(answer.json())
            except ValueError:
                cursor = None
            if cursor is None:
                return
            fields["endCursor"] = cursor
            continue
        following = answer.next_url()
        if following is None:
            return
        endpoint, fields = following, {}  # the next link carries the query


def _end(answer: Answer, path: str) -> None:
    """The exit after the last answer: gh's message on stderr and exit 1 for an error; a 401 exits 2 naming the token's source."""
    from ..commands import api as calls

    said = calls.error_message(answer, path)
    if said is None:
        return
    if answer.status == 401:
        message = said.removesuffix(" (HTTP 401)") if said != "HTTP 401" else "Bad credentials"
        raise CredentialsRefused(401, answer.url, message, source=answer.source)
    if answer.observed:
        said = f"{said}; {answer.observed}"
    click.echo(f"git sluice: {said}", err=True)
    sys.exit(1)


class Printer:
    """What ``gh api`` prints of each answer: headers (``-i``), then the body, pretty JSON, or ``--jq``'s selection.

    The pages of ``--paginate`` come out one document after another, as the
    gh on this project's machines (2.23) prints them: REST arrays are not
    joined (``jq -s add`` joins them), and a stream of JSON documents is what
    jq and most JSON readers take.
    """

    def __init__(self, *, include: bool, silent: bool, jq: Any) -> None:
        self.include, self.silent, self.jq = include, silent, jq
        self.count = 0
        self.indent = "  " if sys.stdout.isatty() else None

    def page(self, answer: Answer, path: str) -> None:
        from ..commands import api as calls

        if self.include:
            if self.count:
                click.echo()
            out = [calls.status_line(answer), *calls.header_lines(answer.headers), ""]
            click.echo("".join(f"{line}\r\n" for line in out), nl=False)
        self.count += 1
        if self.silent or not answer.body:
            return
        if calls.error_message(answer, path) is None and self.jq is not None:
            self._jq(answer)
            return
        if not calls.is_json(answer):
            sys.stdout.flush()
            sys.stdout.buffer.write(answer.body)
            sys.stdout.buffer.flush()
            return
        try:
            text = json.dumps(json.loads(answer.body), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to indent: printed as it came
            text = answer.body.decode("utf-8", "replace")
        click.echo(text)

    def _jq(self, answer: Answer) -> None:
        from ..commands import api as calls

        try:
            results = self.jq.input_text(answer.body.decode("utf-8", "replace")).all()
        except ValueError as exc:
            raise SluiceError(f"--jq: {exc}") from None
        for value in results:
            click.echo(calls.jq_text(value, self.indent))
