"""setup's decisions, without a repository (issue 32): what it does at a hook's path, what undo removes."""

from __future__ import annotations

import pytest

from git_sluice.commands.setup import MANIFEST_NAME, SetupRefused, files_undone, hook_plan


def _never() -> str | None:
    raise AssertionError("the existing hook is read only when setup would chain it")


@pytest.mark.parametrize("mode", ["files", "config"])
def test_nothing_there_is_created_and_ours_is_ours_in_either_mode(mode: str) -> None:
    assert hook_plan("pre-push", mode, exists=False, ours=False, problem=_never) == "create"
    assert hook_plan("pre-push", mode, exists=True, ours=True, problem=_never) == "ours"


def test_someone_elses_hook_is_left_beside_config_hooks_and_chained_otherwise() -> None:
    assert hook_plan("pre-push", "config", exists=True, ours=False, problem=_never) == "leave"
    assert hook_plan("pre-push", "files", exists=True, ours=False, problem=lambda: None) == "chain"


def test_a_hook_that_cannot_be_chained_is_refused_naming_it() -> None:
    with pytest.raises(SetupRefused, match="cannot chain the existing post-merge hook: a binary"):
        hook_plan("post-merge", "files", exists=True, ours=False, problem=lambda: "a binary")


def test_undo_keeps_the_record_while_something_is_left_to_undo() -> None:
    assert MANIFEST_NAME not in files_undone(remaining=True)
    assert files_undone(remaining=False) == (*files_undone(remaining=True), MANIFEST_NAME)
