"""The documentation cannot fall behind the product.

Every command and option the CLI exposes, every configuration key, every exit
code and every ``GIT_SLUICE_*`` variable must be in docs/reference.md; the
generated completions and man page must be what their generators make from
today's CLI; the README must keep the two set-up commands that .ci/run runs;
and no relative link in the docs may point nowhere. A new command or option
without docs fails here with a section skeleton to paste.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest

import git_sluice
from git_sluice.cli import main
from git_sluice.config import KNOWN_KEYS
from git_sluice.errors import SluiceError

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference.md"

README_BLOCKS = (
    "```sh\n"
    "# 1. install and run the whole story against the built-in GitHub double\n"
    "pip install . && git sluice demo\n"
    "```",
    "```sh\n"
    "# 2. install and run the tests\n"
    "tests/clients/install && pip install '.[test]' && python -m pytest -n 2 --dist loadfile -q\n"
    "```",
)


def _reference() -> str:
    return REFERENCE.read_text(encoding="utf-8")


def _section(markdown: str, heading: str, level: int) -> str | None:
    """The text under a heading line, up to the next heading of the same or a higher level.

    Lines inside fenced code are never headings (a shell comment starts with ``#``).
    """
    found: list[str] | None = None
    in_code = False
    for line in markdown.splitlines():
        heading_level = 0
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code:
            match = re.match(r"^(#{1,6}) ", line)
            heading_level = len(match.group(1)) if match else 0
        if found is not None:
            if heading_level and heading_level <= level:
                break
            found.append(line)
        elif heading_level == level and line[level + 1 :].strip() == heading:
            found = []
    return None if found is None else "\n".join(found) + "\n"


def _table_first_cells(section: str) -> list[str]:
    """The first cell of every body row of the tables in a section."""
    cells = []
    for line in section.splitlines():
        if line.startswith("|") and not re.match(r"^\|\s*:?-", line):
            cells.append(line.split("|")[1].strip())
    return cells[1:] if cells else cells  # drop the header row of the first table


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(main, info_name="git sluice")
    out = []
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        if not command.hidden:
            out.append((name, command))
    return out


def _skeleton(name: str, command: click.Command) -> str:
    """A reference section to paste for an undocumented command (the test's failure message)."""
    ctx = click.Context(command, info_name=f"git sluice {name}")
    rows = []
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, click.Argument):
            rows.append(f"| `{param.human_readable_name}` | … | required | … |")
            continue
        record = param.get_help_record(ctx)
        opts = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
        rows.append(f"| {opts} | … | … | {record[1] if record else '…'} |")
    help_text = (command.help or "").strip()
    return (
        f"### `git sluice {name}`\n\n```\n(usage)\n```\n\n{help_text}\n\n"
        "| option | argument | default | meaning |\n|---|---|---|---|\n" + "\n".join(rows) + "\n\nExit codes: …\n"
    )


# ------------------------------------------------------------------ the CLI


def test_the_cli_walk_finds_every_command() -> None:
    names = {name for name, _ in _commands()}
    # the walk itself must see what people use, and must skip the hidden hook runner
    assert {"setup", "intake", "drive", "wait", "queue", "status", "api", "demo"} <= names
    assert "_hook-round" not in names


@pytest.mark.parametrize("name", [name for name, _ in _commands()])
def test_every_command_and_option_is_in_the_reference(name: str) -> None:
    command = dict(_commands())[name]
    section = _section(_reference(), f"`git sluice {name}`", 3)
    assert section is not None, (
        f"docs/reference.md has no section for `git sluice {name}`; add one under '## Commands', e.g.:\n\n"
        + _skeleton(name, command)
    )
    assert f"`{name}`" in (_section(_reference(), "Commands", 2) or ""), f"{name} is missing from the commands table"
    missing = []
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, click.Argument):
            if f"`{param.human_readable_name}`" not in section:
                missing.append(param.human_readable_name)
            continue
        for opt in [*param.opts, *param.secondary_opts]:
            if f"`{opt}`" not in section:
                missing.append(opt)
    assert not missing, f"docs/reference.md `git sluice {name}` does not document: {', '.join(missing)}"
    assert "Exit codes" in section, f"`git sluice {name}` in docs/reference.md does not give its exit codes"


