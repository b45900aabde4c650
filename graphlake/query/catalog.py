"""DuckDB views over one lake snapshot: the tables of DESIGN section 4, plus derived views.

Each canonical table becomes a view over exactly the Parquet files its pinned Delta version
lists (``read_parquet([...])``), so DuckDB scans the lake in place: no copy, projection and
filter pushdown, all cores. A table with no files yet is an empty view with the right columns,
so every query works on a new lake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources

import duckdb
import pyarrow as pa

from graphlake.lake import Lake, Snapshot
from graphlake.query.graph_macros import MACROS
from graphlake.schema import TABLES

_DUCK_TYPES = {
    pa.string(): "VARCHAR", pa.float64(): "DOUBLE", pa.int32(): "INTEGER",
    pa.int64(): "BIGINT", pa.bool_(): "BOOLEAN", pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ",
    pa.list_(pa.string()): "VARCHAR[]",
}

#: Views derived from the canonical tables, in dependency order: each is one SQL file in
#: ``queries/views/`` with ``-- view:`` and ``-- description:`` header lines.
VIEW_ORDER = ("adoptions", "adoption_chains", "session_metrics", "session_process",
              "run_outcomes")


def _load_views() -> dict[str, tuple[str, str]]:
    folder = resources.files("graphlake.queries") / "views"
    views = {}
    for name in VIEW_ORDER:
        text = (folder / f"{name}.sql").read_text()
        doc = re.search(r"^-- description:\s*(.*)$", text, re.M)
        views[name] = (text, doc.group(1).strip() if doc else "")
    return views


#: Name -> (SQL, one line of documentation).
DERIVED_VIEWS: dict[str, tuple[str, str]] = _load_views()


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
    for name, spec in TABLES.items():
        files = lake.files(name, snap)
        if files:
            cols = ", ".join(spec.schema.names)
            body = f"SELECT {cols} FROM read_parquet({_quote_list(files)}, union_by_name=true)"
        else:
            body = _empty_select(spec.schema)
        con.execute(f"CREATE VIEW {name} AS {body}")
        cat.columns[name] = list(spec.schema.names)
    for macro in MACROS.values():
        con.execute(macro.create_sql())
    for name, (sql, _doc) in DERIVED_VIEWS.items():
        con.execute(f"CREATE VIEW {name} AS {sql}")
        cat.columns[name] = [d[0] for d in con.execute(f"SELECT * FROM {name} LIMIT 0").description]
    return cat
