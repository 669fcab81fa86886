"""The fleet benchmark: the three incidents replayed against the GitHub double, beside their baselines.

    python contrib/bench/fleet.py                       # every scenario, full size (under 10 minutes)
    python contrib/bench/fleet.py --quick               # every scenario, small (under a minute)
    python contrib/bench/fleet.py --out docs/benchmarks.md --json docs/benchmarks.json --readme README.md
    python contrib/bench/fleet.py --only s4             # one scenario (s1 … s10; s5 comes with s1)
    python contrib/bench/fleet.py --quick --allow-dirty # from uncommitted work (the report says so, loudly)

Every figure comes from one commit: the harness names it (``git rev-parse
HEAD``), refuses to run from a tree that differs from it unless told
``--allow-dirty``, and refuses to run when this process, the baselines'
worker or the ``git-sluice`` console script imports git_sluice from another
tree or at another version (fleet_provenance.py).

It writes its section of the Markdown file (between the bench:fleet markers,
leaving the rest alone) and the raw figures as JSON; without ``--out`` /
``--json`` it only prints the table. See docs/benchmarks.md for what each
scenario does and what ran as a real process.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_provenance import ProvenanceError, check, check_worker  # noqa: E402
from fleet_report import (README_END, README_START, machine, render_readme, render_section, worst,  # noqa: E402
                          write_json, write_section)
from fleet_scenarios import FULL, ORDER, QUICK, as_json, run_all  # noqa: E402


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fleet.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="every scenario at a small size (the tests' mode)")
    parser.add_argument("--out", type=Path, help="Markdown file whose bench:fleet section is (re)written")
    parser.add_argument("--json", type=Path, help="file for the raw figures")
    parser.add_argument("--readme", type=Path, help="README whose bench:readme section gets the headline figures")
    parser.add_argument("--only", action="append", default=[], metavar="SCENARIO",
                        help="run only these scenarios (s1 … s10), repeatable")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="run from a tree with uncommitted changes (development; the report says so)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the actors do")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.ERROR, format="%(name)s: %(message)s")
    if not args.verbose:
        # git-sluice's warnings are kept for the report (fleet_runs.WARNINGS), not printed
        logging.getLogger("git_sluice").propagate = False
    profile = QUICK if args.quick else FULL
    unknown = sorted(set(args.only) - set(ORDER))
    if unknown:
        print(f"fleet.py: --only takes {', '.join(ORDER)}, not {', '.join(unknown)}", file=sys.stderr)
        return 2
    try:
        provenance = check(args.allow_dirty)
    except ProvenanceError as exc:
        print(f"fleet.py: refusing to run: {exc}", file=sys.stderr)
        return 2
    if provenance["dirty"]:
        print(f"fleet.py: WARNING: the tree differs from {provenance['short']} ({provenance['change_count']} "
              "change(s)); the figures are not from one commit", file=sys.stderr)
    started = time.monotonic()
    facts = machine()
    command = "python contrib/bench/fleet.py" + "".join(
        f" {shlex.quote(a)}" for a in (argv if argv is not None else sys.argv[1:]))
    try:
        scenarios = run_all(profile, set(args.only) or None, say=lambda text: print(text, file=sys.stderr, flush=True),
                            check_worker=check_worker)
    except ProvenanceError as exc:
        print(f"fleet.py: refusing to run: {exc}", file=sys.stderr)
        return 2
    result = {
        "command": command,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "profile": profile.name,
        "provenance": provenance,
        "machine": facts,
        "seconds": time.monotonic() - started,
        "json_path": str(args.json) if args.json else "(not written)",
        "scenarios": as_json(scenarios),
        "scenarios_obj": scenarios,
    }
    w = worst(scenarios)
    result["worst_ratio"] = None if w is None else {
        "scenario": w[1], "figure": w[0].figure, "baseline": w[0].baseline_name, "ratio": w[0].ratio,
        "baseline_value": w[0].baseline, "sluice_value": w[0].sluice,
    }
    section = render_section(result)
    if args.out:
        write_section(args.out, section)
    if args.json:
        write_json(args.json, result)
    if args.readme:
        write_section(args.readme, render_readme(result), README_START, README_END)
    print(section)
    failed = [sc.key for sc in scenarios if sc.status != "ok"]
    if failed:
        print(f"failed scenarios: {', '.join(failed)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
