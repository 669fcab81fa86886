"""The demo's words come from the double's figures alone (issue 32: the story's steps split from what they say)."""

from __future__ import annotations

from git_sluice.commands.demo import first_round_words, idle_hour_words


def test_the_first_round_names_its_calls_and_points() -> None:
    words = first_round_words({"first_round_list": 1, "first_round_points": 1, "first_round_checks": 2})
    assert words.startswith("1. host-a drives")
    assert "with 1 list call" in words and "1 GraphQL point" in words and "plus 2 calls of the watch" in words


def test_the_idle_hour_names_rounds_calls_and_what_was_counted() -> None:
    words = idle_hour_words({"idle_rounds": 60, "idle_requests": 64, "idle_counted": 0})
    assert words.startswith("3. An idle hour: host-a ran 60 discovery rounds; 64 conditional calls")
    assert "counted 0 of them" in words
