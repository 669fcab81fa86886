"""Pause notes: publish, merge on a race, one probe across hosts, close, adopt."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from git_sluice.remote.git import RemoteRefused
from git_sluice.remote.notes import EVIDENCE_MARGIN, PauseNote, PublishFailed, disproves, local_end, merge, pause_ref

POOL = "p-3f9a1c"
T0 = 1_800_000_000.0


def note(until: float = T0 + 600, *, epoch: int = 1, host: str = "a", cls: str = "primary", probe=None) -> PauseNote:
    return PauseNote(POOL, "core", until, cls, epoch, host, probe)


def remote_message(bare: Path, ref: str) -> str | None:
    proc = subprocess.run(["git", "log", "-1", "--format=%B", ref], cwd=bare, capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


class FakeStore:
    """Stands in for the forge's HostStore: records adopt() calls with their exact shape."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.seen: list[tuple] = []
        self.released: list[tuple] = []

    def adopt(self, pool: str, resource: str, until: float, cls: str, *, source: str,
              seen_at: float | None = None, origin: str | None = None) -> None:
        self.calls.append((pool, resource, until, cls, source))
        self.seen.append((seen_at, origin))

    def release_adopted(self, origin: str, pools: object, present: object) -> int:
        self.released.append((origin, set(pools), set(present)))  # type: ignore[call-overload]
        return 0


# --- pure ----------------------------------------------------------------------


def test_note_round_trip_and_nothing_else_in_it() -> None:
    n = note(T0 + 61.5, epoch=7, host="build-3", cls="secondary", probe="build-4")
    message = n.to_message("0.1.0")
    assert PauseNote.parse(POOL, "core", message) == n
    lines = message.strip().split("\n\n")[-1].splitlines()
    assert [line.split(":")[0] for line in lines] == ["Until", "Class", "Epoch", "Host", "Probe", "Sluice-Version"]
    assert "Until: 1800000061.5" in message
    assert "Probe" not in note().to_message()
    assert n.ref == f"refs/sluice/pause/{POOL}/core"


@pytest.mark.parametrize(
    "message",
    [
        "",
        "subject only\n",
        "s\n\nUntil: soon\nClass: primary\nEpoch: 1\nHost: a\nSluice-Version: 1\n",
        "s\n\nUntil: 5\nClass: tertiary\nEpoch: 1\nHost: a\nSluice-Version: 1\n",
        "s\n\nUntil: 5\nClass: primary\nEpoch: -1\nHost: a\nSluice-Version: 1\n",
        "s\n\nUntil: 5\nClass: primary\nEpoch: 1\nSluice-Version: 1\n",
        "s\n\nUntil: 5\nClass: primary\nEpoch: 1\nHost: a\n",
        "s\n\nUntil: nan\nClass: primary\nEpoch: 1\nHost: a\nSluice-Version: 1\n",
    ],
)
def test_garbage_notes_are_not_notes(message: str) -> None:
    assert PauseNote.parse(POOL, "core", "s\n\nUntil: 5\nClass: primary\nEpoch: 1\nHost: a\nSluice-Version: 1\n")
    assert PauseNote.parse(POOL, "core", message) is None


@pytest.mark.parametrize("pool,resource", [("a/b", "core"), ("p", "co re"), ("", "core"), ("p", "x.lock"), (".p", "core")])
def test_names_that_cannot_be_ref_components(pool: str, resource: str) -> None:
    with pytest.raises(ValueError):
        pause_ref(pool, resource)


def test_merge_later_until_wins_and_epoch_moves_past_both() -> None:
    early = note(T0 + 60, epoch=4, host="a", cls="secondary")
    late = note(T0 + 900, epoch=2, host="b", cls="primary", probe="c")
    merged = merge(early, late)
    assert (merged.until, merged.cls, merged.host, merged.probe, merged.epoch) == (T0 + 900, "primary", "b", "c", 5)
    assert merge(late, early) == merged
    tie_a, tie_b = note(T0, epoch=1, host="a"), note(T0, epoch=1, host="b")
    assert merge(tie_a, tie_b) == merge(tie_b, tie_a)
    with pytest.raises(ValueError):
        merge(note(), PauseNote(POOL, "graphql", T0, "primary", 1, "a"))


# --- against a remote ----------------------------------------------------------


def test_publish_reaches_other_hosts_and_they_adopt(make_host, bare_remote, fake_clock) -> None:
    a, b = make_host("a"), make_host("b")
    na, nb = a.notes(fake_clock), b.notes(fake_clock)
    published = na.publish(note(fake_clock.time() + 600, epoch=3))
    assert published == note(fake_clock.time() + 600, epoch=3)
    assert "Until: 1800000600" in remote_message(bare_remote, published.ref)
    assert nb.local() == []
    nb.remote.fetch()
    assert nb.local() == [published]
    store = FakeStore()
    assert nb.adopt_into(store) == 1
    assert store.calls == [(POOL, "core", T0 + 600, "primary", "a")]
    fake_clock.advance(600)  # the pause is over: nothing left to adopt
    assert nb.adopt_into(FakeStore()) == 0


