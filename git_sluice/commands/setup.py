"""``git sluice setup``: install the hooks, check the config.

Setup adds nothing to the remote's fetch refspecs: the rounds fetch what they
need with refspecs of their own, so a person's ``git fetch`` is the same with
and without git-sluice. Where an older setup added ``+refs/sluice/*:refs/sluice/*``
(its manifest says so), setup takes it out again.

Setup touches things that belong to the user — their hooks, their remote's
fetch refspecs — so it is built to be undone exactly: every change is written
to a manifest (``<sluice dir>/setup.json``) before the next one is made, and
``--undo`` reverses what the manifest names and nothing else.

Where hooks go:

- **config-defined hooks** (git >= 2.54: ``hook.<name>.command`` /
  ``hook.<name>.event`` in the clone's config) are the least invasive: nothing
  in the hooks folder changes and any hook already there runs as before. The
  script lives in ``<sluice dir>/hooks/``.
- otherwise **hook files** in the folder git runs hooks from: the common dir's
  ``hooks/`` (so every linked worktree shares them), or ``core.hooksPath``
  when set — which may serve other repositories too, so setup says so (the
  scripts do nothing in a repository that was not set up). A hook already
  there is *chained* the way pre-commit does it: moved to ``<hook>.legacy``,
  and our script runs it first, with the same arguments and stdin, and exits
  with its status.

A hook that cannot be chained (a directory, a dangling link, not readable,
not executable) is refused before anything changes (exit 2).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import json
import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SetupRefused as SetupRefused
from ..gitcli import parse_version
from ..records import record
from ..remote.git import LEGACY_REFSPEC
from ..statefile import parse_json, write_atomic
from . import _hook_managers

if TYPE_CHECKING:
    from ..config import Settings
    from ..repo import Repo

HOOK_NAMES: tuple[str, ...] = ("pre-push", "reference-transaction")
MARKER = b"# git-sluice hook:"
"""The line that tells our scripts apart from anyone else's hook."""
MANIFEST_NAME = "setup.json"
CONFIG_HOOKS_SINCE: tuple[int, int] = (2, 54)
CONFIG_HOOK_PREFIX = "sluice-"
LEGACY_SUFFIX = ".legacy"


@record
class Step:
    """One thing setup looked at, and what it did to it."""

    subject: str
    status: str
    detail: str = ""
    changed: bool = False

    def line(self) -> str:
        return f"{self.subject}: {self.status}" + (f" ({self.detail})" if self.detail else "")

    def as_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "status": self.status, "detail": self.detail, "changed": self.changed}


@record
class Report:
    """What ``setup`` (or ``--undo``) found and did, line by line."""

    action: str
    steps: list[Step] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    hooks_dir: str | None = None
    shared_hooks_dir: bool = False
    mode: str | None = None
    remote: str | None = None
    branches: list[str] = field(default_factory=list)
    token_source: str | None = None
    todo: list[dict[str, str]] = field(default_factory=list)  # lines to add to another program's hooks

    @property
    def changed(self) -> bool:
        return any(step.changed for step in self.steps)

    def add(self, subject: str, status: str, detail: str = "", *, changed: bool = False) -> None:
        self.steps.append(Step(subject, status, detail, changed))

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "changed": self.changed,
            "mode": self.mode,
            "hooks_dir": self.hooks_dir,
            "shared_hooks_dir": self.shared_hooks_dir,
            "remote": self.remote,
            "branches": self.branches,
            "token": {"found": self.token_source is not None, "source": self.token_source},
            "steps": [step.as_dict() for step in self.steps],
            "warnings": self.warnings,
            "todo": self.todo,
        }


# ----------------------------------------------------------------- pure parts


def script(name: str) -> bytes:
    """The hook script as shipped in the package (``hooks/`` in the source tree).

    An installed package has them as ``git_sluice.hookscripts``; code imported
    straight from a source checkout (tests run from the tree over a regular
    install) finds them in the top-level ``hooks/`` folder beside the package.
    """
    try:
        return importlib.resources.files("git_sluice.hookscripts").joinpath(name).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        return (Path(__file__).resolve().parents[2] / "hooks" / name).read_bytes()


def choose_mode(version: tuple[int, ...]) -> str:
    """``config`` where git runs config-defined hooks (>= 2.54), else ``files``."""
    return "config" if version[:2] >= CONFIG_HOOKS_SINCE else "files"


def config_hook_command(path: Path) -> str:
    """The ``hook.<name>.command`` value: the script, with ``exec`` when a shell is needed,
    so the hook's parent is still the git process its runner waits for."""
    quoted = shlex.quote(str(path))
    return quoted if quoted == str(path) else f"exec {quoted}"


