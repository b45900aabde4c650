"""Rows printed as a terminal table or a JSON array, with no Arrow in sight.

Both ways a result reaches the terminal print through here: an Arrow result
(:mod:`graphlake.query.output` turns it into names, numeric flags and row tuples) and the
quick path of ``graphlake sql`` (:mod:`graphlake.cli_quick`, rows straight from DuckDB), so
the two print the same bytes for the same answer. Importing this module loads Rich and
orjson only: a cold ``graphlake sql`` must not pay for pyarrow (0.14 s) to print a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

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


#: DuckDB types printed right-aligned as numbers (the Arrow path's integers and floats)
NUMERIC_TYPES = frozenset(
    {
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "HUGEINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "FLOAT",
        "DOUBLE",
    }
)
#: DuckDB types whose values, fetched as Python rows, print and encode as the same values
#: fetched through Arrow do (plus DECIMAL(p,s), as :func:`plain_rows` makes them)
PLAIN_TYPES = NUMERIC_TYPES | {
    '"NULL"',  # a column of NULL literals
    "BOOLEAN",
    "VARCHAR",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP WITH TIME ZONE",
    "VARCHAR[]",
    "BIGINT[]",
    "INTEGER[]",
    "DOUBLE[]",
}
_INT64 = (-(1 << 63), (1 << 63) - 1)


class NotPlain(ValueError):
    """A value the row path cannot give as the Arrow path would: take the Arrow path."""


def all_plain(types: Sequence[str]) -> bool:
    """Whether every column (DuckDB type names, as ``str(description[i][1])``) is plain."""
    return all(t in PLAIN_TYPES or t.startswith("DECIMAL(") for t in types)


def numeric_columns(types: Sequence[str]) -> list[bool]:
    return [t in NUMERIC_TYPES or t.startswith("DECIMAL(") for t in types]


def plain_rows(types: Sequence[str], rows: list) -> list:
    """``rows`` with DECIMAL and HUGEINT values as the Arrow path makes them (query/output.py
    ``plain_numbers``): both reach Arrow as decimals, then become 64-bit integers (scale 0)
    or doubles. :class:`NotPlain` for an integer past 64 bits (the Arrow path keeps its
    digits as text)."""
    kinds = [
        "int"
        if t == "HUGEINT" or (t.startswith("DECIMAL(") and t.endswith(",0)"))
        else "float"
        if t.startswith("DECIMAL(")
        else None
        for t in types
    ]
    if not any(kinds):
        return rows
    return [tuple(_plain(v, k) if k else v for v, k in zip(r, kinds, strict=True)) for r in rows]


def _plain(value, kind: str):
    if value is None:
        return None
    if kind == "int":
        n = int(value)
        if not _INT64[0] <= n <= _INT64[1]:
            raise NotPlain(value)
        return n
    return float(value) if isinstance(value, Decimal | int) else value


def is_key(name: str) -> bool:
    return name in KEY_COLUMNS or name.endswith("_id")


def cell(v) -> Text:
    """A cell as plain text: values such as "[mobile_data_issue]" are data, not Rich markup."""
    if v is None:
        return Text("∅", style="dim")
    if isinstance(v, float):
        return Text(f"{v:.4g}")
    return Text(str(v))


def rows_table(
    names: Sequence[str],
    numeric: Sequence[bool],
    rows: Sequence[Sequence],
    title: str | None = None,
    max_width: int = 60,
) -> Table:
    """Columns side by side; numbers right-aligned; key columns never cut."""
    out = Table(title=title, show_lines=False, header_style="bold")
    for name, num in zip(names, numeric, strict=True):
        key = is_key(name)
        out.add_column(
            name,
            justify="right" if num else "left",
            max_width=None if key else max_width,
            overflow="fold" if key else "ellipsis",
            min_width=min(len(name), 12),
        )
    for row in rows:
        out.add_row(*(cell(v) for v in row))
    return out


def needed_width(names: Sequence[str], rows: Sequence[Sequence], max_width: int = 60) -> int:
    """The width the table needs with no cell cut: from the header and the first rows."""
    total = 1
    head = rows[:200]
    for k, name in enumerate(names):
        widths = [len(cell(row[k]).plain) for row in head]
        total += min(max([len(name), *widths]), max_width) + 3
    return total


def vertical_rows(names: Sequence[str], rows: Sequence[Sequence]) -> Table:
    """One block per row, a line per column (as psql's expanded display): for results wider
    than the terminal, where columns side by side would cut their values."""
    out = Table(show_header=False, show_lines=True, box=None, padding=(0, 1))
    out.add_column("column", style="bold", no_wrap=True)
    out.add_column("value", overflow="fold")
    for i, row in enumerate(rows):
        out.add_row(Text(f"-[ row {i + 1} ]", style="dim"), Text(""))
        for name, value in zip(names, row, strict=True):
            out.add_row(Text(name), cell(value))
    return out


def print_rows(
    names: Sequence[str],
    numeric: Sequence[bool],
    rows: Sequence[Sequence],
    console: Console | None = None,
) -> None:
    """The terminal table, or one block per row when it is wider than the terminal."""
    console = console or Console()
    if len(names) > 1 and needed_width(names, rows) > console.width:
        console.print(vertical_rows(names, rows))
        Console(stderr=True).print(
            "note: wider than the terminal, so one block per row; --format csv or json "
            "for a flat file",
            style="dim",
            markup=False,
        )
    else:
        console.print(rows_table(names, numeric, rows))


def json_bytes(names: Sequence[str], rows: Sequence[Sequence]) -> bytes:
    """A JSON array of row objects (keys in column order)."""
    return orjson.dumps(
        [dict(zip(names, row, strict=True)) for row in rows],
        option=orjson.OPT_NON_STR_KEYS,
        default=str,
    )


def print_error(message: str, console: Console | None = None) -> None:
    """One ``error: ...`` line on stderr. The message is printed as it is: user text (a path
    like ``runs[old]/``, a statement with ``[/]``, an extra like ``graphlake[vision]``) is
    never read as Rich markup."""
    console = console or Console(stderr=True, markup=False)
    console.print(
        Text.assemble(("error:", "bold red"), " ", message), highlight=False, soft_wrap=True
    )


def note_truncated(max_rows: int, console: Console | None = None) -> None:
    """The note under a result the row cap cut."""
    console = console or Console(stderr=True, markup=False)
    console.print(
        f"note: result cut at {max_rows} rows; raise --max-rows (0 for no cap) to see the rest",
        style="yellow",
    )