def test_publish_leaves_a_longer_pause_alone(make_host, fake_clock) -> None:
    a = make_host("a")
    na = a.notes(fake_clock)
    long = na.publish(note(T0 + 900, epoch=5))
    pushes_before = a.repo.ref(long.ref)
    assert na.publish(note(T0 + 300, epoch=9)) == long
    assert a.repo.ref(long.ref) == pushes_before


def test_publish_race_merges_and_retries(make_host, bare_remote, fake_clock) -> None:
    a, b = make_host("a"), make_host("b")
    na, nb = a.notes(fake_clock), b.notes(fake_clock)
    nb.publish(note(T0 + 300, epoch=4, host="b", cls="secondary"))
    # a has not fetched: its CAS expects "absent", loses, reads again, merges, wins
    result = na.publish(note(T0 + 900, epoch=2, host="a"))
    assert (result.until, result.epoch, result.host, result.cls) == (T0 + 900, 5, "a", "primary")
    nb.remote.fetch()
    assert nb.read(POOL, "core") == result
    # and the other way round: a shorter pause published late changes nothing
    assert nb.publish(note(T0 + 800, epoch=1, host="b")) == result


def test_concurrent_publish_keeps_the_later_until(make_host, bare_remote, fake_clock) -> None:
    hosts = [make_host(f"h{i}") for i in range(3)]
    notes = [h.notes(fake_clock) for h in hosts]
    results: dict[int, PauseNote] = {}
    barrier = threading.Barrier(3)

    def publish(i: int) -> None:
        barrier.wait()
        results[i] = notes[i].publish(note(T0 + 100 * (i + 1), epoch=1, host=f"h{i}"))

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = PauseNote.parse(POOL, "core", remote_message(bare_remote, pause_ref(POOL, "core")))
    assert final is not None and final.until == T0 + 300 and final.host == "h2"
    assert max(r.until for r in results.values()) == T0 + 300


def test_publish_gives_up_after_bounded_attempts(make_host, fake_clock) -> None:
    a, b = make_host("a"), make_host("b")
    b.notes(fake_clock).publish(note(T0 + 300, host="b"))
    stubborn = a.notes(fake_clock, attempts=1)
    with pytest.raises(PublishFailed) as caught:
        stubborn.publish(note(T0 + 900))
    assert "stays paused" in str(caught.value)


def test_exactly_one_of_two_hosts_claims_the_probe(make_host, bare_remote, fake_clock) -> None:
    a, b = make_host("a"), make_host("b")
    a.notes(fake_clock).publish(note(T0 + 60))
    fake_clock.advance(60)
    notes = {"a": a.notes(fake_clock), "b": b.notes(fake_clock)}
    won: dict[str, bool] = {}
    barrier = threading.Barrier(2)

    def claim(name: str) -> None:
        barrier.wait()
        won[name] = notes[name].claim_probe(POOL, "core")

    threads = [threading.Thread(target=claim, args=(n,)) for n in notes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won.values()) == [False, True]
    winner = next(n for n, w in won.items() if w)
    loser = next(n for n, w in won.items() if not w)
    assert f"Probe: {winner}" in remote_message(bare_remote, pause_ref(POOL, "core"))
    assert notes[winner].claim_probe(POOL, "core") is True  # asking again keeps the claim
    assert notes[loser].claim_probe(POOL, "core") is False


def test_a_dead_probe_claim_is_taken_after_the_timeout(make_host, fake_clock) -> None:
    a, b = make_host("a"), make_host("b")
    a.notes(fake_clock).publish(note(T0 + 60))
    fake_clock.advance(60)
    assert a.notes(fake_clock).claim_probe(POOL, "core")  # a claims, then dies
    nb = b.notes(fake_clock, probe_timeout=120)
    assert nb.claim_probe(POOL, "core") is False
    fake_clock.advance(119)
    assert nb.claim_probe(POOL, "core") is False
    fake_clock.advance(1)
    assert nb.claim_probe(POOL, "core") is True
    assert nb.read(POOL, "core").probe == "b"


def test_no_note_means_this_host_may_probe(make_host, fake_clock) -> None:
    assert make_host("a").notes(fake_clock).claim_probe(POOL, "graphql") is True


def test_close_deletes_only_a_finished_pause(make_host, bare_remote, fake_clock) -> None:
    a, b = make_host("a"), make_host("b")
    na, nb = a.notes(fake_clock), b.notes(fake_clock)
    published = na.publish(note(T0 + 60))
    na.close(POOL, "core")  # still running: stays
    assert remote_message(bare_remote, published.ref) is not None
    fake_clock.advance(61)
    nb.remote.fetch()
    nb.close(POOL, "core")
    assert remote_message(bare_remote, published.ref) is None
    assert b.repo.ref(published.ref) is None
    nb.close(POOL, "core")  # nothing there: nothing to do
    na.close(POOL, "core")  # a's mirror is stale: its CAS loses, it reads again, finds nothing
    assert a.repo.ref(published.ref) is None


