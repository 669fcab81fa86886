"""One pull request as git-sluice knows it, whoever said it: the list, a reading or the queue.

The REST list of open requests says who and where (number, title, author,
head, base, draft, ``updated_at``, labels): that is what a round compares to
decide what to ask. A GraphQL reading says the same and adds the state that
needs reading (GitHub's state, review decision, checks, mergeability).
The queue keeps a request with its verdict and times (:class:`~git_sluice.
intake.queue.Entry`, a :class:`Request` with three more fields). One record
for all three means one set of names and no copier to keep in step with it.
"""

from __future__ import annotations

from dataclasses import fields
from ..records import record
TYPE_CHECKING = False  # typing's own flag, without importing typing (issue 15: ~2 ms of queue's start-up)
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True)
class Request:
    """A pull request: what the list says, and (after a GraphQL read) what a reading adds."""

    number: int
    title: str
    author: str | None
    head_ref: str
    head_sha: str
    base: str
    draft: bool
    updated_at: str
    labels: tuple[str, ...] = ()
    # -- what a GraphQL reading adds (left as below where only the list was asked)
    github_state: str = "OPEN"  # OPEN | CLOSED | MERGED
    review_decision: str | None = None  # APPROVED | CHANGES_REQUESTED | REVIEW_REQUIRED | None (none required)
    checks_state: str | None = None  # SUCCESS | FAILURE | PENDING | ERROR | EXPECTED | None (no checks)
    failing: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    mergeable: str | None = None  # MERGEABLE | CONFLICTING | UNKNOWN
    url: str = ""
    reviews: tuple[tuple[str | None, str], ...] = ()  # (author, state) of the latest opinionated reviews


def request_fields(request: Request) -> dict[str, Any]:
    """The :class:`Request` part of any record built on it (a queue entry keeps it whole)."""
    return {f.name: getattr(request, f.name) for f in fields(Request)}
