"""Materialized views: derived views kept as lake tables, refreshed by each ingest commit.

``adoptions`` resolves every adoption triple's three ends to steps and times,
``adoption_chains`` follows each request through its responses in time order, and
``co_occurrences`` pairs the occurrences of a session that overlap in time (a join index for
"what happened while the agent worked"). Computed at query time they join and sort millions of
rows on every call (2 to 10 s each at 100k sessions), yet each depends only on the rows of one
session, and a session's rows change only when an ingest run adds to them. So a run's commit
recomputes them for the sessions it touched, with the view's own SQL (``queries/views/``, still
the single definition), and appends the result to a Delta table pinned by the same lake
snapshot. Queries then read the table.

* Sessions a run added rows to are recomputed; if the table already holds rows for one of
  them (a run that added to an existing session), those rows are deleted first.
* The first commit that finds a table missing computes it for every session, so a lake
  written before the table existed catches up on its next ingest; snapshots older than the
  table fall back to computing the view (the catalog does this).
* Spark keeps computing the views from the SQL, so the conformance tests compare the
  materialized rows with an independent evaluation of the definition.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import duckdb
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from graphlake.lake.store import Lake, Snapshot
from graphlake.schema.views import DERIVED_VIEWS, MATERIALIZED, depends_on


def inputs() -> frozenset[str]:
    """The canonical tables whose new rows make a materialized view stale."""
    return frozenset().union(*map(depends_on, MATERIALIZED))


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def refresh(lake: Lake, base: Snapshot, versions: dict[str, int], corpus: str,
            touched: dict[str, set[str]], *, memory_limit: str = "1GB",
            temp_directory: Path | None = None) -> dict[str, tuple[int, int]]:
    """Recompute the materialized views for the sessions of ``corpus`` this run touched.

    ``versions`` are the table versions the run is about to pin; ``touched`` maps each
    canonical table to the session ids the run added rows to. Returns ``{table: (rows
    written, new Delta version)}`` for the tables that changed.
    """
    from graphlake.query.catalog import create_macros, create_table_views, derived_schema

    full = any(name not in base.table_versions for name in MATERIALIZED)
    sessions = set().union(*(touched.get(t, set()) for name in MATERIALIZED
                             for t in depends_on(name)))
    if not full and not sessions:
        return {}
    config = {"memory_limit": memory_limit}
    if temp_directory:
        config["temp_directory"] = str(temp_directory)
    con = duckdb.connect(config=config)
    try:
        files = {t: _files(lake, t, versions) for t in inputs()}
        where = ""
        if not full:
            con.register("_touched", pa.table({"session_id": sorted(sessions)}))
            where = (f"corpus = {_quote(corpus)} AND session_id IN "
                     "(SELECT session_id FROM _touched)")
        create_table_views(con, files, where=where)
        create_macros(con)
        out = {}
        for name in MATERIALIZED:
            # a table, so the views after it read these rows rather than recomputing them
            con.execute(f"CREATE OR REPLACE TABLE {name} AS {DERIVED_VIEWS[name][0]}")
            if not full:
                _delete_sessions(lake, name, base, corpus, sessions)
            reader = con.table(name).to_arrow_reader(100_000)
            try:
                out[name] = _append(lake, name, reader, derived_schema(name))
            finally:
                reader.close()
        return out
    finally:
        con.close()


def _files(lake: Lake, table: str, versions: dict[str, int]) -> list[str]:
    v = versions.get(table)
    return [] if v is None else DeltaTable(str(lake.table_path(table)), version=v).file_uris()


def _delete_sessions(lake: Lake, name: str, base: Snapshot, corpus: str,
                     sessions: set[str]) -> None:
    """Drop the rows a refresh replaces (only sessions the table already has rows for)."""
    files = lake.files(name, base)
    if not files:
        return
    con = duckdb.connect()
    try:
        con.register("_touched", pa.table({"session_id": sorted(sessions)}))
        present = [r[0] for r in con.execute(
            "SELECT DISTINCT session_id FROM read_parquet(?) WHERE corpus = ? "
            "AND session_id IN (SELECT session_id FROM _touched)", [files, corpus]).fetchall()]
    finally:
        con.close()
    if present:
        DeltaTable(str(lake.table_path(name))).delete(
            f"corpus = {_quote(corpus)} AND session_id IN ({', '.join(map(_quote, present))})")


def _append(lake: Lake, name: str, reader: pa.RecordBatchReader,
            schema: pa.Schema) -> tuple[int, int]:
    """Stream the rows into the table (created empty when new); return (rows, version)."""
    path = lake.table_path(name)
    if not DeltaTable.is_deltatable(str(path)):
        path.parent.mkdir(parents=True, exist_ok=True)
        DeltaTable.create(str(path), schema=schema)
    nonempty = (b.cast(schema) for b in reader if b.num_rows)
    first = next(nonempty, None)
    counted = 0
    if first is not None:
        def batches():
            nonlocal counted
            for b in itertools.chain([first], nonempty):
                counted += b.num_rows
                yield b

        write_deltalake(str(path), pa.RecordBatchReader.from_batches(schema, batches()),
                        mode="append")
    return counted, DeltaTable(str(path)).version()
