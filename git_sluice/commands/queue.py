"""``git sluice queue``: the queues the last rounds left, read without GitHub, the remote or libgit2.

Dashboards poll this, so it reads the clone's sluice dir found by one
``git rev-parse`` (loading libgit2 would cost more than the rest) and never
imports what only writers need.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import load_settings
from ..errors import UnknownBranch as UnknownBranch
from ..gitcli import run
from ..intake.queue import QueueDoc, QueueStore
from ..paths import clone_sluice_dir_of, start_clone_sluice_dir

# where the rounds' own fetch keeps a branch (remote/git.py's TRACKING_PREFIX; not imported: it loads libgit2)
TRACKING_PREFIX = "refs/sluice/tracking/"


def unknown_branches(path: str, remote: str, configured: Sequence[str], branches: Sequence[str],
                     store: QueueStore) -> list[str]:
    """Of ``branches``, those neither configured, nor a ref of ``remote`` here, nor with a queue (a typo)."""
    asked = [b for b in branches if b not in configured and not store.path_for(b).exists()]
    if not asked:
        return []
    refs = [f"refs/remotes/{remote}/{b}" for b in asked] + [f"{TRACKING_PREFIX}{remote}/{b}" for b in asked]
    done = run(["for-each-ref", "--format=%(refname)", *refs], cwd=path)
    known = set(done.stdout.split()) if done.returncode == 0 else set()
    return [b for b in asked
            if f"refs/remotes/{remote}/{b}" not in known and f"{TRACKING_PREFIX}{remote}/{b}" not in known]


def read_queues(path: str = ".", branches: Sequence[str] = ()) -> list[QueueDoc]:
    """The queue of each branch (default: the configured ones), naming the configured repository when the file does not.

    A ``-b`` branch that exists nowhere is refused (exit 2), as ``intake`` refuses it:
    an empty queue would read as "nothing waiting" to a tool.
    """
    common = start_clone_sluice_dir(path)  # runs beside the settings' own two gits (issue 15)
    try:
        settings = load_settings(path)
    except BaseException:
        common.result()  # reaped; the settings' error is the one to say, as before
        raise
    store = QueueStore(clone_sluice_dir_of(common, path))
    unknown = unknown_branches(path, settings.remote, settings.branches, branches, store)
    if unknown:
        raise UnknownBranch(unknown, settings.remote)
    docs = []
    for branch in list(branches) or list(settings.branches):
        doc = store.load(branch)
        if doc.repository is None:
            doc.repository = settings.repository
        docs.append(doc)
    return docs
