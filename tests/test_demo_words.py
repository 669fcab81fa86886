"""The demo's words come from the double's figures alone (issue 32: the story's steps split from what they say)."""

from __future__ import annotations

from git_sluice.commands.demo import change_words, first_round_words, idle_hour_words


def test_the_first_round_names_its_calls_and_points() -> None:
    words = first_round_words({"first_round_list": 1, "first_round_points": 1, "first_round_checks": 2})
    assert words.startswith("1. host-a drives")
    assert "with 1 list call" in words and "1 GraphQL point" in words and "plus 2 calls of the watch" in words


def test_the_idle_hour_names_rounds_calls_and_what_was_counted() -> None:
    words = idle_hour_words({"idle_rounds": 60, "idle_requests": 64, "idle_counted": 0})
    assert words.startswith("3. An idle hour: host-a ran 60 discovery rounds; 64 conditional calls")
    assert "counted 0 of them" in words


def test_step_four_says_in_words_what_moved_and_who_read_it_never_a_raw_list() -> None:
    """Issue 31: "read []." — the round read nothing itself, because the host watch's query had."""
    figures = {"change_rest": 1, "change_points": 1}
    words = change_words(figures, moved=[4], read=[])
    assert words.startswith("4. carol approves #4: the next round spent 1 REST call")
    assert "1 GraphQL point (one query)" in words and "#4 moved" in words
    assert "the host watch's query had read it" in words
    assert "[]" not in words and "[4]" not in words
    assert "read #4 itself" in change_words(figures, moved=[4], read=[4])
    assert "2 REST calls" in change_words({"change_rest": 2, "change_points": 3}, moved=[4], read=[])
