"""Pytest fixtures for the GitHub double.

Load from the ROOT conftest with ``pytest_plugins = ["git_sluice.double.pytest_plugin"]``
(pytest refuses ``pytest_plugins`` in a nested conftest), or import the
fixtures into any conftest: ``from git_sluice.double.pytest_plugin import fake_clock, github``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..clock import FakeClock
from .testing import ServedDouble, running_double


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def github(fake_clock: FakeClock) -> Iterator[ServedDouble]:
    """A served double on ``fake_clock`` with user alice, token "tok-alice" and repository "o/r"."""
    with running_double(clock=fake_clock) as (gh, server):
        yield ServedDouble(gh=gh, server=server, clock=fake_clock)
