"""The text ``queue`` and ``status`` print, as lines: one renderer for both ways in.

Dashboards poll these two commands, so :mod:`.fast` runs them without click
(issue 15); the click commands in :mod:`.view_cmd` serve ``--help``, errors
and every other spelling. Both print what these functions return, so the two
can never show different text. Standard library only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
TYPE_CHECKING = False  # typing's own flag, without importing typing (issue 15: ~2 ms of queue's start-up)
if TYPE_CHECKING:
    from typing import Any


def json_text(data: Any) -> str:
    """Every command's ``--json`` text (one layout everywhere)."""
    return json.dumps(data, indent=2, sort_keys=False, default=str)


def show_queue(branches: Sequence[str], as_json: bool, echo: Callable[[str], None]) -> None:
    """What ``git sluice queue`` prints, through ``echo`` (click's, or :mod:`.fast`'s)."""
    from ..commands.queue import read_queues

    docs = read_queues(".", branches)
    if as_json:
        from ..intake.queue import to_document

        documents = [to_document(doc) for doc in docs]
        echo(json_text(documents[0] if len(documents) == 1 else documents))
        return
    from ..clock import default_clock

    for line in queue_lines(docs, default_clock().time()):
        echo(line)


def show_status(as_json: bool, echo: Callable[..., None], *, no_color: bool = False) -> None:
    """What ``git sluice status`` prints, through ``echo`` (click's, or :mod:`.fast`'s: both take ``color=``).

    Coloured as git's porcelain is (:mod:`.colour`): on a terminal, or where
    git's ``color.ui`` says ``always``; never the JSON.
    """
    import sys

    from ..commands.status import collect_status

    data = collect_status()
    if as_json:
        echo(json_text(data))
        return
    from .colour import decide, painter

    on = decide(sys.stdout, flag=False if no_color else None)
    for line in status_lines(data, painter(on)):
        if on:
            echo(line, color=True)  # kept into a pipe too, where git's color.ui says always
        else:
            echo(line)


def queue_lines(docs: Iterable[Any], now: float | None = None) -> Iterator[str]:
    """``git sluice queue`` without ``--json``: a header per branch, a line per request.

    ``now`` by the clock the rounds wrote ``read_at`` with (the test clock in tests): a
    queue read a minute ago never reads "in 40 d".
    """
    for doc in docs:
        header = f"{doc.repository} {doc.branch}"
        if doc.withdrawn_by:
            yield f"{header}: taken in by {doc.withdrawn_by} (not this host)"
            continue
        if doc.read_at:
            yield f"{header}: {len(doc.entries)} open, read {ago(doc.read_at, now)}"
        else:
            yield f"{header}: not read yet (no round has taken it in on this clone: git sluice intake does)"
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
            yield f"  #{entry.number:<5} {entry.state:<8} {title}  ({entry.author or '?'}; {'; '.join(detail) or '-'})"


def _plain(text: str, role: str) -> str:
    return text


COUNT_ROLES = {"ready": "ok", "blocked": "fail"}
LEASE_ROLES = {"live": "ok", "lapsed": "warn"}


def status_lines(data: dict[str, Any], paint: Callable[[str, str], str] = _plain) -> Iterator[str]:
    """``git sluice status`` without ``--json``, from :func:`~git_sluice.commands.status.collect_status`'s data.

    ``paint(text, role)`` colours a key word (:mod:`.colour`); by default nothing is coloured.
    """
    from .colour import paint_words

    now = data["now"]
    yield (paint(f"{data['repository']} on {data['host']}", "head")
           + ("" if data["enforce"] else paint(" (observe-only: nothing is blocked)", "warn")))
    for b in data["branches"]:
        counts = ", ".join(f"{n} {paint(s, COUNT_ROLES.get(s, ''))}" for s, n in b["counts"].items() if n) or "empty"
        yield f"  {paint_words(b['lease']['text'], paint, LEASE_ROLES)}"
        if b["withdrawn_by"]:
            yield f"    queue: taken in by {b['withdrawn_by']}"
        else:
            yield f"    queue: {counts}"
        last = b["last_round"]
        if last:
            requests, points = last.get('requests', 0), last.get('points', 0)
            cost = (f"{requests} call{'' if requests == 1 else 's'}, {last.get('counted', 0)} counted, "
                    f"{points} point{'' if points == 1 else 's'}")
            yield (f"    last round: {last.get('outcome')} at {_when(last.get('finished_at') or last.get('started_at'))}"
                   f" ({cost}): {last.get('why')}")
        else:
            yield "    last round: none yet"
    if not data["pools"]:
        yield "  budget: nothing seen yet (no call made on this host)"
    for p in data["pools"]:
        yield from pool_lines(p, now, paint)
    for serving in data.get("serves", []):
        yield "  " + serve_line(serving)
    failure = data["last_hook_failure"]
    if failure and not failure.get("recovered_at"):
        from ..errors import local_time

        when = failure.get("time")
        shown = local_time(when) if isinstance(when, (int, float)) else str(failure.get("at") or "at an unknown time")
        yield f"  {paint('last hook round failed', 'fail')}: {failure.get('error')} ({shown})"


