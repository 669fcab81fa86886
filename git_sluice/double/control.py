"""The control API: drive a served double over HTTP (``/_double/…``).

For a stand-alone double in another process (the benchmark, ``git sluice
demo``, a shell), the Python methods are mirrored one for one: ``POST
/_double/open_pr {"repo": "o/r", "head_ref": "feat"}`` calls
``gh.open_pr(repo="o/r", head_ref="feat")`` and answers ``{"result": 1}``.
Reading: ``GET /_double/ledger?since=N``, ``writes``, ``counted``, ``requests``, ``on_the_wire``,
``remaining``, ``pr``, ``faults``, ``knobs``, ``clock``. Control calls are
never counted and never in the ledger.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from ..errors import SluiceError

if TYPE_CHECKING:
    from .core import GitHubDouble

PREFIX = "/_double/"

METHODS = (
    "add_user",
    "add_token",
    "add_app",
    "add_installation",
    "set_limit",
    "set_content_limits",
    "add_repo",
    "open_pr",
    "push_pr",
    "edit_title",
    "set_draft",
    "add_label",
    "remove_label",
    "review",
    "add_check_run",
    "set_status",
    "set_mergeable",
    "merge_pr",
    "close_pr",
    "reopen_pr",
    "delete_pr",
    "set_branch",
    "push_branch",
    "star",
    "fork",
    "open_issue",
    "close_issue",
    "comment",
    "fault",
    "clear_faults",
    "mark",
)
KNOBS = (
    "primary_status",
    "primary_message",
    "secondary_status",
    "secondary_concurrency",
    "secondary_points_per_minute",
    "secondary_retry_after",
    "installation_token_ttl",
    "graphql_timeout_nodes",
    "rate_limit_misreports_graphql",
    "etag_304_strong",
    "enterprise",
    "rate_limits",
)
_INT_PARAMS = ("since", "status", "number")


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def dispatch(gh: "GitHubDouble", verb: str, path: str, query: str, body: bytes) -> tuple[int, Any]:
    """One control call to (HTTP status, JSON payload)."""
    name = path[len(PREFIX) :].strip("/")
    params: dict[str, Any] = dict(parse_qsl(query))
    for key in _INT_PARAMS:
        if key in params:
            params[key] = int(params[key])
    try:
        args = json.loads(body) if body.strip() else {}
    except ValueError as error:
        return 400, {"error": f"control body is not JSON: {error}"}
    if not isinstance(args, dict):
        return 400, {"error": "control body must be a JSON object of keyword arguments"}
    try:
        if verb == "POST" and name in METHODS:
            return 200, {"result": _jsonable(getattr(gh, name)(**args))}
        if name == "knobs":
            return _knobs(gh, verb, args)
        if name == "clock":
            return _clock(gh, verb, args)
        if verb == "GET":
            return _read(gh, name, params)
    except (SluiceError, TypeError, ValueError, KeyError) as error:
        return 400, {"error": f"{name}: {error}"}
    return 404, {"error": f"no control call {verb} {PREFIX}{name}"}


def _read(gh: "GitHubDouble", name: str, params: dict[str, Any]) -> tuple[int, Any]:
    if name == "ledger":
        since = params.pop("since", 0)
        calls = gh.calls(since=since, **params)
        return 200, {"calls": [c.to_json() for c in calls], "next": gh.mark()}
    if name == "writes":
        created = params.get("created")
        calls = gh.writes(params.get("pool"), params.get("since"),
                          None if created is None else created.lower() in ("1", "true", "yes"))
        return 200, {"calls": [c.to_json() for c in calls], "next": gh.mark()}
    if name == "counted":
        return 200, {"result": gh.counted(params.get("pool"), params.get("resource"), params.get("since"))}
    if name == "requests":
        return 200, {"result": gh.requests(**params)}
    if name == "on_the_wire":
        return 200, {"result": [_jsonable(a) for a in gh.on_the_wire(**params)]}
    if name == "remaining":
        return 200, {"result": gh.remaining(params["pool"], params["resource"])}
    if name == "pr":
        return 200, {"result": _jsonable(gh.pr(params["repo"], params["number"]))}
    if name == "faults":
        return 200, {"result": [f.to_json() for f in gh.faults.active()]}
    if name == "mark":
        return 200, {"result": gh.mark()}
    if name == "busiest_minute":
        points, endpoint = gh.busiest_minute(params.get("since"), params.get("pool"), params.get("resource"))
        return 200, {"result": {"points": points, "endpoint": endpoint}}
    return 404, {"error": f"no control call GET {PREFIX}{name}"}


def _knobs(gh: "GitHubDouble", verb: str, args: dict[str, Any]) -> tuple[int, Any]:
    if verb == "POST":
        unknown = set(args) - set(KNOBS)
        if unknown:
            return 400, {"error": f"unknown knobs {sorted(unknown)}; known: {', '.join(KNOBS)}"}
        with gh.lock:
            for key, value in args.items():
                setattr(gh, key, value)
    return 200, {"result": {k: getattr(gh, k) for k in KNOBS}}


def _clock(gh: "GitHubDouble", verb: str, args: dict[str, Any]) -> tuple[int, Any]:
    if verb == "POST":
        clock: Any = gh.clock
        if not hasattr(clock, "advance"):
            return 409, {"error": "the double runs on the system clock; only a FakeClock or FileClock can move"}
        if "advance" in args:
            clock.advance(float(args["advance"]))
        if "set" in args:
            clock.set(float(args["set"]))
    return 200, {"time": gh.clock.time()}
