"""Lake housekeeping: what is in it (``lake info``) and fewer, larger files (``lake compact``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

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
            stale = name in snap.table_versions and derived.current_files(lake, name, snap) is None
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


#: Hours of lake versions a vacuum keeps readable by default (Delta's own default is 7 days)
RETAIN_HOURS = 168.0


def compact(
    lake: Lake, *, vacuum: bool = False, retain_hours: float = RETAIN_HOURS
) -> tuple[Snapshot | None, dict[str, dict]]:
    """Rewrite small files into larger ones; commit the result as a new lake version.

    Rows do not change, so every earlier lake version stays readable. With ``vacuum``, and
    only after the new version is committed, files that no lake version of the last
    ``retain_hours`` uses are deleted (Delta's vacuum with that retention): the current
    version, and any version a reader may still be reading within the window, never lose a
    file, so a vacuum killed at any point leaves a lake that reads as before. Which versions
    stay readable is recorded first (:meth:`Lake.record_vacuum`); reading an older one is a
    clear error.
    """
    from deltalake import DeltaTable

    report: dict[str, dict] = {}
    lake.snapshots()  # a lake that does not exist is an error, not a new empty lake
    with lake.write_lock():
        base = lake.snapshot()
        lake.repair(base)
        versions = dict(base.table_versions)
        for name in base.table_versions:
            dt = DeltaTable(str(lake.table_path(name)))
            metrics = dt.optimize.compact()
            removed = metrics.get("numFilesRemoved", 0)
            if removed:
                versions[name] = DeltaTable(str(lake.table_path(name))).version()
            report[name] = {
                "files_removed": removed,
                "files_added": metrics.get("numFilesAdded", 0),
                "vacuumed": None,
            }
        derived.carry_over(lake, base, versions)  # same rows: views stay current
        snap = None
        if versions != base.table_versions:
            snap = lake.commit_snapshot(
                operation="compact",
                corpus=None,
                source=None,
                table_versions=versions,
                rows_added={},
            )
        if vacuum:  # only now: the new version is committed and pins the new files
            snap = _vacuum(lake, lake.snapshot(), retain_hours, report) or snap
    return snap, report


def _vacuum(lake: Lake, base: Snapshot, retain_hours: float, report: dict) -> Snapshot | None:
    """Delete the files no lake version of the retention window uses; Delta records each
    vacuum as commits of their own, which a lake version then pins (same rows), so the next
    writer does not take them for a crashed run's."""
    from deltalake import DeltaTable

    lake.record_vacuum(datetime.now(UTC), retain_hours)
    versions = dict(base.table_versions)
    for name in base.table_versions:
        deleted = DeltaTable(str(lake.table_path(name))).vacuum(
            retention_hours=math.ceil(retain_hours), dry_run=False, enforce_retention_duration=False
        )
        report.setdefault(name, {"files_removed": 0, "files_added": 0})["vacuumed"] = len(deleted)
        versions[name] = DeltaTable(str(lake.table_path(name))).version()
    derived.carry_over(lake, base, versions)
    if versions == base.table_versions:
        return None
    return lake.commit_snapshot(
        operation="vacuum", corpus=None, source=None, table_versions=versions, rows_added={}
    )
