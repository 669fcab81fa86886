#!/usr/bin/env python3
"""Regenerate the man page ``man/git-sluice.1`` from the CLI and the reference.

    python contrib/man/generate.py            # rewrite man/git-sluice.1
    python contrib/man/generate.py --check    # exit 1 if the committed page is stale

Why a man page at all: ``git sluice --help`` is turned by git into
``git help sluice``, which opens ``git-sluice(1)``; without a page that is
"No manual entry". pip installs the page into ``<prefix>/share/man/man1``
(``[tool.setuptools.data-files]`` in pyproject.toml), where man-db finds it
from ``<prefix>/bin`` on ``PATH``.

What comes from where, so nothing is written twice: the synopsis, the
description and every command with its options are walked from click's
command tree (``git_sluice.cli.main``); the configuration keys, exit codes,
environment and files are the tables of ``docs/reference.md``, which
``tests/test_docs.py`` checks against the code. The roff is hand-rolled and
plain (``.TH``, ``.SH``, ``.SS``, ``.TP``, ``.PP``) so any man(7) renderer
shows it, and carries no date, so regenerating an unchanged CLI gives the
same bytes.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "man" / "git-sluice.1"
REFERENCE = ROOT / "docs" / "reference.md"

# The reference sections whose first table becomes a man page section.
TABLE_SECTIONS: tuple[tuple[str, str], ...] = (
    ("Configuration", "CONFIGURATION"),
    ("Exit codes", "EXIT STATUS"),
    ("Environment", "ENVIRONMENT"),
    ("Files", "FILES"),
)


# ----------------------------------------------------------------- roff text


def escape(text: str) -> str:
    """Plain text made safe for roff: backslashes, and dots or quotes that would start a request."""
    text = text.replace("\\", "\\e")
    # a break point after a comma inside a long run such as {"a","b"}: troff cannot break it otherwise
    text = re.sub(r",(?=\S)", ",\\:", text)
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in text.split("\n"))


def inline(text: str) -> str:
    """Markdown / reST inline marks to roff fonts; everything else escaped."""
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)  # links: keep the words
    out: list[str] = []
    pattern = re.compile(r"``(.+?)``|`(.+?)`|\*\*(.+?)\*\*|(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
    pos = 0
    for match in pattern.finditer(text):
        out.append(escape(text[pos : match.start()]))
        code = match.group(1) or match.group(2)
        if code is not None:
            out.append("\\fB" + escape(code).replace("-", "\\-") + "\\fR")
        elif match.group(3) is not None:
            out.append("\\fB" + escape(match.group(3)) + "\\fR")
        else:
            out.append("\\fI" + escape(match.group(4)) + "\\fR")
        pos = match.end()
    out.append(escape(text[pos:]))
    result = "".join(out)
    # a line of the output must not start with a control character after the marks
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in result.split("\n"))


def paragraphs(help_text: str | None) -> list[str]:
    """A click docstring as paragraphs of one line each (roff fills them)."""
    if not help_text:
        return []
    text = inspect.cleandoc(help_text)
    paras = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip() not in ("", "\b")]
        if lines:
            paras.append(" ".join(lines))
    return paras


def option_label(opts: str) -> str:
    """``-b, --branch TEXT`` -> option names bold, the metavar italic."""
    parts = []
    for word in opts.split(" "):
        bare = word.rstrip(",")
        comma = "," if word.endswith(",") else ""
        if bare.startswith("-"):
            parts.append("\\fB" + escape(bare).replace("-", "\\-") + "\\fR" + comma)
        else:
            parts.append("\\fI" + escape(bare) + "\\fR" + comma)
    return " ".join(parts)


# ------------------------------------------------------------------ the CLI


def _metavar(param: click.Parameter, ctx: click.Context) -> str:
    try:
        return param.make_metavar(ctx)  # click >= 8.2
    except TypeError:
        return param.make_metavar()  # type: ignore[call-arg]


def commands(main: click.Group) -> list[tuple[str, click.Command]]:
    """The visible commands, by name."""
    ctx = click.Context(main, info_name="git sluice")
    found = []
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        if command is not None and not command.hidden:
            found.append((name, command))
    return found


def synopsis(name: str, command: click.Command) -> str:
    """One synopsis line: ``git sluice wait [--timeout DURATION] [--json] [-v] NUMBER``."""
    ctx = click.Context(command, info_name=f"git sluice {name}")
    words = [f"\\fBgit sluice {escape(name)}\\fR"]
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, click.Argument):
            words.append("\\fI" + escape(_metavar(param, ctx)) + "\\fR")
            continue
        assert isinstance(param, click.Option)
        short = [o for o in param.opts if not o.startswith("--")]
        flag = (short or param.opts)[0].replace("-", "\\-")
        if param.is_flag:
            item = f"[\\fB{flag}\\fR]"
        else:
            item = f"[\\fB{flag}\\fR \\fI{escape(_metavar(param, ctx))}\\fR]"
        if param.multiple:
            item += "..."
        words.append(item)
    return " ".join(words)


def command_section(name: str, command: click.Command) -> list[str]:
    ctx = click.Context(command, info_name=f"git sluice {name}")
    lines = [f'.SS "git sluice {escape(name)}"', synopsis(name, command)]
    for para in paragraphs(command.help):
        lines += [".PP", inline(para)]
    # command.params leaves out -h/--help (said once, under DESCRIPTION); click's
    # arguments carry no help of their own: the command's text names them
    for param in command.params:
        if getattr(param, "hidden", False) or not isinstance(param, click.Option):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        opts, help_text = record
        lines += [".TP", option_label(opts), inline(" ".join(help_text.split())) or "\\&"]
    return lines


# ------------------------------------------------------------ the reference


def reference_table(markdown: str, heading: str) -> list[list[str]]:
    """The body rows of the first table under ``## heading`` in the reference."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", markdown, flags=re.M | re.S)
    if match is None:
        raise SystemExit(f"docs/reference.md has no '## {heading}' section")
    rows: list[list[str]] = []
    started = False
    for line in match.group(1).splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if all(re.fullmatch(r":?-+:?", c) for c in cells):
                started = True
                continue
            if started:
                rows.append(cells)
        elif started:
            break
    if not rows:
        raise SystemExit(f"docs/reference.md '## {heading}' has no table")
    return rows


