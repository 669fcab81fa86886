"""``git sluice doctor``: why data looks stale, or why nothing happens, in one screen.

Two halves: :mod:`.checks` turns facts into verdicts (pure: tested with no
network, git or store) and :mod:`.gather` collects the facts (the I/O, tested
against the GitHub double and real git). :func:`diagnose` is the command.
"""

from __future__ import annotations

from .checks import Check, Diagnosis
from .gather import diagnose

__all__ = ["Check", "Diagnosis", "diagnose"]
