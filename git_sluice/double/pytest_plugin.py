"""Pytest fixtures for the GitHub double, registered through a ``pytest11`` entry point.

Installing git-sluice makes ``fake_clock`` and ``github`` available to any
project's tests with no conftest line (``-p no:git_sluice_double`` turns them
off; a project's own fixture of the same name wins, as conftest fixtures do).
The double itself is imported only when a test asks for ``github``, so a
pytest run that never uses it pays nothing for the entry point.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ..clock import FakeClock

if TYPE_CHECKING:
    from .testing import ServedDouble


@pytest.fixture
def fake_clock() -> FakeClock:
    """A FakeClock for the double and the code under test: time moves only when the test says."""
    return FakeClock()


@pytest.fixture
def github(fake_clock: FakeClock) -> Iterator[ServedDouble]:
    """A served double on ``fake_clock`` with user alice, token "tok-alice" and repository "o/r"."""
    from .testing import ServedDouble, running_double

    with running_double(clock=fake_clock) as (gh, server):
        yield ServedDouble(gh=gh, server=server, clock=fake_clock)
