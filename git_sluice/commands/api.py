"""``git sluice api``: GitHub through the clone's forge (conditional, budgeted, ledgered), with ``gh api``'s flags.

Where a flag of ``git sluice api`` shares its name with one of ``gh api``, it
means what it means there (issue 31): ``-f``/``-F`` make a POST unless ``-X``
says otherwise, ``-F`` types its values (``true``, ``false``, ``null``,
integers, ``@file``, the ``{owner}``/``{repo}``/``{branch}`` placeholders),
``key[sub]=`` and ``key[]=`` nest, ``--paginate`` follows ``Link: rel="next"``
(REST) or ``pageInfo`` with ``$endCursor`` (GraphQL), ``--jq`` filters as gh
does, and an error answer puts GitHub's message on stderr. The decisions are
plain functions here; the command (cli/api_cmd.py) does the I/O, and every
call still goes down the forge's one road (kept answers, the gate, the write
pace).
"""

from __future__ import annotations

import http
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from ..errors import UsageError
from ..forge.client import Answer
from ..runtime.session import Session

PER_PAGE = 100
"""The page size ``--paginate`` asks for when the caller named none, as ``gh api --paginate`` does."""

PLACEHOLDER = re.compile(r"\{([a-z]+)\}")
PLACEHOLDERS = ("owner", "repo", "branch")
SENT_HEADERS = ("Accept", "X-GitHub-Api-Version", "Content-Type")
"""The request headers a caller may set (``-H``): the ones git-sluice's kept answers are told apart by."""


def is_graphql(path: str) -> bool:
    return path.strip("/") == "graphql"


# ------------------------------------------------------------------ the request


def field_pair(text: str) -> tuple[list[str], str | None]:
    """``key=value``, ``key[sub]=value``, ``key[]=value`` or ``key[]`` as (key path, value); '' in the path is ``[]``.

    Raises :class:`UsageError` for a field with no ``=`` (except ``key[]``, gh's empty array) or no key.
    """
    head, sep, value = text.partition("=")
    match = re.fullmatch(r"([^\[\]]+)((?:\[[^\[\]]*\])*)", head)
    if match is None:
        raise UsageError(f"field {text!r}: expected key=value (key[sub]=value and key[]=value nest)")
    path = [match.group(1), *re.findall(r"\[([^\[\]]*)\]", match.group(2))]
    if not sep:
        if path[-1] != "":
            raise UsageError(f"field {text!r} requires a value separated by an '=' sign")
        return path, None
    return path, value


def typed_value(value: str, read_file: Callable[[str], str], fill: Callable[[str], str]) -> Any:
    """A ``-F`` value as gh types it: ``@file`` (``@-``: stdin), an integer, ``true``/``false``/``null``, else text with placeholders filled."""
    if value.startswith("@"):
        return read_file(value[1:])
    if re.fullmatch(r"[+-]?[0-9]+", value):
        return int(value)
    if value in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[value]
    return fill(value)


def put(params: dict[str, Any], path: Sequence[str], value: Any, *, given: bool = True) -> None:
    """Set ``value`` at a key path into ``params`` (``''`` = append to a list), as gh nests its fields.

    ``a[][b]=1 a[][b]=2`` makes two objects (a key already set starts the next one);
    ``key[]`` with no value (``given`` False) is an empty list.
    """
    where: dict[str, Any] = params
    at = 0
    while at < len(path) - 1:
        key, following = path[at], path[at + 1]
        if following != "":
            where = where.setdefault(key, {})
            _expect(where, dict, key)
            at += 1
            continue
        items = where.setdefault(key, [])
        _expect(items, list, key)
        if at + 2 == len(path):
            if given:
                items.append(value)
            return
        later = path[at + 2]
        if later == "":
            raise UsageError(f"field {key}[][]: an array of arrays cannot be given as fields; use --input")
        last = items[-1] if items else None
        if not isinstance(last, dict) or (later in last and not isinstance(last[later], list)):
            last = {}
            items.append(last)
        where = last
        at += 2
    if path[-1] in where:
        raise UsageError(f"field {path[0]}{''.join(f'[{k}]' for k in path[1:])} is given twice")
    where[path[-1]] = value


