"""DuckDB views over lake files: what both the query catalog (:mod:`graphlake.query.catalog`)
and the materialized-view refresh (:mod:`graphlake.lake.derived`) build on, kept below both so
neither imports the other.

Every value pasted into generated SQL (a file path, a corpus, a session id) goes through
:func:`string_literal` / :func:`string_list` (:mod:`graphlake.schema.files_sql`, the same
quoting sqlglot writes for DuckDB); where a statement can take bound parameters it does
instead.
"""

from __future__ import annotations

from functools import cache

import duckdb
import pyarrow as pa

from graphlake.schema.files_sql import (  # noqa: F401 - re-exported
    string_list,
    string_literal,
    typed_files_select,
)
from graphlake.schema.graph_macros import MACROS
from graphlake.schema.tables import TABLES
from graphlake.schema.views import DERIVED_VIEWS

_DUCK_TYPES = {
    pa.string(): "VARCHAR",
    pa.float64(): "DOUBLE",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.bool_(): "BOOLEAN",
    pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ",
    pa.list_(pa.string()): "VARCHAR[]",
}


def files_select(files: list[str], schema: pa.Schema, where: str = "") -> str:
    return typed_files_select(files, [(f.name, _DUCK_TYPES[f.type]) for f in schema], where)


def create_table_views(
    con: duckdb.DuckDBPyConnection, files: dict[str, list[str]], *, where: str = ""
) -> dict[str, list[str]]:
    """One view per canonical table over ``files[table]`` (rows matching ``where``, when
    given); a table without files is an empty view with the right columns."""
    columns = {}
    for name, spec in TABLES.items():
        con.execute(
            f"CREATE OR REPLACE VIEW {name} AS "
            f"{files_select(files.get(name, []), spec.schema, where)}"
        )
        columns[name] = list(spec.schema.names)
    return columns


def create_macros(con: duckdb.DuckDBPyConnection) -> None:
    """The graph primitives (``descendants``, ``allen``, ...) as DuckDB macros."""
    for macro in MACROS.values():
        con.execute(macro.create_sql())


def derived_schema(name: str) -> pa.Schema:
    """The Arrow schema of a derived view, as DuckDB types it over empty tables."""
    return _derived_schemas()[name]


@cache
def _derived_schemas() -> dict[str, pa.Schema]:
    con = duckdb.connect()
    try:
        create_table_views(con, {})
        create_macros(con)
        out = {}
        for name, (sql, _doc) in DERIVED_VIEWS.items():
            con.execute(f"CREATE VIEW {name} AS {sql}")
            schema = con.sql(f"SELECT * FROM {name} LIMIT 0").to_arrow_table().schema
            # plain list<item> types, as the canonical tables use
            out[name] = pa.schema(
                [
                    f.with_type(pa.list_(f.type.value_type)) if pa.types.is_list(f.type) else f
                    for f in schema
                ]
            )
        return out
    finally:
        con.close()
