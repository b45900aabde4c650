"""A lake version's content, hashed table by table: do two lakes hold the same rows?

Two ingests of the same sources (one local, one on Ray; one today, one after a refactor)
should give the same rows whatever files, file order or commit history they wrote. The
fingerprint of a table is its row count and a SHA-256 over its rows as text, sorted, so it
depends on the rows alone. ``graphlake lake fingerprint`` prints it; the engine conformance
tests compare it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from graphlake.lake.store import Lake
from graphlake.schema import TABLES


@dataclass(frozen=True)
class TablePrint:
    rows: int
    sha256: str


def fingerprint(lake: Lake, version: int | None = None) -> dict[str, TablePrint]:
    """Each canonical table's :class:`TablePrint` at ``version`` (latest when None)."""
    import duckdb

    from graphlake.schema.duckdb_views import create_table_views

    snap = lake.snapshot(version)
    con = duckdb.connect()
    try:
        create_table_views(con, {name: lake.files(name, snap) for name in TABLES})
        out = {}
        for name in TABLES:
            digest = hashlib.sha256()
            rows = 0
            # the rows as DuckDB prints a struct, in one order (a few MB for a fixture lake;
            # fetched in batches so a large table streams through the hash)
            # (the alias names the whole row; no table has a column of that name)
            cur = con.execute(
                f"SELECT CAST(__row__ AS VARCHAR) AS r FROM {name} __row__ ORDER BY r"
            )
            while batch := cur.fetchmany(10_000):
                rows += len(batch)
                for (r,) in batch:
                    digest.update(r.encode())
                    digest.update(b"\n")
            out[name] = TablePrint(rows, digest.hexdigest())
        return out
    finally:
        con.close()
