"""The lease record and the pure decisions, without any remote."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from git_sluice.remote.lease_record import (
    ACTIONS,
    LeaseRecord,
    Mark,
    branch_of,
    decide,
    lease_ref,
    lease_view,
    parse_trailers,
)

ME = "alpha"
OTHER = "beta"
LEASE = 300.0
NOW = 10_000.0


def record(holder: str = ME, role: str = "driver", lease: float = LEASE, renewal: int = 0) -> LeaseRecord:
    return LeaseRecord(holder=holder, role=role, lease=lease, renewal=renewal, version="0.1.0")


def mark(rec: LeaseRecord | None) -> Mark:
    return Mark("ab" * 20, rec)


# --- the record ----------------------------------------------------------------


def test_record_round_trip_reads_like_git_log() -> None:
    rec = LeaseRecord(holder="build-7.example", role="wait", lease=90.5, renewal=12, version="1.2.3")
    message = rec.to_message("release/2.x")
    assert message.splitlines()[0] == "git-sluice lease for release/2.x"
    assert "Holder: build-7.example\nRole: wait\nLease: 90.5\nRenewal: 12\nSluice-Version: 1.2.3\n" in message
    assert LeaseRecord.parse(message) == rec
    whole = LeaseRecord(holder="h", role="driver", lease=300.0, renewal=0, version="v")
    assert "Lease: 300\n" in whole.to_message("main")
    assert LeaseRecord.parse(whole.to_message("main")) == whole


def test_record_tolerates_extra_trailers_and_case() -> None:
    message = (
        "anything\n\nholder: h\nROLE: driver\nLease: 60\nRenewal: 3\nSluice-Version: 9.9\nFuture-Field: x\n"
    )
    assert LeaseRecord.parse(message) == LeaseRecord("h", "driver", 60.0, 3, "9.9")


GOOD = "s\n\nHolder: h\nRole: driver\nLease: 60\nRenewal: 3\nSluice-Version: 1\n"


@pytest.mark.parametrize(
    "message",
    [
        "",
        "\n",
        "just a subject\n",
        "Holder: h\nRole: driver\nLease: 60\nRenewal: 3\nSluice-Version: 1\n",  # no subject: no trailer block
        GOOD.replace("Role: driver", "Role: step"),
        GOOD.replace("Role: driver", "Role: "),
        GOOD.replace("Holder: h", "Holder: "),
        GOOD.replace("Holder: h\n", ""),
        GOOD.replace("Lease: 60", "Lease: abc"),
        GOOD.replace("Lease: 60", "Lease: 0"),
        GOOD.replace("Lease: 60", "Lease: -5"),
        GOOD.replace("Lease: 60", "Lease: inf"),
        GOOD.replace("Lease: 60", "Lease: nan"),
        GOOD.replace("Lease: 60", "Lease: 1e9"),  # would block a branch for decades
        GOOD.replace("Renewal: 3", "Renewal: -1"),
        GOOD.replace("Renewal: 3", "Renewal: 1.5"),
        GOOD.replace("Sluice-Version: 1", "Sluice-Version:"),
        GOOD.replace("Renewal: 3\n", "Renewal: 3\nnot a trailer line\n"),
        "\x00\xff binary junk",
    ],
)
def test_garbage_is_not_a_record(message: str) -> None:
    assert LeaseRecord.parse(GOOD) is not None
    assert LeaseRecord.parse(message) is None


@pytest.mark.parametrize(
    "bad",
    [
        dict(holder="two\nlines"),
        dict(holder=""),
        dict(holder=" padded"),
        dict(role="step"),
        dict(lease=0.0),
        dict(lease=math.inf),
        dict(lease=1e9),
        dict(renewal=-1),
    ],
)
def test_unwritable_records_are_refused(bad: dict) -> None:
    fields = dict(holder="h", role="driver", lease=60.0, renewal=0, version="1")
    fields.update(bad)
    with pytest.raises(ValueError):
        LeaseRecord(**fields).to_message("main")


def test_trailers_come_from_the_last_paragraph_only() -> None:
    assert parse_trailers("s\n\nHolder: x\n\nbody text\n") == {}
    assert parse_trailers("s\n\nbody\n\nA: 1\nB: 2\nA: 3\n") == {"a": "1", "b": "2"}


def test_lease_ref_names() -> None:
    assert lease_ref("feature/x") == "refs/sluice/intake/feature/x"
    assert branch_of("refs/sluice/intake/feature/x") == "feature/x"
    with pytest.raises(ValueError):
        branch_of("refs/heads/main")


def test_renewed_counts_up_and_takes_the_new_role() -> None:
    assert record(renewal=4).renewed(role="driver", lease=60.0, version="2") == LeaseRecord(
        ME, "driver", 60.0, 5, "2"
    )


# --- decide(): the whole table -----------------------------------------------

MINE_D = mark(record(ME, "driver"))
MINE_W = mark(record(ME, "wait"))
OTHER_D = mark(record(OTHER, "driver", lease=120.0))  # the holder's own lease counts, not mine
OTHER_W = mark(record(OTHER, "wait", lease=120.0))
GARBAGE = mark(None)

# (role, mark, observed_for, seconds since my last write or None, action, write_role)
TABLE = [
    # no mark: a step never pushes one; it takes in as this host alone
    ("driver", None, None, None, "take", "driver"),
    ("wait", None, None, None, "take", "wait"),
    ("step", None, None, None, "none", None),
    # my own driver mark
    ("driver", MINE_D, 5.0, None, "renew", "driver"),
    ("driver", MINE_D, 5.0, 0.0, "hold", None),
    ("driver", MINE_D, 5.0, 99.9, "hold", None),
    ("driver", MINE_D, 5.0, 100.0, "renew", "driver"),
    ("driver", MINE_D, 5.0, 5000.0, "renew", "driver"),
    ("wait", MINE_D, 5.0, 100.0, "hold", None),  # this host's driver renews it
    ("wait", MINE_D, 5.0, 199.9, "hold", None),
    ("wait", MINE_D, 5.0, 200.0, "renew", "driver"),  # the driver fell silent: keep it a driver's
    ("wait", MINE_D, 5.0, None, "renew", "driver"),
    ("step", MINE_D, 5.0, 5000.0, "hold", None),
    # my own wait mark
    ("wait", MINE_W, 5.0, 99.9, "hold", None),
    ("wait", MINE_W, 5.0, 100.0, "renew", "wait"),
    ("wait", MINE_W, 5.0, None, "renew", "wait"),
    ("driver", MINE_W, 5.0, 1.0, "renew", "driver"),  # at once: a wait's mark invites take-over
    ("step", MINE_W, 5.0, None, "hold", None),
    # another host's driver mark (lease 120 s)
    ("driver", OTHER_D, None, None, "defer", None),
    ("driver", OTHER_D, 0.0, None, "defer", None),
    ("driver", OTHER_D, 119.9, None, "defer", None),
    ("driver", OTHER_D, 120.0, None, "take_over", "driver"),
    ("wait", OTHER_D, 119.9, None, "defer", None),
    ("wait", OTHER_D, 120.0, None, "take_over", "wait"),
    ("step", OTHER_D, 0.0, None, "defer", None),
    ("step", OTHER_D, 120.0, None, "none", None),  # lapsed: no live holder
    # another host's wait mark
    ("driver", OTHER_W, 0.0, None, "take_over", "driver"),  # a driver takes a wait's mark at once
    ("driver", OTHER_W, None, None, "take_over", "driver"),
    ("wait", OTHER_W, 0.0, None, "defer", None),
    ("wait", OTHER_W, 119.9, None, "defer", None),
    ("wait", OTHER_W, 120.0, None, "take_over", "wait"),
    ("step", OTHER_W, 0.0, None, "defer", None),
    ("step", OTHER_W, 120.0, None, "none", None),
    # garbage ages on my own configured lease (300 s)
    ("driver", GARBAGE, 0.0, None, "defer", None),
    ("driver", GARBAGE, 299.9, None, "defer", None),
    ("driver", GARBAGE, 300.0, None, "take_over", "driver"),
    ("wait", GARBAGE, 299.9, None, "defer", None),
    ("wait", GARBAGE, 300.0, None, "take_over", "wait"),
    ("step", GARBAGE, 0.0, None, "defer", None),
    ("step", GARBAGE, 300.0, None, "none", None),
]


@pytest.mark.parametrize("role,the_mark,observed_for,since,action,write_role", TABLE)
def test_decide_table(role, the_mark, observed_for, since, action, write_role) -> None:
    decision = decide(
        me=ME,
        role=role,
        mark=the_mark,
        observed_for=observed_for,
        now_mono=NOW,
        lease=LEASE,
        last_renewed=None if since is None else NOW - since,
    )
    assert (decision.action, decision.write_role) == (action, write_role), decision.reason
    assert decision.writes == (action in ("take", "renew", "take_over"))
    if action == "defer":
        holder = "unknown holder" if the_mark is GARBAGE else OTHER
        assert holder in decision.reason


def test_table_covers_every_role_and_mark_kind() -> None:
    kinds = {(row[0], id(row[1])) for row in TABLE}
    for role in ("driver", "wait", "step"):
        for kind in (None, MINE_D, MINE_W, OTHER_D, OTHER_W, GARBAGE):
            assert (role, id(kind)) in kinds, (role, kind)
    assert {row[4] for row in TABLE} == set(ACTIONS)


def test_decide_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        decide(me=ME, role="boss", mark=None, observed_for=None, now_mono=0, lease=1, last_renewed=None)
    with pytest.raises(ValueError):
        decide(me=ME, role="driver", mark=None, observed_for=None, now_mono=0, lease=0, last_renewed=None)


marks = st.sampled_from([None, MINE_D, MINE_W, OTHER_D, OTHER_W, GARBAGE])
times = st.one_of(st.none(), st.floats(min_value=0, max_value=10_000, allow_nan=False))


@given(
    role=st.sampled_from(["driver", "wait", "step"]),
    the_mark=marks,
    observed_for=times,
    since=times,
    lease=st.floats(min_value=1, max_value=3600, allow_nan=False),
)
def test_decide_safety_properties(role, the_mark, observed_for, since, lease) -> None:
    decision = decide(
        me=ME,
        role=role,
        mark=the_mark,
        observed_for=observed_for,
        now_mono=NOW,
        lease=lease,
        last_renewed=None if since is None else NOW - since,
    )
    assert decision.action in ACTIONS
    if role == "step":
        assert not decision.writes  # a step never pushes a mark
    if decision.action == "take":
        assert the_mark is None
    if decision.action == "take_over":
        rec = the_mark.record
        assert rec is None or rec.holder != ME
        preempts_wait = role == "driver" and rec is not None and rec.role == "wait"
        if not preempts_wait:
            # only ever by this host's own observation of a whole lease (a longer claim: its own)
            assert observed_for is not None and observed_for >= (min(rec.lease, lease) if rec else lease)
    if decision.action == "renew":
        assert the_mark is not None and the_mark.record is not None and the_mark.record.holder == ME
    if decision.writes:
        assert decision.write_role in ("driver", "wait")
        if the_mark is not None and the_mark.record is not None and the_mark.record.role == "driver":
            if the_mark.record.holder == ME:
                assert decision.write_role == "driver"  # never demote a live driver's mark


@given(since=st.floats(min_value=0, max_value=2 * LEASE, allow_nan=False),
       defer=st.floats(min_value=0, max_value=LEASE / 3, allow_nan=False))
def test_a_deferred_renewal_waits_for_the_ticks_end_and_only_a_renewal_waits(since: float, defer: float) -> None:
    """Issue 29: a driver renews its own mark at its tick's end (in the survey's push) unless the
    renewal is already ``defer`` past due; nothing else is ever deferred."""
    decision = decide(me=ME, role="driver", mark=mark(record()), observed_for=None, now_mono=NOW, lease=LEASE,
                      last_renewed=NOW - since, defer=defer)
    if since >= LEASE / 3 + defer:
        assert decision.action == "renew"
    else:
        assert decision.action == "hold"
        if since >= LEASE / 3:
            assert "tick's end" in decision.reason
    for the_mark, observed in ((None, None), (mark(record(OTHER)), LEASE), (mark(record(OTHER, "wait")), 0.0)):
        plain = decide(me=ME, role="driver", mark=the_mark, observed_for=observed, now_mono=NOW, lease=LEASE,
                       last_renewed=None)
        later = decide(me=ME, role="driver", mark=the_mark, observed_for=observed, now_mono=NOW, lease=LEASE,
                       last_renewed=None, defer=defer)
        assert plain == later  # a take or a take-over is never put off


@given(lease=st.floats(min_value=60, max_value=3600), tick_share=st.floats(min_value=0.01, max_value=1.0),
       margin_share=st.floats(min_value=0.0, max_value=0.5))
def test_a_held_renewal_never_costs_the_ticks_rounds_their_lease(lease: float, tick_share: float,
                                                                  margin_share: float) -> None:
    """A renewal held for the tick's end is at most two thirds of the lease old, less the margin the
    rounds need and half a tick: the rounds of that tick still take in."""
    from git_sluice.remote.lease_record import renewal_deferral

    tick, margin = lease / 3 * tick_share, lease * margin_share
    defer = renewal_deferral(lease=lease, tick=tick, margin=margin)
    assert 0.0 <= defer <= tick
    if defer > 0:
        assert lease / 3 + defer + tick / 2 <= lease - margin + 1e-9
    assert renewal_deferral(lease=60, tick=20, margin=30) == 0.0  # the shortest lease renews at once
    assert renewal_deferral(lease=300, tick=60, margin=30) == 60.0  # the default waits a whole tick


# --- views ---------------------------------------------------------------------


def test_view_of_no_mark() -> None:
    view = lease_view(branch="main", me=ME, mark=None, observed_for=None, written_ago=None, lease=LEASE)
    assert view.absent and view.takes_in and not view.mine and not view.live and not view.garbage
    assert "no lease" in view.describe()


def test_view_of_my_mark_counts_from_my_write() -> None:
    live = lease_view(branch="main", me=ME, mark=MINE_D, observed_for=1.0, written_ago=299.0, lease=LEASE)
    assert live.mine and live.live and live.age == 299.0 and live.takes_in
    lapsed = lease_view(branch="main", me=ME, mark=MINE_D, observed_for=1.0, written_ago=300.0, lease=LEASE)
    assert lapsed.mine and not lapsed.live
    unknown = lease_view(branch="main", me=ME, mark=MINE_D, observed_for=1.0, written_ago=None, lease=LEASE)
    assert unknown.mine and not unknown.live  # nothing vouches for it


def test_view_of_other_and_garbage_marks() -> None:
    other = lease_view(branch="main", me=ME, mark=OTHER_D, observed_for=119.0, written_ago=None, lease=LEASE)
    assert (other.holder, other.role, other.lease, other.live, other.takes_in) == (OTHER, "driver", 120.0, True, False)
    assert "beta" in other.describe() and "live" in other.describe()
    lapsed = lease_view(branch="main", me=ME, mark=OTHER_D, observed_for=120.0, written_ago=None, lease=LEASE)
    assert not lapsed.live and lapsed.takes_in
    never_seen = lease_view(branch="main", me=ME, mark=OTHER_D, observed_for=None, written_ago=None, lease=LEASE)
    assert never_seen.live  # unknown age is assumed live
    junk = lease_view(branch="main", me=ME, mark=GARBAGE, observed_for=10.0, written_ago=None, lease=LEASE)
    assert junk.garbage and junk.holder is None and junk.lease == LEASE and junk.live
    assert "garbage" in junk.describe()
    assert junk.with_note("x").note == "x" and junk.with_note("x").oid == junk.oid


@pytest.mark.parametrize("role", ["driver", "wait", "step"])
@pytest.mark.parametrize("observed_for", [None, 0.0, LEASE - 1, LEASE])
def test_garbage_over_this_hosts_live_mark_is_taken_back_at_once_by_a_writer(role: str, observed_for) -> None:
    """Issue 33: no live holder writes garbage; a writer whose own mark it replaced takes it back."""
    garbage = Mark("c" * 40, None)
    kept = decide(me=ME, role=role, mark=garbage, observed_for=observed_for, now_mono=NOW, lease=LEASE,
                  last_renewed=None, overwritten=False)
    back = decide(me=ME, role=role, mark=garbage, observed_for=observed_for, now_mono=NOW, lease=LEASE,
                  last_renewed=None, overwritten=True)
    if role == "step":
        assert back == kept  # a step never writes
    else:
        assert back.action == "take_over" and back.write_role == role
    lapsed = observed_for is not None and observed_for >= LEASE
    assert kept.action == ("defer" if not lapsed else ("none" if role == "step" else "take_over"))
