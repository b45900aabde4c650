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

from graphlake.config import OUTPUT_FORMATS
from graphlake.tabular import json_bytes, print_rows, rows_table

FORMATS = OUTPUT_FORMATS


def _columns(table: pa.Table) -> tuple[list[str], list[bool], list[tuple]]:
    """(names, which are numbers, rows as tuples) of an Arrow result, for
    :mod:`graphlake.tabular`."""
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) for f in table.schema]
    cols = [c.to_pylist() for c in table.columns]
    return table.column_names, numeric, list(zip(*cols, strict=True)) if cols else []


def rich_table(table: pa.Table, title: str | None = None, max_width: int = 60) -> Table:
    names, numeric, rows = _columns(table)
    return rows_table(names, numeric, rows, title, max_width)


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
    names, _numeric, rows = _columns(plain_numbers(table))
    return json_bytes(names, rows)


def write(
    table: pa.Table, fmt: str, output: Path | None = None, console: Console | None = None
) -> None:
    """Write ``table`` in ``fmt`` to ``output`` (a file) or stdout; counts come out as
    integers and rates as doubles in every format."""
    table = plain_numbers(table)
    if fmt == "table":
        print_rows(*_columns(table), console)
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