def pool_lines(p: dict[str, Any], now: float, paint: Callable[[str, str], str] = _plain) -> Iterator[str]:
    """One pool's lines in ``status``: its budget (or that the server reports no limit), pace and pause."""
    used, limit = p["used"], p["limit"]
    if p.get("no_limit"):
        from ..intake.pace import NO_LIMIT_WORDS

        line = f"  pool {p['pool']} {p['resource']:<8} {NO_LIMIT_WORDS}"
    else:
        line = f"  pool {p['pool']} {p['resource']:<8} {bar(used, limit)} {used if used is not None else '?'}/{limit or '?'}"
    if p["reset"]:
        line += f", resets {ago(p['reset'], now)}"
    line += f"; counted here last hour: {p['counted_last_hour']}"
    yield line
    if p.get("pace") and p["pace"]["stretch"] > 1:
        yield f"    {paint('pace:', 'warn')} {p['pace']['text']}"
    pause = p["pause"]
    if pause is not None:
        if pause["observe_only"]:
            yield (f"    {paint('would have paused', 'warn')} {until(pause['until'], now)} ({pause['class']}); "
                   f"{pause['held']} calls would have been held")
        elif p["forge"] == "rate-limited":
            source = "" if pause["source"] == "local" else f", learned from {pause['source']}"
            yield f"    {paint('rate-limited', 'fail')} {until(pause['until'], now)} ({pause['class']}{source})"
        else:
            yield f"    {paint('recovering', 'warn')}: {p['forge']} after a pause"


SERVE_ANSWERS = (("counted", "counted"), ("not_modified", "304 (free)"), ("kept", "kept GraphQL"),
                 ("shared", "shared"), ("refused", "refused"), ("deferred", "deferred writes"))


def serve_line(serving: dict[str, Any]) -> str:
    """One running ``serve``: where it listens, since when, and what passed through it."""
    where = " and ".join(w for w in (serving.get("socket") and f"socket {serving['socket']}",
                                     serving.get("port") and f"port {serving['port']}") if w)
    calls = serving.get("calls") or {}
    told = ", ".join(f"{calls[k]} {name}" for k, name in SERVE_ANSWERS if calls.get(k)) or "no calls yet"
    return f"serve: pid {serving['pid']} on {where or '?'} since {serving.get('started_at') or '?'}: {told}"


def _when(stamp: Any) -> str:
    """A round's RFC 3339 time (as the JSON keeps it) in the local time every other line uses."""
    from ..clock import parse_rfc3339
    from ..errors import local_time

    try:
        return local_time(parse_rfc3339(str(stamp)))
    except (TypeError, ValueError):
        return str(stamp)


def ago(epoch: float | None, now: float | None = None) -> str:
    if epoch is None:
        return "never"
    from ..durations import format_duration

    delta = (now if now is not None else time.time()) - epoch
    if delta < 0:
        return "in " + format_duration(-delta)
    return format_duration(delta) + " ago"


def until(epoch: float, now: float) -> str:
    from ..durations import format_duration
    from ..errors import local_time

    return f"until {local_time(epoch)} (in {format_duration(max(epoch - now, 0))})"


def bar(used: int | None, limit: int | None, width: int = 20) -> str:
    if not limit or used is None:
        return "[" + "?" * width + "]"
    filled = min(width, round(width * used / limit))
    return "[" + "#" * filled + "-" * (width - filled) + "]"