def test_the_programs_own_options_are_in_the_reference() -> None:
    section = _section(_reference(), "Running it", 2) or ""
    ctx = click.Context(main, info_name="git sluice", **main.context_settings)
    for param in main.get_params(ctx):
        for opt in param.opts:
            assert f"`{opt}`" in section, f"`{opt}` of git-sluice itself is not in docs/reference.md 'Running it'"


# ------------------------------------------------------------ configuration


def test_every_config_key_is_in_the_reference_with_default_and_form() -> None:
    section = _section(_reference(), "Configuration", 2)
    assert section is not None
    rows = {}
    for line in section.splitlines():
        match = re.match(r"^\|\s*`(sluice\.[A-Za-z]+)`\s*\|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = [c.strip() for c in match.group(2).split("|")]
    missing = [key for key in KNOWN_KEYS if key not in rows]
    assert not missing, f"docs/reference.md 'Configuration' lacks {missing}"
    stale = [key for key in rows if key not in KNOWN_KEYS]
    assert not stale, f"docs/reference.md documents keys git-sluice does not read: {stale}"
    for key, cells in rows.items():
        assert len(cells) == 3 and all(cells), f"{key}: the row needs a default, an accepted form and a meaning"


def test_the_documented_defaults_are_the_codes_defaults() -> None:
    from git_sluice import config

    section = _section(_reference(), "Configuration", 2) or ""

    def default_of(key: str) -> str:
        match = re.search(rf"^\|\s*`{re.escape(key)}`\s*\|\s*([^|]+?)\s*\|", section, flags=re.M)
        assert match, key
        return match.group(1)

    assert default_of("sluice.remote") == f"`{config.DEFAULT_REMOTE}`"
    assert default_of("sluice.discovery") == f"`{int(config.DEFAULT_DISCOVERY)}s`"
    assert default_of("sluice.lease") == f"`{int(config.DEFAULT_LEASE) // 60}m`"
    assert "from the remote's host" in default_of("sluice.api") and f"`{config.DEFAULT_API}`" in default_of("sluice.api")
    assert default_of("sluice.enforce") == "`true`"
    assert f"at least `{int(config.MIN_INTERVAL)}s`" in section


# ---------------------------------------------------------------- exit codes


def _product_modules() -> list[ModuleType]:
    modules = []
    for info in pkgutil.walk_packages(git_sluice.__path__, "git_sluice."):
        if info.name.endswith("__main__"):
            continue  # running it would run the CLI
        modules.append(importlib.import_module(info.name))
    return modules


def _error_classes() -> list[type[SluiceError]]:
    _product_modules()
    seen: list[type[SluiceError]] = []
    todo: list[type[SluiceError]] = [SluiceError]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    # the GitHub double is a test fixture and a separate program, not a git-sluice command
    return [c for c in seen if not c.__module__.startswith(("git_sluice.double", "tests"))]


def test_every_exit_code_is_in_the_reference_with_its_errors() -> None:
    section = _section(_reference(), "Exit codes", 2)
    assert section is not None
    rows = {}
    for line in section.splitlines():
        match = re.match(r"^\|\s*(\d+)\s*\|(.*)$", line)
        if match:
            rows[int(match.group(1))] = match.group(2)
    classes = _error_classes()
    assert len(classes) > 5  # the walk found the package's errors
    codes = {0} | {c.exit_code for c in classes}
    assert codes <= set(rows), f"exit codes missing from docs/reference.md: {sorted(codes - set(rows))}"
    for cls in classes:
        assert f"`{cls.__name__}`" in rows[cls.exit_code], (
            f"{cls.__module__}.{cls.__name__} exits {cls.exit_code}: name it in that row of docs/reference.md 'Exit codes'"
        )


def test_every_git_sluice_variable_is_in_the_reference() -> None:
    from git_sluice.clock import TEST_CLOCK_ENV
    from git_sluice.config import TEST_MIN_DISCOVERY_ENV
    from git_sluice.remote.git import INTERNAL_ENV

    section = _section(_reference(), "Environment", 2) or ""
    documented = set(re.findall(r"^\|\s*`([A-Z_][A-Z0-9_]*)`", section, flags=re.M))
    used = {TEST_CLOCK_ENV, TEST_MIN_DISCOVERY_ENV, INTERNAL_ENV, "GH_TOKEN", "GITHUB_TOKEN", "XDG_STATE_HOME"}
    sources = [*sorted((ROOT / "git_sluice").rglob("*.py")), *sorted((ROOT / "hooks").iterdir())]
    for path in sources:
        if path.is_file() and "double" not in path.parts:
            used |= set(re.findall(r"\b(GIT_SLUICE_[A-Z0-9_]+)\b", path.read_text(encoding="utf-8", errors="replace")))
    missing = sorted(used - documented)
    assert not missing, f"docs/reference.md 'Environment' lacks {missing}"
    from git_sluice.forge.wire import TEST_RESOLVE_ENV

    for name in (TEST_CLOCK_ENV, TEST_MIN_DISCOVERY_ENV, TEST_RESOLVE_ENV):
        row = next(line for line in section.splitlines() if line.startswith(f"| `{name}`"))
        assert "Test-only" in row, f"{name} must be marked test-only"


# ------------------------------------------------------ generated artefacts


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_the_completions_are_generated_from_todays_cli(tmp_path: Path) -> None:
    gen = _load(ROOT / "contrib" / "completions" / "generate.py", "_sluice_completions_generate")
    committed_dir = ROOT / "contrib" / "completions"
    written = gen.generate(tmp_path)
    assert sorted(p.name for p in written) == sorted(gen.FILES)
    recorded = re.search(r"click (\d+\.\d+)", (committed_dir / "git-sluice.bash").read_text())
    installed = re.search(r"click (\d+\.\d+)", gen.header("bash"))
    assert recorded and installed
    for path in written:
        text = path.read_text()
        assert "_GIT_SLUICE_COMPLETE" in text and "git-sluice" in text
    if recorded.group(1) != installed.group(1):
        pytest.skip(f"completions were generated with click {recorded.group(1)}, this is {installed.group(1)}: "
                    "its templates may differ (run contrib/completions/generate.py to refresh them)")
    for path in written:
        committed = committed_dir / path.name
        assert committed.is_file(), f"{committed} is missing: run python contrib/completions/generate.py"
        assert committed.read_text() == path.read_text(), (
            f"{committed} is stale: run python contrib/completions/generate.py"
        )
    assert "_git_sluice()" in (committed_dir / "git-sluice.bash").read_text()  # `git sluice <TAB>`
    assert (committed_dir / "_git-sluice").read_text().startswith("#compdef git-sluice\n")


def test_the_man_page_is_generated_from_todays_cli_and_reference(tmp_path: Path) -> None:
    gen = _load(ROOT / "contrib" / "man" / "generate.py", "_sluice_man_generate")
    out = tmp_path / "git-sluice.1"
    assert gen.main(["--out", str(out)]) == 0
    fresh = out.read_text()
    committed = ROOT / "man" / "git-sluice.1"
    assert committed.read_text() == fresh, "man/git-sluice.1 is stale: run python contrib/man/generate.py"
    for name, _ in _commands():
        assert f'.SS "git sluice {name}"' in fresh
    for key in KNOWN_KEYS:
        assert f"\\fB{key}\\fR" in fresh
    assert fresh.startswith('.\\" GENERATED') and '.TH "GIT\\-SLUICE" "1"' in fresh


def test_pyproject_installs_the_man_page_where_man_finds_it() -> None:
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["tool"]["setuptools"]["data-files"]["share/man/man1"] == ["man/git-sluice.1"]


# --------------------------------------------------------------- the README


def test_the_readme_keeps_the_two_set_up_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = _section(readme, "Set-up: two commands", 2)
    assert section is not None, "README.md lost its '## Set-up: two commands' section"
    for block in README_BLOCKS:
        assert block in section, f"README.md must keep, verbatim:\n{block}"


def test_the_readme_tells_the_three_incidents_with_their_figures() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for figure in ("9,000", "12,000", "5,200", "4,700", "9,090", "eight", "1 → 2 → 4 → 8"):
        assert figure in readme, f"README.md should cite {figure!r} from the incident reports"


# ----------------------------------------------------------------- the links


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, marks dropped, spaces to hyphens."""
    text = re.sub(r"[`*_~]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    anchors: set[str] = set()
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"^#{1,6} ", line):
            slug = _slug(line.lstrip("#"))
            n = 1
            candidate = slug
            while candidate in anchors:
                candidate = f"{slug}-{n}"
                n += 1
            anchors.add(candidate)
    return anchors


_CODE_DIRS = ("git_sluice", "tests", "contrib", "hooks")
_DOC_POINTER = re.compile(r"docs/([\w-]+\.md)#([\w-]+)")


def _code_files() -> list[Path]:
    files = []
    for folder in _CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and (path.suffix == ".py" or path.parent.name == "hooks") and "__pycache__" not in path.parts:
                files.append(path)
    return files


def test_every_design_pointer_in_the_code_leads_to_a_section() -> None:
    """A comment that says why by pointing at the design names a section that exists (issue 16)."""
    pointers = 0
    broken = []
    for path in _code_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        where = path.relative_to(ROOT)
        if "\u00a7" in text:
            broken.append(f"{where}: a \u00a7 section number of a brief not in the repository")
        for page, anchor in _DOC_POINTER.findall(text):
            pointers += 1
            doc = ROOT / "docs" / page
            if not doc.exists() or anchor not in _anchors(doc.read_text(encoding="utf-8")):
                broken.append(f"{where}: docs/{page}#{anchor}")
    assert not broken, "pointers that lead nowhere:\n" + "\n".join(broken)
    assert pointers >= 15


def test_the_map_names_every_module_of_the_product() -> None:
    """docs/design.md's table of packages names each module (the double as one package) and no module that is gone."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    table = text.split("| package / module | what it owns |", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`([\w/]+\.py|[\w/]+/)`", table))
    package = ROOT / "git_sluice"
    missing = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] == "double" or rel.name in ("__init__.py", "__main__.py"):
            continue
        short = {str(rel), rel.name, f"{rel.parent}/"}
        if not short & named and not any(str(rel).startswith(n) for n in named if n.endswith("/")):
            missing.append(str(rel))
    assert not missing, f"docs/design.md's map does not name: {missing}"
    for name in named:
        if name.endswith(".py") and "/" in name:
            assert (package / name).exists(), f"docs/design.md's map names {name}, which is not in git_sluice/"


