"""Lake housekeeping: what is in it (``lake info``) and fewer, larger files (``lake compact``)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from graphlake.lake import derived
from graphlake.lake.store import Lake, Snapshot
from graphlake.schema import TABLES
from graphlake.schema.views import MATERIALIZED


@dataclass
class TableInfo:
    table: str
    kind: str  # canonical, materialized (a derived view kept as a table) or materialized (stale)
    delta_version: int | None
    rows: int
    files: int
    bytes: int


def table_info(lake: Lake, snap: Snapshot) -> list[TableInfo]:
    """Rows, files and bytes of every table in ``snap`` (from Delta file statistics)."""
    out = []
    for name in (*TABLES, *MATERIALIZED):
        kind = "canonical"
        if name in MATERIALIZED:  # stale: behind its inputs or of another definition, so
            # queries compute the view instead until `lake refresh`
            stale = name in snap.table_versions and \
                derived.current_files(lake, name, snap) is None
            kind = "materialized (stale)" if stale else "materialized"
        dt = lake.delta(name, snap)
        if dt is None:
            out.append(TableInfo(name, kind, None, 0, 0, 0))
            continue
        adds = pa.table(dt.get_add_actions(flatten=True))
        rows = pc.sum(adds["num_records"]).as_py() or 0 if adds.num_rows else 0
        size = pc.sum(adds["size_bytes"]).as_py() or 0 if adds.num_rows else 0
        out.append(TableInfo(name, kind, snap.table_versions[name], rows, adds.num_rows, size))
    return out


def compact(lake: Lake, *, vacuum: bool = False) -> tuple[Snapshot | None, dict[str, dict]]:
    """Rewrite small files into larger ones; commit the result as a new lake version.

    Rows do not change, so every earlier lake version stays readable, unless ``vacuum`` is
    set: then files no longer referenced by the newest table versions are deleted and only the
    new lake version can be read.
    """
    from deltalake import DeltaTable

    report: dict[str, dict] = {}
    with lake.write_lock():
        base = lake.snapshot()
        lake.roll_back_orphans(base)
        versions = dict(base.table_versions)
        for name in base.table_versions:
            dt = DeltaTable(str(lake.table_path(name)))
            metrics = dt.optimize.compact()
            removed = metrics.get("numFilesRemoved", 0)
            if removed:
                versions[name] = DeltaTable(str(lake.table_path(name))).version()
            if vacuum:
                metrics["vacuumed"] = len(DeltaTable(str(lake.table_path(name))).vacuum(
                    retention_hours=0, dry_run=False, enforce_retention_duration=False))
            report[name] = {"files_removed": removed, "files_added":
                            metrics.get("numFilesAdded", 0), "vacuumed": metrics.get("vacuumed")}
        derived.carry_over(lake, base, versions)  # same rows: views stay current
        snap = None
        if versions != base.table_versions:
            snap = lake.commit_snapshot(operation="compact", corpus=None, source=None,
                                        table_versions=versions, rows_added={})
    return snap, report
