"""No product function is longer than 60 lines (issue 32).

A long function mixes what it decides with the I/O around it, so neither can
be read or tested alone; split, the decision is a pure function with its own
small test and the I/O is a short function around it. Counted with ``ast``
from the ``def`` line to the last line of the body (docstring and comments
included, decorators not), over ``git_sluice/`` without the GitHub double.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import git_sluice

ROOT = Path(git_sluice.__file__).parent
LIMIT = 60

# Each entry is a debt: a function still longer than LIMIT, with its length
# when it was listed. The list may only shrink: split a function and remove
# its entry; never add one, and never raise a number (a listed function that
# grows fails too). Most of these live in modules another change was editing
# when the test came in (issue 32).
ALLOWED: dict[str, int] = {}


def _functions() -> Iterator[tuple[str, int]]:
    """(``path:Qualified.name``, lines) of every function and method, nested ones included."""
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("double/"):
            continue
        yield from _walk(ast.parse(path.read_text(encoding="utf-8")), f"{relative}:")


def _walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            yield name, (child.end_lineno or child.lineno) - child.lineno + 1
            yield from _walk(child, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _walk(child, prefix + child.name + ".")
        else:
            yield from _walk(child, prefix)


def test_no_function_is_longer_than_the_limit_but_the_listed_debts() -> None:
    lengths = dict(_functions())
    too_long = {name: n for name, n in lengths.items() if n > LIMIT and name not in ALLOWED}
    assert not too_long, f"functions over {LIMIT} lines (split a pure decision out of the I/O): {too_long}"
    grown = {name: (lengths[name], n) for name, n in ALLOWED.items() if name in lengths and lengths[name] > n}
    assert not grown, f"listed functions that grew (now, listed): {grown}"


def test_the_allow_list_only_names_functions_still_too_long() -> None:
    """A debt paid (split, renamed, gone) leaves the list, so the list only shrinks."""
    lengths = dict(_functions())
    paid = sorted(name for name in ALLOWED if lengths.get(name, 0) <= LIMIT)
    assert not paid, f"remove from ALLOWED, they are no longer over {LIMIT} lines: {paid}"