def table_section(title: str, rows: list[list[str]], heading: str) -> list[str]:
    lines = [f".SH {title}"]
    for row in rows:
        first, rest = row[0], row[1:]
        lines += [".TP", inline(first)]
        if heading == "Configuration" and len(rest) >= 3:
            default, form, meaning = rest[0], rest[1], rest[2]
            lines.append(inline(meaning))
            lines += [".br", "Default: " + inline(default) + ". Accepted: " + inline(form) + "."]
        elif heading == "Exit codes" and len(rest) >= 2:
            lines.append(inline(rest[0]))
        else:
            lines.append(inline(" ".join(rest)))
    return lines


# --------------------------------------------------------------------- page


def render() -> str:
    """The whole page, as roff text."""
    from git_sluice import __version__
    from git_sluice.cli import main

    reference = REFERENCE.read_text(encoding="utf-8")
    about = paragraphs(main.help)
    lines = [
        ".\\\" GENERATED by contrib/man/generate.py from the CLI and docs/reference.md; do not edit.",
        f'.TH "GIT\\-SLUICE" "1" "" "git\\-sluice {escape(__version__)}" "Git Manual"',
        ".ad l",
        ".nh",
        ".SH NAME",
        "git\\-sluice \\- " + inline(about[0][0].lower() + about[0][1:].rstrip(".")),
        ".SH SYNOPSIS",
        "\\fBgit sluice\\fR [\\fB\\-\\-version\\fR] [\\fB\\-h\\fR|\\fB\\-\\-help\\fR] \\fIcommand\\fR [\\fIoptions\\fR] [\\fIargs\\fR]",
    ]
    for name, command in commands(main):
        lines += [".br", synopsis(name, command)]
    lines += [".SH DESCRIPTION"]
    for para in about[1:]:
        lines += [".PP", inline(para)]
    lines += [
        ".PP",
        inline(
            "git runs the `git-sluice` program as `git sluice`. `git sluice --help` shows this page "
            "(git turns it into `git help sluice`); `git sluice -h` and `git sluice COMMAND --help` "
            "print the built-in help. Every command takes `-h`/`--help`."
        ),
        ".SH COMMANDS",
    ]
    for name, command in commands(main):
        lines += command_section(name, command)
    for heading, title in TABLE_SECTIONS:
        lines += table_section(title, reference_table(reference, heading), heading)
    lines += [
        ".SH SEE ALSO",
        "\\fBgit\\fR(1), \\fBgit\\-config\\fR(1), \\fBgithooks\\fR(5), \\fBgit\\-push\\fR(1)",
        ".PP",
        inline(
            "In the source distribution: `README.md`, `docs/reference.md` (this page's source), "
            "`docs/design.md`, `docs/operations.md`, `docs/protocols.md`, `docs/queue-json.md`, `docs/hooks.md`."
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report a stale page (exit 1 if stale)")
    parser.add_argument("--out", type=Path, default=PAGE, help="where to write (default: man/git-sluice.1)")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else None
        if current != text:
            print(f"stale: {args.out} (run python contrib/man/generate.py)", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