def test_the_glossary_comes_first_and_defines_the_words_the_code_uses() -> None:
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Glossary"
    glossary = text.split("## Glossary", 1)[1].split("\n## ", 1)[0]
    defined = set(re.findall(r"^\| \*\*([^*]+)\*\* \|", glossary, re.M))
    for word in ("kept answer", "take in", "mark", "reading", "round", "step", "pool", "pause", "probe",
                 "cohort", "epoch", "lease", "holder", "host store", "sluice dir", "watch"):
        assert word in defined, f"docs/design.md's glossary does not define {word!r}"


@pytest.mark.parametrize(
    "doc", ["README.md", "docs/index.md", "docs/reference.md", "docs/design.md", "docs/operations.md"]
)
def test_relative_links_lead_somewhere(doc: str) -> None:
    path = ROOT / doc
    text = path.read_text(encoding="utf-8")
    text_outside_code = re.sub(r"```.*?```", "", text, flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text_outside_code):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text(encoding="utf-8")):
            broken.append(target)
    assert not broken, f"{doc}: links that lead nowhere: {broken}"


def test_pyproject_lists_every_package_so_a_plain_install_has_them_all() -> None:
    import tomllib

    # an editable install finds sub-packages by path; a wheel has only those
    # listed, so a new sub-package left out breaks CI's `pip install .` alone
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(data["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "git_sluice").rglob("__init__.py")
    }
    assert on_disk - listed == set()
