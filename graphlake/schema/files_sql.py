"""The SQL that reads a table's Parquet files, in one place for every catalog.

Text only (no pyarrow, no sqlglot): the catalog of :mod:`graphlake.query.catalog` and the
quick path of ``graphlake sql`` (built from the lake's manifest, :mod:`graphlake.lake.current`)
make their views with these functions, so both read the same files the same way.
"""

from __future__ import annotations

from collections.abc import Iterable


def string_literal(value: str) -> str:
    """``value`` as a DuckDB string literal (standard SQL: a quote is doubled, a backslash
    is itself)."""
    return "'" + value.replace("'", "''") + "'"


def string_list(values: Iterable[str]) -> str:
    """A DuckDB list literal of strings (``['a', 'b']``)."""
    return "[" + ", ".join(string_literal(v) for v in values) + "]"


def typed_files_select(files: list[str], columns: list[tuple[str, str]], where: str = "") -> str:
    """The rows of ``files`` with ``columns`` (name, DuckDB type); an empty relation of those
    columns when there are no files."""
    if not files:
        body = ", ".join(f"CAST(NULL AS {typ}) AS {name}" for name, typ in columns)
        return f"SELECT {body} WHERE false"
    cols = ", ".join(name for name, _ in columns)
    return f"SELECT {cols} FROM read_parquet({string_list(files)}, union_by_name=true)" + (
        f" WHERE {where}" if where else ""
    )