def is_ours(path: Path) -> bool:
    """A regular file whose first lines carry our marker."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        with path.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return MARKER in head


def chain_problem(path: Path) -> str | None:
    """Why an existing hook cannot be chained, or None when it can."""
    legacy = path.with_name(path.name + LEGACY_SUFFIX)
    if path.is_symlink() and not path.exists():
        return f"{path} is a symbolic link to {os.readlink(path)}, which does not exist; remove it or fix the link"
    if path.is_dir():
        return f"{path} is a directory, not a hook git can run; move it away and run setup again"
    if not path.is_file():
        return f"{path} is not a regular file; move it away and run setup again"
    if not os.access(path, os.R_OK):
        return f"{path} is not readable; make it readable (chmod u+r) or move it away, then run setup again"
    if not os.access(path, os.X_OK):
        return (
            f"{path} is not executable, so git does not run it now; make it executable "
            "(chmod +x) if it should run, or remove it, then run setup again"
        )
    if os.path.lexists(legacy):
        return f"{legacy} already exists, and setup keeps the current hook there; move one of them away"
    return None


# ----------------------------------------------------------------- the manifest


def _manifest_path(sluice_dir: Path) -> Path:
    return sluice_dir / MANIFEST_NAME


def load_manifest(sluice_dir: Path) -> dict[str, Any] | None:
    """What setup changed here, or None when it has no (readable) record."""
    try:
        data = parse_json(_manifest_path(sluice_dir).read_bytes())
    except (OSError, ValueError):  # absent, a folder, not UTF-8, not JSON, nested too deep
        return None
    if not isinstance(data, dict):
        return None
    for key in ("hooks", "config_hooks", "refspecs", "dirs", "lines"):
        if not isinstance(data.get(key), list):
            data[key] = []
    return data


def _empty_manifest() -> dict[str, Any]:
    return {"version": 1, "hooks": [], "config_hooks": [], "refspecs": [], "dirs": [], "lines": []}


def _save_manifest(sluice_dir: Path, manifest: Mapping[str, Any]) -> None:
    write_atomic(_manifest_path(sluice_dir), json.dumps(manifest, indent=2) + "\n")


# ----------------------------------------------------------------- where things are


def sluice_dir_of(repo: Repo) -> Path:
    """``<common dir>/sluice``, refusing a file or anything else in its place."""
    path = Path(repo.common_dir) / "sluice"
    if os.path.lexists(path) and not path.is_dir():
        raise SetupRefused(
            f"{path} is not a directory, but git-sluice keeps this clone's state there; "
            "move it away and run setup again"
        )
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def hooks_dir(repo: Repo) -> tuple[Path, bool]:
    """(the folder git runs hooks from, whether ``core.hooksPath`` chose it)."""
    proc = repo.git("config", "--get", "core.hooksPath", check=False)
    configured = proc.stdout.strip() if proc.returncode == 0 else ""
    if not configured:
        return Path(repo.common_dir) / "hooks", False
    path = Path(os.path.expanduser(configured))
    if not path.is_absolute():
        # git runs hooks from the top of the worktree (the git dir when bare)
        base = Path(repo.workdir) if repo.workdir is not None else Path(repo.git_dir)
        path = base / path
    return Path(os.path.abspath(path)), True


def installed_git_version(repo: Repo) -> tuple[int, ...]:
    proc = repo.git("version", check=False)
    return parse_version(proc.stdout)


# ----------------------------------------------------------------- file hooks


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _write_script(path: Path, data: bytes) -> None:
    write_atomic(path, data, mode=(0o755 & ~_umask()) | 0o700)


def _ensure_dir(path: Path, manifest: dict[str, Any]) -> None:
    """Create the hooks folder if missing, remembering the topmost folder created."""
    if path.is_dir():
        return
    top = path
    while not top.parent.exists():
        top = top.parent
    path.mkdir(parents=True, exist_ok=True)
    if str(top) not in manifest["dirs"]:
        manifest["dirs"].append(str(top))


def _hook_entry(manifest: Mapping[str, Any], path: Path) -> dict[str, Any] | None:
    for entry in manifest["hooks"]:
        if isinstance(entry, dict) and entry.get("path") == str(path):
            return entry
    return None


# ----------------------------------------------------------------- config hooks


def _config_value(repo: Repo, key: str) -> str | None:
    proc = repo.git("config", "--local", "--get", key, check=False)
    return proc.stdout.rstrip("\n") if proc.returncode == 0 else None


def _section_exists(repo: Repo, section: str) -> bool:
    """Whether the clone's own config has any key of ``section`` (``hook.sluice-pre-push``)."""
    pattern = "^" + re.escape(section + ".")
    proc = repo.git("config", "--local", "--get-regexp", pattern, check=False)
    return proc.returncode == 0 and bool(proc.stdout.strip())


