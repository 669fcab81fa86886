"""Fixtures for the double's own tests (the plugin's, imported: a nested conftest may not use pytest_plugins)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from git_sluice.double.pytest_plugin import fake_clock, github  # noqa: F401 - fixtures
from git_sluice.double.testing import ServedDouble


@pytest.fixture
def alice(github: ServedDouble) -> Iterator[httpx.Client]:  # noqa: F811 - the imported fixture
    """An HTTP client speaking as alice (token "tok-alice")."""
    with httpx.Client(base_url=github.url, headers={"Authorization": "token tok-alice"}, timeout=10) as client:
        yield client
