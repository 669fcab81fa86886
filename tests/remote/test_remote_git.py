"""The git CLI layer: porcelain parsing, CAS pushes over file:// and git://, fetch."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from git_sluice.remote.git import (
    INTERNAL_ENV,
    CasUpdate,
    RefOutcome,
    RemoteGit,
    RemoteUnreachable,
    parse_porcelain,
    scrub,
)

PORCELAIN = (
    "To ../remote.git\n"
    " \t1111111111111111111111111111111111111111:refs/heads/ff\taaaaaaa..bbbbbbb\n"
    "+\t2222222222222222222222222222222222222222:refs/sluice/intake/main\taaaaaaa...ccccccc (forced update)\n"
    "*\t3333333333333333333333333333333333333333:refs/sluice/intake/new\t[new reference]\n"
    "-\t:refs/sluice/intake/gone\t[deleted]\n"
    "=\t4444444444444444444444444444444444444444:refs/sluice/intake/same\t[up to date]\n"
    "!\t5555555555555555555555555555555555555555:refs/sluice/intake/stale\t[rejected] (stale info)\n"
    "!\t(delete):refs/sluice/intake/absent\t[rejected] (stale info)\n"
    "!\t6666666666666666666666666666666666666666:refs/sluice/intake/locked\t[remote rejected] "
    "(cannot lock ref 'refs/sluice/intake/locked': is at 1234 but expected 5678)\n"
    "!\t7777777777777777777777777777777777777777:refs/sluice/intake/old\t[remote rejected] (failed to update ref)\n"
    "!\t8888888888888888888888888888888888888888:refs/heads/b\t[rejected] (fetch first)\n"
    "!\t9999999999999999999999999999999999999999:refs/tags/t\t[rejected] (already exists)\n"
    "!\tabababababababababababababababababababab:refs/sluice/intake/hook\t[remote rejected] (pre-receive hook declined)\n"
    "!\tcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd:refs/sluice/intake/lost\t[remote failure] (remote failed to report status)\n"
    "Done\n"
)


def test_parse_porcelain_reads_every_flag() -> None:
    outcomes = {o.ref: o for o in parse_porcelain(PORCELAIN)}
    assert len(outcomes) == 13
    ff = outcomes["refs/heads/ff"]
    assert (ff.flag, ff.summary, ff.reason, ff.won) == (" ", "aaaaaaa..bbbbbbb", "", True)
    forced = outcomes["refs/sluice/intake/main"]
    assert (forced.flag, forced.summary, forced.reason) == ("+", "aaaaaaa...ccccccc", "forced update")
    assert forced.won and not forced.lost_race
    assert outcomes["refs/sluice/intake/new"].won
    assert outcomes["refs/sluice/intake/new"].summary == "[new reference]"
    assert outcomes["refs/sluice/intake/gone"].won


def test_up_to_date_is_not_a_win() -> None:
    same = parse_porcelain(PORCELAIN)[4]
    assert same.ref == "refs/sluice/intake/same"
    assert same.up_to_date and not same.won
    # push_cas never sends a no-op, so "=" means our expectation went unchecked: read again
    assert same.lost_race and not same.refused


@pytest.mark.parametrize(
    "ref", ["stale", "absent", "locked", "old", "refs/heads/b", "refs/tags/t"]
)
def test_race_reasons_are_lost_races(ref: str) -> None:
    outcomes = {o.ref.rsplit("/", 1)[-1]: o for o in parse_porcelain(PORCELAIN)}
    outcome = outcomes[ref.rsplit("/", 1)[-1]]
    assert outcome.flag == "!"
    assert outcome.lost_race and not outcome.won and not outcome.refused and not outcome.unknown


def test_policy_refusal_and_unreported_outcome() -> None:
    outcomes = {o.ref: o for o in parse_porcelain(PORCELAIN)}
    hook = outcomes["refs/sluice/intake/hook"]
    assert hook.refused and not hook.lost_race and hook.reason == "pre-receive hook declined"
    lost = outcomes["refs/sluice/intake/lost"]
    assert lost.unknown and not lost.refused and not lost.won
    assert RefOutcome("refs/x", "?", "[no report]", "").unknown


def test_parse_porcelain_ignores_noise_and_keeps_deleted_ref_names() -> None:
    assert parse_porcelain("") == []
    assert parse_porcelain("To x\nDone\nerror: failed to push some refs\n") == []
    deleted = parse_porcelain(PORCELAIN)[6]
    assert deleted.ref == "refs/sluice/intake/absent" and deleted.reason == "stale info"


def test_scrub_removes_credentials() -> None:
    text = "fatal: unable to access 'https://x-access-token:ghs_abcdefghijklmnop1234@github.com/o/r/'"
    cleaned = scrub(text)
    assert "ghs_" not in cleaned and "x-access-token" not in cleaned
    assert "github.com/o/r" in cleaned
    assert scrub("token ghp_ABCDEFGHIJKLMNOPQRSTUV here") == "token *** here"


# --- against real remotes ------------------------------------------------------


def remote_ref(bare: Path, ref: str) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", ref], cwd=bare, capture_output=True, text=True
    )
    return proc.stdout.strip() or None


def test_cas_push_create_update_delete_and_mirror(make_host, url_for, bare_remote, fake_clock) -> None:
    host = make_host("a", url_for)
    remote = host.remote_git(fake_clock)
    ref = "refs/sluice/intake/main"
    first = remote.write_record("one\n\nHolder: a\n")
    fake_clock.advance(1)
    second = remote.write_record("two\n\nHolder: a\n")
    assert first != second

    [created] = remote.push_cas([CasUpdate(ref, first, None)])
    assert created.won and created.flag == "*"
    assert remote_ref(bare_remote, ref) == first
    assert host.repo.ref(ref) == first  # mirrored at once

    [again] = remote.push_cas([CasUpdate(ref, second, None)])  # expected absent, it is not
    assert again.lost_race and not again.won
    assert remote_ref(bare_remote, ref) == first

    [moved] = remote.push_cas([CasUpdate(ref, second, first)])
    assert moved.won and moved.flag == "+"
    assert host.repo.ref(ref) == second

    [stale_delete] = remote.push_cas([CasUpdate(ref, None, first)])
    assert stale_delete.lost_race
    [deleted] = remote.push_cas([CasUpdate(ref, None, second)])
    assert deleted.won and deleted.flag == "-"
    assert remote_ref(bare_remote, ref) is None
    assert host.repo.ref(ref) is None


def test_up_to_date_with_expected_absent_is_reported_as_lost(make_host, url_for, fake_clock) -> None:
    """The pitfall (docs/design.md#pitfalls-it-is-built-around): git exits 0 with "[up to date]" although the ref was not absent."""
    a = make_host("a", url_for)
    b = make_host("b", url_for)
    ref = "refs/sluice/intake/main"
    ra = a.remote_git(fake_clock)
    record = ra.write_record("same record\n")
    assert ra.push_cas([CasUpdate(ref, record, None)])[0].won
    rb = b.remote_git(fake_clock)
    twin = rb.write_record("same record\n")  # byte-identical: same object id
    assert twin == record
    [outcome] = rb.push_cas([CasUpdate(ref, twin, None)])
    assert outcome.flag == "="
    assert not outcome.won and outcome.lost_race


def test_one_push_many_refs_each_its_own_lease(make_host, url_for, bare_remote, fake_clock) -> None:
    host = make_host("a", url_for)
    remote = host.remote_git(fake_clock)
    oid = remote.write_record("r\n")
    remote.push_cas([CasUpdate("refs/sluice/intake/b", oid, None)])
    fake_clock.advance(5)
    other = remote.write_record("s\n")
    outcomes = remote.push_cas(
        [
            CasUpdate("refs/sluice/intake/a", other, None),
            CasUpdate("refs/sluice/intake/b", other, None),  # wrong expectation
            CasUpdate("refs/sluice/intake/c", other, None),
        ]
    )
    assert [o.ref for o in outcomes] == [f"refs/sluice/intake/{x}" for x in "abc"]
    assert [o.won for o in outcomes] == [True, False, True]
    assert outcomes[1].lost_race
    assert remote_ref(bare_remote, "refs/sluice/intake/b") == oid


def test_concurrent_creates_exactly_one_wins(make_host, url_for, bare_remote, fake_clock) -> None:
    hosts = [make_host(f"h{i}", url_for) for i in range(4)]
    remotes = [h.remote_git(fake_clock) for h in hosts]
    records = [r.write_record(f"record {i}\n") for i, r in enumerate(remotes)]
    results: dict[int, RefOutcome] = {}
    barrier = threading.Barrier(len(remotes))

    def push(i: int) -> None:
        barrier.wait()
        results[i] = remotes[i].push_cas([CasUpdate("refs/sluice/intake/main", records[i], None)])[0]

    threads = [threading.Thread(target=push, args=(i,)) for i in range(len(remotes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, o in results.items() if o.won]
    assert len(winners) == 1
    assert all(o.lost_race for i, o in results.items() if i not in winners)
    assert remote_ref(bare_remote, "refs/sluice/intake/main") == records[winners[0]]


def test_fetch_brings_and_prunes_sluice_refs(make_host, url_for, fake_clock) -> None:
    a = make_host("a", url_for)
    b = make_host("b", url_for)
    ra, rb = a.remote_git(fake_clock), b.remote_git(fake_clock)
    oid = ra.write_record("lease\n")
    ref = "refs/sluice/intake/main"
    ra.push_cas([CasUpdate(ref, oid, None)])
    assert b.repo.ref(ref) is None
    rb.fetch()
    assert b.repo.ref(ref) == oid
    assert rb.read_message(oid) == "lease\n"
    ra.push_cas([CasUpdate(ref, None, oid)])
    rb.fetch()
    assert b.repo.ref(ref) is None  # a lease deleted on the remote disappears here


def test_fetch_takes_extra_refspecs(make_host, url_for, fake_clock, tmp_path, git_repo) -> None:
    a = make_host("a", url_for)
    seed = Path(git_repo.workspace)  # what bare_remote was seeded from
    (seed / "more").write_text("x\n")
    subprocess.run(["git", "add", "more"], cwd=seed, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "more"], cwd=seed, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=seed, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "push", "-q", (tmp_path / "remote.git").as_uri(), "HEAD:refs/heads/main"], cwd=seed, check=True)
    a.remote_git(fake_clock).fetch("+refs/heads/main:refs/remotes/origin/main")
    assert a.repo.ref("refs/remotes/origin/main") == head


def test_unreachable_is_not_a_lost_race(make_host, bare_remote, fake_clock, tmp_path) -> None:
    host = make_host("a")
    remote = host.remote_git(fake_clock)
    oid = remote.write_record("r\n")
    gone = RemoteGit(host.repo, (tmp_path / "nowhere.git").as_uri(), clock=fake_clock)
    with pytest.raises(RemoteUnreachable) as caught:
        gone.push_cas([CasUpdate("refs/sluice/intake/main", oid, None)])
    assert "push to" in str(caught.value)
    with pytest.raises(RemoteUnreachable):
        gone.fetch()
    with pytest.raises(RemoteUnreachable):
        RemoteGit(host.repo, "no-such-remote", clock=fake_clock).fetch()
    assert host.repo.ref("refs/sluice/intake/main") is None


def test_daemon_down_is_unreachable(make_host, git_daemon, fake_clock) -> None:
    host = make_host("a", git_daemon)
    remote = host.remote_git(fake_clock)
    oid = remote.write_record("r\n")
    assert remote.push_cas([CasUpdate("refs/sluice/intake/main", oid, None)])[0].won
    port = int(git_daemon.rsplit(":", 1)[1].split("/", 1)[0])
    dead = git_daemon.replace(f":{port}/", f":{_closed_port()}/")
    down = RemoteGit(host.repo, dead, clock=fake_clock)
    with pytest.raises(RemoteUnreachable):
        down.push_cas([CasUpdate("refs/sluice/intake/other", oid, None)])
    with pytest.raises(RemoteUnreachable):
        down.fetch()


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_op_updates_are_refused_before_the_wire(make_host, fake_clock) -> None:
    remote = make_host("a").remote_git(fake_clock)
    oid = remote.write_record("r\n")
    with pytest.raises(ValueError):
        remote.push_cas([CasUpdate("refs/sluice/intake/main", oid, oid)])
    with pytest.raises(ValueError):
        remote.push_cas([CasUpdate("refs/sluice/intake/main", None, None)])
    with pytest.raises(ValueError):
        remote.push_cas([CasUpdate("sluice/intake/main", oid, None)])
    assert remote.push_cas([]) == []


def test_records_are_parentless_empty_tree_commits(make_host, fake_clock) -> None:
    host = make_host("a")
    remote = host.remote_git(fake_clock)
    oid = remote.write_record("subject\n\nHolder: a\n")
    commit = host.repo.raw.get(oid)
    assert commit.parents == []
    assert len(commit.tree) == 0
    assert commit.author.name == "git-sluice" and commit.author.email == "sluice@localhost"
    assert commit.commit_time == int(fake_clock.time())
    assert remote.read_message(oid) == "subject\n\nHolder: a\n"
    assert remote.read_message(str(commit.tree_id)) is None  # a tree is not a record
    assert remote.read_message("0" * 40) is None
    assert remote.read_message("not-an-oid") is None


def test_our_git_runs_without_hooks_and_with_the_guard(make_host, fake_clock, tmp_path) -> None:
    """Our own fetch/push must not re-enter the user's hooks (docs/design.md#pitfalls-it-is-built-around, recursion)."""
    host = make_host("a")
    hooks = host.path / ".git" / "hooks"
    marker = tmp_path / "hook-ran"
    script = hooks / "reference-transaction"
    script.write_text(f"#!/bin/sh\necho \"$1 ${INTERNAL_ENV}\" >> {marker}\n")
    script.chmod(0o755)
    pre_push = hooks / "pre-push"
    pre_push.write_text(f"#!/bin/sh\necho pre-push >> {marker}\nexit 1\n")
    pre_push.chmod(0o755)
    remote = host.remote_git(fake_clock)
    oid = remote.write_record("r\n")
    assert remote.push_cas([CasUpdate("refs/sluice/intake/main", oid, None)])[0].won
    remote.fetch()
    assert not marker.exists()


def test_our_git_carries_the_recursion_guard(make_host, fake_clock, tmp_path) -> None:
    """Hooks of the remote side (and any wrapper) can tell our traffic by INTERNAL_ENV."""
    host = make_host("a")
    seen = tmp_path / "env-seen"
    for kind in ("upload-pack", "receive-pack"):
        wrapper = tmp_path / f"{kind}-wrapper"
        wrapper.write_text(f'#!/bin/sh\necho "{kind} ${INTERNAL_ENV}" >> {seen}\nexec git {kind} "$@"\n')
        wrapper.chmod(0o755)
        key = "uploadpack" if kind == "upload-pack" else "receivepack"
        subprocess.run(["git", "config", f"remote.origin.{key}", str(wrapper)], cwd=host.path, check=True)
    remote = host.remote_git(fake_clock)
    oid = remote.write_record("r\n")
    assert remote.push_cas([CasUpdate("refs/sluice/intake/main", oid, None)])[0].won
    remote.fetch()
    assert sorted(seen.read_text().split("\n")[:-1]) == ["receive-pack 1", "upload-pack 1"]
