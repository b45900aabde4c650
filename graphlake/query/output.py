"""Render an Arrow result as a terminal table, JSON array, CSV or Parquet."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphlake.config import OUTPUT_FORMATS

FORMATS = OUTPUT_FORMATS


def _cell(v) -> Text:
    """A cell as plain text: values such as "[mobile_data_issue]" are data, not Rich markup."""
    if v is None:
        return Text("∅", style="dim")
    if isinstance(v, float):
        return Text(f"{v:.4g}")
    return Text(str(v))


#: Columns a user copies into the next command: never cut (folded onto more lines instead).
KEY_COLUMNS = frozenset(
    {
        "id",
        "corpus",
        "name",
        "protocol",
        "session",
        "table",
        "version",
        "source",
        "source_file",
        "record_ref",
        "uri",
    }
)


def _is_key(name: str) -> bool:
    return name in KEY_COLUMNS or name.endswith("_id")


def rich_table(table: pa.Table, title: str | None = None, max_width: int = 60) -> Table:
    out = Table(title=title, show_lines=False, header_style="bold")
    for name in table.column_names:
        numeric = pa.types.is_integer(table.schema.field(name).type) or pa.types.is_floating(
            table.schema.field(name).type
        )
        key = _is_key(name)
        out.add_column(
            name,
            justify="right" if numeric else "left",
            max_width=None if key else max_width,
            overflow="fold" if key else "ellipsis",
            min_width=min(len(name), 12),
        )
    for row in table.to_pylist():
        out.add_row(*(_cell(v) for v in row.values()))
    return out


def _needed_width(table: pa.Table, max_width: int = 60) -> int:
    """The width the table needs with no cell cut: from the header and the first rows."""
    total = 1
    for name in table.column_names:
        widths = [len(_cell(v).plain) for v in table.column(name).slice(0, 200).to_pylist()]
        total += min(max([len(name), *widths]), max_width) + 3
    return total


def vertical_table(table: pa.Table) -> Table:
    """One block per row, a line per column (as psql's expanded display): for results wider
    than the terminal, where columns side by side would cut their values."""
    out = Table(show_header=False, show_lines=True, box=None, padding=(0, 1))
    out.add_column("column", style="bold", no_wrap=True)
    out.add_column("value", overflow="fold")
    for i, row in enumerate(table.to_pylist()):
        out.add_row(Text(f"-[ row {i + 1} ]", style="dim"), Text(""))
        for name, value in row.items():
            out.add_row(Text(name), _cell(value))
    return out


def plain_numbers(table: pa.Table) -> pa.Table:
    """Decimal columns as JSON numbers: scale 0 (DuckDB's HUGEINT sums and counts) as 64-bit
    integers, other scales as doubles. Left as decimals they would print as strings."""
    cols = []
    for field, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_decimal(field.type):
            try:
                col = col.cast(pa.int64() if field.type.scale == 0 else pa.float64())
            except pa.ArrowInvalid:  # beyond 64 bits: keep the exact digits as text
                col = col.cast(pa.string())
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def to_json_bytes(table: pa.Table) -> bytes:
    return orjson.dumps(
        plain_numbers(table).to_pylist(), option=orjson.OPT_NON_STR_KEYS, default=str
    )


def write(
    table: pa.Table, fmt: str, output: Path | None = None, console: Console | None = None
) -> None:
    """Write ``table`` in ``fmt`` to ``output`` (a file) or stdout; counts come out as
    integers and rates as doubles in every format."""
    table = plain_numbers(table)
    if fmt == "table":
        console = console or Console()
        if table.num_columns > 1 and _needed_width(table) > console.width:
            console.print(vertical_table(table))
            Console(stderr=True).print(
                "note: wider than the terminal, so one block per row; --format csv or json "
                "for a flat file",
                style="dim",
                markup=False,
            )
        else:
            console.print(rich_table(table))
        return
    if fmt == "json":
        data = to_json_bytes(table) + b"\n"
    elif fmt == "csv":
        buf = io.BytesIO()
        pacsv.write_csv(_csv_safe(table), buf)
        data = buf.getvalue()
    elif fmt == "parquet":
        buf = io.BytesIO()
        pq.write_table(table, buf)
        data = buf.getvalue()
    else:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if output:
        Path(output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def _csv_safe(table: pa.Table) -> pa.Table:
    """CSV has no lists: render list columns as JSON text."""
    cols = []
    for i, field in enumerate(table.schema):
        col = table.column(i)
        if pa.types.is_list(field.type) or pa.types.is_struct(field.type):
            col = pa.array(
                [None if v is None else orjson.dumps(v).decode() for v in col.to_pylist()],
                pa.string(),
            )
        cols.append(col)
    return pa.table(cols, names=table.column_names)
