"""Helpers for tests that need a served double with the usual cast.

``running_double()`` gives a GitHub with user alice, her token "tok-alice"
and repository "o/r", served on a loopback port, on a FakeClock unless told
otherwise — the setting most tests start from.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from ..clock import Clock, FakeClock
from .core import GitHubDouble
from .server import DoubleServer, serve


@contextmanager
def running_double(
    clock: Clock | None = None,
    users: Iterable[str] = ("alice",),
    tokens: Mapping[str, str] | None = None,
    repos: Iterable[str] = ("o/r",),
) -> Iterator[tuple[GitHubDouble, DoubleServer]]:
    """A populated, served double; ``tokens`` maps token -> user (default {"tok-alice": "alice"})."""
    gh = GitHubDouble(clock=clock if clock is not None else FakeClock())
    for login in users:
        gh.add_user(login)
    for token, login in (tokens if tokens is not None else {"tok-alice": "alice"}).items():
        gh.add_token(token, user=login)
    for repo in repos:
        gh.add_repo(repo)
    with serve(gh) as server:
        yield gh, server


@dataclass
class ServedDouble:
    """What the ``github`` fixture yields."""

    gh: GitHubDouble
    server: DoubleServer
    clock: Clock

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def graphql_url(self) -> str:
        return self.server.graphql_url
