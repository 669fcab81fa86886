"""Every call this process sent to GitHub, whatever sent it (issue 31: reports that agree with GitHub).

A round's report counts the calls of its own road; a command causes more: the
``GET /user`` that learns a token's pool, an App's token mint, the host
watch's query. A tool whose promise is an honest budget must report all of
them, so every call that reaches the wire is noted here — by the road's
ledger layer and by the two side calls of :mod:`.auth` — and a command shows
what it caused (``intake --json``'s ``calls``, ``-v``'s last line) as the
difference between two snapshots. Counts only: no address, no token.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

_lock = threading.Lock()


@dataclass(frozen=True)
class Calls:
    """Calls that reached GitHub: how many, how GitHub counted them, by kind of call."""

    requests: int = 0
    counted: int = 0  # REST calls GitHub counted against the hourly allowance
    not_modified: int = 0  # 304s: reached GitHub, not counted
    points: int = 0  # GraphQL points
    kinds: tuple[tuple[str, int], ...] = field(default_factory=tuple)

    def minus(self, earlier: Calls) -> Calls:
        """What was sent since ``earlier`` (a snapshot of the same process)."""
        kinds = Counter(dict(self.kinds))
        kinds.subtract(dict(earlier.kinds))
        return Calls(
            self.requests - earlier.requests, self.counted - earlier.counted,
            self.not_modified - earlier.not_modified, self.points - earlier.points,
            tuple(sorted((k, n) for k, n in kinds.items() if n > 0)),
        )

    def to_json(self) -> dict[str, object]:
        return {"requests": self.requests, "counted": self.counted, "not_modified": self.not_modified,
                "points": self.points, "by_kind": dict(self.kinds)}

    def summary(self) -> str:
        """One line a person reads: ``6 calls reached GitHub (5 counted, 1 not modified, 1 GraphQL point)``."""
        plural = "" if self.requests == 1 else "s"
        points = "" if self.points == 1 else "s"
        text = (f"{self.requests} call{plural} reached GitHub ({self.counted} counted, {self.not_modified} not "
                f"modified, {self.points} GraphQL point{points})")
        if self.kinds:
            text += ": " + ", ".join(f"{kind} {n}" for kind, n in self.kinds)
        return text


_requests = _counted = _not_modified = _points = 0
_kinds: Counter[str] = Counter()


def note(kind: str, *, status: int, counted: bool, cost: int, graphql: bool) -> None:
    """One call that reached GitHub. ``kind`` names it for a person (``GET /user``, ``list``…)."""
    global _requests, _counted, _not_modified, _points
    with _lock:
        _requests += 1
        _kinds[kind] += 1
        if status == 304:
            _not_modified += 1
        if counted:
            if graphql:
                _points += max(0, cost)
            else:
                _counted += max(0, cost)


def count(kind: str) -> int:
    """How many calls of ``kind`` this process has sent so far."""
    with _lock:
        return _kinds[kind]


def snapshot() -> Calls:
    with _lock:
        return Calls(_requests, _counted, _not_modified, _points, tuple(sorted(_kinds.items())))


def kind_of(method: str, path: str) -> str:
    """A call's kind, without anything that names a repository or an object: ``GET pulls``,
    ``GET check-runs``, ``POST graphql``. The last word of the path that is not a number or a name
    GitHub made up (a sha, a login) is close enough to say what the call was."""
    words = [w for w in path.strip("/").split("/") if w]
    if words[:2] == ["api", "v3"]:
        words = words[2:]
    if words and words[0] == "api":
        words = words[1:]
    named = {"user", "graphql", "rate_limit", "pulls", "issues", "comments", "check-runs", "status", "statuses",
             "reviews", "commits", "access_tokens", "installation", "search", "repos", "app", "events", "files",
             "merge", "labels", "assignees", "contents", "git", "refs", "branches", "compare"}
    last = next((w for w in reversed(words) if w in named), words[-1] if words else "/")
    if last not in named:
        last = "other"
    return f"{method.upper()} {last}"
