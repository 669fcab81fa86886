"""``git sluice queue``: the queues the last rounds left, read without GitHub, the remote or libgit2.

Dashboards poll this, so it reads the clone's sluice dir found by one
``git rev-parse`` (loading libgit2 would cost more than the rest) and never
imports what only writers need.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import load_settings
from ..intake.queue import QueueDoc, QueueStore
from ..paths import clone_sluice_dir


def read_queues(path: str = ".", branches: Sequence[str] = ()) -> list[QueueDoc]:
    """The queue of each branch (default: the configured ones), naming the configured repository when the file does not."""
    settings = load_settings(path)
    store = QueueStore(clone_sluice_dir(path))
    docs = []
    for branch in list(branches) or list(settings.branches):
        doc = store.load(branch)
        if doc.repository is None:
            doc.repository = settings.repository
        docs.append(doc)
    return docs
