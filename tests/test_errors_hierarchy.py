"""Every exception the product defines lives in errors.py, under SluiceError (issue 32).

One ``except SluiceError`` must see every error git-sluice raises on purpose,
and a reader must find them all in one file: an exception class written
anywhere else (even a private one a layer raises for the layer above) is a
family nobody can catch whole. Modules that raised one before keep its name
importable by re-exporting it. The GitHub double stays apart: it is not the
product.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
from pathlib import Path

import git_sluice
from git_sluice import errors
from git_sluice.errors import SluiceError

ROOT = Path(git_sluice.__file__).parent
SKIP = ("git_sluice.double", "git_sluice.__main__")  # the double is apart; __main__ runs the CLI on import


def _product_modules() -> list[str]:
    names = ["git_sluice"]
    for info in pkgutil.walk_packages(git_sluice.__path__, "git_sluice."):
        if not info.name.startswith(SKIP):
            names.append(info.name)
    return names


def _exception_names() -> set[str]:
    """Every name a class statement could use to derive an exception: the builtins' and errors.py's."""
    names = {n for n, o in vars(builtins).items() if inspect.isclass(o) and issubclass(o, BaseException)}
    return names | {n for n, o in vars(errors).items() if inspect.isclass(o) and issubclass(o, BaseException)}


def test_every_exception_class_is_a_sluice_error_defined_in_errors() -> None:
    strays: list[str] = []
    for name in _product_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if not (inspect.isclass(value) and issubclass(value, BaseException)):
                continue
            if value.__module__.startswith("git_sluice.") and not value.__module__.startswith(SKIP):
                if value.__module__ != "git_sluice.errors" or getattr(errors, value.__name__, None) is not value:
                    strays.append(f"{name}.{attr} (defined in {value.__module__})")
                elif not issubclass(value, SluiceError):
                    strays.append(f"{name}.{attr} is not a SluiceError")
    assert not strays, "exception classes outside errors.py or outside SluiceError: " + ", ".join(strays)


def test_no_class_statement_outside_errors_derives_an_exception() -> None:
    """The import check cannot see a class made inside a function: the source is read for those."""
    exceptions = _exception_names()
    strays: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[0] == "double" or relative == Path("errors.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                if base_name in exceptions or base_name.endswith(("Error", "Exception")):
                    strays.append(f"{relative}:{node.lineno} class {node.name}({base_name})")
    assert not strays, "define exceptions in git_sluice/errors.py: " + ", ".join(strays)


def test_every_error_is_a_sluice_error() -> None:
    for value in vars(errors).values():
        if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == errors.__name__:
            assert issubclass(value, SluiceError), value


def test_errors_imports_nothing_of_the_package() -> None:
    """errors.py is the bottom layer: every other module may import it, so it imports none of them."""
    tree = ast.parse((ROOT / "errors.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and not (node.module or "").startswith("git_sluice"), ast.dump(node)
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("git_sluice") for alias in node.names)


def test_a_rejected_survey_is_still_a_value_error() -> None:
    """Callers caught it as a ValueError before it joined the family; they still may."""
    assert issubclass(errors.SurveyRejected, ValueError)
