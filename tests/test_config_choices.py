"""The settings' decisions, without git: each ``_choose_*`` takes what was read and says what it means (issue 32)."""

from __future__ import annotations

import pytest

from git_sluice.config import _choose_host, _choose_remote, _choose_repository, _single_valued, _Value
from git_sluice.errors import ConfigError, NoRemote, UnknownKey

LOCAL = "file:.git/config"


def _values(**pairs: str) -> dict[str, list[_Value]]:
    return {f"sluice.{key.lower()}": [_Value(value, LOCAL)] for key, value in pairs.items()}


def test_the_remote_is_origin_unless_set_and_must_be_configured() -> None:
    origins: dict[str, tuple[str, str]] = {}
    assert _choose_remote({}, origins, {"origin": "u"}) == "origin"
    assert origins["sluice.remote"] == ("origin", "default")
    assert _choose_remote(_values(remote="fork"), origins, {"origin": "u", "fork": "v"}) == "fork"
    assert origins["sluice.remote"] == ("fork", LOCAL)
    with pytest.raises(NoRemote):
        _choose_remote({}, {}, {})
    with pytest.raises(ConfigError, match="known: origin"):
        _choose_remote(_values(remote="fork"), {}, {"origin": "u"})


def test_the_host_is_asked_for_only_when_unset() -> None:
    asked: list[int] = []

    def this_host() -> str:
        asked.append(1)
        return "box"

    assert _choose_host({}, {}, this_host) == "box" and asked == [1]
    assert _choose_host(_values(host="ci-7"), {}, this_host) == "ci-7" and asked == [1]
    with pytest.raises(ConfigError):
        _choose_host(_values(host="not a host"), {}, this_host)


def test_the_repository_comes_from_the_rewritten_url_first_and_only_when_unset() -> None:
    def never() -> str:
        raise AssertionError("the URL is read only when sluice.repository is unset")

    urls = {"origin": "https://github.com/octo/written.git"}
    assert _choose_repository(_values(repository="octo/widgets"), {}, "origin", urls, never) == "octo/widgets"
    rewritten = "https://github.com/octo/rewritten.git"
    assert _choose_repository({}, {}, "origin", urls, lambda: rewritten) == "octo/rewritten"
    assert _choose_repository({}, {}, "origin", urls, lambda: "ssh://elsewhere/x") == "octo/written"
    with pytest.raises(ConfigError, match="names no GitHub repository"):
        _choose_repository({}, {}, "origin", {"origin": "/tmp/x"}, lambda: "/tmp/x")


def test_an_unknown_key_is_refused_and_a_single_valued_key_keeps_its_last_value() -> None:
    values = {"sluice.remote": [_Value("a", LOCAL), _Value("b", LOCAL)], "sluice.branch": [_Value("x", LOCAL),
                                                                                            _Value("y", LOCAL)]}
    _single_valued(values)
    assert [v.value for v in values["sluice.remote"]] == ["b"]
    assert [v.value for v in values["sluice.branch"]] == ["x", "y"]
    with pytest.raises(UnknownKey):
        _single_valued({"sluice.remtoe": [_Value("a", LOCAL)]})