def verify_config_hook(repo: Repo, name: str) -> bool:
    """Whether git lists our config-defined hook for the event (``git hook list``)."""
    proc = repo.git("hook", "list", name, check=False)
    return proc.returncode == 0 and f"{CONFIG_HOOK_PREFIX}{name}" in proc.stdout


# ----------------------------------------------------------------- install


Verifier = Callable[["Repo", str], bool]
TokenFinder = Callable[[str], "tuple[str, str] | None"]


def _default_token_finder(api: str) -> tuple[str, str] | None:
    from ..forge.auth import find_token

    return find_token(api)


def install(
    repo: Repo,
    *,
    git_version: tuple[int, ...] | None = None,
    verify: Verifier = verify_config_hook,
    token_finder: TokenFinder = _default_token_finder,
    into_tracked: bool = False,
) -> Report:
    """Set the clone up (idempotent). Raises ConfigError / SetupRefused (exit 2) before changing anything.

    ``into_tracked`` (``--into-tracked-hooks``) lets setup write hook files that
    ``git status`` would show (a tracked hooks folder, as husky keeps); without
    it setup prints the line to add there instead.
    """
    from . import hook_round
    from ..config import load_settings

    report = Report(action="setup")
    root = repo.workdir if repo.workdir is not None else repo.git_dir
    settings = load_settings(root)  # a config it would refuse is refused now, naming the key
    report.remote, report.branches = settings.remote, list(settings.branches)
    sluice_dir = sluice_dir_of(repo)
    directory, shared = hooks_dir(repo)
    report.hooks_dir, report.shared_hooks_dir = str(directory), shared
    version = installed_git_version(repo) if git_version is None else git_version
    mode = choose_mode(version)
    report.mode = mode

    # every refusal before the first change
    wanted = hooks_wanted(settings.fetch_hook)
    plans = {name: placement(repo, directory / name, mode, into_tracked=into_tracked) for name in wanted}
    manifest = load_manifest(sluice_dir) or _empty_manifest()
    before = json.dumps(manifest, sort_keys=True)
    inside = repo.workdir is not None and Path(repo.workdir) in directory.parents
    if shared and not inside:
        report.warnings.append(
            f"core.hooksPath is set: the hooks go to {directory}, which may serve other repositories "
            "too (they do nothing in a repository that was not set up)"
        )
    report.add("hooks folder", str(directory), "core.hooksPath" if shared else "this clone's hooks")

    _install_hooks(repo, directory, plans, manifest, report, verify, into_tracked=into_tracked)
    for name in HOOK_NAMES:
        if name not in wanted:
            _leave_out(repo, directory, name, manifest, report, sluice_dir)

    _drop_legacy_refspec(repo, manifest, report, sluice_dir)
    if json.dumps(manifest, sort_keys=True) != before:
        _save_manifest(sluice_dir, manifest)
    # after every config change, so the hooks see a filter newer than the config
    hook_round.refresh_filter(repo, sluice_dir)

    report.add("config", "ok", f"remote {settings.remote}, branches {', '.join(settings.branches)}")
    _check_token(settings, report, token_finder)
    return report


def _install_hooks(
    repo: Repo, directory: Path, plans: Mapping[str, tuple[str, Path]], manifest: dict[str, Any], report: Report,
    verify: Verifier, *, into_tracked: bool,
) -> None:
    """Each hook where its plan puts it: config-defined, a file (maybe under pre-commit's), or a line."""
    mode = report.mode or "files"
    sluice_dir = Path(repo.common_dir) / "sluice"
    for name, (plan, target) in plans.items():
        if mode == "config" and plan != "ours":
            if _install_config_hook(repo, name, sluice_dir, manifest, report, verify):
                continue
            # git did not list it: a hook file, chained if need be
            plan, target = placement(repo, directory / name, "files", into_tracked=into_tracked)
        if plan == "line":
            _install_line(name, target, manifest, report, sluice_dir)
            continue
        if plan == "repair":
            _repair_under_pre_commit(name, directory / name, manifest, sluice_dir)
            plan = "ours"
        if target != directory / name:  # under pre-commit's hook: whatever we had recorded at its path is gone
            _forget_hook(manifest, directory / name)
        _install_file_hook(name, target, plan, manifest, report, sluice_dir)
        if target != directory / name:
            entry = _hook_entry(manifest, target)
            if entry is not None and entry.get("under") != str(directory / name):
                entry["under"] = str(directory / name)
            last = report.steps[-1]
            report.steps[-1] = Step(last.subject, last.status,
                                    f"{target}, under pre-commit's hook, which runs it first", last.changed)


