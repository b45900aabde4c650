"""DuckDB views over one lake snapshot: the tables of DESIGN section 4, plus derived views.

Each canonical table becomes a view over exactly the Parquet files its pinned Delta version
lists (``read_parquet([...])``), so DuckDB scans the lake in place: no copy, projection and
filter pushdown, all cores. A table with no files yet is an empty view with the right columns,
so every query works on a new lake. Derived views run their SQL from ``queries/views/``, except
that a materialized view current for the snapshot reads its table (``graphlake.lake.derived``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from graphlake.lake import Lake, Snapshot
from graphlake.lake.derived import current_files
from graphlake.schema import TABLES
from graphlake.schema.duckdb_views import (  # noqa: F401 - re-exported for callers
    create_macros,
    create_table_views,
    derived_schema,
    files_select,
    typed_files_select,
)
from graphlake.schema.views import DERIVED_VIEWS, MATERIALIZED


@dataclass
class Catalog:
    """A DuckDB connection whose views show one lake snapshot, plus their column lists."""

    con: duckdb.DuckDBPyConnection
    snapshot: Snapshot
    columns: dict[str, list[str]] = field(default_factory=dict)
    #: every Parquet file the views read (what a sandbox allows, and nothing else)
    files: list[str] = field(default_factory=list)
    #: DuckDB's spill folder for this catalog, removed on close
    temp_dir: str | None = None
    #: the memory limit the sandbox set, as DuckDB reports it (e.g. "2.0 GiB")
    memory_limit: str | None = None
    #: the canonical tables copied into DuckDB's memory (:func:`hold_in_memory`)
    held: frozenset[str] = frozenset()

    def close(self) -> None:
        self.con.close()
        if self.temp_dir:
            import shutil

            shutil.rmtree(self.temp_dir, ignore_errors=True)


def snapshot_files(lake: Lake, snap: Snapshot) -> list[str]:
    """Every Parquet file a catalog of ``snap`` reads: its tables' and its kept views'."""
    files = [f for name in TABLES for f in lake.files(name, snap)]
    for name in MATERIALIZED:
        files += current_files(lake, name, snap) or []
    return files


def open_catalog(
    lake: Lake,
    version: int | None = None,
    *,
    threads: int | None = None,
    memory_limit: str | None = None,
) -> Catalog:
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
    cat.files = [f for fs in files.values() for f in fs]
    cat.columns.update(create_table_views(con, files))
    create_macros(con)
    found = lake.current_of(snap)  # the newest version's manifest, when it is that one
    for name, (sql, _doc) in DERIVED_VIEWS.items():
        kept = current_files(lake, name, snap) if name in MATERIALIZED else None
        if kept is not None:
            # kept in the lake by ingest (graphlake.lake.derived): read it, don't recompute
            types = found.kept_types.get(name) if found is not None else None
            body = (
                typed_files_select(kept, types)
                if types is not None
                else files_select(kept, derived_schema(name))
            )
            cat.files += kept
        else:  # computed from the canonical tables (older lake versions, other definitions)
            body = sql
        con.execute(f"CREATE VIEW {name} AS {body}")
        cat.columns[name] = [d[0] for d in con.execute(f"SELECT * FROM {name} LIMIT 0").description]
    return cat


def hold_in_memory(cat: Catalog, lake: Lake, max_bytes: int) -> list[str]:
    """Copy each canonical table whose Parquet files total at most ``max_bytes`` into DuckDB's
    memory, sorted by its key, and point its view there; returns the tables held.

    For a long-lived reader (the server). A view over Parquet files costs every statement the
    footers of every file it names (a point lookup in ``sessions`` at 100,000 sessions, 25
    files: 10-20 ms); a sorted in-memory table answers one in about a millisecond, its zone
    maps skipping all but the block that holds the key. Small tables only, so what is held
    stays a few tens of MB and within the connection's memory limit. Derived views read the
    canonical views by name, so they see the held copy too. Call it before :func:`sandbox`."""
    import os

    held = []
    for name, spec in TABLES.items():
        files = lake.files(name, cat.snapshot)
        if not files or sum(os.path.getsize(f) for f in files) > max_bytes:
            continue
        cols = ", ".join(spec.schema.names)
        cat.con.execute(
            f"CREATE TABLE _held_{name} AS SELECT {cols} FROM {name} ORDER BY {', '.join(spec.key)}"
        )
        cat.con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT {cols} FROM _held_{name}")
        held.append(name)
    cat.held = frozenset(held)
    return held
