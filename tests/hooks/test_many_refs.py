"""Issue #14 point 9: cost does not grow with refs under refs/sluice/* that do not concern this clone.

The remote holds 6,000 pause notes of other teams' pools. A person's fetch
brings none of them (setup adds no refspec), the round it starts fetches only
the leases and this clone's own pool's notes, and ``status`` lists no other
team's pool, even where an older setup's mirror still holds their notes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.hooks.conftest import World
from git_sluice.forge.auth import token_digest
from git_sluice.remote.notes import PauseNote

OWN_POOL = "0a0a0a0a0a0a"
FAR = 4_000_000_000.0  # a pause still running whatever the test machine's clock says


def _note(world: World, pool: str, resource: str = "core") -> str:
    message = PauseNote(pool, resource, FAR, "primary", 1, "other-host").to_message()
    tree = world.git("hash-object", "-t", "tree", "-w", "/dev/null", cwd=world.other).stdout.strip()
    return world.run("git", "commit-tree", tree, "-m", message, cwd=world.other).stdout.strip()


def _know_own_pool(world: World) -> None:
    """As a host that made one call with this token: its pool is learned (GET /user) and kept."""
    state = Path(world.env["XDG_STATE_HOME"]) / "git-sluice"
    state.mkdir(parents=True, exist_ok=True)
    (state / "pools.json").write_text(json.dumps({token_digest(world.env["GH_TOKEN"]): OWN_POOL}))


def _fill_remote(world: World, count: int) -> str:
    other_note = _note(world, "0b0b0b0b0b0b")
    world.git("push", "-q", "origin", f"{other_note}:refs/heads/seed-note", cwd=world.other)
    lines = "".join(
        f"create refs/sluice/pause/{i:012x}/core {other_note}\n" for i in range(0x100000, 0x100000 + count)
    )
    subprocess.run(["git", "update-ref", "--stdin"], cwd=world.remote, input=lines, text=True, check=True,
                   env=world.env)
    own = _note(world, OWN_POOL)
    world.git("push", "-q", "origin", f"{own}:refs/sluice/pause/{OWN_POOL}/core", cwd=world.other)
    return other_note


def _sluice_refs(world: World, prefix: str = "refs/sluice/pause") -> list[str]:
    return world.git("for-each-ref", "--format=%(refname)", prefix).stdout.split()


def test_six_thousand_foreign_notes_cost_a_round_nothing(world: World) -> None:
    _know_own_pool(world)
    _fill_remote(world, 6000)
    world.advance("main")
    fetched = world.git("fetch", "origin")
    assert "refs/sluice" not in fetched.stdout + fetched.stderr
    world.wait_quiet(timeout=60)
    assert len(world.rounds()) == 1
    # the round fetched its own pool's note, and not one of the 6,000 others
    assert _sluice_refs(world) == [f"refs/sluice/pause/{OWN_POOL}/core"]


def test_status_lists_no_other_teams_pools(world: World) -> None:
    _know_own_pool(world)
    _fill_remote(world, 40)
    # an older setup's mirror: every pool's notes in this clone
    world.git("fetch", "-q", "origin", "+refs/sluice/*:refs/sluice/*")
    assert len(_sluice_refs(world)) == 41
    world.advance("main")
    world.git("fetch", "-q", "origin")
    world.wait_quiet(timeout=60)
    done = world.sluice("status", "--json")
    assert done.returncode == 0, done.stderr
    pools = {p["pool"] for p in json.loads(done.stdout)["pools"]}
    assert pools <= {OWN_POOL}
    assert OWN_POOL in pools  # its own pool's note was adopted and is shown
