#!/usr/bin/env python3
"""A dashboard over several clones that never calls GitHub: the Tower incident, fixed from the outside.

    python contrib/integrations/dashboard.py ~/src/widgets ~/src/gadgets
    python contrib/integrations/dashboard.py --requests --watch 5 ~/src/*/
    python contrib/integrations/dashboard.py --json ~/src/widgets        # the overview payload, for a web UI

Tower's overview cache (codev) spent a user's whole GraphQL allowance: three
``gh`` calls per workspace every 30 s, 13 workspaces, ≈ 4,700 calls an hour;
failures were never cached, so once limited it re-spawned every call on
every request (≈ 9,090 ``gh`` processes an hour), and nothing read the reset,
so the dashboard timed out instead of saying why its data was stale.

This consumer asks git-sluice instead of GitHub. Per clone it runs
``git sluice queue --json`` (the versioned queue document,
docs/queue-json.md) and ``git sluice status --json``, both of which read local
state only: **polling costs zero GitHub calls however often it runs**, a
workspace nobody looks at costs nothing, and a failure costs nothing either.
The taking-in is done once per branch across the fleet by whichever host
drives it (``git sluice drive``), with conditional reads that cost nothing
while nothing moves. When the allowance is spent, the table says so and
until when (``rate-limited until 14:32 (in 12 min)``), taken from the same
pause every git-sluice process on the host obeys, and each row says how old
its data is.

Reading rules it follows, as docs/queue-json.md asks of every consumer:

- a ``schema`` it does not know is reported and not guessed at;
- fields it does not know are ignored;
- a queue whose ``holder`` is another host has no entries here: that host
  takes the branch in, and the row says where to look.

Exit status: 0 when every clone answered; 1 when any clone could not be read
(its row says why); 2 for bad arguments. Standard library only, so it can be
copied anywhere; it needs ``git-sluice`` on ``PATH`` (or ``--program``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

KNOWN_QUEUE_SCHEMA = 1
KNOWN_STATUS_SCHEMA = 1
STATES = ("ready", "waiting", "blocked", "draft")

Runner = Callable[[Sequence[str], Path], "subprocess.CompletedProcess[str]"]


# ------------------------------------------------------------------ the data


@dataclass
class BranchView:
    """One branch of one clone, as the dashboard shows it."""

    branch: str
    repository: str | None
    holder: str | None
    taken_in_here: bool
    read_at: float | None
    counts: dict[str, int]
    entries: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ForgeState:
    """One (pool, resource) that is not simply open, from ``status --json``."""

    pool: str
    resource: str
    state: str  # rate-limited | probing | ramping | would-pause (observe-only)
    until: float | None


@dataclass
class CloneView:
    path: str
    host: str | None = None
    branches: list[BranchView] = field(default_factory=list)
    forge: list[ForgeState] = field(default_factory=list)
    error: str | None = None


class Unreadable(Exception):
    """A clone's output could not be used; the message is what the row shows."""


