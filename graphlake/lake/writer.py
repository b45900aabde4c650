"""The lake's only writer: stage an ingest run's rows, then commit them as one lake version.

An ingest run has one :class:`LakeRun`. Ingestors write into :class:`StagingEmitter` objects
(one per process when parsing runs in parallel): rows are buffered per table as tuples and
every ``flush_rows`` rows become one Parquet file in the run's staging folder, so memory stays
bounded however large the input. Every staged row carries ``_unit``, the index of the source
unit (file or session folder) it came from.

At commit the run

1. finds sessions that two units both claim (same ``session_id``): the first unit wins, the
   others become rejects carrying their whole file, and their rows are dropped;
2. streams each table's staged files through DuckDB, dropping rows whose primary key is
   already in the lake (deterministic ids make re-ingest a no-op) or repeats within the run;
3. appends the survivors to the Delta tables and pins the new versions in one snapshot row.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import AddAction

from graphlake.ingest.base import RAW_LIMIT, EmitterBase, IngestStats
from graphlake.lake.store import Lake, Snapshot
from graphlake.schema import TABLES

UNIT = "_unit"
UNITS_DIR = "_units"
_STAGED = {name: pa.schema([*spec.schema, pa.field(UNIT, pa.int32())])
           for name, spec in TABLES.items()}


def _sql_list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


@dataclass
class StagingSummary:
    """What a staging emitter reports back (picklable: it crosses process boundaries)."""

    accepted: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    sessions: list[tuple[str, int, str]] = field(default_factory=list)  # (id, unit, file)


class StagingEmitter(EmitterBase):
    """Buffers rows per table and spills them as Parquet parts into a run's staging folder."""

    def __init__(self, corpus: str, staging: Path, prefix: str, flush_rows: int = 50_000):
        super().__init__(corpus)
        self.staging = Path(staging)
        self.prefix = prefix
        self.flush_rows = flush_rows
        self.sessions: list[tuple[str, int, str]] = []
        self._names = {t: (*spec.schema.names, UNIT) for t, spec in TABLES.items()}
        self._buffers: dict[str, list[tuple]] = {t: [] for t in TABLES}
        self._parts: Counter[str] = Counter()

    def _store(self, table: str, row: dict) -> None:
        row[UNIT] = self.unit
        if table == "sessions":
            self.sessions.append((row["session_id"], self.unit, row.get("source_file") or ""))
        buf = self._buffers[table]
        buf.append(tuple(map(row.get, self._names[table])))
        if len(buf) >= self.flush_rows:
            self._flush(table)

    def rows(self, table: str, rows: pa.Table) -> None:
        """Stage an Arrow batch as its own Parquet part, without touching rows in Python."""
        if rows.num_rows == 0:
            return
        self.accepted[table] += rows.num_rows
        if table == "sessions":
            self.sessions.extend(zip(rows.column("session_id").to_pylist(),
                                     rows.column(UNIT).to_pylist(),
                                     rows.column("source_file").to_pylist(), strict=True))
        self._write(table, rows.select(_STAGED[table].names).cast(_STAGED[table]))

    def _write(self, table: str, data: pa.Table) -> None:
        """One staged part: the canonical columns (ready to become a Delta data file as-is)
        and, beside it in ``_units/``, the rows' source units in the same order."""
        folder = self.staging / table
        (folder / UNITS_DIR).mkdir(parents=True, exist_ok=True)
        name = f"{self.prefix}-{self._parts[table]:05d}.parquet"
        pq.write_table(data.drop_columns([UNIT]), folder / name, compression="snappy")
        pq.write_table(data.select([UNIT]), folder / UNITS_DIR / name)
        self._parts[table] += 1

    def _flush(self, table: str) -> None:
        rows = self._buffers[table]
        if not rows:
            return
        schema = _STAGED[table]
        columns = zip(*rows, strict=True)
        arrays = [pa.array(list(col), type=f.type)
                  for col, f in zip(columns, schema, strict=True)]
        self._write(table, pa.Table.from_arrays(arrays, schema=schema))
        self._buffers[table] = []

    def close(self) -> StagingSummary:
        """Flush every buffer; return the counts and sessions seen."""
        for table in TABLES:
            self._flush(table)
        return StagingSummary(Counter(self.accepted), Counter(self.rejected), self.sessions)


