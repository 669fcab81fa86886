"""How a lease reads to a person (issue 31): the branch once, an age in words, never a stale "live"."""

from __future__ import annotations

from hypothesis import given, strategies as st

from git_sluice.commands.lease import Fetched, RemoteLook, lease_json, lease_words
from git_sluice.remote.lease_record import LeaseView, lease_ref

OID = "a" * 40
OTHER = "b" * 40


def view(**fields: object) -> LeaseView:
    base: dict[str, object] = dict(branch="main", oid=OID, holder="host-a", role="driver", age=40.0, lease=300.0,
                                   garbage=False, mine=False, live=True)
    base.update(fields)
    return LeaseView(**base)  # type: ignore[arg-type]


def test_a_live_lease_the_remote_still_has_reads_as_before() -> None:
    look = RemoteLook({lease_ref("main"): OID})
    assert lease_words(view(), fetched=Fetched(300.0), look=look) == "main: driver lease of host-a, 40 s old, live"


def test_a_lease_the_remote_no_longer_has_is_never_live() -> None:
    """Host B after host A's driver let go: the mirror still has A's mark, the remote none."""
    words = lease_words(view(age=0.0), fetched=Fetched(300.0), look=RemoteLook({}))
    assert words == ("main: no lease on the remote now (the last fetch (5 min ago) had host-a's driver lease: "
                     "let go or taken back since)")
    data = lease_json(view(), RemoteLook({}))
    assert data["live"] is False and data["stale"] is True and data["remote"] == {"oid": None, "error": None}


def test_without_a_look_the_line_says_as_of_which_fetch() -> None:
    assert lease_words(view(), fetched=Fetched(90.0)) == "main: driver lease of host-a, 40 s old, live as last fetched 1 min 30 s ago"
    assert lease_words(view(), fetched=Fetched(None)).endswith("live as last fetched before this boot (none since)")
    assert lease_words(view(oid=None, holder=None, role=None, age=None, live=False), fetched=Fetched(0.2)) == \
        "main: no lease (this host alone), as last fetched just now"
    # this host's own mark: its own clock ages it, whatever the last fetch
    assert lease_words(view(mine=True), fetched=Fetched(90.0)) == "main: driver lease of this host, 40 s old, live"


def test_an_unreachable_remote_is_said_with_the_as_of() -> None:
    words = lease_words(view(), fetched=Fetched(60.0), look=RemoteLook({}, "no answer within 5 s"))
    assert words == ("main: driver lease of host-a, 40 s old, live as last fetched 1 min ago; "
                     "the remote could not be asked (no answer within 5 s)")


def test_an_unknown_age_is_said_so_never_never_old() -> None:
    words = lease_words(view(age=None, live=False))
    assert "never old" not in words and "age unknown" in words


@given(
    branch=st.sampled_from(["main", "next", "release/1.x"]),
    oid=st.sampled_from([None, OID]),
    remote=st.sampled_from([None, "absent", OID, OTHER, "error"]),
    age=st.one_of(st.none(), st.floats(0, 10_000)),
    mine=st.booleans(), live=st.booleans(), garbage=st.booleans(),
    since=st.one_of(st.none(), st.floats(0, 100_000)),
)
def test_every_lease_line_names_its_branch_once_and_is_live_only_where_the_remote_agrees(
    branch: str, oid: str | None, remote: str | None, age: float | None, mine: bool, live: bool, garbage: bool,
    since: float | None,
) -> None:
    look = None if remote is None else RemoteLook({}, "unreachable") if remote == "error" else \
        RemoteLook({} if remote == "absent" else {lease_ref(branch): remote})
    v = view(branch=branch, oid=oid, age=age, mine=mine, live=live and oid is not None, garbage=garbage,
             holder=None if oid is None else "host-a", role=None if oid is None else "driver")
    words = lease_words(v, fetched=Fetched(since), look=look)
    assert words.startswith(f"{branch}: ") and not words.startswith(f"{branch}: {branch}:")
    assert "never old" not in words and "[" not in words
    current = look is not None and look.error is None
    if current and look is not None and look.oid(branch) != oid:
        assert ", live" not in words
    if not current and ", live" in words and not mine:
        assert "as last fetched" in words
