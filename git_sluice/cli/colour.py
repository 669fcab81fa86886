"""Colour for ``status`` and ``doctor``, on a terminal only, as git's porcelain colours (issue 31).

Who decides, first match wins:

1. ``--no-color`` on the command line;
2. ``NO_COLOR`` in the environment, set to anything but the empty string
   (https://no-color.org);
3. git's configuration, read through the clone: ``color.sluice``, else
   ``color.ui`` — ``always`` colours even into a pipe, ``false`` / ``never``
   never, ``auto`` / ``true`` (git's default) only when stdout is a terminal.

JSON is never coloured. Standard library at import: ``status`` is polled
(issue 15), so click, whose ``style`` writes the escapes, is imported only
when colour is wanted, and git is asked only when its answer could matter.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

OFF = frozenset({"false", "never", "no", "off", "0"})
ALWAYS = frozenset({"always"})

STYLES: Mapping[str, Mapping[str, Any]] = {
    "ok": {"fg": "green"},
    "warn": {"fg": "yellow"},
    "fail": {"fg": "red", "bold": True},
    "head": {"bold": True},
}
"""The roles a word plays, and how each looks (git's porcelain: green good, yellow heed, red bad)."""

Paint = Callable[[str, str], str]


def plain(text: str, role: str) -> str:
    """No colour: the text as it is."""
    return text


def wanted(setting: str | None, *, tty: bool, no_color: str | None = None, flag: bool | None = None) -> bool:
    """Whether to colour (pure): ``setting`` is git's ``color.sluice`` / ``color.ui`` value (None: unset).

    A value git does not know reads as its default, ``auto``.
    """
    if flag is False or no_color:
        return False
    value = (setting if setting is not None else "auto").strip().lower()
    if value in ALWAYS:
        return True
    if value in OFF:
        return False
    return tty


def configured(path: str = ".") -> str | None:
    """``color.sluice``, else ``color.ui``, as git reads them for the clone at ``path`` (None: neither set)."""
    from ..gitcli import run

    try:
        done = run(["config", "--get-regexp", r"^color\.(sluice|ui)$"], cwd=path)
    except OSError:
        return None
    found: dict[str, str] = {}
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        key, _, value = line.partition(" ")
        found[key.lower()] = value or "true"  # a bare key is git's boolean true; the last one set wins
    return found.get("color.sluice", found.get("color.ui"))


def decide(stream: TextIO | None, *, flag: bool | None = None, path: str = ".") -> bool:
    """Whether to colour what goes to ``stream`` (git is asked only when the flag and NO_COLOR allow)."""
    if flag is False or os.environ.get("NO_COLOR"):
        return False
    try:
        tty = bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        tty = False
    return wanted(configured(path), tty=tty, flag=flag)


def painter(on: bool) -> Paint:
    """``paint(text, role)``: click's styling of the role when ``on``, else the text as it is."""
    if not on:
        return plain
    import click

    return lambda text, role: click.style(text, **STYLES[role]) if role in STYLES else text


def paint_words(text: str, paint: Paint, roles: Mapping[str, str]) -> str:
    """``text`` with each whole word of ``roles`` painted in its role (the rest as it is)."""
    if paint is plain or not roles:
        return text
    pattern = r"\b(" + "|".join(re.escape(word) for word in roles) + r")\b"
    return re.sub(pattern, lambda m: paint(m.group(1), roles[m.group(1)]), text)
