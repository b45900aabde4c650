"""What every ``graphlake`` command shares: the consoles, ``--lake``, errors, progress bars.

Its own module so command groups kept apart from :mod:`graphlake.cli` (``frames``,
``search``) can use them without importing the CLI that registers them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from graphlake.config import ENV_LAKE, resolve_lake_dir

console = Console()
err_console = Console(stderr=True)

LakeOpt = Annotated[Path | None, typer.Option(
    "--lake", envvar=ENV_LAKE, help="Lake directory (default: $GRAPHLAKE_LAKE, else the user "
    "data directory, ~/.local/share/graphlake/lake on Linux).", show_default=False)]


def _lake(path: Path | None):
    from graphlake.lake import Lake

    return Lake(resolve_lake_dir(path))


def _fail(exc: Exception) -> None:
    err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
    raise typer.Exit(2)


def _progress():
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=err_console)
