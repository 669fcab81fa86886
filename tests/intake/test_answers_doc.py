"""answers.json read back into typed records: a field is kept only when it is of its kind (issue 32).

The file is in the host state dir, where anything could have been left; past
``repo_record`` / ``base_part`` the watch's code trusts the types it is given.
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from git_sluice.intake.answers_doc import base_part, repo_record

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)
KEYS = ["mode", "still", "fingerprint", "rebasing", "active_tick", "adopted", "uses_statuses", "statuses_at",
        "bases", "items", "asked_tick", "changed_tick", "newest", "base_oid", "moved", "readings"]
records = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=10)


def test_a_record_as_the_watch_writes_it_reads_back_whole() -> None:
    part = {"items": [{"number": 1}], "asked_tick": 7, "changed_tick": 5, "newest": "2027-01-01T00:00:00Z",
            "base_oid": None, "moved": [1], "readings": {"1": {"number": 1}}}
    record = {"mode": "graphql", "still": 2, "fingerprint": [3, "x"], "rebasing": False, "active_tick": 7,
              "adopted": {"main": "abc"}, "uses_statuses": True, "statuses_at": 100.5, "bases": {"main": part}}
    assert repo_record(record) == record
    assert base_part(part) == part


def test_a_field_of_the_wrong_kind_is_dropped_and_the_rest_kept() -> None:
    record = repo_record({"mode": 3, "still": True, "active_tick": "7", "rebasing": "yes", "statuses_at": False,
                          "adopted": {"main": 1, "dev": "oid"}, "bases": {"main": [], "dev": {"asked_tick": True,
                                                                                            "moved": [1, "2", False]}}})
    assert record == {"adopted": {"dev": "oid"}, "bases": {"dev": {"moved": [1]}}}
    assert repo_record("garbage") == {"bases": {}}
    assert base_part(["not", "a", "part"]) is None


@given(records.map(lambda r: {**r, "bases": {"main": r}}))
def test_whatever_the_file_holds_the_records_are_of_their_kinds(raw: dict[str, object]) -> None:
    record = repo_record(raw)
    assert isinstance(record.get("mode", ""), str)
    for name in ("still", "active_tick"):
        assert type(record.get(name, 0)) is int
    assert isinstance(record.get("rebasing", False), bool) and isinstance(record.get("uses_statuses", False), bool)
    assert all(isinstance(v, str) for v in record.get("adopted", {}).values())
    for part in record["bases"].values():
        assert isinstance(part.get("items", []), list)
        assert all(type(n) is int for n in part.get("moved", []))
        assert type(part.get("asked_tick", 0)) is int and type(part.get("changed_tick", 0)) is int
        assert part.get("base_oid") is None or isinstance(part["base_oid"], str)
        assert isinstance(part.get("readings", {}), dict)
