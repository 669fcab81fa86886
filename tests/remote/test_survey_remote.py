"""A survey on the remote (remote/surveys.py): one commit whose tree holds the survey's head and its
shards; a push carries only the shards that moved, and a reader reads no more than a survey's bound."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from git_sluice.clock import FakeClock
from git_sluice.intake import survey as sv
from git_sluice.intake.request import Request
from git_sluice.intake.watchstore import item_json
from git_sluice.remote.looks import RemoteLooks
from git_sluice.remote.surveys import SurveyRemote, survey_ref

from tests.remote.conftest import Host, git

POOL = "p0"


def part(titles: dict[int, str]) -> dict[str, object]:
    items = []
    for number, title in sorted(titles.items()):
        request = Request(number=number, title=title, author="bob", head_ref=f"f{number}",
                          head_sha=f"{number:040x}", base="main", draft=False, updated_at="2026-12-04T10:00:00Z")
        items.append({**item_json(request, labels_known=True, inputs_known=False), "inputs": None})
    return {"items": items, "readings": {}}


def place(host: Host, tmp_path: Path) -> SurveyRemote:
    clock = FakeClock(1000.0)
    return SurveyRemote(host.repo.common_dir, "origin", clock=clock, looks=RemoteLooks(tmp_path / host.name, clock),
                        pools=[POOL])


def loose_objects(bare: Path) -> set[str]:
    """The remote's loose objects: a push of fewer objects than git's unpack limit lands as these."""
    return {p.parent.name + p.name for p in (bare / "objects").glob("??/*")}


def test_a_push_carries_the_shards_that_moved_and_no_more(
        make_host: Callable[..., Host], bare_remote: Path, tmp_path: Path) -> None:
    host = make_host("host-a")
    remote = place(host, tmp_path)
    titles = {n: f"change {n}" for n in range(1, 301)}
    first = sv.encode("o/r", "main", part(titles), {}, host="host-a")
    assert len(first) == sv.SHARDS + 1
    done = remote.publish(POOL, {"main": first}, expected={"main": None}, repository="o/r", host="host-a")
    assert set(done.stands) == {"main"}
    before = loose_objects(bare_remote)

    titles[5] = "moved"
    second = sv.encode("o/r", "main", part(titles), {}, host="host-a")
    again = remote.publish(POOL, {"main": second}, expected={"main": done.stands["main"]}, repository="o/r",
                           host="host-a")
    new = loose_objects(bare_remote) - before
    kinds = {oid: git("cat-file", "-t", oid, cwd=bare_remote).strip() for oid in new}
    assert sorted(kinds.values()) == ["blob", "commit", "tree"]  # the one shard that holds #5, not 64 more blobs
    blob = next(oid for oid, kind in kinds.items() if kind == "blob")
    carried = git("cat-file", "blob", blob, cwd=bare_remote).encode()
    assert carried == second[sv.shard_name(5)] and len(carried) * 32 < sum(map(len, second.values()))
    assert git("rev-parse", survey_ref(POOL, "main"), cwd=bare_remote).strip() == again.stands["main"]

    assert remote.look()
    read = remote.read(again.stands["main"])
    assert read == second
    got = sv.decode(read, "o/r", "main")
    assert next(i.request.title for i in got.items if i.request.number == 5) == "moved"


def test_an_unchanged_survey_is_the_same_commit_and_is_not_pushed(
        make_host: Callable[..., Host], bare_remote: Path, tmp_path: Path) -> None:
    host = make_host("host-a")
    remote = place(host, tmp_path)
    files = sv.encode("o/r", "main", part({1: "one"}), {}, host="host-a")
    oid = remote.publish(POOL, {"main": files}, expected={"main": None}, repository="o/r", host="host-a").stands["main"]
    before = loose_objects(bare_remote)
    again = remote.publish(POOL, {"main": files}, expected={"main": oid}, repository="o/r", host="host-a")
    assert again.stands == {"main": oid} and loose_objects(bare_remote) == before


def _forged_commit(host: Host, entries: dict[str, bytes]) -> str:
    """A commit of whatever tree a pusher likes, made in the host's clone."""
    lines = []
    for name, blob in entries.items():
        path = host.path / "blob"
        path.write_bytes(blob)
        lines.append(f"100644 blob {git('hash-object', '-w', str(path), cwd=host.path).strip()}\t{name}\n")
    tree = subprocess.run(["git", "mktree"], cwd=host.path, input="".join(lines), capture_output=True, text=True,
                          check=True).stdout.strip()
    return git("commit-tree", tree, "-m", "forged", cwd=host.path).strip()


