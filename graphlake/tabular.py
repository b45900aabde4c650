"""Rows printed as a terminal table or a JSON array, with no Arrow in sight.

Both ways a result reaches the terminal print through here: an Arrow result
(:mod:`graphlake.query.output` turns it into names, numeric flags and row tuples) and the
quick path of ``graphlake sql`` (:mod:`graphlake.cli_quick`, rows straight from DuckDB), so
the two print the same bytes for the same answer. Importing this module loads Rich and
orjson only: a cold ``graphlake sql`` must not pay for pyarrow (0.14 s) to print a table.
"""

from __future__ import annotations

from collections.abc import Sequence

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
