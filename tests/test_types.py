"""The project's own objects are passed under their own types, never as ``Any`` (issue 16).

mypy (run by .ci/run) checks the types; it cannot tell a JSON document,
rightly ``Any``, from a repository or a session that someone left untyped.
This names the parameters that always hold one of the project's own objects.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "git_sluice"
OWN = {"repo", "session", "store", "remote", "intake", "settings", "transport", "view", "pauses", "rows",
       "forge", "clock", "keeper", "credentials", "step", "kept", "stats", "waits"}


def _mentions_any(node: ast.expr | None) -> bool:
    return node is not None and any(isinstance(n, ast.Name) and n.id == "Any" for n in ast.walk(node))


def test_no_parameter_holding_one_of_the_projects_own_objects_is_typed_any() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "double":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                    if arg.arg in OWN and _mentions_any(arg.annotation):
                        found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}({arg.arg})")
    assert not found, "typed Any, though they hold the project's own objects:\n" + "\n".join(found)
