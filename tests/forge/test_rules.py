"""Every form of throttle GitHub sends, and every way its deadline can be wrong.

These rules decide whether every process on the host stops calling GitHub, so
each throttle form, each non-throttle look-alike and each untrustworthy
deadline has its own example.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_sluice.forge import rules
from git_sluice.forge.rules import (
    FALLBACK_CAP,
    RateHeaders,
    Verdict,
    classify,
    credible_reset,
    credible_retry_after,
    fallback_delay,
    jitter,
    parse_rate_headers,
    parse_retry_after,
    pause_until,
    resource_for,
)

NOW = 1_800_000_000.0
POOL = "p-3f9a1c"


def body(doc: object) -> bytes:
    return json.dumps(doc).encode()


def rate(remaining: int | str = 4999, reset: float | str = NOW + 1800, resource: str = "core") -> dict[str, str]:
    return {
        "X-RateLimit-Limit": "5000",
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Used": "1" if str(remaining) != "0" else "5000",
        "X-RateLimit-Reset": str(int(reset)) if isinstance(reset, float) else reset,
        "X-RateLimit-Resource": resource,
    }


def rest(status: int, headers: dict[str, str], payload: bytes | None, path: str = "/repos/o/r/pulls") -> Verdict:
    return classify(status, headers, payload, method="GET", path=path, now=NOW)


def gql(status: int, headers: dict[str, str], payload: bytes | None) -> Verdict:
    return classify(status, headers, payload, method="POST", path="/graphql", now=NOW)


# --- parse_rate_headers ---------------------------------------------------------------


def test_rate_headers_any_case() -> None:
    rh = parse_rate_headers(
        {
            "x-ratelimit-limit": "5000",
            "X-RATELIMIT-REMAINING": "12",
            "X-RateLimit-Used": "4988",
            "x-RateLimit-reset": "1800000900",
            "X-RateLimit-Resource": "GraphQL",
        }
    )
    assert rh == RateHeaders(limit=5000, remaining=12, used=4988, reset=1800000900.0, resource="graphql")


@pytest.mark.parametrize("garbage", ["", "  ", "abc", "-1", "1e3", "12.5", "0x10", "²"])
def test_rate_headers_garbage_counts_are_none(garbage: str) -> None:
    rh = parse_rate_headers({"x-ratelimit-remaining": garbage, "x-ratelimit-limit": garbage})
    assert rh.remaining is None and rh.limit is None


@pytest.mark.parametrize("garbage", ["", "soon", "nan", "inf", "-5"])
def test_rate_headers_garbage_reset_is_none(garbage: str) -> None:
    assert parse_rate_headers({"x-ratelimit-reset": garbage}).reset is None


def test_rate_headers_absent() -> None:
    assert parse_rate_headers({}) == RateHeaders(None, None, None, None, None)


# --- resource_for ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "resource"),
    [
        ("POST", "/graphql", "graphql"),
        ("POST", "https://api.github.com/graphql", "graphql"),
        ("POST", "https://ghe.example/api/graphql", "graphql"),
        ("GET", "/search/issues?q=is:pr", "search"),
        ("GET", "https://api.github.com/search/commits", "search"),
        ("GET", "/api/v3/search/issues", "search"),
        ("GET", "/search/code?q=x", "code_search"),
        ("GET", "/repos/o/r/pulls?state=open", "core"),
        ("GET", "/repos/o/graphql", "core"),
        ("GET", "/repos/o/search", "core"),
        ("GET", "/", "core"),
        ("GET", "", "core"),
    ],
)
def test_resource_for(method: str, path: str, resource: str) -> None:
    assert resource_for(method, path) == resource


def test_resource_header_wins_over_path() -> None:
    v = rest(200, rate(resource="integration_manifest"), b"{}")
    assert v.resource == "integration_manifest"
    assert rest(200, {}, b"{}").resource == "core"


# --- classify: the throttle forms -------------------------------------------------------


def test_primary_403_remaining_zero() -> None:
    v = rest(403, rate(0), body({"message": "API rate limit exceeded for installation ID 1."}))
    assert (v.kind, v.cls, v.remaining, v.reset, v.retry_after) == ("throttle", "primary", 0, NOW + 1800, None)
    assert "primary" in v.reason and "1800 s" in v.reason


def test_primary_429_remaining_zero_without_message() -> None:
    v = rest(429, rate(0), None)
    assert (v.kind, v.cls) == ("throttle", "primary")


def test_primary_403_message_only() -> None:
    v = rest(403, {}, body({"message": "API rate limit exceeded for 1.2.3.4.", "documentation_url": "x"}))
    assert (v.kind, v.cls) == ("throttle", "primary")


def test_bare_429_is_unknown_throttle() -> None:
    v = rest(429, {}, b"")
    assert (v.kind, v.cls) == ("throttle", "unknown")


def test_secondary_with_retry_after() -> None:
    headers = {**rate(4000), "Retry-After": "60"}
    v = rest(403, headers, body({"message": "You have exceeded a secondary rate limit. Please wait."}))
    assert (v.kind, v.cls, v.retry_after) == ("throttle", "secondary", NOW + 60)
    assert v.reason == "secondary rate limit (retry-after 60 s)"


def test_secondary_without_retry_after() -> None:
    v = rest(403, rate(4000), body({"message": "You have exceeded a secondary rate limit."}))
    assert (v.kind, v.cls, v.retry_after) == ("throttle", "secondary", None)


@pytest.mark.parametrize(
    "message",
    [
        "You have triggered an abuse detection mechanism. Please wait a few minutes.",
        "Content was submitted too quickly. Please wait.",
        "You have exceeded a SECONDARY RATE LIMIT",
    ],
)
def test_secondary_older_wordings(message: str) -> None:
    v = rest(403, {}, body({"message": message}))
    assert (v.kind, v.cls) == ("throttle", "secondary")


def test_retry_after_alone_is_secondary() -> None:
    v = rest(403, {"retry-after": "30"}, body({"message": "Forbidden"}))
    assert (v.kind, v.cls, v.retry_after) == ("throttle", "secondary", NOW + 30)


def test_retry_after_http_date() -> None:
    # NOW is Fri, 15 Jan 2027 08:00:00 GMT
    v = rest(429, {"Retry-After": "Fri, 15 Jan 2027 08:02:30 GMT"}, None)
    assert (v.kind, v.cls, v.retry_after) == ("throttle", "secondary", NOW + 150)
    assert pause_until(v, now=NOW, streak=3, pool_id=POOL, epoch=1) == (NOW + 150, "retry-after")
    assert parse_retry_after("Fri, 15 Jan 2027 08:02:30", NOW) == NOW + 150  # no zone: GMT
    assert parse_retry_after("Fri, 15 Jan 2027 09:02:30 +0100", NOW) == NOW + 150


def test_unparsable_retry_after_still_a_throttle_without_deadline() -> None:
    v = rest(429, {"Retry-After": "whenever"}, None)
    assert (v.kind, v.cls, v.retry_after) == ("throttle", "secondary", None)
    until, how = pause_until(v, now=NOW, streak=0, pool_id=POOL, epoch=1)
    assert how == "fallback"


def test_remaining_zero_wins_over_retry_after_for_class() -> None:
    v = rest(403, {**rate(0), "retry-after": "120"}, None)
    assert (v.cls, v.retry_after) == ("primary", NOW + 120)


def test_secondary_html_body() -> None:
    page = b"<html><body><h1>Whoa there!</h1>You have triggered an abuse detection mechanism.</body></html>"
    v = rest(403, {"content-type": "text/html"}, page)
    assert (v.kind, v.cls) == ("throttle", "secondary")


def test_generic_rate_limit_wording_on_403() -> None:
    v = rest(403, {}, body({"message": "Rate limit exceeded"}))
    assert (v.kind, v.cls) == ("throttle", "unknown")


@pytest.mark.parametrize("status", [200, 403, 502])
def test_graphql_rate_limited(status: int) -> None:
    doc = {"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}]}
    v = gql(status, rate(0, resource="graphql"), body(doc))
    assert (v.kind, v.cls, v.resource) == ("throttle", "primary", "graphql")


def test_graphql_rate_limit_newer_form_on_200() -> None:
    doc = {"data": None, "errors": [{"type": "RATE_LIMIT", "code": "graphql_rate_limit", "message": "limit"}]}
    v = gql(200, {}, body(doc))
    assert (v.kind, v.cls, v.resource) == ("throttle", "primary", "graphql")


def test_graphql_rate_limit_code_only() -> None:
    v = gql(200, {}, body({"errors": [{"code": "graphql_rate_limit"}]}))
    assert v.kind == "throttle"


def test_graphql_secondary_on_200() -> None:
    doc = {"errors": [{"message": "You have exceeded a secondary rate limit and have been temporarily blocked"}]}
    v = gql(200, {"retry-after": "60"}, body(doc))
    assert (v.kind, v.cls, v.retry_after) == ("throttle", "secondary", NOW + 60)


def test_graphql_other_errors_are_not_throttles() -> None:
    doc = {"data": None, "errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a Repository"}]}
    assert gql(200, {}, body(doc)).kind == "ok"


# --- classify: successes ----------------------------------------------------------------


def test_ok() -> None:
    v = rest(200, rate(4999), body([{"number": 1}]))
    assert (v.kind, v.cls, v.remaining) == ("ok", None, 4999)


def test_remaining_zero_on_200_is_spent_ok() -> None:
    v = rest(200, rate(0), body([]))
    assert (v.kind, v.cls, v.remaining, v.reset) == ("spent_ok", None, 0, NOW + 1800)
    until, how = pause_until(v, now=NOW, streak=0, pool_id=POOL, epoch=1)
    assert (until, how) == (NOW + 1800, "reset")


def test_304_is_ok_and_can_be_spent() -> None:
    assert rest(304, rate(10), None).kind == "ok"
    assert rest(304, rate(0), None).kind == "spent_ok"


def test_success_body_mentioning_rate_limit_is_not_a_throttle() -> None:
    # a pull request whose text quotes the error must not pause the pool
    v = rest(200, rate(10), body({"title": "Handle 'API rate limit exceeded' and secondary rate limit"}))
    assert v.kind == "ok"


def test_non_json_success_with_other_type_is_ok() -> None:
    assert rest(200, {"content-type": "application/vnd.github.diff"}, b"diff --git a b").kind == "ok"


def test_204_empty_is_ok() -> None:
    assert rest(204, {"content-type": "application/json"}, b"").kind == "ok"


# --- classify: what is not a throttle ---------------------------------------------------


def test_permission_403_is_not_a_throttle() -> None:
    v = rest(403, rate(4321), body({"message": "Resource not accessible by integration"}))
    assert (v.kind, v.cls) == ("permission", None)


def test_permission_403_garbage_body() -> None:
    assert rest(403, {}, b"\xff\xfe not json").kind == "permission"


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_is_failure(status: int) -> None:
    v = rest(status, {}, b"<html>unicorn</html>")
    assert (v.kind, v.cls) == ("failure", None)


def test_unparsable_json_success_is_failure() -> None:
    v = rest(200, {"content-type": "application/json; charset=utf-8"}, b'{"truncated": ')
    assert v.kind == "failure"


@pytest.mark.parametrize("status", [400, 401, 404, 409, 410, 422])
def test_other_4xx(status: int) -> None:
    assert rest(status, rate(100), body({"message": "nope"})).kind == "other"


def test_retry_after_on_other_4xx_is_not_a_throttle() -> None:
    assert rest(404, {"retry-after": "10"}, None).kind == "other"


@pytest.mark.parametrize("status", [0, 101, 301, 302, 600, -1])
def test_odd_statuses(status: int) -> None:
    assert rest(status, {}, None).kind == "other"


@settings(max_examples=300, deadline=None)
@given(
    status=st.integers(min_value=-5, max_value=700),
    headers=st.dictionaries(
        st.sampled_from(
            ["x-ratelimit-remaining", "X-RateLimit-Reset", "retry-after", "x-ratelimit-resource", "content-type", "x"]
        ),
        st.text(max_size=30),
    ),
    payload=st.one_of(st.none(), st.binary(max_size=200), st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["errors", "message", "type", "code"]), inner, max_size=3),
        max_leaves=10,
    ).map(lambda d: json.dumps(d).encode())),
)
@pytest.mark.slow
def test_classify_never_raises(status: int, headers: dict[str, str], payload: bytes | None) -> None:
    v = classify(status, headers, payload, method="GET", path="/x", now=NOW)
    assert v.kind in ("ok", "spent_ok", "throttle", "permission", "failure", "other")
    assert (v.cls is not None) == (v.kind == "throttle")
    until, how = pause_until(v, now=NOW, streak=3, pool_id=POOL, epoch=7)
    assert until >= NOW and how in ("retry-after", "reset", "fallback")
    assert until <= NOW + max(rules.RESET_HORIZON, FALLBACK_CAP + rules.JITTER_SPAN)


# --- credibility, fallback, jitter, pause_until -----------------------------------------


def test_credible_reset() -> None:
    assert credible_reset(NOW + 1, NOW)
    assert credible_reset(NOW + 3900, NOW)
    assert not credible_reset(NOW + 3901, NOW)  # absurd: beyond an hour and five minutes
    assert not credible_reset(NOW, NOW)  # not in the future
    assert not credible_reset(NOW - 10, NOW)  # past
    assert not credible_reset(None, NOW)
    assert not credible_reset(float("nan"), NOW)


def test_credible_retry_after() -> None:
    assert credible_retry_after(NOW, NOW)
    assert credible_retry_after(NOW + 3600, NOW)
    assert not credible_retry_after(NOW + 3601, NOW)
    assert not credible_retry_after(NOW - 1, NOW)
    assert not credible_retry_after(None, NOW)


def test_fallback_doubles_to_cap() -> None:
    assert [fallback_delay(s) for s in range(7)] == [60, 120, 240, 480, 900, 900, 900]
    assert fallback_delay(-3) == 60
    assert fallback_delay(10**9) == 900


def test_jitter_is_deterministic_bounded_and_varies() -> None:
    assert jitter(POOL, 3) == jitter(POOL, 3)
    values = {jitter(POOL, e) for e in range(200)}
    assert len(values) == 200
    assert all(0 <= v < 10 for v in values)
    assert min(values) < 1 and max(values) > 9  # spread over the whole span
    assert jitter("other-pool", 3) != jitter(POOL, 3)


def throttle_verdict(**kw: object) -> Verdict:
    base = dict(kind="throttle", cls="unknown", resource="core", retry_after=None, reset=None, remaining=None, reason="x")
    base.update(kw)
    return Verdict(**base)  # type: ignore[arg-type]


def test_pause_until_prefers_retry_after_over_reset() -> None:
    v = throttle_verdict(retry_after=NOW + 60, reset=NOW + 1800, remaining=0)
    assert pause_until(v, now=NOW, streak=4, pool_id=POOL, epoch=1) == (NOW + 60, "retry-after")


def test_pause_until_reset_when_remaining_zero() -> None:
    v = throttle_verdict(reset=NOW + 1800, remaining=0)
    assert pause_until(v, now=NOW, streak=4, pool_id=POOL, epoch=1) == (NOW + 1800, "reset")


def test_reset_ignored_unless_remaining_zero() -> None:
    v = throttle_verdict(reset=NOW + 1800, remaining=5)
    until, how = pause_until(v, now=NOW, streak=0, pool_id=POOL, epoch=1)
    assert how == "fallback" and until == NOW + 60 + jitter(POOL, 1)


@pytest.mark.parametrize("reset", [NOW - 30, NOW, NOW + 86400, None])
def test_past_absurd_or_missing_reset_falls_back(reset: float | None) -> None:
    v = throttle_verdict(reset=reset, remaining=0)
    until, how = pause_until(v, now=NOW, streak=2, pool_id=POOL, epoch=9)
    assert (until, how) == (NOW + 240 + jitter(POOL, 9), "fallback")


def test_unparsable_reset_header_falls_back() -> None:
    v = rest(403, rate(0, reset="tomorrow"), body({"message": "API rate limit exceeded"}))
    assert v.reset is None
    assert pause_until(v, now=NOW, streak=0, pool_id=POOL, epoch=1)[1] == "fallback"


@pytest.mark.parametrize("seconds", ["-5", "7200", "999999999"])
def test_untrustworthy_retry_after_falls_back(seconds: str) -> None:
    v = rest(429, {"retry-after": seconds}, None)
    assert pause_until(v, now=NOW, streak=1, pool_id=POOL, epoch=2) == (NOW + 120 + jitter(POOL, 2), "fallback")


def test_past_http_date_retry_after_falls_back_to_reset() -> None:
    v = rest(403, {**rate(0), "retry-after": "Thu, 01 Jan 2015 00:00:00 GMT"}, None)
    assert pause_until(v, now=NOW, streak=0, pool_id=POOL, epoch=1) == (NOW + 1800, "reset")


@pytest.mark.parametrize(
    "value", ["", "  ", "soon", "nan", "inf", "-1", "Mon, 99 Foo 2020 00:00:00 GMT", "1e400"]
)
def test_parse_retry_after_garbage(value: str) -> None:
    assert parse_retry_after(value, NOW) is None


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after("0", NOW) == NOW
    assert parse_retry_after(" 90 ", NOW) == NOW + 90
    assert parse_retry_after("1.5", NOW) == NOW + 1.5
    assert parse_retry_after(None, NOW) is None


# --- issue 13 point 8: GitHub's other words for a spent limit -------------------------


@pytest.mark.parametrize("status", [403, 429])
def test_already_exceeded_wording_is_a_primary_throttle_not_a_permission_error(status: int) -> None:
    # GitHub's later refusals in a window say "already exceeded"; without a
    # remaining-0 header the wording alone must still pause
    v = rest(status, {}, body({"message": "API rate limit already exceeded for user ID 1."}))
    assert (v.kind, v.cls) == ("throttle", "primary")


def test_graphql_rate_limited_with_points_left_pauses_until_the_reset_not_the_fallback() -> None:
    doc = {"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}]}
    v = gql(200, rate(3, reset=NOW + 1800, resource="graphql"), body(doc))
    assert (v.kind, v.cls, v.remaining, v.graphql_limited) == ("throttle", "primary", 3, True)
    assert "3 points left" in v.reason
    assert pause_until(v, now=NOW, streak=2, pool_id=POOL, epoch=1) == (NOW + 1800, "reset")


def test_graphql_rate_limited_with_an_incredible_reset_still_falls_back() -> None:
    doc = {"errors": [{"type": "RATE_LIMITED", "message": "x"}]}
    v = gql(200, rate(3, reset=NOW + 86400, resource="graphql"), body(doc))
    assert pause_until(v, now=NOW, streak=0, pool_id=POOL, epoch=1)[1] == "fallback"
