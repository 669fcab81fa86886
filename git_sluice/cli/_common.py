"""What every command shares: error handling with the documented exit codes, JSON output."""

from __future__ import annotations

import functools
import logging
import sys
from typing import Any, Callable, TypeVar

import click

from ..durations import parse_duration
from ..errors import SluiceError
from .intake_run import setup_logging as setup_logging  # its home is click-free (fast_path.py runs intake)
from .views import json_text

F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(func: F) -> F:
    """Turn a SluiceError into its message on stderr and its exit code (2 config, 3 spent, …)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SluiceError as exc:
            click.echo(f"git sluice: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


def print_json(data: Any) -> None:
    click.echo(json_text(data))


class Duration(click.ParamType):
    """A command-line duration: ``90s``, ``5m``, ``1h`` or seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = Duration()