def _expect(value: object, kind: type, key: str) -> None:
    if not isinstance(value, kind):
        raise UsageError(f"field {key}: expected {'an array' if kind is list else 'an object'} under {key!r}, "
                         f"got {type(value).__name__}")


def build_params(raw: Sequence[str], typed: Sequence[str], read_file: Callable[[str], str],
                 fill: Callable[[str], str]) -> dict[str, Any]:
    """The request's parameters from ``-f`` (strings) then ``-F`` (typed) fields, nested as gh nests them."""
    params: dict[str, Any] = {}
    for text in raw:
        path, value = field_pair(text)
        put(params, path, value, given=value is not None)
    for text in typed:
        path, value = field_pair(text)
        put(params, path, typed_value(value, read_file, fill) if value is not None else None, given=value is not None)
    return params


def query_pairs(params: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Parameters as a query string's pairs, as gh sends a GET's (lists as ``key[]``, booleans as words)."""
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        name = prefix or key
        if isinstance(value, dict):
            pairs += query_pairs(value)
        elif isinstance(value, list):
            for item in value:
                pairs += query_pairs({f"{name}[]": item}, f"{name}[]")
        elif isinstance(value, bool):
            pairs.append((name, "true" if value else "false"))
        else:
            pairs.append((name, "" if value is None else str(value)))
    return pairs


def with_query(path: str, pairs: Sequence[tuple[str, str]]) -> str:
    return path + ("&" if "?" in path else "?") + urlencode(pairs) if pairs else path


def with_per_page(path: str, params: Mapping[str, Any]) -> str:
    """``per_page=100`` unless the caller chose a page size (``--paginate``: fewer pages, fewer calls)."""
    if "per_page" in params or any(k == "per_page" for k, _ in parse_qsl(urlsplit(path).query)):
        return path
    return with_query(path, [("per_page", str(PER_PAGE))])


def fill_placeholders(text: str, values: Callable[[str], str]) -> str:
    """``{owner}``, ``{repo}`` and ``{branch}`` filled; any other ``{word}`` left as it is (gh's rule)."""
    return PLACEHOLDER.sub(lambda m: values(m.group(1)) if m.group(1) in PLACEHOLDERS else m.group(0), text)


def header_pairs(given: Sequence[str]) -> dict[str, str]:
    """``-H 'Name: value'`` as headers; a header git-sluice does not send is refused (exit 2), never dropped."""
    headers: dict[str, str] = {}
    allowed = {h.lower(): h for h in SENT_HEADERS}
    for text in given:
        name, sep, value = text.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"header {text!r} requires a value separated by ':'")
        canonical = allowed.get(name.strip().lower())
        if canonical is None:
            raise UsageError(
                f"header {name.strip()!r}: git-sluice sends only {', '.join(SENT_HEADERS)} of a caller's headers "
                "(its kept answers are told apart by them; the token is its own)"
            )
        headers[canonical] = value.strip()
    return headers


def method_for(method: str | None, params: Mapping[str, Any], has_input: bool) -> str:
    """gh's rule: GET, or POST once a field or ``--input`` is given, unless ``-X`` names the method."""
    if method:
        return method.upper()
    return "POST" if params or has_input else "GET"


def graphql_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """``query`` and ``operationName`` at the top, every other field a variable (gh's grouping)."""
    body = {k: v for k, v in params.items() if k in ("query", "operationName")}
    variables = {k: v for k, v in params.items() if k not in ("query", "operationName")}
    if variables:
        body["variables"] = variables
    return body


# ------------------------------------------------------------------ the call


def call_github(
    session: Session,
    path: str,
    *,
    method: str,
    fields: Mapping[str, Any],
    wait: bool,
    deadline: float | None,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
) -> Answer:
    """One call: GraphQL (``fields`` with its ``query``), or REST (``fields`` as a GET's query or a JSON body).

    ``content``: a body as the caller gave it (``--input``); ``fields`` then go in the query string.
    """
    forge = session.forge
    if is_graphql(path):
        if content is not None:
            return forge.request("POST", with_query(session.settings.graphql, query_pairs(fields)),
                                 content=content, headers=headers, wait=wait, deadline=deadline)
        return forge.request("POST", session.settings.graphql, json_body=graphql_body(fields), headers=headers,
                             wait=wait, deadline=deadline)
    if content is not None or method in ("GET", "HEAD"):
        return forge.request(method, with_query(path, query_pairs(fields)), content=content, headers=headers,
                             wait=wait, deadline=deadline)
    return forge.request(method, path, json_body=dict(fields) or None, headers=headers, wait=wait, deadline=deadline)


# ------------------------------------------------------------------ the answer


def is_json(answer: Answer) -> bool:
    kind = answer.headers.get("content-type", "")
    return bool(re.search(r"[/+]json(;|$)", kind)) or (not kind and answer.body[:1] in (b"{", b"["))


def failed(answer: Answer, path: str) -> bool:
    """An error status, or GraphQL's refusal (200 with ``errors[]``, which ``gh api`` also exits 1 on)."""
    if answer.status >= 400:
        return True
    if not is_graphql(path):
        return False
    try:
        return bool(json.loads(answer.body).get("errors"))
    except (ValueError, AttributeError):
        return False


def error_message(answer: Answer, path: str) -> str | None:
    """What gh says on stderr for this answer (``Not Found (HTTP 404)``), or None when it succeeded."""
    data: Any = None
    try:
        data = json.loads(answer.body) if answer.body else None
    except ValueError:
        pass
    said = ""
    if isinstance(data, dict) and (answer.status >= 400 or is_graphql(path)):
        errors = data.get("errors")
        message = data.get("message")
        if isinstance(errors, str) and errors:
            said = f"{errors} ({message})" if message else errors
        elif isinstance(message, str) and message:
            said = f"{message} (HTTP {answer.status})"
        elif isinstance(errors, list):
            texts = [e.get("message") if isinstance(e, dict) else e for e in errors]
            said = "\n".join(t for t in texts if isinstance(t, str))
    if not said and answer.status > 299:
        said = f"HTTP {answer.status}"
    return said or None


def end_cursor(data: Any) -> str | None:
    """The ``endCursor`` of the first ``pageInfo`` saying ``hasNextPage: true`` (gh's GraphQL pagination), else None."""
    for key, value in _walk(data):
        if key == "pageInfo" and isinstance(value, dict) and "hasNextPage" in value and "endCursor" in value:
            cursor = value.get("endCursor")
            return cursor if value.get("hasNextPage") is True and isinstance(cursor, str) else None
    return None


def _walk(data: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) of a JSON document, in document order, depth first."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(data, list):
        for item in data:
            yield from _walk(item)


def status_line(answer: Answer) -> str:
    """``HTTP/1.1 200 OK``, as ``-i`` prints it (httpx speaks HTTP/1.1); a kept answer says so."""
    try:
        phrase = http.HTTPStatus(answer.status).phrase
    except ValueError:
        phrase = ""
    kept = " (kept answer, not modified)" if answer.from_kept else ""
    return f"HTTP/1.1 {answer.status} {phrase}".rstrip() + kept


def header_lines(headers: Mapping[str, str]) -> list[str]:
    """The answer's headers as gh's ``-i`` prints them: canonical names, sorted."""
    named = {"-".join(part.capitalize() for part in name.split("-")): value for name, value in headers.items()}
    return [f"{name}: {named[name]}" for name in sorted(named)]


def jq_text(value: Any, indent: str | None) -> str:
    """One ``--jq`` result as gh prints it: text raw, whole numbers bare, others two decimals, null empty, JSON compact."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return json.dumps(value)
        return str(int(value)) if float(value).is_integer() else f"{value:.2f}"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, indent=indent or None,
                      separators=(",", ": ") if indent else (",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
