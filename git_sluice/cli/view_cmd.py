"""``git sluice queue`` and ``git sluice status``: what was taken in, and why data may be stale.

Neither command calls GitHub or the remote: they read the clone's sluice dir
and the host store, so a dashboard may poll them as often as it likes.
"""

from __future__ import annotations

import sys
import time
import click

from ._common import handles_errors, print_json
from ._group import main

@main.command("queue")
@click.option("-b", "--branch", "branches", multiple=True, help="Branch (repeatable); default: sluice.branch.")
@click.option("--json", "as_json", is_flag=True,
              help="The versioned queue document (schema 1, docs/queue-json.md); a list of them for several branches.")
@handles_errors
def queue_command(branches: tuple[str, ...], as_json: bool) -> None:
    """The taken-in pull requests, with their state: ready, waiting, blocked or draft.

    Reads the queue the last round left (no call to GitHub): tools should read
    this instead of calling GitHub themselves.
    """
    from ..commands.queue import read_queues
    from ..intake.queue import to_document

    docs = read_queues(".", branches)
    if as_json:
        documents = [to_document(doc) for doc in docs]
        print_json(documents[0] if len(documents) == 1 else documents)
        return
    for doc in docs:
        header = f"{doc.repository} {doc.branch}"
        if doc.withdrawn_by:
            click.echo(f"{header}: taken in by {doc.withdrawn_by} (not this host)")
            continue
        read = _ago(doc.read_at) if doc.read_at else "never read"
        click.echo(f"{header}: {len(doc.entries)} open, read {read}")
        for entry in sorted(doc.entries.values(), key=lambda e: e.number):
            detail = []
            if entry.review_decision:
                detail.append(entry.review_decision.lower().replace("_", " "))
            if entry.checks_state:
                detail.append(f"checks {entry.checks_state.lower()}")
            if entry.failing:
                detail.append("failing: " + ", ".join(entry.failing))
            if entry.mergeable == "CONFLICTING":
                detail.append("conflicts")
            title = entry.title if len(entry.title) <= 50 else entry.title[:49] + "…"
            click.echo(f"  #{entry.number:<5} {entry.state:<8} {title}  ({entry.author or '?'}; {'; '.join(detail) or '-'})")


def _ago(epoch: float | None, now: float | None = None) -> str:
    if epoch is None:
        return "never"
    from ..durations import format_duration

    delta = (now if now is not None else time.time()) - epoch
    if delta < 0:
        return "in " + format_duration(-delta)
    return format_duration(delta) + " ago"


def _until(epoch: float, now: float) -> str:
    from ..durations import format_duration
    from ..errors import local_time

    return f"until {local_time(epoch)} (in {format_duration(max(epoch - now, 0))})"


def _bar(used: int | None, limit: int | None, width: int = 20) -> str:
    if not limit or used is None:
        return "[" + "?" * width + "]"
    filled = min(width, round(width * used / limit))
    return "[" + "#" * filled + "-" * (width - filled) + "]"


@main.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON (schema 1).")
@handles_errors
def status_command(as_json: bool) -> None:
    """Leases, queues, last rounds, and the budget and pauses of each pool (no network).

    A rate-limited forge says so with the time it ends; an observe-only host
    (sluice.enforce=false) shows what would have been paused.
    """
    from ..commands.status import collect_status

    data = collect_status()
    if as_json:
        print_json(data)
        return
    now = data["now"]
    click.echo(f"{data['repository']} on {data['host']}" + ("" if data["enforce"] else " (observe-only: nothing is blocked)"))
    for b in data["branches"]:
        counts = ", ".join(f"{n} {s}" for s, n in b["counts"].items() if n) or "empty"
        click.echo(f"  {b['lease']['text']}")
        if b["withdrawn_by"]:
            click.echo(f"    queue: taken in by {b['withdrawn_by']}")
        else:
            click.echo(f"    queue: {counts}")
        last = b["last_round"]
        if last:
            cost = f"{last.get('requests', 0)} calls, {last.get('counted', 0)} counted, {last.get('points', 0)} points"
            click.echo(f"    last round: {last.get('outcome')} at {last.get('finished_at') or last.get('started_at')}"
                       f" ({cost}): {last.get('why')}")
        else:
            click.echo("    last round: none yet")
    if not data["pools"]:
        click.echo("  budget: nothing seen yet (no call made on this host)")
    for p in data["pools"]:
        used, limit = p["used"], p["limit"]
        line = f"  pool {p['pool']} {p['resource']:<8} {_bar(used, limit)} {used if used is not None else '?'}/{limit or '?'}"
        if p["reset"]:
            line += f", resets {_ago(p['reset'], now)}"
        line += f"; counted here last hour: {p['counted_last_hour']}"
        click.echo(line)
        if p.get("pace") and p["pace"]["stretch"] > 1:
            click.echo(f"    pace: {p['pace']['text']}")
        pause = p["pause"]
        if pause is not None:
            if pause["observe_only"]:
                click.echo(f"    would have paused {_until(pause['until'], now)} ({pause['class']}); "
                           f"{pause['held']} calls would have been held")
            elif p["forge"] == "rate-limited":
                source = "" if pause["source"] == "local" else f", learned from {pause['source']}"
                click.echo(f"    rate-limited {_until(pause['until'], now)} ({pause['class']}{source})")
            else:
                click.echo(f"    recovering: {p['forge']} after a pause")
    failure = data["last_hook_failure"]
    if failure and not failure.get("recovered_at"):
        click.echo(f"  last hook round failed: {failure.get('error')} ({failure.get('time') or failure.get('at')})")
    sys.stdout.flush()