def test_a_reader_takes_only_a_survey_shaped_tree_within_its_bound(
        make_host: Callable[..., Host], tmp_path: Path) -> None:
    host = make_host("host-a")
    remote = place(host, tmp_path)
    head = json.dumps({"format": sv.FORMAT}).encode()
    assert remote.read(_forged_commit(host, {"README": b"x"})) is None  # no head
    assert remote.read(_forged_commit(host, {sv.HEAD_NAME: head, "evil.json": b"x"})) is None  # a foreign name
    big = b" " * (sv.MAX_BYTES // 2 + 1)
    assert remote.read(_forged_commit(host, {sv.HEAD_NAME: big, sv.shard_name(0): big})) is None  # past the bound
    assert remote.read("0" * 40) is None
    ok = remote.read(_forged_commit(host, {sv.HEAD_NAME: head, sv.shard_name(3): b"{}"}))
    assert ok == {sv.HEAD_NAME: head, sv.shard_name(3): b"{}"}


def test_a_survey_is_chained_only_on_the_holders_own_last_one_and_no_longer_than_the_bound() -> None:
    from git_sluice.remote.surveys import MAX_CHAIN, chain_parent

    assert chain_parent("a" * 40, "a" * 40, 1) == "a" * 40
    assert chain_parent("a" * 40, "a" * 40, MAX_CHAIN - 1) == "a" * 40
    assert chain_parent("a" * 40, "a" * 40, MAX_CHAIN) is None  # the line starts afresh
    assert chain_parent("a" * 40, "b" * 40, 1) is None  # the remote holds someone else's: never built on
    assert chain_parent(None, "b" * 40, 1) is None  # this clone pushed none it remembers
    assert chain_parent("a" * 40, None, 1) is None


def test_a_line_of_surveys_grows_by_the_holders_pushes_and_restarts_over_a_forgery(
        make_host: Callable[..., Host], bare_remote: Path, tmp_path: Path) -> None:
    host = make_host("host-a")
    remote = place(host, tmp_path)
    ref = survey_ref(POOL, "main")

    def push(title: str, own: str | None, expected: str | None) -> str:
        files = sv.encode("o/r", "main", part({1: title, 2: "two"}), {}, host="host-a")
        done = remote.publish(POOL, {"main": files}, expected={"main": expected}, repository="o/r",
                              host="host-a", own={"main": own} if own else None)
        return done.stands["main"]

    first = push("a", None, None)
    second = push("b", first, first)
    assert git("rev-parse", f"{ref}^", cwd=bare_remote).strip() == first
    forged = _forged_commit(host, {sv.HEAD_NAME: b"{}"})
    git("push", "-q", "origin", f"+{forged}:{ref}", cwd=host.path)
    remote.look()
    third = push("c", second, forged)  # the remote no longer holds this host's own: no parent, nothing of the forgery
    assert git("rev-list", "--count", ref, cwd=bare_remote).strip() == "1"
    assert third not in (first, second, forged)


def test_a_line_of_surveys_starts_afresh_at_its_bound(make_host: Callable[..., Host], bare_remote: Path,
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each survey in a line keeps the shards that moved in it reachable: the line is bounded, and the
    survey past the bound is pushed whole, with no parent (the old line is the remote gc's)."""
    from git_sluice.remote import surveys

    monkeypatch.setattr(surveys, "MAX_CHAIN", 3)
    host = make_host("host-a")
    remote = place(host, tmp_path)
    ref = survey_ref(POOL, "main")
    oid: str | None = None
    counts = []
    for i in range(5):
        files = sv.encode("o/r", "main", part({1: f"title {i}"}), {}, host="host-a")
        oid = remote.publish(POOL, {"main": files}, expected={"main": oid}, repository="o/r", host="host-a",
                             own={"main": oid} if oid else None).stands["main"]
        counts.append(int(git("rev-list", "--count", ref, cwd=bare_remote)))
    assert counts == [1, 2, 3, 1, 2]
