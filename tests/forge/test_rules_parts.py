"""classify's parts, each alone (issue 32): a 403/429's meaning, every other status's, GraphQL's own words."""

from __future__ import annotations

from git_sluice.forge.rules import RateHeaders, _graphql_reason, _plain, _refusal

NOW = 1_000_000.0


def _rates(remaining: int | None = None, reset: float | None = None) -> RateHeaders:
    return RateHeaders(limit=5000, remaining=remaining, used=None, reset=reset, resource=None)


def test_a_refusal_is_a_throttle_by_its_words_then_its_headers_then_its_status() -> None:
    assert _refusal(403, {}, _rates(), "You have exceeded a secondary rate limit")[:2] == ("throttle", "secondary")
    assert _refusal(403, {}, _rates(remaining=0), "")[:2] == ("throttle", "primary")
    assert _refusal(403, {"retry-after": "30"}, _rates(remaining=9), "")[:2] == ("throttle", "secondary")
    assert _refusal(429, {}, _rates(remaining=9), "")[:2] == ("throttle", "unknown")
    assert _refusal(403, {}, _rates(remaining=9), "Resource not accessible")[0] == "permission"


def test_a_throttle_leaves_its_reason_to_be_written_from_the_pause() -> None:
    assert _refusal(403, {}, _rates(remaining=0), "")[2] == ""


def test_other_statuses() -> None:
    assert _plain(200, {}, _rates(remaining=10), True, NOW) == ("ok", None, "ok (200)")
    assert _plain(200, {"content-type": "application/json"}, _rates(), False, NOW)[0] == "failure"
    assert _plain(304, {"content-type": "application/json"}, _rates(), False, NOW)[0] == "ok"
    assert _plain(200, {}, _rates(remaining=0, reset=NOW + 60), True, NOW)[0] == "spent_ok"
    assert _plain(502, {}, _rates(), True, NOW) == ("failure", None, "GitHub failed (502)")
    assert _plain(404, {}, _rates(), True, NOW) == ("other", None, "refused (404)")


def test_graphql_names_a_query_dearer_than_what_is_left() -> None:
    assert "more than the 3 points left" in _graphql_reason("primary", _rates(remaining=3, reset=NOW + 60), NOW)
    assert _graphql_reason("primary", _rates(remaining=0), NOW) == ""
    assert _graphql_reason("secondary", _rates(remaining=3), NOW) == ""
