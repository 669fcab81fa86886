"""origins.unsafe_path: no path the forge lets through reaches outside the API prefix, however a server decodes it (issue 33)."""

from __future__ import annotations

import posixpath
from urllib.parse import quote, unquote

from hypothesis import given, settings
from hypothesis import strategies as st

from git_sluice.forge import origins

PREFIX = "/api/v3"

_piece = st.sampled_from([".", "..", "a", "e", "%", "2", "5", "f", "F", "c", "E", "/", "\\", "%2e", "%2f", "%5c", "%25"])
paths = st.lists(_piece, max_size=12).map("".join)


def served(path: str, decodings: int) -> str:
    """Where a server that decodes ``decodings`` times, reads ``\\`` as ``/`` and resolves dots lands."""
    for _ in range(decodings):
        path = unquote(path)
    return posixpath.normpath(path.replace("\\", "/"))


@settings(max_examples=200, deadline=None)
@given(paths, st.integers(min_value=0, max_value=3))
def test_a_path_let_through_stays_under_the_prefix_however_it_is_decoded(tail: str, decodings: int) -> None:
    path = f"{PREFIX}/{tail}"
    if origins.unsafe_path(path):
        return
    landed = served(path, decodings)
    assert landed == PREFIX or landed.startswith(PREFIX + "/"), (path, landed)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([".", ".."]), st.integers(min_value=0, max_value=3), st.booleans())
def test_a_dot_segment_is_refused_however_often_it_is_encoded(dots: str, times: int, encode_slash: bool) -> None:
    segment = dots + "/"
    for _ in range(times):
        segment = "".join(f"%{ord(c):02x}" if c in "./" and (c == "." or encode_slash) else quote(c, safe="/")
                          for c in segment)
    assert origins.unsafe_path(f"{PREFIX}/{segment}x")
    assert not origins.under(f"https://ghe.corp{PREFIX}/{segment}x", f"https://ghe.corp{PREFIX}")


def test_ordinary_paths_pass() -> None:
    for path in ("/api/v3/repos/o/r/pulls", "/api/v3/repos/o/r/branches/feature%2Fx", "/api/v3/x/a..b/.github", "/"):
        assert not origins.unsafe_path(path)
