"""The Python API for tools written in Python: GitHub and the queue through git-sluice.

    from git_sluice.api import github, queue

    with github("/path/to/clone") as gh:
        pulls = gh.get("repos/o/r/pulls", {"state": "open"}).json()   # conditional: 304s are free
        data = gh.graphql("query { viewer { login } }")
    for entry in queue("/path/to/clone")["entries"]:
        print(entry["number"], entry["state"])

``github()`` yields the same forge client every git-sluice command uses: every
GET conditional and shared with the clone's other processes, no call while
the allowance is spent (:class:`~git_sluice.errors.AllowanceSpent`, whose
``until`` says when it ends; pass ``wait=True`` to wait it out), failures
remembered (:class:`~git_sluice.errors.ForgeUnavailable`), and every
call in the budget ledger that ``git sluice status`` shows. Every problem
with GitHub is a :class:`~git_sluice.errors.ForgeError` (catch the family, or
one member); every error git-sluice raises is a ``SluiceError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import (
    AllowanceSpent,
    ConfigError,
    CredentialsRefused,
    ForgeAnswered,
    ForgeError,
    ForgeUnavailable,
    SluiceError,
    TimedOut,
)
from .forge.client import Answer, Forge

__all__ = [
    "github",
    "queue",
    "Answer",
    "Forge",
    "AllowanceSpent",
    "ConfigError",
    "CredentialsRefused",
    "ForgeAnswered",
    "ForgeError",
    "ForgeUnavailable",
    "SluiceError",
    "TimedOut",
]


@contextmanager
def github(path: str | Path = ".") -> Iterator[Forge]:
    """The forge client for the clone at ``path`` (configuration and token as the CLI finds them)."""
    from .runtime.session import open_session

    with open_session(path, need_branches=False) as session:
        yield session.forge


def queue(path: str | Path = ".", branch: str | None = None) -> dict[str, Any]:
    """The taken-in queue of ``branch`` (default: the first configured) as the documented JSON document."""
    from .config import load_settings
    from .intake.queue import QueueStore, to_document
    from .repo import Repo

    repo = Repo.discover(path)
    settings = load_settings(repo.workdir or repo.git_dir, refs=repo.refs)
    doc = QueueStore(repo.sluice_dir).load(branch or settings.branches[0])
    if doc.repository is None:
        doc.repository = settings.repository
    return to_document(doc)
