"""The lake's only writer: stage an ingest run's rows, then commit them as one lake version.

Rows arrive one at a time from an ingestor (through the :class:`~graphlake.ingest.base.Emitter`
interface) and are buffered per table; every ``flush_rows`` rows a table's buffer becomes one
Parquet file in the run's staging folder, so memory stays bounded however large the input.

At commit, DuckDB streams each table's staged files, drops rows whose primary key appeared
earlier in the run or is already in the lake (deterministic ids make re-ingest a no-op), and
the survivors are appended to the Delta table. A snapshot row then pins the new versions.
"""

from __future__ import annotations

import itertools
import shutil
import uuid
from collections import Counter

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

from graphlake.ingest.base import EmitterBase, IngestStats
from graphlake.lake.store import Lake, Snapshot
from graphlake.schema import TABLES


def _sql_list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


class LakeWriter(EmitterBase):
    """Emitter that stages rows for one ingest run; :meth:`commit` makes them a lake version."""

    def __init__(self, lake: Lake, corpus: str, source: str, flush_rows: int = 200_000,
                 memory_limit: str = "1GB"):
        super().__init__(corpus)
        self.lake = lake
        self.source = source
        self.flush_rows = flush_rows
        self.memory_limit = memory_limit
        lake.init()
        self.staging = lake.meta_dir / "staging" / uuid.uuid4().hex
        self.buffers: dict[str, list[dict]] = {name: [] for name in TABLES}
        self.parts: Counter[str] = Counter()

    # -- staging ---------------------------------------------------------------------------
    def _store(self, table: str, row: dict) -> None:
        buf = self.buffers[table]
        buf.append(row)
        if len(buf) >= self.flush_rows:
            self._flush(table)

    def _flush(self, table: str) -> None:
        rows = self.buffers[table]
        if not rows:
            return
        schema = TABLES[table].schema
        cols = {name: [r.get(name) for r in rows] for name in schema.names}
        batch = pa.Table.from_pydict(cols, schema=schema)
        folder = self.staging / table
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(batch, folder / f"part-{self.parts[table]:05d}.parquet")
        self.parts[table] += 1
        self.buffers[table] = []

    def abort(self) -> None:
        """Forget everything staged (nothing was committed)."""
        shutil.rmtree(self.staging, ignore_errors=True)

    # -- commit ----------------------------------------------------------------------------
    def commit(self) -> tuple[IngestStats, Snapshot | None]:
        """Write staged rows into the lake as one new version; None when nothing was new."""
        for table in TABLES:
            self._flush(table)
        stats = IngestStats(accepted=Counter(self.accepted), rejected=Counter(self.rejected))
        try:
            with self.lake.write_lock():
                base = self.lake.snapshot()
                self.lake.roll_back_orphans(base)
                versions = dict(base.table_versions)
                con = duckdb.connect(config={"memory_limit": self.memory_limit,
                                             "temp_directory": str(self.staging / "_tmp")})
                try:
                    for table in TABLES:
                        if self.parts[table] == 0:
                            continue
                        added, version = self._append(con, table, base)
                        if added:
                            stats.added[table] = added
                            versions[table] = version
                finally:
                    con.close()
                snap = None
                if stats.added:
                    snap = self.lake.commit_snapshot(
                        operation="ingest", corpus=self.corpus, source=self.source,
                        table_versions=versions, rows_added=dict(stats.added))
        finally:
            self.abort()
        return stats, snap

    def _append(self, con: duckdb.DuckDBPyConnection, table: str, base: Snapshot):
        spec = TABLES[table]
        staged = _sql_list(sorted(str(p) for p in (self.staging / table).glob("*.parquet")))
        keys = ", ".join(spec.key)
        query = f"SELECT DISTINCT ON ({keys}) * FROM read_parquet({staged})"
        existing = self.lake.files(table, base)
        if existing:
            # only the sessions this run touches can collide: prune the scan to them
            query = (f"WITH s AS ({query}) SELECT s.* FROM s ANTI JOIN ("
                     f"SELECT {keys} FROM read_parquet({_sql_list(existing)}, union_by_name=true)"
                     f" WHERE session_id IN (SELECT DISTINCT session_id FROM s)) e "
                     f"USING ({keys})")
        reader = con.sql(query).to_arrow_reader(100_000)
        try:
            return self._write_stream(table, reader)
        finally:
            reader.close()  # release DuckDB's stream before its connection closes

    def _write_stream(self, table: str, reader: pa.RecordBatchReader) -> tuple[int, int | None]:
        nonempty = (b for b in reader if b.num_rows)
        first = next(nonempty, None)
        if first is None:
            return 0, None
        schema = TABLES[table].schema
        counted = 0

        def batches():
            nonlocal counted
            for b in itertools.chain([first], nonempty):
                counted += b.num_rows
                yield b.cast(schema)

        path = self.lake.table_path(table)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_deltalake(str(path), pa.RecordBatchReader.from_batches(schema, batches()),
                        mode="append")
        return counted, DeltaTable(str(path)).version()