def hooks_wanted(fetch_hook: bool) -> tuple[str, ...]:
    """The hooks setup installs (pure): without ``sluice.fetchHook``, pre-push alone.

    git runs a reference-transaction hook for ``prepared`` with the
    transaction's ref locks held, so *any* such hook lengthens the time a
    concurrent ``git fetch`` in the clone finds a ref locked and fails
    (docs/benchmarks-hooks.md). Left out, a fetch runs no hook at all and
    fails only as often as git's own; the rounds after a fetch are then the
    driver's, or the next push's.
    """
    return HOOK_NAMES if fetch_hook else tuple(n for n in HOOK_NAMES if n != "reference-transaction")


def _leave_out(repo: Repo, directory: Path, name: str, manifest: dict[str, Any], report: Report,
               sluice_dir: Path) -> None:
    """A hook the config leaves out: what setup had installed there is taken back, what was there before restored."""
    from . import hook_round

    def done(kind: str, entry: Any) -> None:
        manifest[kind] = [e for e in manifest[kind] if e is not entry]
        _save_manifest(sluice_dir, manifest)

    recorded = [e for kind in ("hooks", "config_hooks", "lines") for e in manifest[kind]
                if isinstance(e, dict) and e.get("name") == name]
    if not recorded:  # a record lost since: take back what its hook files show
        manifest["hooks"].extend(e for e in _inferred_manifest(directory)["hooks"] if e.get("name") == name)
    _undo_hooks(repo, manifest, report, done, only=name)
    with contextlib.suppress(OSError):
        (sluice_dir / hook_round.RT_SEEN_NAME).unlink()  # pre-push starts the rounds' fork itself again
    report.add(f"hook {name}", "left out", "sluice.fetchHook is false: a fetch runs no hook and starts no round")


def hook_plan(name: str, mode: str, *, exists: bool, ours: bool, problem: Callable[[], str | None]) -> str:
    """What setup does at hook ``name``'s path, from what is there (pure; ``problem`` asked only to chain).

    ``create`` (nothing there), ``ours`` (our script: rewrite it if it changed),
    ``leave`` (someone else's, and git runs config-defined hooks beside it) or
    ``chain`` (someone else's file hook: ours runs it first); a hook that
    cannot be chained is refused before anything changes.
    """
    if not exists:
        return "create"
    if ours:
        return "ours"
    if mode == "config":
        return "leave"
    why = problem()
    if why is not None:
        raise SetupRefused(f"cannot chain the existing {name} hook: {why}")
    return "chain"


def _plan_at(path: Path, mode: str) -> str:
    exists = os.path.lexists(path)
    return hook_plan(path.name, mode, exists=exists, ours=exists and is_ours(path), problem=lambda: chain_problem(path))


def placement(repo: Repo, path: Path, mode: str, *, into_tracked: bool = False) -> tuple[str, Path]:
    """(plan, where) for hook ``path``, beside the other hook managers (:mod:`._hook_managers`).

    Beside :func:`hook_plan`'s plans: ``repair`` (ours at the hook and
    pre-commit's at ``.legacy``, as an older setup left it: swap them), and
    ``line`` (the hook is a tracked file, or would be a new file ``git status``
    shows, or a husky 9 stub: setup writes the script to the sluice dir and
    names the line to add to ``where``). Under pre-commit's hook, ``where`` is
    ``<hook>.legacy``, which pre-commit runs first.
    """
    legacy = path.with_name(path.name + LEGACY_SUFFIX)
    if mode == "config":
        return _plan_at(path, mode), path
    if is_ours(path):
        return ("repair", legacy) if _hook_managers.is_pre_commit(legacy) else ("ours", path)
    if _hook_managers.is_pre_commit(path):
        return _plan_at(legacy, mode), legacy
    if _hook_managers.is_husky_stub(path):
        return "line", _hook_managers.husky_script(path)
    if not into_tracked and any(_hook_managers.shows_in_status(repo, p) for p in (path, legacy)):
        return "line", path
    return _plan_at(path, mode), path


def _forget_hook(manifest: dict[str, Any], path: Path) -> None:
    manifest["hooks"] = [e for e in manifest["hooks"] if not (isinstance(e, dict) and e.get("path") == str(path))]


def _repair_under_pre_commit(name: str, path: Path, manifest: dict[str, Any], sluice_dir: Path) -> None:
    """Ours at the hook, pre-commit's at ``.legacy`` (an older setup's chain, which refuses every push):
    pre-commit's goes back to the hook, byte for byte, and ours goes under it, where pre-commit runs it."""
    legacy = path.with_name(path.name + LEGACY_SUFFIX)
    _forget_hook(manifest, path)
    _forget_hook(manifest, legacy)
    manifest["hooks"].append({"name": name, "path": str(legacy), "action": "created", "under": str(path)})
    _save_manifest(sluice_dir, manifest)
    os.replace(legacy, path)
    _write_script(legacy, script(name))