def parse_time(text: Any) -> float | None:
    """An RFC 3339 UTC time as git-sluice writes it (``2026-11-29T18:00:00Z``), or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def branch_views(queue: Any, host: str | None) -> list[BranchView]:
    """The branches of one ``queue --json`` answer (one document, or a list of them)."""
    documents = queue if isinstance(queue, list) else [queue]
    views = []
    for doc in documents:
        if not isinstance(doc, dict):
            raise Unreadable("queue --json gave something that is not a queue document")
        schema = doc.get("schema")
        if schema != KNOWN_QUEUE_SCHEMA:
            raise Unreadable(f"queue schema {schema!r} is not one this dashboard knows ({KNOWN_QUEUE_SCHEMA}): upgrade it")
        entries = [e for e in doc.get("entries", []) if isinstance(e, dict)]
        counts = {state: 0 for state in STATES}
        for entry in entries:
            state = entry.get("state")
            if state in counts:
                counts[state] += 1
        holder = doc.get("holder") if isinstance(doc.get("holder"), str) else None
        views.append(
            BranchView(
                branch=str(doc.get("branch", "?")),
                repository=doc.get("repository") if isinstance(doc.get("repository"), str) else None,
                holder=holder,
                taken_in_here=holder is None or holder == host,
                read_at=parse_time(doc.get("read_at")),
                counts=counts,
                entries=sorted(entries, key=lambda e: e.get("number", 0)),
            )
        )
    return views


def forge_states(status: Any) -> list[ForgeState]:
    """Every pool and resource of ``status --json`` that is paused, recovering, or would have paused."""
    if not isinstance(status, dict) or status.get("schema") != KNOWN_STATUS_SCHEMA:
        schema = status.get("schema") if isinstance(status, dict) else None
        raise Unreadable(f"status schema {schema!r} is not one this dashboard knows ({KNOWN_STATUS_SCHEMA})")
    found = []
    for pool in status.get("pools", []):
        if not isinstance(pool, dict):
            continue
        pause = pool.get("pause") if isinstance(pool.get("pause"), dict) else None
        state = pool.get("forge", "ok")
        if pause is not None and pause.get("observe_only"):
            state = "would-pause"
        if state == "ok":
            continue
        until = pause.get("until") if pause is not None else None
        found.append(ForgeState(str(pool.get("pool")), str(pool.get("resource")), str(state),
                                float(until) if isinstance(until, (int, float)) else None))
    return found


# ------------------------------------------------------------ asking git-sluice


def default_program() -> list[str]:
    """``git-sluice`` from PATH, else this Python's ``-m git_sluice``."""
    found = shutil.which("git-sluice")
    return [found] if found else [sys.executable, "-m", "git_sluice"]


def run_program(argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def _ask(program: Sequence[str], args: Sequence[str], clone: Path, run: Runner) -> Any:
    try:
        done = run([*program, *args], clone)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unreadable(f"could not run {' '.join(program)}: {exc}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout or "").strip().splitlines()
        raise Unreadable(lines[-1] if lines else f"{' '.join(args)} exited {done.returncode}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise Unreadable(f"{' '.join(args)} did not print JSON") from None


def read_clone(clone: Path, program: Sequence[str], run: Runner = run_program) -> CloneView:
    """One clone's view; an unreadable clone becomes a row with its reason, never a crash."""
    view = CloneView(path=str(clone))
    if not clone.is_dir():
        view.error = "no such directory"
        return view
    try:
        status = _ask(program, ["status", "--json"], clone, run)
        view.host = status.get("host") if isinstance(status, dict) else None
        view.forge = forge_states(status)
        view.branches = branch_views(_ask(program, ["queue", "--json"], clone, run), view.host)
    except Unreadable as exc:
        view.error = str(exc)
    return view


def collect(clones: Sequence[Path], program: Sequence[str] | None = None, run: Runner = run_program) -> list[CloneView]:
    """Every clone's view, read side by side (each is two local reads, no network)."""
    chosen = list(program) if program else default_program()
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(clones)))) as pool:
        return list(pool.map(lambda c: read_clone(Path(c).expanduser(), chosen, run), clones))


# ------------------------------------------------------------------ the output


def _span(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d"


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).astimezone().strftime("%H:%M")


def forge_lines(views: Sequence[CloneView], now: float) -> list[str]:
    """One line per (pool, resource) that is not open, across all clones (the host store is shared)."""
    seen: dict[tuple[str, str], ForgeState] = {}
    for view in views:
        for state in view.forge:
            seen.setdefault((state.pool, state.resource), state)
    lines = []
    for (pool, resource), state in sorted(seen.items()):
        if state.state == "rate-limited" and state.until is not None:
            lines.append(f"GitHub {resource} (pool {pool}): rate-limited until {_clock(state.until)} "
                         f"(in {_span(state.until - now)}); the data below stops moving until then")
        elif state.state == "would-pause":
            lines.append(f"GitHub {resource} (pool {pool}): would have paused (observe-only); nothing is held")
        else:
            lines.append(f"GitHub {resource} (pool {pool}): {state.state} after a pause")
    return lines


