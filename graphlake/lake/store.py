"""The lake on disk: one Delta table per canonical table, and a lake-level snapshot log.

Delta Lake commits are atomic per table, but one ingest run writes many tables. graphlake makes
the run atomic with a small snapshot log (itself a Delta table, ``_graphlake/snapshots``): a run
first commits each data table, then appends one snapshot row that pins every table's version.
Readers only ever read the versions a snapshot pins, so a crash between the table commits and
the snapshot commit is invisible; the next writer rolls the orphaned commits back.

Layout::

    <lake>/tables/<table>/            Delta table (Parquet files + _delta_log), one per
                                      canonical table and per materialized view
    <lake>/_graphlake/snapshots/      Delta table: one row per lake version
    <lake>/_graphlake/lake.json       schema version the lake was created with
    <lake>/_graphlake/staging/<run>/  spill area of a run in progress (removed after it)
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

import graphlake
from graphlake.errors import LakeError, LakeVersionError
from graphlake.schema import SCHEMA_VERSION, TABLES
from graphlake.schema.views import MATERIALIZED

SNAPSHOT_SCHEMA = pa.schema([
    pa.field("lake_version", pa.int64(), nullable=False),
    pa.field("committed_at", pa.timestamp("us", tz="UTC")),
    pa.field("operation", pa.string()),
    pa.field("corpus", pa.string()),
    pa.field("source", pa.string()),
    pa.field("schema_version", pa.int32()),
    pa.field("graphlake_version", pa.string()),
    pa.field("table_versions", pa.string()),  # JSON {table: delta version}
    pa.field("rows_added", pa.string()),      # JSON {table: rows}
    pa.field("rows_removed", pa.string()),    # JSON {table: rows} a changed source replaced
])


@dataclass(frozen=True)
class Snapshot:
    """One lake version: which Delta version of each table it is made of."""

    lake_version: int
    committed_at: datetime | None
    operation: str
    corpus: str | None
    source: str | None
    table_versions: dict[str, int]
    rows_added: dict[str, int]
    rows_removed: dict[str, int] = field(default_factory=dict)


EMPTY = Snapshot(0, None, "empty", None, None, {}, {})


class Lake:
    """A graphlake lake rooted at a directory (created on first write)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser()

    # -- paths -----------------------------------------------------------------------------
    @property
    def meta_dir(self) -> Path:
        return self.root / "_graphlake"

    def table_path(self, name: str) -> Path:
        return self.root / "tables" / name

    @property
    def _snapshots_path(self) -> Path:
        return self.meta_dir / "snapshots"

    def exists(self) -> bool:
        return (self.meta_dir / "lake.json").is_file()

    def init(self) -> None:
        """Create the lake directory (idempotent); refuse a lake from a newer schema."""
        self.meta_dir.mkdir(parents=True, exist_ok=True)
        marker = self.meta_dir / "lake.json"
        if marker.is_file():
            found = json.loads(marker.read_text()).get("schema_version")
            if found != SCHEMA_VERSION:
                raise LakeError(f"lake {self.root} has schema version {found}, this graphlake "
                                f"writes version {SCHEMA_VERSION}; ingest into a new --lake "
                                "directory or upgrade graphlake")
            return
        marker.write_text(json.dumps({"schema_version": SCHEMA_VERSION,
                                      "created_by": f"graphlake {graphlake.__version__}"}) + "\n")

    # -- snapshots -------------------------------------------------------------------------
    def snapshots(self) -> list[Snapshot]:
        """Every lake version, oldest first (empty for a new lake)."""
        if not DeltaTable.is_deltatable(str(self._snapshots_path)):
            return []
        # read the files directly: DeltaTable.to_pyarrow_table() can abort the interpreter at
        # exit (deltalake 1.x, seen here as "terminate called without an active exception")
        # one ParquetFile per file, and times as integers: pq.read_table would import
        # pyarrow.dataset and to_pylist() on zoned timestamps pandas (~0.4 s per process)
        as_ints = pa.schema([f.with_type(pa.int64()) if f.name == "committed_at" else f
                             for f in SNAPSHOT_SCHEMA])
        rows = []
        for f in DeltaTable(str(self._snapshots_path)).file_uris():
            t = pq.ParquetFile(f).read()
            if "rows_removed" not in t.column_names:  # written before graphlake replaced rows
                t = t.append_column("rows_removed", pa.nulls(t.num_rows, pa.string()))
            for r in t.cast(SNAPSHOT_SCHEMA).cast(as_ints).to_pylist():
                r["committed_at"] = datetime.fromtimestamp(r["committed_at"] / 1e6, UTC)
                rows.append(r)
        return [Snapshot(r["lake_version"], r["committed_at"], r["operation"], r["corpus"],
                         r["source"], json.loads(r["table_versions"]),
                         json.loads(r["rows_added"] or "{}"),
                         json.loads(r.get("rows_removed") or "{}"))
                for r in sorted(rows, key=lambda r: r["lake_version"])]

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The snapshot at ``version`` (latest when None); the empty snapshot for a new lake."""
        snaps = self.snapshots()
        if version is None:
            return snaps[-1] if snaps else EMPTY
        for s in snaps:
            if s.lake_version == version:
                return s
        if version == 0:
            return EMPTY
        latest = snaps[-1].lake_version if snaps else 0
        raise LakeVersionError(f"lake {self.root} has no version {version}; versions run from "
                               f"0 to {latest} (see `graphlake lake info`)")

    def files(self, table: str, snap: Snapshot) -> list[str]:
        """Parquet files that make up ``table`` in ``snap`` (empty when it has none)."""
        v = snap.table_versions.get(table)
        if v is None:
            return []
        return DeltaTable(str(self.table_path(table)), version=v).file_uris()

    def delta(self, table: str, snap: Snapshot) -> DeltaTable | None:
        v = snap.table_versions.get(table)
        return None if v is None else DeltaTable(str(self.table_path(table)), version=v)

    # -- writing (used by LakeRun and compact) ---- ------------------------------------------
    @contextmanager
    def write_lock(self):
        """Exclusive writer lock: one ingest or compaction at a time per lake."""
        self.init()
        with (self.meta_dir / "write.lock").open("w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LakeError(f"another graphlake process is writing to {self.root}; wait "
                                "for it to finish and retry") from None
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def roll_back_orphans(self, snap: Snapshot) -> list[str]:
        """Undo table commits that no snapshot pins (a crashed run); return the tables fixed."""
        fixed = []
        for name in (*TABLES, *MATERIALIZED):
            path = self.table_path(name)
            if not DeltaTable.is_deltatable(str(path)):
                continue
            pinned = snap.table_versions.get(name)
            if pinned is None:
                shutil.rmtree(path)
                fixed.append(name)
                continue
            dt = DeltaTable(str(path))
            if dt.version() > pinned:
                dt.restore(pinned)
                fixed.append(name)
        return fixed

    def commit_snapshot(self, *, operation: str, corpus: str | None, source: str | None,
                        table_versions: dict[str, int], rows_added: dict[str, int],
                        rows_removed: dict[str, int] | None = None) -> Snapshot:
        """Append the snapshot row that makes a run visible (the run's atomic commit)."""
        prev = self.snapshot()
        snap = Snapshot(prev.lake_version + 1, datetime.now(UTC), operation, corpus, source,
                        table_versions, rows_added, rows_removed or {})
        row = pa.Table.from_pylist([{
            "lake_version": snap.lake_version, "committed_at": snap.committed_at,
            "operation": operation, "corpus": corpus, "source": source,
            "schema_version": SCHEMA_VERSION, "graphlake_version": graphlake.__version__,
            "table_versions": json.dumps(table_versions, sort_keys=True),
            "rows_added": json.dumps(rows_added, sort_keys=True),
            "rows_removed": json.dumps(rows_removed or {}, sort_keys=True),
        }], schema=SNAPSHOT_SCHEMA)
        write_deltalake(str(self._snapshots_path), row, mode="append")
        return snap
