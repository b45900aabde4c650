"""DuckDB views over one lake snapshot: the tables of DESIGN section 4, plus derived views.

Each canonical table becomes a view over exactly the Parquet files its pinned Delta version
lists (``read_parquet([...])``), so DuckDB scans the lake in place: no copy, projection and
filter pushdown, all cores. A table with no files yet is an empty view with the right columns,
so every query works on a new lake. Derived views run their SQL from ``queries/views/``, except
that a materialized view current for the snapshot reads its table (``graphlake.lake.derived``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import duckdb
import pyarrow as pa

from graphlake.lake import Lake, Snapshot
from graphlake.lake.derived import current_files
from graphlake.query.graph_macros import MACROS
from graphlake.schema import TABLES
from graphlake.schema.views import DERIVED_VIEWS, MATERIALIZED

_DUCK_TYPES = {
    pa.string(): "VARCHAR", pa.float64(): "DOUBLE", pa.int32(): "INTEGER",
    pa.int64(): "BIGINT", pa.bool_(): "BOOLEAN", pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ",
    pa.list_(pa.string()): "VARCHAR[]",
}


def _empty_select(schema: pa.Schema) -> str:
    cols = ", ".join(f"CAST(NULL AS {_DUCK_TYPES[f.type]}) AS {f.name}" for f in schema)
    return f"SELECT {cols} WHERE false"


def _quote_list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


@dataclass
class Catalog:
    """A DuckDB connection whose views show one lake snapshot, plus their column lists."""

    con: duckdb.DuckDBPyConnection
    snapshot: Snapshot
    columns: dict[str, list[str]] = field(default_factory=dict)

    def close(self) -> None:
        self.con.close()


def open_catalog(lake: Lake, version: int | None = None, *, threads: int | None = None,
                 memory_limit: str | None = None) -> Catalog:
    """Connect DuckDB to ``lake`` at ``version`` (latest when None)."""
    snap = lake.snapshot(version)
    config = {}
    if threads:
        config["threads"] = threads
    if memory_limit:
        config["memory_limit"] = memory_limit
    con = duckdb.connect(config=config)
    cat = Catalog(con, snap)
    files = {name: lake.files(name, snap) for name in TABLES}
    cat.columns.update(create_table_views(con, files))
    create_macros(con)
    for name, (sql, _doc) in DERIVED_VIEWS.items():
        kept = current_files(lake, name, snap) if name in MATERIALIZED else None
        if kept is not None:
            # kept in the lake by ingest (graphlake.lake.derived): read it, don't recompute
            body = files_select(kept, derived_schema(name))
        else:  # computed from the canonical tables (older lake versions, other definitions)
            body = sql
        con.execute(f"CREATE VIEW {name} AS {body}")
        cat.columns[name] = [d[0] for d in con.execute(f"SELECT * FROM {name} LIMIT 0").description]
    return cat


def files_select(files: list[str], schema: pa.Schema, where: str = "") -> str:
    if not files:
        return _empty_select(schema)
    cols = ", ".join(schema.names)
    return (f"SELECT {cols} FROM read_parquet({_quote_list(files)}, union_by_name=true)"
            + (f" WHERE {where}" if where else ""))


def create_table_views(con: duckdb.DuckDBPyConnection, files: dict[str, list[str]], *,
                       where: str = "") -> dict[str, list[str]]:
    """One view per canonical table over ``files[table]`` (rows matching ``where``, when
    given); a table without files is an empty view with the right columns."""
    columns = {}
    for name, spec in TABLES.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS "
                    f"{files_select(files.get(name, []), spec.schema, where)}")
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
            out[name] = pa.schema([
                f.with_type(pa.list_(f.type.value_type)) if pa.types.is_list(f.type) else f
                for f in schema])
        return out
    finally:
        con.close()