class LakeRun:
    """One ingest run: a staging folder, its emitters, and the commit that publishes them."""

    def __init__(self, lake: Lake, corpus: str, source: str, memory_limit: str = "1GB"):
        self.lake = lake
        self.corpus = corpus
        self.source = source
        self.memory_limit = memory_limit
        lake.init()
        self.staging = lake.meta_dir / "staging" / uuid.uuid4().hex
        self.staging.mkdir(parents=True)

    def emitter(self, prefix: str = "p0", flush_rows: int = 50_000) -> StagingEmitter:
        return StagingEmitter(self.corpus, self.staging, prefix, flush_rows)

    def abort(self) -> None:
        """Forget everything staged (nothing was committed)."""
        shutil.rmtree(self.staging, ignore_errors=True)

    # -- commit ----------------------------------------------------------------------------
    def commit(self, summaries: list[StagingSummary]) -> tuple[IngestStats, Snapshot | None]:
        """Publish the staged rows as one new lake version; None when nothing was new."""
        stats = IngestStats()
        sessions = []
        for s in summaries:
            stats.accepted.update(s.accepted)
            stats.rejected.update(s.rejected)
            sessions.extend(s.sessions)
        losers = self._reject_duplicate_sessions(sessions, stats)
        try:
            with self.lake.write_lock():
                base = self.lake.snapshot()
                self.lake.roll_back_orphans(base)
                versions = dict(base.table_versions)
                con = duckdb.connect(config={"memory_limit": self.memory_limit,
                                             "temp_directory": str(self.staging / "_tmp")})
                try:
                    if losers:
                        con.register("_losers", pa.table(
                            {"session_id": [s for s, _ in losers],
                             UNIT: pa.array([u for _, u in losers], pa.int32())}))
                    for table in TABLES:
                        if not (self.staging / table).is_dir():
                            continue
                        added, version = self._append(con, table, base, bool(losers), stats)
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

    def _reject_duplicate_sessions(self, sessions, stats: IngestStats) -> list[tuple[str, int]]:
        """Two units claiming one session_id: keep the first, reject the others whole."""
        first: dict[str, tuple[int, str]] = {}
        losers: list[tuple[str, int]] = []
        em = self.emitter("dups")
        em.unit = -1
        for sid, unit, source in sorted(sessions, key=lambda s: s[1]):
            if sid not in first:
                first[sid] = (unit, source)
                continue
            losers.append((sid, unit))
            path = Path(source)
            raw = path.read_bytes()[:RAW_LIMIT] if path.is_file() else source
            em.reject(source_file=source, target_table="sessions", record_kind="session",
                      record_ref="$.session_id", raw=raw, session_id=sid,
                      reason=f"session_id {sid!r} was already read from {first[sid][1]} in "
                      "this run; give each session its own id (this file was not ingested)")
        stats.rejected.update(em.close().rejected)
        return losers

    def _append(self, con, table: str, base: Snapshot, has_losers: bool, stats: IngestStats):
        """Add one table's staged rows to the lake; return (rows added, new Delta version).

        The common case (no duplicate sessions, no repeated keys, nothing already in the
        lake) adopts the staged files as Delta data files: a metadata-only commit. Otherwise
        DuckDB filters the rows and they are rewritten.
        """
        spec = TABLES[table]
        folder = self.staging / table
        files = sorted(str(p) for p in folder.glob("*.parquet"))
        keys = ", ".join(spec.key)
        source = f"read_parquet({_sql_list(files)})"
        if has_losers:
            with_units = " UNION ALL ".join(
                f"SELECT * FROM read_parquet({_sql_list([f])}) POSITIONAL JOIN "
                f"read_parquet({_sql_list([str(folder / UNITS_DIR / Path(f).name)])})"
                for f in files)
            dropped = con.sql(f"SELECT count(*) FROM ({with_units}) SEMI JOIN _losers "
                              f"USING (session_id, {UNIT})").fetchall()[0][0]
            stats.accepted[table] -= dropped
            source = (f"(SELECT * EXCLUDE ({UNIT}) FROM ({with_units}) "
                      f"ANTI JOIN _losers USING (session_id, {UNIT}))")
        # DISTINCT ON carries whole rows through a hash table; checking the narrow keys
        # first is several times cheaper, and repeats within a run are rare
        repeats = con.sql(f"SELECT 1 FROM {source} GROUP BY {keys} HAVING count(*) > 1 "
                          "LIMIT 1").fetchall()
        existing = self.lake.files(table, base)
        # only the sessions this run touches can collide: prune the scan to them
        in_lake = (f"(SELECT {keys} FROM read_parquet({_sql_list(existing)}, "
                   f"union_by_name=true) WHERE session_id IN (SELECT DISTINCT session_id "
                   f"FROM {source}))") if existing else None
        collides = in_lake and con.sql(f"SELECT 1 FROM {source} SEMI JOIN {in_lake} "
                                       f"USING ({keys}) LIMIT 1").fetchall()
        if not (has_losers or repeats or collides):
            return self._adopt(table, files)
        distinct = f"DISTINCT ON ({keys}) " if repeats else ""
        query = f"SELECT {distinct}* FROM {source}"
        if in_lake:
            query = f"SELECT * FROM ({query}) ANTI JOIN {in_lake} USING ({keys})"
        reader = con.sql(query).to_arrow_reader(100_000)
        try:
            return self._write_stream(table, reader)
        finally:
            reader.close()  # release DuckDB's stream before its connection closes

    def _adopt(self, table: str, files: list[str]) -> tuple[int, int | None]:
        """Move staged files into the Delta table and commit them (no data rewritten)."""
        schema = TABLES[table].schema
        path = self.lake.table_path(table)
        if not DeltaTable.is_deltatable(str(path)):
            path.parent.mkdir(parents=True, exist_ok=True)
            DeltaTable.create(str(path), schema=schema)
        actions, rows = [], 0
        for f in files:
            n = pq.read_metadata(f).num_rows
            if n == 0:
                continue
            name = f"part-{uuid.uuid4().hex}.parquet"
            os.replace(f, path / name)
            st = (path / name).stat()
            actions.append(AddAction(name, st.st_size, {}, int(st.st_mtime * 1000), True,
                                     json.dumps({"numRecords": n})))
            rows += n
        if not actions:
            return 0, None
        dt = DeltaTable(str(path))
        dt.create_write_transaction(actions, mode="append", schema=schema)
        return rows, DeltaTable(str(path)).version()

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
