"""``graphlake mapping``: list, check, draft and explain mapping files (docs/mappings.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from graphlake.cli_common import console, err_console

mapping_app = typer.Typer(
    help="Mapping files: a YAML way in for log formats graphlake has no reader for "
    "(list, check, draft, explain; docs/mappings.md).",
    no_args_is_help=True,
)


@mapping_app.command("list")
def mapping_list():
    """The mappings graphlake ships and plugins install, with their descriptions."""
    from graphlake import ingest

    t = Table(header_style="bold")
    for col in ("name", "file", "description"):
        t.add_column(col)
    for name, path in sorted(ingest.mapping_paths().items()):
        try:
            desc = ingest.load_mapping(path).description
        except Exception as exc:  # noqa: BLE001 - listed with its error, not hidden
            desc = f"(does not load: {exc})"
        t.add_row(name, str(path), desc)
    console.print(t)


@mapping_app.command("check")
def mapping_check(
    files: Annotated[list[Path], typer.Argument(help="Mapping files to check.", exists=True)],
):
    """Check mapping files against the language (schemas/mapping.schema.json), the tables'
    columns and DuckDB (every expression is compiled): each error names its line.

    Exit status 1 when any file has an error."""
    from graphlake.ingest.mapping import MappingError, load

    bad = 0
    for f in files:
        try:
            m = load(f)
        except MappingError as exc:
            bad += 1
            err_console.print(str(exc), style="red", highlight=False)
            continue
        tables = sorted({b.table for b in m.blocks} | {"sessions"})
        console.print(f"{f}: ok, mapping {m.name!r} fills {', '.join(tables)}", highlight=False)
    if bad:
        raise typer.Exit(1)


@mapping_app.command("draft")
def mapping_draft(
    samples: Annotated[list[Path], typer.Argument(help="Sample files of the format.", exists=True)],
    name: Annotated[str, typer.Option("--name", "-n", help="The corpus name.")] = "mylab",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (default: stdout).")
    ] = None,
):
    """Write a starting mapping from sample files: the session id, the list of messages,
    speaker, text and time guessed from field statistics, every field listed in a comment.

    Example: graphlake mapping draft logs/run1.json -n mylab -o mylab.yaml"""
    from graphlake.ingest.mapping.draft import draft

    text = draft(samples, name)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text)
        err_console.print(f"wrote {output}: next, graphlake mapping check {output}")


@mapping_app.command("explain")
def mapping_explain(
    file: Annotated[Path, typer.Argument(help="The mapping file.", exists=True)],
    samples: Annotated[
        list[Path] | None, typer.Argument(help="Sample files: also list what goes to attrs.")
    ] = None,
):
    """Which source fields land in which column, and (with sample files) which fields no
    column reads: those are kept in each row's attrs."""
    from graphlake.ingest.mapping import MappingError, load
    from graphlake.ingest.mapping.draft import explain

    try:
        m = load(file)
    except MappingError as exc:
        err_console.print(str(exc), style="red", highlight=False)
        raise typer.Exit(1) from None
    t = Table(header_style="bold")
    for col in ("column", "expression", "source fields"):
        t.add_column(col, overflow="fold")
    for row in explain(m, list(samples or [])):
        t.add_row(*row)
    console.print(t)
