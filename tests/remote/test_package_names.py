"""``git_sluice.remote`` gives every name it says it gives (issue 32: its ``__all__`` named one that did not exist)."""

from __future__ import annotations

import importlib
import pkgutil

import git_sluice


def test_every_name_in_every_packages_all_imports() -> None:
    for info in pkgutil.walk_packages(git_sluice.__path__, "git_sluice."):
        if not info.ispkg:
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            assert hasattr(module, name), f"{info.name}.__all__ names {name}, which it does not give"
    namespace: dict[str, object] = {}
    exec("from git_sluice.remote import *", namespace)
    assert {"SurveyRemote", "RemoteLooks", "LeaseKeeper", "sluice_refspecs"} <= set(namespace)
