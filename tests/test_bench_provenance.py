"""The benchmark's own rules: figures from one commit, activity as production has it, the sources' baselines.

These are the harness's pure parts (no fleet runs): each would let a wrong
figure into docs/benchmarks.md if it broke.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from git_sluice.clock import FakeClock
from git_sluice.double import GitHubDouble

BENCH = Path(__file__).resolve().parent.parent / "contrib" / "bench"
sys.path.insert(0, str(BENCH))

import fleet_provenance  # noqa: E402
from fleet_activity import BUSY, PRODUCTION, Activity, NoGit, unrelated_plan  # noqa: E402
from fleet_baselines import Direct, TowerFixPoller, adr_pace  # noqa: E402


def _repo(path: Path, version: str = "0.1.0") -> Path:
    (path / "git_sluice").mkdir(parents=True)
    (path / "git_sluice" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)
    return path


def test_a_dirty_tree_is_refused_unless_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _repo(tmp_path / "tree")
    monkeypatch.setattr(fleet_provenance, "ROOT", root)
    state = fleet_provenance.tree_state()
    assert not state["dirty"] and len(state["commit"]) == 40
    (root / "untracked.py").write_text("x = 1\n")  # an untracked module can be imported: dirty too
    with pytest.raises(fleet_provenance.ProvenanceError, match="--allow-dirty"):
        fleet_provenance.check(allow_dirty=False)
    # allowed, it goes on to the modules: this process imports git_sluice from another tree
    with pytest.raises(fleet_provenance.ProvenanceError, match="not from this tree"):
        fleet_provenance.check(allow_dirty=True)


def test_a_process_on_another_tree_or_version_is_refused() -> None:
    want = fleet_provenance.expected()
    assert fleet_provenance.mismatch("x", fleet_provenance.identity(), want) is None
    elsewhere = {"file": "/somewhere/else/git_sluice/__init__.py", "version": want["version"]}
    assert "not from this tree" in (fleet_provenance.mismatch("the worker", elsewhere, want) or "")
    older = {"file": want["file"], "version": "0.0.1"}
    assert "0.0.1" in (fleet_provenance.mismatch("the worker", older, want) or "")
    with pytest.raises(fleet_provenance.ProvenanceError):
        fleet_provenance.check_worker(elsewhere)
    fleet_provenance.check_worker(fleet_provenance.identity())


def test_an_installed_copy_of_this_trees_source_counts_as_this_tree_and_an_edited_one_does_not(
    tmp_path: Path,
) -> None:
    """CI installs with ``pip install .`` (no editable link): the same files elsewhere run the same code."""
    import shutil

    want = fleet_provenance.expected()
    copy = tmp_path / "site-packages" / "git_sluice"
    shutil.copytree(Path(want["file"]).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    got = {"file": str(copy / "__init__.py"), "version": want["version"],
           "digest": fleet_provenance.source_digest(copy)}
    assert fleet_provenance.mismatch("an installed copy", got, want) is None
    (copy / "clock.py").write_text((copy / "clock.py").read_text() + "\n# edited\n")
    got["digest"] = fleet_provenance.source_digest(copy)
    assert "source differs" in (fleet_provenance.mismatch("an edited copy", got, want) or "")


def test_the_console_script_is_this_trees() -> None:
    got = fleet_provenance.console_identity()
    assert fleet_provenance.mismatch("git-sluice", got, fleet_provenance.expected()) is None


def test_unrelated_activity_runs_at_the_issues_rates_and_a_longer_run_begins_like_a_shorter() -> None:
    repos = ["o/a", "o/b"]
    hour = unrelated_plan(repos, PRODUCTION, 3600.0, seed=3)
    for repo in repos:
        pushes = [i for i in hour if i.repo == repo and i.kind == "branch-push"]
        others = [i for i in hour if i.repo == repo and i.kind in ("star", "issue")]
        assert len(pushes) == 30 and len(others) == 6  # every 2 minutes; every 10 minutes
        assert {i.kind for i in others} == {"star", "issue"}
    assert len([i for i in unrelated_plan(["o/a"], BUSY, 3600.0, seed=3) if i.kind == "branch-push"]) == 60
    half = unrelated_plan(repos, PRODUCTION, 1800.0, seed=3)
    assert half == [i for i in hour if i.at < 1800.0]
    assert unrelated_plan(repos, None, 3600.0, seed=3) == []


def test_unrelated_activity_moves_no_request_but_changes_the_list() -> None:
    gh = GitHubDouble(clock=FakeClock(1_000_000))
    gh.add_repo("o/a")
    number = gh.open_pr("o/a", head_ref="f1")
    before = gh.pr("o/a", number).updated_at
    activity = Activity(gh, NoGit())
    for intent in unrelated_plan(["o/a"], PRODUCTION, 700.0, seed=1):
        activity.apply(intent, intent.at)
    assert gh.pr("o/a", number).updated_at == before
    assert activity.applied.get("branch-push", 0) >= 5 and activity.expectations == []


def test_the_naive_poller_is_paced_to_spend_the_allowance_in_45_minutes() -> None:
    assert adr_pace(36, 5000) == pytest.approx(36 * 2700 / 5000)
    assert 3600 * 0.75 / adr_pace(1, 5000) == pytest.approx(5000)


def test_towers_own_fix_costs_52_points_an_hour_per_repository() -> None:
    clock = FakeClock(1_000_000)
    gh = GitHubDouble(clock=clock)
    gh.add_user("u")
    gh.add_token("t", user="u")
    repos = ["o/a", "o/b"]
    for name in repos:
        gh.add_repo(name)
        gh.open_pr(name, head_ref="f1")
    poller = TowerFixPoller(Direct(gh, "t"), repos)
    mark = gh.mark()
    for step in range(0, 3600 * 2, 5):  # two hours, a poll every 5 s
        clock.set(1_000_000 + step)
        poller.poll(clock.time())
    assert gh.counted(resource="graphql", since=mark) == 2 * 52 * len(repos)


@given(st.floats(1.0, 50_000.0), st.sampled_from([30.0, 60.0]), st.sampled_from([15.0, 30.0]),
       st.floats(100.0, 5_000.0))
def test_s10_sized_window_is_the_least_whole_number_of_loops_that_fits_the_budget(
    points: float, window: float, period: float, budget: float
) -> None:
    from fleet_serve import sized_window

    sized = sized_window(points, window, period, budget)
    if points <= budget:
        assert sized == window
        return
    assert sized % period == 0 and points * window / sized <= budget * (1 + 1e-9)
    assert sized - period <= 0 or points * window / (sized - period) > budget * (1 - 1e-9)