def render(views: Sequence[CloneView], now: float | None = None, *, requests: bool = False) -> str:
    """The table a person reads: one row per clone and branch, then any pause, then errors."""
    now = time.time() if now is None else now
    header = ("REPOSITORY", "BRANCH", "READY", "WAITING", "BLOCKED", "DRAFT", "READ", "TAKEN IN BY")
    rows: list[tuple[str, ...]] = []
    details: list[str] = []
    errors: list[str] = []
    for view in views:
        if view.error is not None:
            errors.append(f"{view.path}: {view.error}")
            continue
        for b in view.branches:
            repo = b.repository or view.path
            if not b.taken_in_here:
                rows.append((repo, b.branch, "-", "-", "-", "-", "-", f"{b.holder} (read it there)"))
                continue
            read = f"{_span(now - b.read_at)} ago" if b.read_at is not None else "never"
            who = "this host" if b.holder is None or b.holder == view.host else str(b.holder)
            counts = tuple(str(b.counts[s]) for s in STATES)
            rows.append((repo, b.branch, *counts, read, who))
            if requests:
                for e in b.entries:
                    title = str(e.get("title", ""))
                    title = title if len(title) <= 60 else title[:59] + "…"
                    details.append(f"  {repo} {b.branch} #{e.get('number')} {e.get('state', '?'):<8} {title} "
                                   f"({e.get('author') or 'ghost'})")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    numeric = {2, 3, 4, 5}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).rjust(w) if i in numeric else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(header), *(line(r) for r in rows)]
    if details:
        out += ["", *details]
    lines = forge_lines(views, now)
    if lines:
        out += ["", *lines]
    if errors:
        out += ["", *(f"cannot read {e}" for e in errors)]
    return "\n".join(out) + "\n"


def payload(views: Sequence[CloneView], now: float | None = None) -> dict[str, Any]:
    """The overview as JSON for a web UI: what Tower's fix asked for (forgeStatus and resetAt)."""
    now = time.time() if now is None else now
    limited = [f for v in views for f in v.forge if f.state == "rate-limited" and f.until is not None]
    return {
        "generated_at": datetime.fromtimestamp(now, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "forgeStatus": "rate-limited" if limited else "ok",
        "resetAt": (datetime.fromtimestamp(max(f.until for f in limited if f.until is not None), tz=timezone.utc)
                    .strftime("%Y-%m-%dT%H:%M:%SZ") if limited else None),
        "clones": [
            {
                "path": v.path,
                "host": v.host,
                "error": v.error,
                "forge": [vars(f) for f in v.forge],
                "branches": [vars(b) for b in v.branches],
            }
            for v in views
        ],
    }


def main(argv: Sequence[str] | None = None, *, run: Runner = run_program, out: Callable[[str], None] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dashboard.py",
        description="A table of the taken-in pull requests of several clones, read from git-sluice (no GitHub calls).",
    )
    parser.add_argument("clones", nargs="+", type=Path, help="clones set up with git sluice setup")
    parser.add_argument("--requests", action="store_true", help="list every request under the table")
    parser.add_argument("--json", action="store_true", help="print the overview payload as JSON")
    parser.add_argument("--watch", type=float, metavar="SECONDS", help="redraw every SECONDS (at least 1) until Ctrl-C")
    parser.add_argument("--program", help="how to run git-sluice (default: git-sluice on PATH, else python -m git_sluice)")
    args = parser.parse_args(argv)
    write = out or (lambda text: (sys.stdout.write(text), sys.stdout.flush()))
    program = shlex.split(args.program) if args.program else None
    if args.watch is not None and args.watch < 1:
        parser.error("--watch needs at least 1 second")

    def once() -> int:
        views = collect(args.clones, program, run)
        if args.json:
            write(json.dumps(payload(views), indent=2) + "\n")
        else:
            write(render(views, requests=args.requests))
        return 1 if any(v.error for v in views) else 0

    if args.watch is None:
        return once()
    clear = "\x1b[H\x1b[2J" if sys.stdout.isatty() and os.environ.get("TERM") != "dumb" else ""
    try:
        while True:
            write(clear)
            once()
            time.sleep(args.watch)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
