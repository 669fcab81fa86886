"""``python -m git_sluice.double [--scenario FILE] [--host H] [--port N] [--enterprise] [--rate-limits on|off]``.

Prints the base URL alone on the first line of stdout (flushed), so a parent
process reads one line and knows where to talk; then serves until SIGINT or
SIGTERM. With ``GIT_SLUICE_TEST_CLOCK`` set it runs on that FileClock, so the
double and the processes under test share one notion of time.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from types import FrameType

from ..clock import FileClock, default_clock
from .core import GitHubDouble
from .graphql_api import github_schema
from .scenario import ScenarioError, load_scenario_file
from .server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m git_sluice.double", description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", help="JSON file declaring users, tokens, repos, pull requests …")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    parser.add_argument("--enterprise", action="store_true",
                        help="serve GitHub Enterprise Server's paths (/api/v3, /api/graphql), rate limits off")
    parser.add_argument("--rate-limits", choices=("on", "off"),
                        help="rate limiting on or off (default: on for github.com, off for --enterprise)")
    args = parser.parse_args(argv)

    clock = default_clock()
    if isinstance(clock, FileClock) and not clock.path.exists():
        # A test that names a clock file but has not written it yet starts it now.
        clock.set(time.time())
    gh = GitHubDouble(clock=clock)
    if args.scenario:
        try:
            load_scenario_file(gh, args.scenario)
        except ScenarioError as error:
            print(f"error: {error}", file=sys.stderr)
            return error.exit_code
    if args.enterprise:
        gh.enterprise, gh.rate_limits = True, False
    if args.rate_limits is not None:
        gh.rate_limits = args.rate_limits == "on"

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with serve(gh, host=args.host, port=args.port) as server:
        print(server.url, flush=True)
        # Build GitHub's schema now rather than on the first GraphQL call (it takes a moment).
        threading.Thread(target=github_schema, name="schema-warmup", daemon=True).start()
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
