"""The fleet's survey of a base (intake/survey.py): what it says, what a mirror takes of it, and that
nothing a pusher writes there is trusted past its bounds."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_sluice.intake import survey as sv
from git_sluice.intake.request import Request
from git_sluice.intake.watchstore import item_json, reading_json

SHA = "a" * 40
OTHER = "b" * 40


def request(number: int, sha: str = SHA, **extra: object) -> Request:
    return Request(number=number, title=f"#{number}", author="bob", head_ref=f"f{number}", head_sha=sha, base="main",
                   draft=False, updated_at="2026-12-04T10:00:00Z", **extra)  # type: ignore[arg-type]


def part(*numbers: int, inputs: bool = True) -> dict:
    items = []
    for n in numbers:
        raw = item_json(request(n), labels_known=not inputs, inputs_known=inputs)
        if inputs:
            raw["inputs"] = ["APPROVED", "PENDING", "MERGEABLE"]
        items.append(raw)
    reading = request(numbers[0], github_state="OPEN", checks_state="PENDING", pending=("ci",)) if numbers else None
    return {"items": items, "readings": {str(reading.number): reading_json(reading)} if reading else {}}


def head(**fields: object) -> bytes:
    return json.dumps({"format": sv.FORMAT, "version": sv.VERSION, "repository": "o/r", "base": "main",
                       **fields}).encode()


def shard(k: int, **fields: object) -> bytes:
    return head(shard=k, **fields)


def test_a_survey_says_back_what_its_holder_found() -> None:
    files = sv.encode("o/r", "main", part(1, 2), {SHA: "PENDING"}, host="host-a")
    got = sv.decode(files, "o/r", "main")
    assert got.host == "host-a" and sorted(i.request.number for i in got.items) == [1, 2]
    assert next(i for i in got.items if i.request.number == 1).inputs == ("APPROVED", "PENDING", "MERGEABLE")
    assert got.readings[1].pending == ("ci",)
    assert sv.head_states(got) == {SHA: "PENDING"}
    # and in the watch's stored form, as a list of the mirror's own would be kept
    assert sorted(raw["number"] for raw in sv.items_json(got)) == [1, 2]


def test_the_same_findings_are_the_same_survey_whatever_the_tick() -> None:
    """Nothing of the tick (number, time) goes in: a base where nothing moved is not pushed again."""
    one = sv.encode("o/r", "main", {**part(1), "asked_tick": 3, "changed_tick": 2}, {}, host="h")
    two = sv.encode("o/r", "main", {**part(1), "asked_tick": 9, "changed_tick": 2}, {}, host="h")
    assert one == two


def test_what_moved_changes_only_the_shards_that_hold_it() -> None:
    """A tick where a few requests moved writes a few shards anew; every other one is the blob the
    remote already has (issue 29: the push and the encoding follow what moved, not the list)."""
    before = part(*range(1, 301))
    heads = {SHA: "PENDING", OTHER: "SUCCESS"}
    after = json.loads(json.dumps(before))
    after["items"][4]["title"] = "moved"  # request #5
    one = sv.encode("o/r", "main", before, heads, host="h")
    two = sv.encode("o/r", "main", after, {**heads, OTHER: "FAILURE"}, host="h")
    assert len(one) == sv.SHARDS + 1  # 300 requests fill every shard; the head names them all
    changed = {name for name in one if one[name] != two.get(name)}
    assert changed == {sv.shard_name(5 % sv.SHARDS), sv.shard_name(int(OTHER[:8], 16) % sv.SHARDS)}
    assert sv.decode(two, "o/r", "main").heads[OTHER] == "FAILURE"


@pytest.mark.parametrize("files, why", [
    ({}, "no survey head"),
    ({sv.HEAD_NAME: b"\xff\xfe"}, "not JSON"),
    ({sv.HEAD_NAME: b"[" * 100_000}, "not JSON"),
    ({sv.HEAD_NAME: b"{}"}, "not a git-sluice survey"),
    ({sv.HEAD_NAME: json.dumps({"format": sv.FORMAT, "version": 99}).encode()}, "not a git-sluice survey"),
    ({sv.HEAD_NAME: json.dumps({"format": sv.FORMAT, "version": 1, "repository": "o/r", "base": "main", "host": "h",
                                "items": [], "readings": {}, "heads": {}}).encode()},
     "not a git-sluice survey of this version"),  # an older host's one-blob survey: not taken, never misread
    ({sv.HEAD_NAME: head(repository="x/y")}, "not of o/r"),
    ({sv.HEAD_NAME: head(base="dev")}, "not of o/r"),
    ({sv.HEAD_NAME: head(host=5, shards=[])}, "no host"),
    ({sv.HEAD_NAME: head(host="h")}, "no list of its shards"),
    ({sv.HEAD_NAME: head(host="h", shards=["../../etc/passwd"])}, "no list of its shards"),
    ({sv.HEAD_NAME: head(host="h", shards=[sv.shard_name(0)])}, "shard-00.json is missing"),
    ({sv.HEAD_NAME: head(host="h", shards=[sv.shard_name(0)]),
      sv.shard_name(0): shard(3, items=[], readings={}, heads={})}, "another shard"),
    ({sv.HEAD_NAME: head(host="h", shards=[sv.shard_name(0)]),
      sv.shard_name(0): shard(0, repository="x/y", items=[], readings={}, heads={})}, "not of o/r"),
    ({sv.HEAD_NAME: head(host="h", shards=[sv.shard_name(0)]), sv.shard_name(0): shard(0)}, "no requests"),
    ({sv.HEAD_NAME: head(host="h", shards=[sv.shard_name(0), sv.shard_name(1)]),
      sv.shard_name(0): shard(0, items=[{}] * (sv.MAX_ITEMS // 2 + 1), readings={}, heads={}),
      sv.shard_name(1): shard(1, items=[{}] * (sv.MAX_ITEMS // 2 + 1), readings={}, heads={})},
     "more requests"),  # bounded over the whole survey, not per shard
])
def test_a_survey_that_is_not_one_is_rejected_by_name(files: dict[str, bytes], why: str) -> None:
    with pytest.raises(sv.SurveyRejected, match=why):
        sv.decode(files, "o/r", "main")


def test_a_survey_larger_than_its_bound_is_not_even_parsed() -> None:
    with pytest.raises(sv.SurveyRejected, match="more than a survey may hold"):
        sv.decode({sv.HEAD_NAME: b" " * (sv.MAX_BYTES // 2), sv.shard_name(0): b" " * (sv.MAX_BYTES // 2 + 1)},
                  "o/r", "main")


def test_a_malformed_request_costs_itself_not_the_survey() -> None:
    good = part(1, 2)
    bad = dict(good["items"][1], title="x" * (sv.MAX_TEXT + 1))
    forged = [good["items"][0], dict(good["items"][0]),  # a second #1 (a duplicate) is dropped too
              dict(good["items"][0], number=7, head_sha="not a sha"), dict(good["items"][0], number=8, base="dev"),
              dict(good["items"][0], number=-3), "garbage"]
    files = sv.encode("o/r", "main", good, {"zz": "x", SHA: "SUCCESS"}, host="h")

    def forge(k: int, items: list[object]) -> None:
        doc = json.loads(files[sv.shard_name(k)])
        doc["items"] = items
        doc["readings"]["99"] = reading_json(request(99))  # a reading of a request the survey does not list
        files[sv.shard_name(k)] = json.dumps(doc).encode()

    forge(1, forged)
    forge(2, [bad])
    got = sv.decode(files, "o/r", "main")
    assert [i.request.number for i in got.items] == [1]
    assert set(got.readings) == {1}
    assert got.heads == {SHA: "SUCCESS"}


def test_a_mirror_takes_only_its_holders_survey() -> None:
    survey = sv.decode(sv.encode("o/r", "main", part(1), {}, host="host-a"), "o/r", "main")
    assert sv.adoptable(survey, "host-a")
    assert not sv.adoptable(survey, "host-b")  # a survey an earlier holder left, or one in another's name
    assert sv.adoptable(survey, None)  # a base only a wait follows here: no holder known, any survey says it


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
                    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children,
                                                                                      max_size=5),
                    max_leaves=40))
def test_whatever_json_a_pusher_writes_decodes_or_is_rejected(value: object) -> None:
    one = sv.shard_name(0)
    forged = [
        {sv.HEAD_NAME: json.dumps(value).encode()},
        {sv.HEAD_NAME: head(host="h", shards=value)},
        {sv.HEAD_NAME: head(host="h", shards=[one]), one: json.dumps(value).encode()},
        {sv.HEAD_NAME: head(host="h", shards=[one]), one: shard(0, items=value, readings=value, heads=value)},
    ]
    for files in forged:
        try:
            got = sv.decode(files, "o/r", "main")
        except sv.SurveyRejected:
            continue
        assert all(0 < i.request.number < 2**31 and i.request.base == "main" for i in got.items)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_whatever_bytes_a_pusher_writes_decode_or_are_rejected(blob: bytes) -> None:
    one = sv.shard_name(0)
    for files in ({sv.HEAD_NAME: blob}, {sv.HEAD_NAME: head(host="h", shards=[one]), one: blob}):
        try:
            sv.decode(files, "o/r", "main")
        except sv.SurveyRejected:
            pass


short = st.text(max_size=6)
maybe_long = st.one_of(short, st.just("x" * 4097))
many = st.lists(short, max_size=3).map(tuple) | st.just(tuple(f"l{i}" for i in range(205)))
requests_st = st.builds(
    Request, number=st.integers(1, 10**6), title=maybe_long, author=st.none() | maybe_long, head_ref=short,
    head_sha=short, base=short, draft=st.booleans(), updated_at=short, labels=many, github_state=short,
    review_decision=st.none() | short, checks_state=st.none() | maybe_long, failing=many, pending=many,
    mergeable=st.none() | short, url=maybe_long,
    reviews=st.lists(st.tuples(st.none() | short, short), max_size=2).map(tuple)
    | st.just(tuple((f"r{i}", "APPROVED") for i in range(205))),
)


@given(requests_st)
@settings(max_examples=200)
def test_a_reading_is_bounded_as_its_stored_form_would_be(reading: Request) -> None:
    """The survey keeps a reading as ``reading_of(reading_json(…))`` would, without the round trip."""
    from git_sluice.intake.watchstore import bounded_reading, reading_of

    direct = bounded_reading(reading)
    trip = reading_of(reading_json(reading))
    assert (direct is None) == (trip is None)
    if direct is not None and trip is not None:
        assert reading_json(direct) == reading_json(trip)


def test_a_survey_from_what_is_already_read_is_the_survey_of_the_stored_part() -> None:
    stored = part(1, 2, 3)
    readings = {1: request(1, github_state="OPEN", checks_state="PENDING", pending=("ci",)), 3: request(3)}
    stored["readings"] = {str(n): reading_json(r) for n, r in readings.items()}
    assert sv.encode_items("o/r", "main", sv.stored_items(stored), readings, {SHA: "PENDING"}, host="h") == sv.encode(
        "o/r", "main", stored, {SHA: "PENDING"}, host="h")


def test_a_shards_key_moves_with_anything_its_blob_is_made_of_and_only_with_that() -> None:
    """Equal keys are taken for equal blobs (a holder does not encode that shard again): every field of
    an item, a reading or a head state must move the key of its shard, and of no other."""
    def draft(items: dict, readings: dict[int, Request], heads: dict[str, str | None]) -> sv.Draft:
        d = sv.Draft("o/r", "main", "h")
        for raw in items["items"]:
            d.add_item(raw)
        for r in readings.values():
            d.add_reading(r)
        for sha, state in heads.items():
            d.add_head(sha, state)
        return d

    items = part(*range(1, 130))
    readings = {n: request(n, github_state="OPEN", checks_state="PENDING") for n in (3, 70)}
    heads = {SHA: "PENDING"}
    base = draft(items, readings, heads)
    keys = base.keys()
    assert draft(json.loads(json.dumps(items)), dict(readings), dict(heads)).keys() == keys  # same material
    moved_item = json.loads(json.dumps(items))
    moved_item["items"][69]["inputs"] = ["APPROVED", "SUCCESS", "MERGEABLE"]  # #70's checks, no updated_at
    changes = [
        (draft(moved_item, readings, heads), {sv.shard_name(70 % sv.SHARDS)}),
        (draft(items, {**readings, 3: request(3, github_state="OPEN", checks_state="SUCCESS")}, heads),
         {sv.shard_name(3)}),
        (draft(items, readings, {SHA: "SUCCESS"}), {sv.shard_name(int(SHA[:8], 16) % sv.SHARDS)}),
    ]
    for changed, names in changes:
        new = changed.keys()
        assert {n for n in keys if keys[n] != new.get(n)} == names
        files, before = changed.files(), base.files()
        assert {n for n in files if files[n] != before.get(n)} == names


def test_a_holder_encodes_only_the_shards_whose_key_moved_over_its_own_last_survey() -> None:
    from git_sluice.remote.surveys import KeptBlob
    from git_sluice.runtime.watching import _survey_files

    d = sv.Draft("o/r", "main", "h")
    for raw in part(*range(1, 130))["items"]:
        d.add_item(raw)
    keys = d.keys()
    moved = sv.shard_name(5)
    last_keys = {**keys, moved: "an older key"}

    class Place:
        def blob_ids(self, oid: str) -> dict[str, str]:
            assert oid == "c" * 40
            return {name: f"{i:040x}" for i, name in enumerate(sorted(keys))}

    got = _survey_files(Place(), d, keys, {"oid": "c" * 40, "shards": last_keys}, "c" * 40)  # type: ignore[arg-type]
    assert {n for n, v in got.items() if isinstance(v, bytes)} == {moved, sv.HEAD_NAME}
    assert all(isinstance(got[n], KeptBlob) for n in keys if n != moved)
    # the remote holds anything but this clone's own last survey: every shard encoded anew
    whole = _survey_files(Place(), d, keys, {"oid": "d" * 40, "shards": last_keys}, "c" * 40)  # type: ignore[arg-type]
    assert all(isinstance(v, bytes) for v in whole.values()) and set(whole) == {*keys, sv.HEAD_NAME}
