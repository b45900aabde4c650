"""What every ``graphlake`` command shares: the consoles, ``--lake``, errors, progress bars.

Its own module so command groups kept apart from :mod:`graphlake.cli` (``frames``,
``search``) can use them without importing the CLI that registers them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal, NoReturn

import typer
from rich.console import Console

from graphlake.config import ENV_LAKE, resolve_lake_dir

#: Markup is off: what the commands print holds user text (paths, SQL, ids) that must come out
#: as it is; colour goes through ``style=`` and :class:`rich.text.Text`.
console = Console(markup=False)
err_console = Console(stderr=True, markup=False)

LakeOpt = Annotated[
    Path | None,
    typer.Option(
        "--lake",
        envvar=ENV_LAKE,
        help="Lake directory (default: $GRAPHLAKE_LAKE, else the user "
        "data directory, ~/.local/share/graphlake/lake on Linux).",
        show_default=False,
    ),
]

ParallelEngineOpt = Annotated[
    Literal["local", "ray"],
    typer.Option(
        "--engine",
        help="local: this machine's processes. ray: Ray tasks and actors (the ray extra), on "
        "the cluster at --address or on one started here for the command.",
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--address",
        envvar="RAY_ADDRESS",
        help="With --engine ray: the cluster to use (host:port, as `ray start --head` "
        "prints it; auto: the one started on this machine). Default: start one here.",
        show_default=False,
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=1,
        help="Parallel workers (default: one per core, where the input is large enough).",
        show_default=False,
    ),
]


def _lake(path: Path | None):
    from graphlake.lake import Lake

    return Lake(resolve_lake_dir(path))


def usage_error(message: str) -> NoReturn:
    """The command line itself is wrong (options that do not go together, a malformed
    value): Click prints the usage line and the message, and exits 2. (Typer ships its own
    Click, so its exception classes are the ones it catches.)"""
    raise typer.BadParameter(message)


#: Errors of the work itself (a lake that is missing, a query the guard refuses, a file that
#: cannot be read): one line on stderr, exit 1. Set GRAPHLAKE_DEBUG=1 for the traceback.
#: (ValueError is what the commands raise for a bad value found while working; other
#: exceptions are bugs and keep their traceback.)
RUNTIME_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError)


_exit_when_done = False


def exit_when_done() -> None:
    """Called by a read-only command (a search): once its output is written, the process
    ends without the interpreter's teardown, which LanceDB and ONNX Runtime stretch to
    0.2-0.3 s, a sixth of a cold search. Nothing is left to flush or close by then;
    ``GRAPHLAKE_FAST_EXIT=0`` keeps the ordinary exit (the tests' in-process runner does)."""
    global _exit_when_done
    _exit_when_done = True


def _the_process_is_the_cli() -> bool:
    """Whether this process was started as the ``graphlake`` command (the console script or
    ``python -m graphlake``): only then may it end without teardown. ``main()`` called from a
    notebook, a test or another program returns through SystemExit as usual."""
    main_file = str(getattr(sys.modules.get("__main__"), "__file__", "") or "")
    name = Path(main_file).name
    return name == "graphlake" or (
        name == "__main__.py" and Path(main_file).parent.name == "graphlake"
    )


def _exit(code: int) -> NoReturn:
    if (
        _exit_when_done
        and code == 0
        and os.environ.get("GRAPHLAKE_FAST_EXIT", "1") != "0"
        and _the_process_is_the_cli()
    ):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    sys.exit(code)


def run_app(app: Callable[[], object]) -> NoReturn:
    """The one error handler of every command: usage errors exit 2 (Click's own), runtime
    errors print ``error: ...`` and exit 1, never a traceback unless GRAPHLAKE_DEBUG is set."""
    from graphlake.errors import GraphlakeError

    try:
        app()
    except SystemExit as exc:  # Click ends every command this way
        if exc.code in (0, None):
            _exit(0)
        raise
    except (GraphlakeError, *RUNTIME_ERRORS) as exc:
        if os.environ.get("GRAPHLAKE_DEBUG"):
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print_error(str(message))
        sys.exit(1)
    _exit(0)


def print_error(message: str) -> None:
    """One ``error: ...`` line on stderr. The message is printed as it is: user text (a path
    like ``runs[old]/``, a statement with ``[/]``, an extra like ``graphlake[vision]``) is
    never read as Rich markup."""
    from graphlake.tabular import print_error as print_line

    print_line(message, err_console)


def _progress(*, transient: bool = False):
    """The one progress bar of the CLI, on stderr: done / total, elapsed and left."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=transient,
    )
