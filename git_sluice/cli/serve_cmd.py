"""``git sluice serve``: the host's unmodified tools (gh, octokit, PyGithub) through git-sluice.

Point ``gh`` at the socket (``gh config set http_unix_socket PATH``) or a
client's base URL at the port, and every call goes the road ``git sluice
api`` takes: conditional, shared, paused with the fleet, writes paced.
See docs/serve.md.
"""

from __future__ import annotations

import threading
from pathlib import Path

import click

from ._common import handles_errors, setup_logging
from ._group import main


@main.command("serve")
@click.option("--socket", "socket_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The Unix socket to answer on (default: serve.sock in the host state dir). Mode 0600.")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Also answer on this loopback TCP port (0 picks a free one); calls there must carry a token.")
@click.option("--host", "bind", default="127.0.0.1", show_default=True, help="The loopback address for --port.")
@click.option("--no-socket", is_flag=True, help="Answer on --port only.")
@click.option("-v", "--verbose", is_flag=True, help="Log every call (to stderr).")
@handles_errors
def serve_command(socket_path: Path | None, port: int | None, bind: str, no_socket: bool, verbose: bool) -> None:
    """Answer GitHub's REST and GraphQL API for this host's tools, through git-sluice.

    Runs until SIGTERM or SIGINT (calls in flight finish; the socket goes).
    A caller's own token decides its pool; on the socket, a call without one
    goes with this clone's credentials. Prints where it listens, one line
    each: socket PATH and port N. Exit codes: 0 stopped by SIGTERM / SIGINT;
    2 usage, configuration, the socket or port already in use, or not a
    loopback address.
    """
    from ..commands.serve import Serving, default_socket, serve
    from ..paths import host_state_dir
    from ..runtime.session import open_session
    from ..runtime.stopper import Stopper

    setup_logging(verbose)
    if no_socket and port is None:
        raise click.UsageError("--no-socket needs --port")
    state_dir = host_state_dir()
    socket = None if no_socket else (socket_path or default_socket(state_dir))

    def ready(serving: Serving) -> None:
        if serving.socket is not None:
            click.echo(f"socket {serving.socket}")
        if serving.port is not None:
            click.echo(f"port {serving.port}")

    stopper = Stopper()
    stopper.install()
    draining = threading.Event()  # not the stopper's: a stop lets the calls in flight finish first
    with open_session(need_branches=False, cancel=draining) as session:
        serve(session, state_dir=state_dir, socket=socket, port=port, host=bind, stopper=stopper, ready=ready,
              cancel=draining)
