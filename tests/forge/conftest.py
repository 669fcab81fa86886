from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from git_sluice.double.testing import ServedDouble
from git_sluice.runtime.session import Session, open_session
from tests.gitutil import make_clone

TOKEN = "tok-alice"


@pytest.fixture
def clone(tmp_path: Path, github: ServedDouble, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    return make_clone(tmp_path, api=github.url)


@pytest.fixture
def session(clone: Path, github: ServedDouble) -> Iterator[Session]:
    with open_session(clone, clock=github.clock, need_branches=False) as s:
        yield s