def _install_line(name: str, where: Path, manifest: dict[str, Any], report: Report, sluice_dir: Path) -> None:
    """Our script in the sluice dir, and the line that runs it, for a hook file setup does not change."""
    target = sluice_dir / "hooks" / name
    data = script(name)
    if not any(isinstance(e, dict) and e.get("script") == str(target) for e in manifest["lines"]):
        manifest["lines"].append({"name": name, "script": str(target), "file": str(where)})
        _save_manifest(sluice_dir, manifest)
    changed = not (target.is_file() and target.read_bytes() == data)
    if changed:
        target.parent.mkdir(mode=0o700, exist_ok=True)
        _write_script(target, data)
    subject = f"hook {name}"
    if _hook_managers.has_line(where, name):
        report.add(subject, "updated" if changed else "unchanged", f"a line in {where} runs {target}", changed=changed)
        return
    report.add(subject, "add a line", f"{where} is another program's or tracked; setup changes no such file",
               changed=changed)
    report.todo.append({"hook": name, "file": str(where), "line": _hook_managers.line_for(name),
                        "create": "" if os.path.lexists(where) else "yes"})


def _install_file_hook(
    name: str, path: Path, plan: str, manifest: dict[str, Any], report: Report, sluice_dir: Path
) -> None:
    data = script(name)
    subject = f"hook {name}"
    if plan == "ours":
        if path.read_bytes() == data:
            report.add(subject, "unchanged", str(path))
        else:
            _write_script(path, data)
            report.add(subject, "updated", str(path), changed=True)
        if _hook_entry(manifest, path) is None:
            # a manifest lost since: infer what setup had done, so undo still restores it
            legacy = path.with_name(path.name + LEGACY_SUFFIX)
            action = "chained" if os.path.lexists(legacy) else "created"
            manifest["hooks"].append({"name": name, "path": str(path), "action": action})
        return
    _ensure_dir(path.parent, manifest)
    if plan == "create":
        manifest["hooks"].append({"name": name, "path": str(path), "action": "created"})
        _save_manifest(sluice_dir, manifest)
        _write_script(path, data)
        report.add(subject, "installed", str(path), changed=True)
        return
    legacy = path.with_name(path.name + LEGACY_SUFFIX)
    digest = hashlib.sha256(legacy_bytes(path)).hexdigest()
    manifest["hooks"].append(
        {"name": name, "path": str(path), "action": "chained", "legacy": str(legacy), "sha256": digest}
    )
    _save_manifest(sluice_dir, manifest)
    os.rename(path, legacy)
    _write_script(path, data)
    report.add(
        subject,
        "installed, chained to the existing hook",
        f"moved to {legacy.name}; it still runs first, with its exit status",
        changed=True,
    )


def legacy_bytes(path: Path) -> bytes:
    """What a hook is, byte for byte (a link is its target's name, as a rename keeps it)."""
    if path.is_symlink():
        return b"symlink:" + os.fsencode(os.readlink(path))
    return path.read_bytes()


def _install_config_hook(
    repo: Repo, name: str, sluice_dir: Path, manifest: dict[str, Any], report: Report, verify: Verifier
) -> bool:
    section = f"hook.{CONFIG_HOOK_PREFIX}{name}"
    target = sluice_dir / "hooks" / name
    command = config_hook_command(target)
    subject = f"hook {name}"
    data = script(name)
    existed = _section_exists(repo, section)
    unchanged = (
        existed
        and _config_value(repo, f"{section}.command") == command
        and _config_value(repo, f"{section}.event") == name
        and target.is_file()
        and target.read_bytes() == data
    )
    if unchanged:
        report.add(subject, "unchanged", f"config-defined hook {section}")
        return True
    if not any(e.get("section") == section for e in manifest["config_hooks"] if isinstance(e, dict)):
        manifest["config_hooks"].append({"name": name, "section": section, "script": str(target)})
        _save_manifest(sluice_dir, manifest)
    target.parent.mkdir(mode=0o700, exist_ok=True)
    _write_script(target, data)
    repo.git("config", "--local", f"{section}.command", command)
    repo.git("config", "--local", f"{section}.event", name)
    if not verify(repo, name):
        _remove_config_hook(repo, section, target)
        manifest["config_hooks"] = [
            e for e in manifest["config_hooks"] if not (isinstance(e, dict) and e.get("section") == section)
        ]
        _save_manifest(sluice_dir, manifest)
        report.warnings.append(f"git did not list the config-defined {name} hook; installed a hook file instead")
        return False
    report.add(subject, "installed", f"config-defined hook {section} (git >= 2.54)", changed=True)
    return True


def _remove_config_hook(repo: Repo, section: str, target: Path) -> bool:
    removed = False
    if _section_exists(repo, section):
        repo.git("config", "--local", "--remove-section", section, check=False)
        removed = True
    try:
        target.unlink()
        removed = True
    except OSError:
        pass
    return removed


