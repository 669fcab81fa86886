"""What a round did (:class:`RoundReport`) and the last one per branch (:class:`RoundsLog`).

Apart from :mod:`.round` so ``git sluice status`` reads the rounds log
without importing what a round needs (graphql-core, httpx, the forge).
"""

from __future__ import annotations

from dataclasses import asdict, field
from pathlib import Path
from typing import Any

from ..clock import rfc3339
from ..records import record
from ..statefile import JsonDocument


@record
class RoundReport:
    """What a round did, or why it did nothing; printed by ``intake`` and kept for ``status``."""

    branch: str
    outcome: str  # taken-in | within-interval | deferred | unleased | paused | failed
    why: str
    holder: str | None = None
    started_at: float = 0.0
    finished_at: float = 0.0
    requests: int = 0  # calls that reached GitHub
    counted: int = 0  # REST calls GitHub counted
    not_modified: int = 0  # 304s (free)
    points: int = 0  # GraphQL points
    open: int = 0
    read: list[int] = field(default_factory=list)
    added: list[int] = field(default_factory=list)
    changed: list[int] = field(default_factory=list)
    left: list[int] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)
    next_discovery: float | None = None
    paused_until: float | None = None

    @property
    def cost(self) -> int:
        return self.counted + self.points

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["skipped"] = {str(k): v for k, v in self.skipped.items()}
        for key in ("started_at", "finished_at", "next_discovery", "paused_until"):
            if data[key]:
                data[key] = rfc3339(data[key])
        return data

    def summary(self) -> str:
        if self.outcome == "taken-in":
            moved = []
            for label, numbers in (("added", self.added), ("changed", self.changed), ("left", self.left)):
                if numbers:
                    moved.append(f"{label} " + ", ".join(f"#{n}" for n in numbers))
            text = (
                f"{self.branch}: {self.open} open; {_n(self.requests, 'call')} ({self.not_modified} not modified, "
                f"{self.counted} counted), {_n(self.points, 'GraphQL point')}; " + ("; ".join(moved) or "nothing moved")
            )
            if self.skipped:
                text += "; skipped " + ", ".join(f"#{n} ({why})" for n, why in sorted(self.skipped.items()))
            return text
        return f"{self.branch}: {self.why}"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class RoundsLog:
    """The last round per branch, for ``status`` (``<sluice_dir>/rounds.json``)."""

    def __init__(self, sluice_dir: Path) -> None:
        self.path = Path(sluice_dir) / "rounds.json"
        self._doc = JsonDocument(self.path, what="rounds log")

    def load(self) -> dict[str, dict[str, Any]]:
        return self._doc.read()

    def record(self, report: RoundReport) -> None:
        with self._doc.update() as data:
            data[report.branch] = report.to_json()
