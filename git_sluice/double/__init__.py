"""A faithful GitHub double for the tests, the benchmark and ``git sluice demo``.

It models what git-sluice depends on (docs/double.md#what-it-models): pagination, per-token
ETags and free 304s, primary limits per pool and resource with GitHub's
headers, secondary limits with ``retry-after``, GraphQL executed against
GitHub's real schema with GitHub's point cost and ``RATE_LIMITED`` errors,
faults on demand — and it counts every call, so a test asserts on what
reached "GitHub". See docs/double.md.

    gh = GitHubDouble(clock=FakeClock())
    gh.add_token("tok-alice", user="alice")
    gh.add_repo("o/r")
    with serve(gh) as server:
        ...  # talk to server.url / server.graphql_url
"""

from .core import GitHubDouble
from .ledger import Call
from .model import DoubleError
from .server import DoubleServer, serve

__all__ = ["Call", "DoubleError", "DoubleServer", "GitHubDouble", "serve"]