def _drop_legacy_refspec(repo: Repo, manifest: dict[str, Any], report: Report, sluice_dir: Path) -> None:
    """Take out the ``+refs/sluice/*`` refspec an older setup added (and recorded).

    It made every person's fetch bring every mark and note of every pool, and
    fail when a hostile ref under ``refs/sluice`` blocked it. The record goes
    with it: the state before setup had no such refspec, which is what
    ``--undo`` puts back. A refspec with no record is someone's own: left, with
    a word.
    """
    subject = "fetch refspec"
    for entry in list(manifest["refspecs"]):
        if not isinstance(entry, dict) or str(entry.get("value") or LEGACY_REFSPEC) != LEGACY_REFSPEC:
            continue
        _undo_refspec(repo, entry, report)
        manifest["refspecs"] = [e for e in manifest["refspecs"] if e is not entry]
        _save_manifest(sluice_dir, manifest)
    remote = (repo.config_get("sluice.remote") or "origin").strip() or "origin"
    key = f"remote.{remote}.fetch"
    if LEGACY_REFSPEC in repo.git("config", "--get-all", key, check=False).stdout.splitlines():
        report.add(subject, "left in place", f"{key} has {LEGACY_REFSPEC}, not added by setup")
        report.warnings.append(
            f"{key} has {LEGACY_REFSPEC}: every fetch of this clone brings every mark and note; "
            f"git-sluice does not need it (remove it with: git config --fixed-value --unset {key} '{LEGACY_REFSPEC}')"
        )
        return
    if not any(step.subject == subject for step in report.steps):
        report.add(subject, "none", "git-sluice adds none: its rounds fetch refs/sluice/* by their own refspecs")


def _check_token(settings: Settings, report: Report, token_finder: TokenFinder) -> None:
    """Say whether a token is found and where (never the token itself); GH_TOKEN / GITHUB_TOKEN win over an App."""
    from ..forge.auth import env_token

    if settings.app_id and env_token(settings.api) is None:
        report.token_source = f"GitHub App {settings.app_id}"
        report.add("token", "GitHub App", f"app {settings.app_id}, installation token minted when needed")
        return
    try:
        found = token_finder(settings.api)
    except Exception:
        found = None
    if found is None:
        report.add("token", "none found")
        report.warnings.append(
            "no GitHub token found: rounds will fail until one is (GH_TOKEN, GITHUB_TOKEN, "
            "`git credential` for the API host, or `gh auth login`)"
        )
        return
    report.token_source = found[1]
    report.add("token", "found", f"from {found[1]}; not shown")


# ----------------------------------------------------------------- undo


def undo(repo: Repo) -> Report:
    """Put back every hook and the refspec exactly as they were before setup."""
    report = Report(action="undo")
    path = Path(repo.common_dir) / "sluice"
    sluice_dir = path if path.is_dir() else None
    manifest = load_manifest(sluice_dir) if sluice_dir is not None else None
    directory, shared = hooks_dir(repo)
    report.hooks_dir, report.shared_hooks_dir = str(directory), shared
    if manifest is None:
        manifest = _unrecorded_manifest(repo, directory, report)

    recorded = sluice_dir is not None and _manifest_path(sluice_dir).is_file()

    def done(kind: str, entry: Any) -> None:
        """Strike an undone change from the record at once, so an interrupted undo can resume."""
        manifest[kind] = [e for e in manifest[kind] if e is not entry]
        if recorded and sluice_dir is not None:
            _save_manifest(sluice_dir, manifest)

    _undo_hooks(repo, manifest, report, done)
    for entry in list(manifest["refspecs"]):
        if isinstance(entry, dict):
            _undo_refspec(repo, entry, report)
        done("refspecs", entry)
    for top in reversed(manifest["dirs"]):
        _remove_empty_dirs(Path(str(top)))

    remaining = bool(manifest["hooks"] or manifest["config_hooks"] or manifest["refspecs"] or manifest["lines"])
    if sluice_dir is not None:
        for name in files_undone(remaining):
            try:
                (sluice_dir / name).unlink()
            except OSError:
                pass
        try:
            (sluice_dir / "hooks").rmdir()
        except OSError:
            pass
    if not report.steps:
        report.add("setup", "nothing to undo", "setup has not changed anything here")
    return report