def test_close_leaves_a_newer_pause(make_host, bare_remote, fake_clock) -> None:
    a, b = make_host("a"), make_host("b")
    na, nb = a.notes(fake_clock), b.notes(fake_clock)
    na.publish(note(T0 + 60))
    fake_clock.advance(61)
    nb.publish(note(T0 + 900, host="b", epoch=2))  # the probe failed: paused again
    na.close(POOL, "core")  # a's stale mirror says "finished"; the CAS tells otherwise
    message = remote_message(bare_remote, pause_ref(POOL, "core"))
    assert message is not None and "Until: 1800000900" in message


def test_garbage_at_a_pause_ref_is_skipped_and_can_be_claimed(make_host, bare_remote, fake_clock, git_repo) -> None:
    seed = git_repo.workspace  # what bare_remote was seeded from
    ref = pause_ref(POOL, "core")
    subprocess.run(["git", "push", "-q", bare_remote.as_uri(), f"HEAD:{ref}"], cwd=seed, check=True)
    na = make_host("a").notes(fake_clock)
    na.remote.fetch()
    assert na.local() == []
    assert na.adopt_into(FakeStore()) == 0
    assert na.claim_probe(POOL, "core") is True
    assert na.read(POOL, "core").probe == "a"


def test_a_remote_refusing_pause_refs_says_so(make_host, bare_remote, fake_clock) -> None:
    hook = bare_remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(RemoteRefused):
        make_host("a").notes(fake_clock).publish(note())


def test_publish_returns_what_the_remote_holds(make_host, fake_clock) -> None:
    a, b = make_host("a"), make_host("b")
    published = a.notes(fake_clock).publish(note(T0 + 61.23456))
    assert published.until == T0 + 61.235
    nb = b.notes(fake_clock)
    nb.remote.fetch()
    assert nb.read(POOL, "core") == published


# --- clocks that disagree (issue 14, point 2) ------------------------------------


@given(
    lasting=st.floats(min_value=0, max_value=86_400),
    first_seen=st.floats(min_value=1e9, max_value=3e9),
    skew=st.floats(min_value=-30 * 86_400, max_value=30 * 86_400),
)
def test_a_pause_read_from_a_note_never_lasts_longer_than_its_length_from_first_sight(
    lasting: float, first_seen: float, skew: float
) -> None:
    until = first_seen + skew + lasting
    end = local_end(until, lasting, first_seen)
    assert end <= first_seen + lasting and end <= until
    # a note first seen late (or by a clock ahead) is never started afresh: its Until stands
    assert local_end(first_seen - 5, lasting, first_seen) == first_seen - 5


def test_an_older_note_without_a_length_keeps_its_until() -> None:
    assert local_end(T0 + 7200, None, T0) == T0 + 7200


def test_a_host_whose_clock_is_two_hours_behind_takes_a_minute_pause_as_a_minute(make_host, fake_clock, skewed) -> None:
    writer, behind = make_host("a"), make_host("b")
    publisher = writer.notes(fake_clock)
    published = publisher.publish(note(fake_clock.time() + 60, epoch=1))
    assert published.lasting == 60
    assert PauseNote.parse(POOL, "core", published.to_message()).lasting == 60  # the For: trailer
    clock = skewed(fake_clock, -7200.0)
    notes = behind.notes(clock)
    notes.remote.fetch()
    store = FakeStore()
    assert notes.adopt_into(store) == 1
    (_, _, until, _, _), = store.calls
    assert clock.time() < until <= clock.time() + 60, until - clock.time()


@given(
    cls=st.sampled_from(["primary", "secondary", "unknown"]),
    remaining=st.integers(0, 5000),
    heard_after=st.floats(-3600, 3600),
    first=st.one_of(st.none(), st.just(1_800_000_000.0)),
)
def test_only_an_answer_sent_after_a_primary_note_with_some_left_disproves_it(
    cls: str, remaining: int, heard_after: float, first: float | None
) -> None:
    note = PauseNote("pool1", "core", 253402300799.0, cls, 1, "evil-host")
    heard = (remaining, (first or 0.0) + heard_after)
    verdict = disproves(note, heard, first)
    assert verdict == (cls == "primary" and first is not None and remaining > 0 and heard_after > EVIDENCE_MARGIN)
    assert not disproves(note, None, first)


def test_a_probe_claim_rewrites_the_note_but_not_the_pause_it_announces() -> None:
    note = PauseNote("pool1", "core", 1_800_000_600.0, "primary", 3, "host-a", lasting=600.0)
    assert note.with_probe("host-b").identity == note.identity
    later = PauseNote("pool1", "core", 1_800_000_900.0, "primary", 4, "host-a")
    assert later.identity != note.identity


def test_a_note_no_answer_can_confirm_is_bounded_by_a_quarter_hour_not_the_hour() -> None:
    from git_sluice.forge.hoststore import ADOPT_HORIZON, adopt_horizon
    from git_sluice.forge.rules import FALLBACK_CAP

    assert adopt_horizon("primary") == ADOPT_HORIZON
    for cls in ("secondary", "unknown", None):
        assert FALLBACK_CAP <= adopt_horizon(cls) <= FALLBACK_CAP + 60 < ADOPT_HORIZON
