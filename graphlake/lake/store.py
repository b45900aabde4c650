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
import re
import shutil
import socket
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

import graphlake
from graphlake.errors import LakeError, LakeNotFoundError, LakeVersionError
from graphlake.schema import SCHEMA_VERSION, TABLES
from graphlake.schema.views import MATERIALIZED

SNAPSHOT_SCHEMA = pa.schema(
    [
        pa.field("lake_version", pa.int64(), nullable=False),
        pa.field("committed_at", pa.timestamp("us", tz="UTC")),
        pa.field("operation", pa.string()),
        pa.field("corpus", pa.string()),
        pa.field("source", pa.string()),
        pa.field("schema_version", pa.int32()),
        pa.field("graphlake_version", pa.string()),
        pa.field("table_versions", pa.string()),  # JSON {table: delta version}
        pa.field("rows_added", pa.string()),  # JSON {table: rows}
        pa.field("rows_removed", pa.string()),  # JSON {table: rows} a changed source replaced
    ]
)


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

#: Seconds a writer waits for another to finish before giving up (GRAPHLAKE_LOCK_TIMEOUT)
LOCK_TIMEOUT = 600.0
#: File in a run's staging folder naming the process that owns it
OWNER = "owner.json"
#: The name prefix of a staging folder its owner is removing (Lake.remove_staging)
REMOVING = ".removing-"


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lake:
    """A graphlake lake rooted at a directory (created on first write)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser()
        self._current = None  # the newest version's manifest, as last read (current())

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
                raise LakeError(
                    f"lake {self.root} has schema version {found}, this graphlake "
                    f"writes version {SCHEMA_VERSION}; ingest into a new --lake "
                    "directory or upgrade graphlake"
                )
            return
        marker.write_text(
            json.dumps(
                {
                    "schema_version": SCHEMA_VERSION,
                    "created_by": f"graphlake {graphlake.__version__}",
                }
            )
            + "\n"
        )

    # -- snapshots -------------------------------------------------------------------------
    def snapshots(self) -> list[Snapshot]:
        """Every lake version, oldest first (empty for a lake that holds nothing yet).
        Reading a lake that does not exist is an error: a mistyped ``--lake`` must not read
        as an empty lake (only writers create one)."""
        if not self.exists():
            raise LakeNotFoundError(
                f"no lake at {self.root}: nothing was ever ingested there. Check --lake (or "
                f"$GRAPHLAKE_LAKE), or create it with `graphlake ingest CORPUS PATH --lake "
                f"{self.root}`"
            )
        if not DeltaTable.is_deltatable(str(self._snapshots_path)):
            return []
        # read the files directly: DeltaTable.to_pyarrow_table() can abort the interpreter at
        # exit (deltalake 1.x, seen here as "terminate called without an active exception")
        # one ParquetFile per file, and times as integers: pq.read_table would import
        # pyarrow.dataset and to_pylist() on zoned timestamps pandas (~0.4 s per process)
        as_ints = pa.schema(
            [f.with_type(pa.int64()) if f.name == "committed_at" else f for f in SNAPSHOT_SCHEMA]
        )
        rows = []
        for f in DeltaTable(str(self._snapshots_path)).file_uris():
            t = pq.ParquetFile(f).read()
            if "rows_removed" not in t.column_names:  # written before graphlake replaced rows
                t = t.append_column("rows_removed", pa.nulls(t.num_rows, pa.string()))
            for r in t.cast(SNAPSHOT_SCHEMA).cast(as_ints).to_pylist():
                r["committed_at"] = datetime.fromtimestamp(r["committed_at"] / 1e6, UTC)
                rows.append(r)
        return [
            Snapshot(
                r["lake_version"],
                r["committed_at"],
                r["operation"],
                r["corpus"],
                r["source"],
                json.loads(r["table_versions"]),
                json.loads(r["rows_added"] or "{}"),
                json.loads(r.get("rows_removed") or "{}"),
            )
            for r in sorted(rows, key=lambda r: r["lake_version"])
        ]

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The snapshot at ``version`` (latest when None); the empty snapshot for a lake that
        exists but holds nothing yet."""
        if version is None and (current := self.current()) is not None:
            return current.snapshot
        snaps = self.snapshots()
        if version is None:
            return snaps[-1] if snaps else EMPTY
        vacuumed = self.vacuum_record()
        if (
            vacuumed
            and snaps
            and version < vacuumed["readable_from"]
            and version != snaps[-1].lake_version
        ):
            raise LakeVersionError(
                f"lake version {version} of {self.root} can no longer be read: `graphlake lake "
                f"compact --vacuum` deleted its files on {vacuumed['at'][:19]}Z (it keeps "
                f"{vacuumed['retain_hours']:g} hours); versions {vacuumed['readable_from']} to "
                f"{snaps[-1].lake_version} can be read (`graphlake lake history`)"
            )
        for s in snaps:
            if s.lake_version == version:
                return s
        if version == 0:
            return EMPTY
        latest = snaps[-1].lake_version if snaps else 0
        raise LakeVersionError(
            f"lake {self.root} has no version {version}; versions run from "
            f"0 to {latest} (see `graphlake lake info`)"
        )

    # -- vacuum record -------------------------------------------------------------------------
    @property
    def vacuum_path(self) -> Path:
        """The vacuum record (a reader that watches its mtime learns of a vacuum at once)."""
        return self.meta_dir / "vacuum.json"

    def vacuum_record(self) -> dict | None:
        """The last vacuum: when, with what retention, and the oldest lake version whose files
        it kept (``readable_from``); None when the lake was never vacuumed."""
        try:
            return json.loads(self.vacuum_path.read_text())
        except (FileNotFoundError, ValueError):
            return None

    def record_vacuum(self, at: datetime, retain_hours: float) -> int:
        """Write, before any file is deleted, which versions a vacuum keeps readable: those
        committed within the retention window, and always the latest. Written atomically, so
        a vacuum killed part-way leaves a record that errs on the safe side."""
        snaps = self.snapshots()
        cutoff = at.timestamp() - retain_hours * 3600
        kept = [
            s.lake_version for s in snaps if s.committed_at and s.committed_at.timestamp() >= cutoff
        ]
        readable_from = min(kept) if kept else (snaps[-1].lake_version if snaps else 0)
        previous = self.vacuum_record()
        if previous:  # what an earlier vacuum removed stays removed
            readable_from = max(readable_from, previous["readable_from"])
        tmp = self.vacuum_path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {"at": at.isoformat(), "retain_hours": retain_hours, "readable_from": readable_from}
            )
            + "\n"
        )
        os.replace(tmp, self.vacuum_path)
        return readable_from

    def current(self):
        """The newest version's manifest (:mod:`graphlake.lake.current`) when it is provably
        current, else None; kept for :meth:`files` and the kept views of that version."""
        if not self.exists():
            return None
        from graphlake.lake import current

        self._current = current.read(self)
        return self._current

    def current_of(self, snap: Snapshot):
        """The manifest last read, when it is ``snap``'s: the same version of the same tables
        (a writer reads snapshots of its own making between commits, with the version number
        of the one they follow)."""
        found = self._current
        if (
            found is not None
            and found.snapshot.lake_version == snap.lake_version
            and found.snapshot.table_versions == snap.table_versions
        ):
            return found
        return None

    def files(self, table: str, snap: Snapshot, *, use_manifest: bool = True) -> list[str]:
        """Parquet files that make up ``table`` in ``snap`` (empty when it has none)."""
        v = snap.table_versions.get(table)
        if v is None:
            return []
        # a table version's files never change: the manifest last read answers for any
        # snapshot that pins this table at the version it lists (a writer's snapshot after
        # deleting from one table still reads the others' from it)
        found = self._current
        if (
            use_manifest
            and found is not None
            and table in found.files
            and found.snapshot.table_versions.get(table) == v
        ):
            return list(found.files[table])
        return DeltaTable(str(self.table_path(table)), version=v).file_uris()

    def delta(self, table: str, snap: Snapshot) -> DeltaTable | None:
        v = snap.table_versions.get(table)
        return None if v is None else DeltaTable(str(self.table_path(table)), version=v)

    # -- writing (used by LakeRun and compact) ---- ------------------------------------------
    @contextmanager
    def write_lock(self, timeout: float | None = None, on_wait=None):
        """Exclusive writer lock: one ingest, refresh or compaction at a time per lake.

        A second writer waits for the first (up to ``timeout`` seconds, default
        ``GRAPHLAKE_LOCK_TIMEOUT`` or 600) rather than failing, so two ingests started together
        both land, one after the other. ``on_wait()`` is called once if it has to wait (by
        default: a line on stderr saying so).
        """
        self.init()
        timeout = (
            float(os.environ.get("GRAPHLAKE_LOCK_TIMEOUT", LOCK_TIMEOUT))
            if timeout is None
            else timeout
        )
        with (self.meta_dir / "write.lock").open("w") as fh:
            deadline, waited = time.monotonic() + timeout, False
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LakeError(
                            f"another graphlake process has been writing to {self.root} for "
                            f"over {timeout:g} s; wait for it to finish and retry, or set "
                            "GRAPHLAKE_LOCK_TIMEOUT to wait longer"
                        ) from None
                    if not waited:
                        (
                            on_wait
                            or (
                                lambda: print(
                                    f"another graphlake process is writing to {self.root}; waiting "
                                    f"for it (up to {timeout:g} s)",
                                    file=sys.stderr,
                                    flush=True,
                                )
                            )
                        )()
                    waited = True
                    time.sleep(0.1)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    # -- repair (under the write lock) ------------------------------------------------------
    def repair(self, snap: Snapshot, full: bool = False) -> dict[str, list[str]]:
        """Clean what killed writers left, without touching anything a reader can see: table
        commits no lake version pins (rolled back), staging folders of runs whose process is
        gone, and data files no table version references (a commit killed after its files
        were moved in). Every writer calls this under the lock; the file scan reads every
        table's log, so it runs only when a dead run was found, or with ``full``
        (`lake repair`)."""
        rolled, staging = self.roll_back_orphans(snap), self.clean_staging()
        files = self.remove_untracked_files() if full or rolled or staging else []
        spill = self.clean_spill()
        return {
            "rolled_back": rolled,
            "staging_removed": staging,
            "files_removed": files,
            "spill_removed": spill,
        }

    def clean_spill(self) -> list[str]:
        """Remove DuckDB spill folders (``_graphlake/tmp/duckdb-<pid>@<host>-*``, see
        ``graphlake.query.connection.sandbox``) whose reader process is gone from this host: a
        killed server's temporary files, up to GRAPHLAKE_TEMP_LIMIT each."""
        removed = []
        folder = self.meta_dir / "tmp"
        if not folder.is_dir():
            return removed
        host = socket.gethostname()
        for spill in folder.iterdir():
            m = re.match(r"duckdb-(\d+)@(.+)-[^-]+$", spill.name)
            if m and m.group(2) == host and not _alive(int(m.group(1))):
                shutil.rmtree(spill, ignore_errors=True)
                removed.append(spill.name)
        return removed

    @property
    def staging_dir(self) -> Path:
        return self.meta_dir / "staging"

    def new_staging(self, label: str) -> Path:
        """A fresh staging folder that says who owns it from the moment it exists: made under
        a name carrying this process id, given its owner file, then renamed into place, so a
        kill at any instant leaves nothing a later writer cannot attribute and clean up."""
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        final = self.staging_dir / f"{label}-{uuid.uuid4().hex}"
        making = self.staging_dir / f".{os.getpid()}-{final.name}"
        making.mkdir()
        (making / OWNER).write_text(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "started": datetime.now(UTC).isoformat(),
                }
            )
        )
        making.rename(final)
        return final

    def remove_staging(self, staging: Path) -> None:
        """Remove a staging folder this process owns. It is renamed first, to a name that
        says it is being removed: the removal deletes the owner file at some point, and a
        kill after that would otherwise leave a folder with no owner, which a later writer
        keeps for a day (it cannot tell it from one being made elsewhere)."""
        doomed = staging.with_name(f"{REMOVING}{staging.name}")
        try:
            staging.rename(doomed)
        except FileNotFoundError:
            return
        shutil.rmtree(doomed, ignore_errors=True)

    def clean_staging(self) -> list[str]:
        """Remove staging folders whose run is dead: its owner process is gone from this host
        (a folder still being made names its process; one being removed is dead; any other
        folder without an owner is dead once over a day old)."""
        removed = []
        if not self.staging_dir.is_dir():
            return removed
        host = socket.gethostname()
        for run in self.staging_dir.iterdir():
            try:
                owner = json.loads((run / OWNER).read_text())
            except (FileNotFoundError, NotADirectoryError, ValueError):
                owner = None
            making = re.match(r"\.(\d+)-", run.name)
            if run.name.startswith(REMOVING):
                dead = True  # its owner was removing it
            elif owner is None and making:
                dead = not _alive(int(making.group(1)))
            elif owner is None:
                dead = time.time() - run.stat().st_mtime > 86400
            elif owner.get("host") != host:
                dead = False  # another machine's run: it says when it is done
            else:
                dead = not _alive(int(owner.get("pid", 0)))
            if dead:
                shutil.rmtree(run, ignore_errors=True)
                removed.append(run.name)
        return removed

    def remove_untracked_files(self) -> list[str]:
        """Delete data files in a table's folder that no lake version reads: left by a commit
        killed between moving its files in and writing the log entry (no log names them), or
        by one killed after its table commit but before the lake version that would pin it
        (a compaction's new files: the roll-back restores the pinned files, and the orphan's
        stay behind). Only safe under the write lock (no commit is in flight)."""
        removed = []
        for f in self.unread_files():
            f.unlink()
            removed.append(f"{f.parent.name}/{f.name}")
        return removed

    def unread_files(self) -> list[Path]:
        """Data files in the tables' folders that neither a lake version nor a table's
        latest version reads (what :meth:`remove_untracked_files` deletes)."""
        pinned: dict[str, set[int]] = {}
        for snap in self.snapshots():
            for name, version in snap.table_versions.items():
                if version is not None:
                    pinned.setdefault(name, set()).add(version)
        unread = []
        for name in (*TABLES, *MATERIALIZED):
            path = self.table_path(name)
            if not DeltaTable.is_deltatable(str(path)):
                continue
            keep = {Path(u).name for u in DeltaTable(str(path)).file_uris()}
            keep |= _files_of_versions(path / "_delta_log", pinned.get(name, set()))
            unread += sorted(f for f in path.glob("*.parquet") if f.name not in keep)
        return unread

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
            # a later commit is the log's next file (commits are numbered without gaps):
            # one stat says there is none, where opening the table reads its log
            if not (path / "_delta_log" / f"{pinned + 1:020d}.json").exists():
                continue
            dt = DeltaTable(str(path))
            if dt.version() > pinned:
                dt.restore(pinned)
                fixed.append(name)
        return fixed

    def commit_snapshot(
        self,
        *,
        operation: str,
        corpus: str | None,
        source: str | None,
        table_versions: dict[str, int],
        rows_added: dict[str, int],
        rows_removed: dict[str, int] | None = None,
        files: dict[str, list[str]] | None = None,
    ) -> Snapshot:
        """Append the snapshot row that makes a run visible (the run's atomic commit).
        ``files``: tables whose files at their pinned version the caller already holds (a
        writer's own commits), so that the manifest need not read their logs again."""
        prev = self.snapshot()
        snap = Snapshot(
            prev.lake_version + 1,
            datetime.now(UTC),
            operation,
            corpus,
            source,
            table_versions,
            rows_added,
            rows_removed or {},
        )
        row = pa.Table.from_pylist(
            [
                {
                    "lake_version": snap.lake_version,
                    "committed_at": snap.committed_at,
                    "operation": operation,
                    "corpus": corpus,
                    "source": source,
                    "schema_version": SCHEMA_VERSION,
                    "graphlake_version": graphlake.__version__,
                    "table_versions": json.dumps(table_versions, sort_keys=True),
                    "rows_added": json.dumps(rows_added, sort_keys=True),
                    "rows_removed": json.dumps(rows_removed or {}, sort_keys=True),
                }
            ],
            schema=SNAPSHOT_SCHEMA,
        )
        write_deltalake(str(self._snapshots_path), row, mode="append")
        from graphlake.lake import current

        # after the log entry: a reader between the two goes the long way
        current.write(self, snap, files)
        return snap


def _files_of_versions(log: Path, versions: set[int]) -> set[str]:
    """The data files a Delta table holds at any of ``versions``, by replaying its JSON log
    from version 0. When the log cannot be replayed from the start (its early entries were
    checkpointed away), every file any entry names, so that nothing readable is deleted."""
    entries = sorted(log.glob("*.json"), key=lambda p: p.stem)
    named: set[str] = set()
    active: set[str] = set()
    held: set[str] = set()
    complete = bool(entries) and int(entries[0].stem) == 0
    for entry in entries:
        for line in entry.read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "add" in action:
                name = Path(action["add"]["path"]).name
                active.add(name)
                named.add(name)
            if "remove" in action:
                name = Path(action["remove"]["path"]).name
                active.discard(name)
                named.add(name)
        if int(entry.stem) in versions:
            held |= active
    return held if complete else named