def _undo_hooks(
    repo: Repo, manifest: dict[str, Any], report: Report, done: Callable[[str, Any], None], only: str | None = None,
) -> None:
    """Undo the hooks the record lists (``only``: those of one hook), striking each from it through ``done``."""
    def mine(entry: object) -> bool:
        return only is None or (isinstance(entry, dict) and entry.get("name") == only)

    for entry in [e for e in manifest["hooks"] if mine(e)]:
        if isinstance(entry, dict) and not _undo_file_hook(entry, report):
            continue
        done("hooks", entry)
    for entry in [e for e in manifest["config_hooks"] if mine(e)]:
        if isinstance(entry, dict) and entry.get("section"):
            section = str(entry["section"])
            if _remove_config_hook(repo, section, Path(str(entry.get("script", "")))):
                report.add(f"hook {entry.get('name', section)}", "removed", f"config-defined hook {section}", changed=True)
        done("config_hooks", entry)
    for entry in [e for e in manifest["lines"] if mine(e)]:
        if isinstance(entry, dict):
            _undo_line(entry, report)
        done("lines", entry)


def files_undone(remaining: bool) -> tuple[str, ...]:
    """The sluice dir's files undo removes (pure): the hooks' own, and the record once nothing is left to undo.

    A record that still lists changes (an undo that could not finish) stays,
    so the next undo resumes from it.
    """
    from . import hook_round

    names = (hook_round.FILTER_NAME, hook_round.WARNED_NAME, hook_round.PUSH_MARK_NAME, hook_round.RT_SEEN_NAME)
    return names if remaining else (*names, MANIFEST_NAME)


def _unrecorded_manifest(repo: Repo, directory: Path, report: Report) -> dict[str, Any]:
    """No record of what setup changed: what its hooks show, and a warning for a refspec it cannot know it added."""
    manifest = _inferred_manifest(directory)
    if manifest["hooks"]:
        report.warnings.append("no record of what setup changed: undoing what its hooks show")
    remote = repo.config_get("sluice.remote") or "origin"
    key = f"remote.{remote}.fetch"
    if LEGACY_REFSPEC in repo.git("config", "--get-all", key, check=False).stdout.splitlines():
        report.warnings.append(
            f"no record that setup added {LEGACY_REFSPEC} to {key}; left in place (remove it "
            f"with: git config --fixed-value --unset {key} '{LEGACY_REFSPEC}')"
        )
    return manifest


def _undo_line(entry: Mapping[str, Any], report: Report) -> None:
    """Remove the script a line ran; the line itself is in a file setup never changed: say so."""
    name = str(entry.get("name", ""))
    target = Path(str(entry.get("script", "")))
    if is_ours(target):
        target.unlink()
        report.add(f"hook {name}", "removed", str(target), changed=True)
    where = Path(str(entry.get("file", "")))
    if _hook_managers.has_line(where, name):
        report.warnings.append(
            f"{where} still has the git-sluice line (it does nothing now); remove it by hand if you like"
        )


def _inferred_manifest(directory: Path) -> dict[str, Any]:
    manifest = _empty_manifest()
    for name in HOOK_NAMES:
        path = directory / name
        under = path.with_name(name + LEGACY_SUFFIX)
        if _hook_managers.is_pre_commit(path) and is_ours(under):
            path = under
        if is_ours(path):
            legacy = path.with_name(path.name + LEGACY_SUFFIX)
            action = "chained" if os.path.lexists(legacy) else "created"
            manifest["hooks"].append({"name": name, "path": str(path), "action": action})
    return manifest


def _undo_file_hook(entry: Mapping[str, Any], report: Report) -> bool:
    """Undo one hook file; False when it must stay recorded (someone else's file is in the way)."""
    path = Path(str(entry.get("path", "")))
    name = str(entry.get("name", path.name))
    subject = f"hook {name}"
    legacy = path.with_name(path.name + LEGACY_SUFFIX)
    chained = entry.get("action") == "chained"
    if os.path.lexists(path) and not is_ours(path):
        if chained and not os.path.lexists(legacy):
            return True  # already restored (an undo that was interrupted)
        if not chained:
            report.add(subject, "left in place", f"{path} is no longer git-sluice's hook")
            report.warnings.append(f"{path} was replaced since setup; left as it is")
            return True
        report.add(subject, "left in place", f"{path} is no longer git-sluice's hook")
        report.warnings.append(
            f"{path} was replaced since setup and the original hook is still at {legacy}; "
            "put back the one you want by hand"
        )
        return False
    if chained:
        if os.path.lexists(legacy):
            os.replace(legacy, path)
            report.add(subject, "restored", f"the original hook is back at {path}", changed=True)
            return True
        report.warnings.append(f"the original {name} hook ({legacy}) is gone; removed git-sluice's hook only")
    if os.path.lexists(path):
        path.unlink()
        report.add(subject, "removed", str(path), changed=True)
    return True


