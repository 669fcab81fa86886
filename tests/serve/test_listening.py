"""``serve``'s listening sockets, as clients that connect all at once meet them."""

from __future__ import annotations

import socket
from pathlib import Path

from git_sluice.serve.server import Listening


def test_a_burst_of_connections_waits_in_the_backlog_rather_than_being_refused(short_dir: Path) -> None:
    """Ten ``gh`` started together connect before serve accepts the first: a Unix socket whose backlog is
    full refuses a non-blocking connect at once (gh: "connect: resource temporarily unavailable"), so the
    backlog is the kernel's maximum, not socketserver's 5. Nothing accepts here (not started)."""
    path = short_dir / "s.sock"
    listening = Listening(relay=None, socket_path=path, port=None)  # type: ignore[arg-type]  # never asked
    clients = []
    try:
        for _ in range(32):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.setblocking(False)
            clients.append(client)
            client.connect(str(path))  # BlockingIOError (EAGAIN) once the backlog is full
    finally:
        for client in clients:
            client.close()  # each accepted connection then ends at once, before any request
        listening.start()  # stop() waits for the accept loop, which must have run
        listening.stop(grace=5)
    assert not path.exists()


def test_a_listening_never_started_stops_at_once(short_dir) -> None:
    """``stop`` without ``start`` (a failure between the two) must not wait for a serve loop that never ran."""
    import threading

    from git_sluice.serve.server import Listening

    listening = Listening(relay=None, socket_path=short_dir / "n.sock", port=None)  # type: ignore[arg-type]
    done = threading.Event()
    threading.Thread(target=lambda: (listening.stop(grace=1), done.set()), daemon=True).start()
    assert done.wait(10)
    assert not (short_dir / "n.sock").exists()
