"""``status``, ``queue``, ``intake`` and ``_hook-round`` without click: what is polled most starts fastest (issue 15).

A dashboard polls ``git sluice queue --json`` every minute per repository,
and every hook that concerns git-sluice starts ``_hook-round``; importing
click and the whole command tree cost each of them more than their own work.
:func:`dispatch` runs the plain spellings of these commands directly (``intake``
without ``-b``, whose "no such branch" is click's usage error);
anything else — ``--help``, an unknown or attached option, a value that
looks like an option, shell completion, a misconfigured (ASCII) output
stream — returns None, and :mod:`git_sluice.cli` (click) handles it, so help
and every error read exactly as before. What the commands print comes from
:mod:`.views`, the same functions the click commands call, and it is written
as ``click.echo`` writes it (ANSI sequences stripped when not on a terminal).
Exit codes follow click's standalone mode: 0, a SluiceError's code, 1 after
an interrupt or a closed pipe. Standard library only at import.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Callable, Sequence

_ANSI = r"\033\[[0-?]*[ -/]*[@-~]"  # click's own pattern (click._compat._ansi_re), compiled only for text with an ESC

Parsed = tuple[str, dict[str, object]]


def parse(argv: Sequence[str]) -> Parsed | None:
    """``(command, options)`` for the spellings run here; None for anything click should see."""
    if not argv:
        return None
    command, rest = argv[0], list(argv[1:])
    if command == "status":
        found = _values(rest, {}, {"--json": "json", "--no-color": "no_color"})
        return None if found is None else (command, {"as_json": "json" in found, "no_color": "no_color" in found})
    if command == "queue":
        return _queue(rest)
    if command == "_hook-round":
        return _hook_round(rest)
    if command == "intake":
        return _intake(rest)
    return None


def _values(rest: list[str], names: dict[str, str], flags: dict[str, str]) -> dict[str, list[str]] | None:
    """Options as click would read them, for the plain spellings only (``--name value``, ``--name=value``)."""
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in flags:
            found.setdefault(flags[arg], []).append("")
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if eq and name.startswith("--") and name in names:
            found.setdefault(names[name], []).append(value)
            i += 1
            continue
        if arg in names and i + 1 < len(rest) and not rest[i + 1].startswith("-"):
            found.setdefault(names[arg], []).append(rest[i + 1])
            i += 2
            continue
        return None  # anything else (help, an unknown option, an argument): click's to say
    return found


def _queue(rest: list[str]) -> Parsed | None:
    found = _values(rest, {"-b": "branch", "--branch": "branch"}, {"--json": "json"})
    if found is None:
        return None
    return "queue", {"branches": tuple(found.get("branch", ())), "as_json": "json" in found}


def _intake(rest: list[str]) -> Parsed | None:
    """``intake`` without ``-b`` (a branch that is no branch is click's to report) and with a plain timeout."""
    found = _values(rest, {"--timeout": "timeout"}, {"--wait": "wait", "--json": "json", "-v": "verbose",
                                                     "--verbose": "verbose"})
    if found is None or ("timeout" in found and "wait" not in found):  # click's usage error for the second
        return None
    timeout = None
    if "timeout" in found:
        from ..durations import parse_duration

        try:
            timeout = parse_duration(found["timeout"][-1])  # click: the last of a repeated option wins
        except ValueError:
            return None  # click's words for a bad duration
    return "intake", {"wait": "wait" in found, "timeout": timeout, "as_json": "json" in found,
                      "verbose": "verbose" in found}


def _hook_round(rest: list[str]) -> Parsed | None:
    found = _values(rest, {"--wait-pid": "wait_pid", "--inbox": "inbox"}, {})
    if found is None:
        return None
    pid = found.get("wait_pid", [None])[-1]  # click: the last of a repeated option wins
    if pid is not None and not (pid.isascii() and pid.isdigit()):
        return None  # click's int conversion, and its error, for anything but plain digits
    return "_hook-round", {"wait_pid": int(pid) if pid is not None else None,
                           "inbox": found.get("inbox", [None])[-1]}


def _plain(stream: object) -> bool:
    """Whether click would write to ``stream`` as it is (its encoding is not ASCII)."""
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        return codecs.lookup(encoding).name != "ascii"
    except LookupError:
        return False


def echo(text: str, *, err: bool = False, color: bool | None = None) -> None:
    """``click.echo`` for text: a newline, ANSI sequences stripped off a terminal (unless ``color``), flushed."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    out = text + "\n"
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty and not color and "\033" in out:
        import re

        out = re.sub(_ANSI, "", out)
    stream.write(out)
    stream.flush()


def dispatch(argv: Sequence[str]) -> int | None:
    """Run ``argv`` here and return its exit code, or None to leave it to click."""
    parsed = parse(argv)
    if parsed is None or any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None  # shell completion is click's
    if not (_plain(sys.stdout) and _plain(sys.stderr)):
        return None
    command, options = parsed
    run: Callable[[], None]
    if command == "_hook-round":
        def run() -> None:
            from ..commands import hook_round

            hook_round.main(options["wait_pid"], options["inbox"])  # type: ignore[arg-type]
    elif command == "intake":
        def run() -> None:
            from .intake_run import run_intake

            run_intake((), bool(options["wait"]), options["timeout"], bool(options["as_json"]),  # type: ignore[arg-type]
                       bool(options["verbose"]), echo)
    else:
        def run() -> None:
            from .views import show_queue, show_status

            if command == "queue":
                show_queue(options["branches"], bool(options["as_json"]), echo)  # type: ignore[arg-type]
            else:
                show_status(bool(options["as_json"]), echo, no_color=bool(options["no_color"]))
    return _standalone(run)


def _standalone(run: Callable[[], None]) -> int:
    """click's standalone mode for one command: its error words, its exit codes."""
    from ..errors import SluiceError

    try:
        run()
    except SluiceError as exc:  # cli._common.handles_errors
        echo(f"git sluice: {exc}", err=True)
        return exc.exit_code
    except (EOFError, KeyboardInterrupt):
        echo("", err=True)
        echo("Aborted!", err=True)
        return 1
    except OSError as exc:
        import errno

        if exc.errno != errno.EPIPE:
            raise
        _quiet_closed_pipe()
        return 1
    return 0


def _quiet_closed_pipe() -> None:
    """The reader went away: the interpreter's last flush must not complain (click's PacifyFlushWrapper)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
        except (AttributeError, ValueError, OSError):
            continue
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
        except OSError:
            pass
