import subprocess
import sys

from click.testing import CliRunner

import git_sluice
from git_sluice.cli import main


def test_version_from_click() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"git-sluice {git_sluice.__version__}"


def test_git_finds_the_subcommand_on_path() -> None:
    # `git sluice` works because installing the package puts git-sluice on PATH
    out = subprocess.run(["git", "sluice", "--version"], capture_output=True, text=True, check=True)
    assert git_sluice.__version__ in out.stdout


def test_help_lists_itself() -> None:
    out = subprocess.run([sys.executable, "-m", "git_sluice", "--help"], capture_output=True, text=True, check=True)
    assert "allowance" in out.stdout