def _undo_refspec(repo: Repo, entry: Mapping[str, Any], report: Report) -> None:
    remote = str(entry.get("remote", ""))
    key = str(entry.get("key") or f"remote.{remote}.fetch")
    value = str(entry.get("value") or LEGACY_REFSPEC)
    proc = repo.git("config", "--local", "--get-all", key, check=False)
    if value not in proc.stdout.splitlines():
        return
    repo.git("config", "--local", "--fixed-value", "--unset-all", key, value)
    if entry.get("section_created") and not _section_exists(repo, f"remote.{remote}"):
        repo.git("config", "--local", "--remove-section", f"remote.{remote}", check=False)
    report.add("fetch refspec", "removed", f"{value} from {key}", changed=True)


def _remove_empty_dirs(top: Path) -> None:
    """Remove folders setup created, only while they are empty."""
    if not top.is_dir():
        return
    for dirpath, _dirs, _files in sorted(os.walk(top), key=lambda item: -len(item[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass



# ----------------------------------------------------------------- what is there now


def describe(repo: Repo) -> dict[str, Any]:
    """What is installed here now, read-only (for ``doctor`` and ``status``).

    ``current`` says whether an installed script is this version's; a hook
    defined in config only runs where git is new enough (``config_hooks_run``).
    """
    directory, shared = hooks_dir(repo)
    sluice_dir = Path(repo.common_dir) / "sluice"
    hooks: dict[str, dict[str, Any]] = {}
    for name in HOOK_NAMES:
        path = directory / name
        config_script = sluice_dir / "hooks" / name
        found = locate(repo, directory, name)
        if found["how"] in ("file", "under-pre-commit", "line"):
            hooks[name] = {key: found[key] for key in ("installed", "how", "path", "chained", "current")}
        elif _config_value(repo, f"hook.{CONFIG_HOOK_PREFIX}{name}.command") is not None:
            hooks[name] = {
                "installed": True,
                "how": "config",
                "path": str(config_script),
                "chained": False,
                "current": config_script.is_file() and config_script.read_bytes() == script(name),
            }
        else:
            hooks[name] = {"installed": False, "how": None, "path": str(path), "chained": False, "current": False}
    remote = (repo.config_get("sluice.remote") or "origin").strip() or "origin"
    fetch = repo.git("config", "--get-all", f"remote.{remote}.fetch", check=False).stdout.splitlines()
    return {
        "hooks_dir": str(directory),
        "shared_hooks_dir": shared,
        "config_hooks_run": choose_mode(installed_git_version(repo)) == "config",
        "hooks": hooks,
        "refspec": {"remote": remote, "value": LEGACY_REFSPEC, "present": LEGACY_REFSPEC in fetch},
        "recorded": sluice_dir.is_dir() and load_manifest(sluice_dir) is not None,
    }


def locate(repo: Repo, directory: Path, name: str) -> dict[str, Any]:
    """Where git-sluice's ``name`` hook is among the hook files (read-only; doctor and describe).

    ``how``: ``file`` (ours at the hook), ``under-pre-commit`` (ours at
    ``<hook>.legacy``, which pre-commit's hook runs first), ``line`` (a line in
    another program's hook runs ours from the sluice dir) or None. ``runner``
    is the file that runs ours; ``todo`` what to do when ours does not run.
    """
    path = directory / name
    legacy = path.with_name(name + LEGACY_SUFFIX)
    found: dict[str, Any] = {"installed": False, "how": None, "path": str(path), "runner": None,
                             "chained": False, "current": False, "todo": None}
    if is_ours(path):
        return {**found, "installed": True, "how": "file", "chained": os.path.lexists(legacy),
                "current": path.read_bytes() == script(name)}
    if _hook_managers.is_pre_commit(path):
        if is_ours(legacy):
            return {**found, "installed": True, "how": "under-pre-commit", "path": str(legacy), "runner": str(path),
                    "chained": os.path.lexists(legacy.with_name(legacy.name + LEGACY_SUFFIX)),
                    "current": legacy.read_bytes() == script(name)}
        return {**found, "todo": f"run git sluice setup (it puts git-sluice's hook at {legacy}, "
                                 "which pre-commit's hook runs first)"}
    where = _hook_managers.husky_script(path) if _hook_managers.is_husky_stub(path) else path
    target = Path(repo.common_dir) / "sluice" / "hooks" / name
    if _hook_managers.has_line(where, name):
        if not is_ours(target):
            return {**found, "runner": str(where), "path": str(target), "todo": "run git sluice setup"}
        return {**found, "installed": True, "how": "line", "path": str(target), "runner": str(where),
                "current": target.read_bytes() == script(name)}
    if where != path or _hook_managers.shows_in_status(repo, path):
        verb = "add this line to" if os.path.lexists(where) else "create (executable) with #!/bin/sh and"
        return {**found, "runner": str(where),
                "todo": f"run git sluice setup, then {verb} {where}: {_hook_managers.line_for(name)}"}
    return found
