"""A step: one intake round for the configured branches, then exit (hooks, `intake`)."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("git_sluice")


def run_step(repo: Any, *, reason: str) -> None:
    """Run one round for every configured branch (being wired to intake.round)."""
    log.info("step reason=%s repo=%s", reason, getattr(repo, "common_dir", repo))
