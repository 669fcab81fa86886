"""Each layer of one call's road alone, over ``httpx.MockTransport``: no double, no network.

The layers meet only through ``request.extensions`` (the call's options, the
permit) and ``response.extensions`` (the verdict, the cache marks), so each
is driven here with a hand-made inner transport and asserted by what reached
that transport and what came back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from git_sluice.clock import FakeClock
from git_sluice.errors import (
    AllowanceSpent,
    CallTimedOut,
    ForeignURL,
    ForgeError,
    ForgeUnavailable,
    Interrupted,
)
from git_sluice.forge import rules
from git_sluice.forge.flight import SingleFlight
from git_sluice.forge.hoststore import HostStore, Permit
from git_sluice.forge.kept_answers import KeptAnswers, address_of
from git_sluice.forge.ledger import Ledger
from git_sluice.forge.failure_memory import FailureMemory
from git_sluice.forge.host_gate import Permits, HostGate
from git_sluice.forge.revalidate import Revalidate
from git_sluice.forge.layers import (
    CALL,
    COUNTED,
    FROM_CACHE,
    PERMIT,
    REVALIDATED,
    SHARED,
    STORED,
    VERDICT,
    AnswerFailed,
    Call,
    Stats,
    Waits,
)
from git_sluice.forge.wire import Authorize, Deadline

API = "https://api.example.test"
URL = f"{API}/repos/o/r/pulls"
Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def kept(tmp_path: Path) -> KeptAnswers:
    return KeptAnswers(tmp_path / "kept")


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[HostStore]:
    with HostStore(tmp_path / "host.sqlite3", clock=clock) as s:
        yield s


class Recorder:
    """An inner transport that answers from a list (or a function) and keeps every request."""

    def __init__(self, *answers: httpx.Response | Handler) -> None:
        self.answers = list(answers)
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return answer(request) if callable(answer) else answer

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def request(method: str = "GET", url: str = URL, **options: object) -> httpx.Request:
    call = Call(address_of(method, url), **options)  # type: ignore[arg-type]
    return httpx.Request(method, url, extensions={CALL: call})


def ok(body: bytes = b"[]", status: int = 200, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers={k.replace("_", "-"): v for k, v in headers.items()}, content=body)


# --------------------------------------------------------------------------- failure memory


def test_failure_memory_asks_a_failing_address_once_per_window(kept: KeptAnswers, clock: FakeClock) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise AnswerFailed("GitHub failed (502)")

    inner = Recorder(fail)
    stats = Stats()
    layer = FailureMemory(inner.transport, kept, clock, stats)
    with pytest.raises(ForgeUnavailable) as first:
        layer.handle_request(request())
    assert first.value.until == clock.time() + 60 and "502" in str(first.value)
    with pytest.raises(ForgeUnavailable):
        layer.handle_request(request())
    assert len(inner.seen) == 1 and stats.failures == 1
    clock.advance(61)
    inner.answers = [ok()]
    assert layer.handle_request(request()).status_code == 200
    assert len(inner.seen) == 2


def test_failure_memory_names_transport_failures(kept: KeptAnswers, clock: FakeClock) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as exc:
            raise httpx.ConnectError("refused", request=request) from exc

    layer = FailureMemory(Recorder(refuse).transport, kept, clock, Stats())
    with pytest.raises(ForgeUnavailable) as caught:
        layer.handle_request(request())
    assert caught.value.kind == "refused" and caught.value.remembered
    assert caught.value.reason.startswith("connection refused by api.example.test:443")
    assert isinstance(caught.value, ForgeError)  # one family a caller can catch


# ---------------------------------------------------------------------------- single flight


def spy_on_lock_tries(kept: KeptAnswers, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """An event set once a caller first tries the flight lock (so the test knows it is waiting)."""
    tried = threading.Event()
    real = kept.flight_lock

    def spying(address: str) -> object:
        lock = real(address)
        acquire = lock.acquire

        def trying(*args: object, **kwargs: object) -> object:
            tried.set()
            return acquire(*args, **kwargs)  # type: ignore[arg-type]

        lock.acquire = trying  # type: ignore[method-assign,assignment]
        return lock

    monkeypatch.setattr(kept, "flight_lock", spying)
    return tried


def test_a_waiter_shares_the_answer_of_the_call_it_waited_for(
    kept: KeptAnswers, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = Recorder(ok(b"[1]"))
    stats = Stats()
    layer = SingleFlight(inner.transport, kept, clock, stats, Waits(clock))
    address = address_of("GET", URL)
    holder = kept.flight_lock(address)
    holder.acquire()
    tried = spy_on_lock_tries(kept, monkeypatch)
    got: list[httpx.Response] = []
    waiter = threading.Thread(target=lambda: got.append(layer.handle_request(request())))
    waiter.start()
    assert tried.wait(10)  # the waiter has read the generation and now polls the lock
    kept.store_full(kept.meta(address), 200, {"etag": '"a"'}, b"[1]", clock.time())  # the holder's call ended
    holder.release()
    waiter.join(5)
    assert got and got[0].read() == b"[1]"
    assert got[0].extensions[SHARED] and got[0].extensions[FROM_CACHE]
    assert inner.seen == [] and stats.shared == 1


def test_a_waiter_whose_patience_runs_out_takes_its_own_turn_instead_of_crashing(
    kept: KeptAnswers, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = Recorder(ok())
    layer = SingleFlight(inner.transport, kept, clock, Stats(), Waits(clock), patience=30)
    holder = kept.flight_lock(address_of("GET", URL))
    holder.acquire()  # a caller that never finishes (stopped, or waiting out a pause)
    tried = spy_on_lock_tries(kept, monkeypatch)
    errors: list[BaseException] = []
    got: list[httpx.Response] = []

    def call() -> None:
        try:
            got.append(layer.handle_request(request()))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    waiter = threading.Thread(target=call)
    waiter.start()
    assert tried.wait(10)
    assert waiter.is_alive() and inner.seen == []  # waiting, not crashing, not calling
    clock.advance(31)
    waiter.join(10)
    holder.release()
    assert not errors and got and got[0].status_code == 200
    assert len(inner.seen) == 1


def test_a_waiter_whose_own_deadline_runs_out_is_told_so_and_sends_nothing(
    kept: KeptAnswers, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = Recorder(ok())
    layer = SingleFlight(inner.transport, kept, clock, Stats(), Waits(clock))
    holder = kept.flight_lock(address_of("GET", URL))
    holder.acquire()
    tried = spy_on_lock_tries(kept, monkeypatch)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            layer.handle_request(request(deadline=clock.time() + 5))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    waiter = threading.Thread(target=call)
    waiter.start()
    assert tried.wait(10)
    clock.advance(6)
    waiter.join(10)
    holder.release()
    assert len(errors) == 1 and isinstance(errors[0], CallTimedOut) and not errors[0].sent
    assert "another caller" in str(errors[0]) and inner.seen == []


def test_a_waiter_stops_when_told(kept: KeptAnswers, clock: FakeClock) -> None:
    cancel = threading.Event()
    layer = SingleFlight(Recorder(ok()).transport, kept, clock, Stats(), Waits(clock, cancel))
    holder = kept.flight_lock(address_of("GET", URL))
    holder.acquire()
    cancel.set()
    try:
        with pytest.raises(Interrupted):
            layer.handle_request(request())
    finally:
        holder.release()


def test_single_flight_lets_other_methods_through(kept: KeptAnswers, clock: FakeClock) -> None:
    inner = Recorder(ok(b"{}", 201))
    layer = SingleFlight(inner.transport, kept, clock, Stats(), Waits(clock))
    assert layer.handle_request(request("POST")).status_code == 201
    assert len(inner.seen) == 1 and not kept.directory.exists()  # no lock taken, nothing kept


# ----------------------------------------------------------------------------- revalidation


def test_a_kept_answer_is_revalidated_and_a_304_answered_from_it(kept: KeptAnswers, clock: FakeClock) -> None:
    inner = Recorder(ok(b"[1]", etag='W/"1"', link='<x>; rel="next"'), ok(b"", 304, etag='W/"1"'))
    stats = Stats()
    layer = Revalidate(inner.transport, kept, clock, stats)
    first = layer.handle_request(request())
    assert first.extensions[STORED] and "if-none-match" not in inner.seen[0].headers
    second = layer.handle_request(request())
    assert inner.seen[1].headers["if-none-match"] == 'W/"1"'
    assert second.read() == b"[1]" and second.headers["link"] == '<x>; rel="next"'
    assert second.extensions[FROM_CACHE] and second.extensions[REVALIDATED] and not second.extensions[COUNTED]
    assert stats.not_modified == 1


def test_a_304_for_a_body_no_longer_kept_is_asked_again_unconditionally(
    kept: KeptAnswers, clock: FakeClock
) -> None:
    inner = Recorder(ok(b"", 304), ok(b"[2]", etag='"2"'))
    layer = Revalidate(inner.transport, kept, clock, Stats())
    assert layer.handle_request(request()).read() == b"[2]"
    assert len(inner.seen) == 2 and "if-none-match" not in inner.seen[1].headers


def test_revalidation_leaves_other_methods_alone(kept: KeptAnswers, clock: FakeClock) -> None:
    inner = Recorder(ok(b"{}", etag='"p"'))
    layer = Revalidate(inner.transport, kept, clock, Stats())
    layer.handle_request(request("POST"))
    assert kept.meta(address_of("POST", URL)).etag is None


# --------------------------------------------------------------------------------- the gate


class Verdicts(httpx.BaseTransport):
    """Stands in for the ledger: classifies what the recorder answers, as the ledger would."""

    def __init__(self, recorder: Recorder, clock: FakeClock) -> None:
        self.recorder, self.clock = recorder, clock

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.recorder(request)
        verdict = rules.classify(
            response.status_code, dict(response.headers), response.read(), method=request.method,
            path=request.url.path, now=self.clock.time(),
        )
        response.extensions = {**response.extensions, VERDICT: verdict}
        return response


def gate(store: HostStore, clock: FakeClock, recorder: Recorder, stats: Stats | None = None,
         **listeners: object) -> HostGate:
    stats = stats or Stats()
    permits = Permits(store, clock, Waits(clock), stats, enforce=True, permit_deadline=60)
    return HostGate(Verdicts(recorder, clock), permits, lambda _resource: "pool1", stats, **listeners)  # type: ignore[arg-type]


def test_a_throttle_pauses_the_host_and_the_next_call_is_not_sent(store: HostStore, clock: FakeClock) -> None:
    inner = Recorder(ok(b'{"message": "You have exceeded a secondary rate limit"}', 403, retry_after="120"), ok())
    published: list[object] = []
    layer = gate(store, clock, inner, on_pause=published.append)
    with pytest.raises(AllowanceSpent) as caught:
        layer.handle_request(request())
    assert caught.value.until == clock.time() + 120 and caught.value.exit_code == 3
    with pytest.raises(AllowanceSpent):
        layer.handle_request(request())
    assert len(inner.seen) == 1 and len(published) == 1


def test_a_waiting_caller_waits_the_pause_out_then_is_answered(store: HostStore, clock: FakeClock) -> None:
    inner = Recorder(ok(b'{"message": "API rate limit exceeded"}', 429, retry_after="60"), ok(b"[]"))
    start = clock.time()
    answer = gate(store, clock, inner).handle_request(request(wait=True))
    assert answer.status_code == 200 and clock.time() >= start + 60
    assert len(inner.seen) == 2


def test_a_failure_answer_goes_to_failure_memory_and_pauses_nothing(store: HostStore, clock: FakeClock) -> None:
    with pytest.raises(AnswerFailed):
        gate(store, clock, Recorder(ok(b"", 502))).handle_request(request())
    assert store.pause_for("pool1", "core") is None


def test_a_refusal_before_the_wire_hands_the_permit_back_unsent(store: HostStore, clock: FakeClock) -> None:
    def too_late(request: httpx.Request) -> httpx.Response:
        raise CallTimedOut("GET x", sent=False)

    with pytest.raises(CallTimedOut):
        gate(store, clock, Recorder(too_late)).handle_request(request())
    assert store.counters()[("pool1", "core")]["not_attempted"] == 1


def test_the_gate_hands_the_permit_to_the_layers_below(store: HostStore, clock: FakeClock) -> None:
    inner = Recorder(ok())
    gate(store, clock, inner).handle_request(request())
    permit = inner.seen[0].extensions[PERMIT]
    assert isinstance(permit, Permit) and permit.pool == "pool1" and permit.resource == "core"


def test_a_wait_for_a_pause_stops_when_told(store: HostStore, clock: FakeClock) -> None:
    cancel = threading.Event()
    inner = Recorder(ok(b'{"message": "API rate limit exceeded"}', 429, retry_after="600"), ok())
    stats = Stats()
    permits = Permits(store, clock, Waits(clock, cancel), stats, enforce=True, permit_deadline=60)
    layer = HostGate(Verdicts(inner, clock), permits, lambda _resource: "pool1", stats,
                     on_pause=lambda view: cancel.set())  # SIGTERM arrives as the pause opens
    start = clock.time()
    with pytest.raises(Interrupted):
        layer.handle_request(request(wait=True))
    assert len(inner.seen) == 1 and clock.time() < start + 600


# ------------------------------------------------------------------------------- the ledger


def test_the_ledger_records_rate_headers_and_what_github_counted(store: HostStore, clock: FakeClock) -> None:
    inner = Recorder(ok(b"[]", x_ratelimit_remaining="4999", x_ratelimit_limit="5000"), ok(b"", 304))
    stats = Stats()
    layer = Ledger(inner.transport, store, clock, stats)
    permit = Permit("p1", "pool1", "core", 0, "normal", clock.time() + 60)

    def send() -> httpx.Response:
        req = request()
        req.extensions[PERMIT] = permit
        return layer.handle_request(req)

    assert send().extensions[COUNTED] is True
    assert send().extensions[COUNTED] is False  # a 304 is free
    [row] = store.budget()
    assert row.remaining == 4999 and row.counted_last_hour == 1
    assert stats.requests == 2 and [s for _, s in stats.calls] == [200, 304]


def test_the_ledger_takes_an_html_page_for_a_failure(store: HostStore, clock: FakeClock) -> None:
    layer = Ledger(Recorder(ok(b"<html>unicorn</html>", content_type="text/html")).transport, store, clock, Stats())
    assert layer.handle_request(request()).extensions[VERDICT].kind == "failure"


def test_the_ledger_reads_graphql_cost_and_its_rate(store: HostStore, clock: FakeClock) -> None:
    body = b'{"data": {"rateLimit": {"cost": 3, "remaining": 4990, "limit": 5000, "used": 10, "resetAt": null}}}'
    layer = Ledger(Recorder(ok(body)).transport, store, clock, Stats())
    req = request("POST", f"{API}/graphql")
    req.extensions[PERMIT] = Permit("p1", "pool1", "graphql", 0, "normal", clock.time() + 60)
    response = layer.handle_request(req)
    assert response.extensions[VERDICT].resource == "graphql" and response.extensions["sluice_cost"] == 3
    [row] = store.budget()
    assert row.resource == "graphql" and row.remaining == 4990 and row.cost_last_hour == 3


# --------------------------------------------------------------------------------- the wire


@pytest.mark.parametrize(
    ("url", "endpoints"),
    [
        ("https://ghe.corp.evil/api/graphql", ("https://ghe.corp/api/v3", "https://ghe.corp")),
        ("https://ghe.corp:8443/api/v3/user", ("https://ghe.corp/api/v3", "https://ghe.corp/api/graphql")),
        ("http://ghe.corp/api/v3/user", ("https://ghe.corp/api/v3", "https://ghe.corp/api/graphql")),
        ("https://ghe.corp/api/v3evil/user", ("https://ghe.corp/api/v3", "https://ghe.corp/api/graphql")),
        ("http://evil.localhost/user", ("http://evil.localhost",)),
        ("https://user@ghe.corp/api/v3/user", ("https://ghe.corp/api/v3",)),
        ("https://ghe.corp/api/v3/%2e%2e/%2e%2e/x", ("https://ghe.corp/api/v3",)),  # issue 33
        ("https://ghe.corp/api/v3/..%2F..%2Fx", ("https://ghe.corp/api/v3",)),
        ("https://ghe.corp/api/v3/%252E%252E/x", ("https://ghe.corp/api/v3",)),
    ],
)
def test_the_token_never_goes_to_another_origin(url: str, endpoints: tuple[str, ...]) -> None:
    inner = Recorder(ok())
    layer = Authorize(inner.transport, lambda: "tok-secret", endpoints)
    with pytest.raises(ForeignURL) as caught:
        layer.handle_request(request(url=url))
    assert inner.seen == [] and "tok-secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        ("https://ghe.corp/api/v3/repos/o/r", "https://ghe.corp/api/v3"),
        ("https://GHE.corp:443/api/v3/user", "https://ghe.corp/api/v3"),
        ("http://127.0.0.1:8080/user", "http://127.0.0.1:8080"),
        ("http://[::1]:9000/user", "http://[::1]:9000"),
        ("http://localhost:1234/user", "http://localhost:1234"),
    ],
)
def test_the_token_goes_to_the_configured_origin(url: str, endpoint: str) -> None:
    inner = Recorder(ok())
    Authorize(inner.transport, lambda: "tok-secret", (endpoint,)).handle_request(request(url=url))
    assert inner.seen[0].headers["authorization"] == "token tok-secret"


def trickle(clock: FakeClock, seconds_per_byte: float, size: int) -> Handler:
    """An answer whose body arrives one byte every ``seconds_per_byte`` (the fake clock moves)."""

    def stream() -> Iterator[bytes]:
        for _ in range(size):
            clock.advance(seconds_per_byte)
            yield b" "

    return lambda request: httpx.Response(200, stream=_Iter(stream()))


class _Iter(httpx.SyncByteStream):
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return self.chunks


def test_an_answer_trickling_in_ends_at_the_calls_whole_deadline(clock: FakeClock) -> None:
    inner = Recorder(trickle(clock, 5.0, 1000))
    layer = Deadline(inner.transport, clock, Waits(clock), timeout=30)
    start = clock.time()
    with pytest.raises(httpx.ReadTimeout):
        layer.handle_request(request())
    assert clock.time() - start <= 35  # the deadline, plus at most the one read that crossed it


def test_a_callers_nearer_deadline_ends_the_call_as_its_own_timeout_not_githubs(clock: FakeClock) -> None:
    inner = Recorder(trickle(clock, 5.0, 1000))
    layer = Deadline(inner.transport, clock, Waits(clock), timeout=30)
    start = clock.time()
    with pytest.raises(CallTimedOut) as caught:
        layer.handle_request(request(deadline=start + 10))
    assert caught.value.sent and caught.value.exit_code == 4 and clock.time() - start <= 15


def test_each_read_waits_at_most_what_is_left_of_the_call(clock: FakeClock) -> None:
    inner = Recorder(ok())
    layer = Deadline(inner.transport, clock, Waits(clock), timeout=30)
    layer.handle_request(request(deadline=clock.time() + 5))
    assert inner.seen[0].extensions["timeout"]["read"] == pytest.approx(5)
    layer.handle_request(request())
    assert inner.seen[1].extensions["timeout"]["read"] == pytest.approx(30)


def test_a_call_whose_deadline_passed_is_not_sent(clock: FakeClock) -> None:
    inner = Recorder(ok())
    layer = Deadline(inner.transport, clock, Waits(clock), timeout=30)
    with pytest.raises(CallTimedOut) as caught:
        layer.handle_request(request(deadline=clock.time() - 1))
    assert inner.seen == [] and caught.value.exit_code == 4 and not caught.value.sent


def test_a_trickling_answer_stops_when_told(clock: FakeClock) -> None:
    cancel = threading.Event()

    def stream() -> Iterator[bytes]:
        yield b"["
        cancel.set()
        yield b"]"

    layer = Deadline(Recorder(lambda r: httpx.Response(200, stream=_Iter(stream()))).transport, clock,
                     Waits(clock, cancel), timeout=30)
    with pytest.raises(Interrupted):
        layer.handle_request(request())


def test_the_wire_loads_the_certificate_store_only_for_an_https_endpoint() -> None:
    """Issue 15: a plain-http endpoint (a double, an in-house proxy) never pays for the CA store; TLS fails closed."""
    import ssl

    import truststore

    from git_sluice.forge.wire import transport_for

    plain = transport_for(("http://127.0.0.1:1/api", "http://127.0.0.1:1/graphql"))
    context = plain._pool._ssl_context  # type: ignore[attr-defined]
    assert isinstance(context, ssl.SSLContext) and context.cert_store_stats()["x509_ca"] == 0
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname  # trusts nothing: fails closed
    for endpoints in (("https://api.github.com", "https://api.github.com/graphql"),
                      ("http://127.0.0.1:1/api", "HTTPS://ghe.example/api/graphql")):
        tls = transport_for(endpoints)._pool._ssl_context  # type: ignore[attr-defined]
        # the system's trust store, through truststore (issue 31): a company CA the machine trusts counts
        assert isinstance(tls, truststore.SSLContext) and tls.verify_mode == ssl.CERT_REQUIRED


# --- a stop with a call on the wire (issue 33) ---------------------------------------------------


def test_abandonable_runs_here_without_a_cancel_event_and_hands_back_what_the_call_raised() -> None:
    import time

    from git_sluice.errors import CallCancelled
    from git_sluice.forge.wire import abandonable

    here = threading.get_ident()
    assert abandonable(threading.get_ident, None, "GET x") == here  # no thread without a stop flag
    cancel = threading.Event()
    assert abandonable(threading.get_ident, cancel, "GET x") != here  # on a thread of its own

    def broken() -> None:
        raise httpx.ConnectError("refused")

    with pytest.raises(httpx.ConnectError):  # what the call raised, as if raised here (failure memory's)
        abandonable(broken, cancel, "GET x")
    released = threading.Event()
    stopper = threading.Timer(0.1, cancel.set)
    stopper.start()
    started = time.monotonic()
    with pytest.raises(CallCancelled) as caught:
        abandonable(lambda: released.wait(30), cancel, "GET x")  # GitHub holding its answer
    assert time.monotonic() - started < 1.0
    assert caught.value.exit_code == 130 and isinstance(caught.value, Interrupted) and "GET x" in str(caught.value)
    released.set()
    with pytest.raises(Interrupted) as before:  # already stopped: nothing is sent
        abandonable(lambda: pytest.fail("sent after the stop"), cancel, "GET x")
    assert not isinstance(before.value, CallCancelled)


def test_a_call_cut_short_on_the_wire_is_not_remembered_and_its_permit_goes_back_cut_short(
    tmp_path: Path, clock: FakeClock
) -> None:
    from git_sluice.errors import CallCancelled

    cancel, on_wire, release = threading.Event(), threading.Event(), threading.Event()

    def held(request: httpx.Request) -> httpx.Response:
        on_wire.set()
        release.wait(30)
        return httpx.Response(200, json=[])

    store = HostStore(tmp_path / "host.sqlite3", clock=clock)
    kept = KeptAnswers(tmp_path / "kept")
    stats, waits = Stats(), Waits(clock, cancel)
    permits = Permits(store, clock, waits, stats, enforce=True, permit_deadline=60)
    road: httpx.BaseTransport = Deadline(httpx.MockTransport(held), clock, waits, timeout=30)
    road = Ledger(road, store, clock, stats)
    road = HostGate(road, permits, lambda _resource: "pool-1", stats)
    road = FailureMemory(road, kept, clock, stats)
    threading.Thread(target=lambda: (on_wire.wait(30), cancel.set()), daemon=True).start()
    with pytest.raises(CallCancelled):
        road.handle_request(request())
    release.set()
    assert kept.meta(address_of("GET", URL)).fail_until is None and stats.failures == 0
    assert store.pauses() == [] and store.counters()[("pool-1", "core")] == {"cut_short": 1}
    permits.settle()
    store.close()
