"""forge/poolguard.py: an unknown pool obeys every pause on its API host, and asks only when none stands."""

from __future__ import annotations

from hypothesis import given, strategies as st

from git_sluice.forge.gate_machine import PauseView
from git_sluice.forge.poolguard import Choice, PoolHosts, choose

HOST = "api.github.com"


def paused(pool: str, resource: str, until: float, observe_only: bool = False) -> PauseView:
    """A standing pause as the host store reports it; the choice reads its pool, resource, end and mode."""
    return PauseView(pool=pool, resource=resource, phase="paused", until=until, cls="primary", how="reset",
                     epoch=1, streak=1, source="local", observe_only=observe_only, held=0)


def pick(known, pauses, resource="core", hosts=None):
    hosts = hosts or {}
    return choose(known, pauses, resource, api_host=HOST, host_of=hosts.get, provisional="prov")


def test_a_known_pool_is_used_whatever_stands() -> None:
    assert pick("mine", [paused("other", "core", 10.0)]) == Choice("mine", "known")


def test_nothing_standing_asks() -> None:
    assert pick(None, []) == Choice(None, "ask")


def test_a_pause_of_the_resource_is_obeyed_the_latest_ending_one() -> None:
    pauses = [paused("p1", "core", 10.0), paused("p2", "core", 20.0), paused("p3", "graphql", 99.0)]
    assert pick(None, pauses) == Choice("p2", "paused")


def test_a_pause_of_another_resource_forbids_asking_but_does_not_hold_the_call() -> None:
    assert pick(None, [paused("p1", "graphql", 10.0)]) == Choice("prov", "provisional")


def test_observe_only_and_other_api_hosts_are_not_obeyed() -> None:
    pauses = [paused("p1", "core", 10.0, observe_only=True), paused("ghe", "core", 10.0)]
    assert pick(None, pauses, hosts={"ghe": "ghe.corp"}) == Choice(None, "ask")


def test_a_pool_of_unknown_host_is_obeyed() -> None:
    assert pick(None, [paused("p", "core", 5.0)], hosts={"x": "ghe.corp"}).how == "paused"


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["core", "graphql"]),
                          st.floats(0, 1e6), st.booleans())),
       st.sampled_from(["core", "graphql"]))
def test_never_asks_while_an_enforced_pause_stands(rows, resource) -> None:
    pauses = [paused(p, r, u, o) for p, r, u, o in rows]
    choice = pick(None, pauses, resource)
    if any(not p.observe_only for p in pauses):
        assert choice.how != "ask" and choice.pool is not None
    else:
        assert choice == Choice(None, "ask")


def test_pool_hosts_remember_and_survive_a_corrupt_file(tmp_path) -> None:
    hosts = PoolHosts(tmp_path)
    hosts.remember("p", HOST)
    assert PoolHosts(tmp_path).host_of("p") == HOST
    (tmp_path / "pool-hosts.json").write_text("{garbage")
    assert PoolHosts(tmp_path).host_of("p") is None
