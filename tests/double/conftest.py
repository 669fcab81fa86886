"""Fixtures for the double's own tests (``fake_clock`` and ``github`` come from the double's pytest plugin)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import httpx
import pytest

from git_sluice.double.graphql_api import github_schema
from git_sluice.double.testing import ServedDouble

# Generous: the machine is shared and a loaded CI box is slow; a hang fault's
# tests set their own short timeouts where the timeout is the point.
TIMEOUT = 60.0
# One TLS context for every client: building one per client costs ~0.1 s (the double is plain HTTP anyway).
_TLS = ssl.create_default_context()


@pytest.fixture(scope="session", autouse=True)
def _schema_built_once() -> None:
    """Build GitHub's schema before any test, not inside the first GraphQL call's timeout."""
    github_schema()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    """A plain client (no token) with the suite's timeout."""
    with httpx.Client(timeout=TIMEOUT, verify=_TLS) as client:
        yield client


@pytest.fixture
def alice(github: ServedDouble) -> Iterator[httpx.Client]:
    """An HTTP client speaking as alice (token "tok-alice")."""
    with httpx.Client(
        base_url=github.url, headers={"Authorization": "token tok-alice"}, timeout=TIMEOUT, verify=_TLS
    ) as client:
        yield client
