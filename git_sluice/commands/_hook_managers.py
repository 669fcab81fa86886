"""Other programs that manage git hooks, as ``setup`` and ``doctor`` meet them.

- **pre-commit** writes its own script at ``<hook>`` and runs a hook it found
  there, moved to ``<hook>.legacy``, first ("migration mode"). Its script can
  not itself be run as someone's ``.legacy``: it would run ``<hook>.legacy``,
  that is itself, and stop with "bug: pre-commit's script is installed in
  migration mode", refusing the push. So git-sluice's hook goes *under* it, at
  ``<hook>.legacy``, and ``pre-commit install`` run again leaves it there.
- **husky** keeps the hooks people write in a tracked folder (``.husky/``).
  Husky 8 points ``core.hooksPath`` at it; husky 9 at ``.husky/_``, whose
  generated stubs (``. "${0%/*}/h"``) run ``.husky/<hook>`` by the stub's own
  file name, so a stub renamed to ``.legacy`` would run nothing. A tracked
  file is the team's, not this clone's: setup changes none unasked, and says
  which line to add instead.

The line runs the script setup keeps in ``<common dir>/sluice/hooks/``, found
with ``git rev-parse`` (a tracked file names no clone's path), and does
nothing where git-sluice is not set up, so the whole team can carry it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..repo import Repo

# What pre-commit's installer (pre_commit/commands/install_uninstall.py) looks
# for to know its own script: its template's ID line, current and past.
PRE_COMMIT_IDS: tuple[bytes, ...] = (
    b"138fd403232d2ddd5efb44317e38bf03",
    b"4d9958c90bc262f47553e2c073f14cfe",
    b"d8ee923c46731b42cd95cc869add4062",
    b"49fd668cb42069aa1b6048464be5d395",
    b"79f09a650522a87b0da915d0d983b2de",
    b"e358c9dae00eac5d06b38dfdb1e33a8c",
)
HUSKY_STUB_MAX = 200
"""Husky 9's stubs are two short lines; anything longer is someone's own hook."""


def _head(path: Path, size: int = 4096) -> bytes:
    try:
        if not path.is_file():
            return b""
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def is_pre_commit(path: Path) -> bool:
    """pre-commit's own hook script, recognised the way pre-commit recognises it."""
    head = _head(path, 1 << 16)
    return any(marker in head for marker in PRE_COMMIT_IDS)


def is_husky_stub(path: Path) -> bool:
    """A husky 9 stub: sources the ``h`` beside it, which runs ``<folder>/../<hook>``."""
    head = _head(path, HUSKY_STUB_MAX + 1)
    if not head or len(head) > HUSKY_STUB_MAX or not (path.parent / "h").is_file():
        return False
    text = head.decode("utf-8", "replace")
    return any(f'{form}/h"' in text for form in ('. "${0%/*}', '. "$(dirname "$0")', '. "$(dirname -- "$0")'))


def husky_script(stub: Path) -> Path:
    """The tracked script a husky 9 stub runs: ``.husky/<hook>`` for ``.husky/_/<hook>``."""
    return stub.parent.parent / stub.name


def script_mark(name: str) -> str:
    """What shows that a file runs git-sluice's ``name`` hook through the line."""
    return f"/sluice/hooks/{name}"


def line_for(name: str) -> str:
    """The line to add to a hook another program keeps (one line, safe under ``sh -e``).

    ``reference-transaction`` acts on ``committed`` only: git holds the ref
    locks during ``prepared``, so the line costs a single builtin test there.
    """
    call = f'h="$(git rev-parse --git-common-dir){script_mark(name)}"; [ ! -x "$h" ] || "$h" "$@"'
    if name == "reference-transaction":
        return f'[ "$1" != committed ] || {{ {call}; }}'
    return call


def has_line(path: Path, name: str) -> bool:
    return script_mark(name).encode() in _head(path, 1 << 16)


def shows_in_status(repo: Repo, path: Path) -> bool:
    """Whether writing ``path`` would change ``git status``: inside the work tree, and tracked or not ignored."""
    if repo.workdir is None:
        return False
    try:
        relative = Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(repo.workdir)))
    except ValueError:
        return False
    if relative.parts and relative.parts[0] == ".git":
        return False
    tracked = repo.git("ls-files", "--error-unmatch", "--", str(relative), check=False)
    if tracked.returncode == 0:
        return True
    ignored = repo.git("check-ignore", "-q", "--no-index", "--", str(relative), check=False)
    return ignored.returncode != 0
