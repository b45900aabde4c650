"""The lake's only writer: stage an ingest run's rows, then commit them as one lake version.

An ingest run has one :class:`LakeRun`. Ingestors write into :class:`StagingEmitter` objects
(one per process when parsing runs in parallel): rows are buffered per table as the readers'
dicts and every ``flush_rows`` rows become one Parquet file in the run's staging folder, so
memory stays bounded however large the input. Every staged row carries ``_unit``, the index
of the source unit (file or session folder) it came from.

At commit the run

1. finds sessions that two units both claim (same ``session_id``): the first unit wins, the
   others become rejects carrying their whole file, and their rows are dropped;
2. finds what changed: a session already in the lake whose rows differ from the staged ones
   (a row changed or gone from its source) is *replaced*, its rows deleted from every table;
   so is a session-less row (a scenario, a run) whose staged row differs. With ``prune``,
   sessions read earlier from files under the ingested path that this run no longer finds
   are deleted too;
3. streams each table's staged files through DuckDB, dropping rows whose primary key is
   already in the lake (deterministic ids make re-ingesting an unchanged source a no-op) or
   repeats within the run;
4. appends the survivors to the Delta tables (each table's checks and commit in its own
   thread, runs after sessions) and pins the new versions in one snapshot row.
   Deletes and appends of a run become visible together, with that one row; older lake
   versions keep reading the rows as they were (time travel).
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import AddAction

from graphlake.lake.store import Lake, Snapshot
from graphlake.schema import TABLES
from graphlake.schema.duckdb_views import string_list, string_literal
from graphlake.schema.emit import EmitterBase, IngestStats, head_bytes, source_run

UNIT = "_unit"
UNITS_DIR = "_units"
#: tables whose session-less rows belong to a scenario (``attrs.scenario_id``: its agents
#: and relationships, ingest/scenario_graph.py): they are replaced and pruned with it
SCENARIO_ROWS = ("participants", "edges")
#: Tables that no ingestor writes (the frames index does): re-ingesting never replaces them
NOT_FROM_SOURCES = frozenset({"frames"})
#: Columns that say where a row was read from, not what it says: a corpus ingested again from
#: another folder is not a changed source (and a default run's id hashes the path)
WHERE_FROM = frozenset({"source_file", "uri", "source", "run_id"})
#: session tables with such columns: a replaced session's rows there are always replaced
SAYS_WHERE_FROM = frozenset(
    t for t, spec in TABLES.items() if WHERE_FROM & set(spec.columns) and "session_id" in spec.key
)
#: What makes two rejects the same (their ids hash the file's path)
SAME_REJECT = ("corpus", "session_id", "target_table", "record_kind", "record_ref", "reason")
_STAGED = {
    name: pa.schema([*spec.schema, pa.field(UNIT, pa.int32())]) for name, spec in TABLES.items()
}
#: A table's row as one Arrow struct: a whole buffer of the readers' dicts converts in one
#: call, in C++ (keys a dict lacks are nulls; keys the schema lacks are not read)
_ROW_TYPES = {name: pa.struct(list(spec.schema)) for name, spec in TABLES.items()}


@dataclass
class StagingSummary:
    """What a staging emitter reports back (picklable: it crosses process boundaries)."""

    accepted: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    sessions: list[tuple[str, int, str]] = field(default_factory=list)  # (id, unit, file)
    failed_units: list[int] = field(default_factory=list)  # their rows are dropped at commit
    #: (session_id, unit) of sessions whose own row was rejected: dropped at commit, rejects kept
    lost_sessions: list[tuple[str, int]] = field(default_factory=list)
    #: whether the emitter staged the run's default ``runs`` row (every parallel emitter
    #: stages its own copy; the commit keeps one, and counts one)
    default_run_row: bool = False


class StagingEmitter(EmitterBase):
    """Buffers rows per table and spills them as Parquet parts into a run's staging folder."""

    def __init__(
        self,
        corpus: str,
        staging: Path,
        prefix: str,
        flush_rows: int = 50_000,
        default_run: dict | None = None,
    ):
        super().__init__(corpus, default_run)
        self.staging = Path(staging)
        self.prefix = prefix
        self.flush_rows = flush_rows
        self.sessions: list[tuple[str, int, str]] = []
        # rows are kept as the dicts the reader made (it hands each over and never touches it
        # again) and turned into columns at a flush, one list per column: the cheapest way
        # from Python values to Arrow arrays
        self._buffers: dict[str, list[dict]] = {t: [] for t in TABLES}
        self._units: dict[str, list[int]] = {t: [] for t in TABLES}
        self._parts: Counter[str] = Counter()

    def _store(self, table: str, row: dict) -> None:
        if table == "sessions":
            self.sessions.append((row["session_id"], self.unit, row.get("source_file") or ""))
        buf = self._buffers[table]
        buf.append(row)
        self._units[table].append(self.unit)
        if len(buf) >= self.flush_rows:
            self._flush(table)

    def rows(self, table: str, rows: pa.Table) -> None:
        """Stage an Arrow batch as its own Parquet part, without touching rows in Python."""
        rows = self.within_limits(table, rows)
        if rows.num_rows == 0:
            return
        self.accepted[table] += rows.num_rows
        if table == "sessions" and self.default_run and rows.column("run_id").null_count:
            i = rows.schema.get_field_index("run_id")
            rows = rows.set_column(
                i, "run_id", pc.fill_null(rows.column(i).cast(pa.string()), self._use_default_run())
            )
        if table == "sessions":
            self.sessions.extend(
                zip(
                    rows.column("session_id").to_pylist(),
                    rows.column(UNIT).to_pylist(),
                    rows.column("source_file").to_pylist(),
                    strict=True,
                )
            )
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
        rows, units = self._buffers[table], self._units[table]
        if not rows:
            return
        self._buffers[table], self._units[table] = [], []
        schema = _STAGED[table]
        try:
            arrays = pa.RecordBatch.from_struct_array(
                pa.array(rows, type=_ROW_TYPES[table])
            ).columns
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError):
            names = schema.names[:-1]
            arrays = self._conform(
                table,
                [(*map(r.get, names), u) for r, u in zip(rows, units, strict=True)],
            )
            if arrays is None:
                return
        else:
            arrays = [*arrays, pa.array(units, type=pa.int32())]
        self._write(table, pa.Table.from_arrays(arrays, schema=schema))

    def _conform(self, table: str, rows: list[tuple]) -> list[pa.Array] | None:
        """A batch Arrow refused: the rows whose values do not fit their column's type (a
        source's ``true`` where a count belongs, a number past int64) become rejects naming
        the column, the type and the value; the others are converted. Rare, so row by row."""
        schema = _STAGED[table]
        kept, was = [], self.unit
        for row in rows:
            bad = None
            for value, f in zip(row, schema, strict=True):
                if value is None:
                    continue
                try:
                    pa.array([value], type=f.type)
                except (
                    pa.ArrowInvalid,
                    pa.ArrowTypeError,
                    OverflowError,
                    ValueError,
                    TypeError,
                ) as exc:
                    bad = (f, value, exc)
                    break
            if bad is None:
                kept.append(row)
                continue
            f, value, exc = bad
            record = dict(zip(schema.names, row, strict=True))
            self.unit = record.pop(UNIT)
            self.accepted[table] -= 1
            if table == "sessions":
                self.sessions.remove(
                    (record["session_id"], self.unit, record.get("source_file") or "")
                )
            self.reject(
                source_file=str(record.get("source_file") or record.get("uri") or ""),
                target_table=table,
                record_kind="value",
                record_ref=f"{table}.{f.name}",
                raw=record,
                session_id=record.get("session_id"),
                reason=f"column {f.name} holds {f.type}, and {value!r} is not one "
                f"({type(exc).__name__}: {str(exc)[:120]}); the rest of the record's "
                "file landed. Fix the value at the source and re-ingest",
            )
        self.unit = was
        if table == "rejects":  # a reject made here is buffered again; flush it with these
            names = schema.names[:-1]
            kept.extend(
                (*map(r.get, names), u)
                for r, u in zip(self._buffers["rejects"], self._units["rejects"], strict=True)
            )
            self._buffers["rejects"], self._units["rejects"] = [], []
        if not kept:
            return None
        return [
            pa.array(list(col), type=f.type)
            for col, f in zip(zip(*kept, strict=True), schema, strict=True)
        ]

    def close(self) -> StagingSummary:
        """Flush every buffer; return the counts and sessions seen. Rejects go last: flushing
        another table can add rejects (values that do not fit their column)."""
        for table in (*(t for t in TABLES if t != "rejects"), "rejects"):
            self._flush(table)
        return StagingSummary(
            Counter(self.accepted),
            Counter(self.rejected),
            self.sessions,
            list(self.failed_units),
            list(self.lost_sessions),
            self._default_run_emitted,
        )


def _losers_table(losers: list[tuple[str | None, int]], lost: int = 0) -> pa.Table:
    """The (session_id, unit) pairs whose staged rows a commit leaves out; the last ``lost``
    are sessions whose own row was rejected, whose rejects stay (they say why)."""
    return pa.table(
        {
            "session_id": pa.array([s for s, _ in losers], pa.string()),
            UNIT: pa.array([u for _, u in losers], pa.int32()),
            "keep_rejects": pa.array([k >= len(losers) - lost for k in range(len(losers))]),
        }
    )


class LakeRun:
    """One ingest run: a staging folder, its emitters, and the commit that publishes them."""

    def __init__(
        self,
        lake: Lake,
        corpus: str,
        source: str,
        memory_limit: str = "1GB",
        replace: bool = False,
        prune: bool = False,
    ):
        """``replace``: the run re-reads whole sources (an ingest), so a session whose staged
        rows differ from the lake's is replaced; without it (an append-only writer such as
        the frames index, which adds one recording's frames at a time) existing rows are
        only ever kept. ``prune`` (with ``replace``): also delete what was read from under
        ``source`` and is gone now."""
        self.lake = lake
        self.corpus = corpus
        self.source = source
        self.replace = replace
        self.prune = prune and replace
        #: the files this run read (set by the pipeline): with ``replace``, what they held
        #: before and no longer do is deleted, as a fresh ingest of them would not have it
        self.read_files: set[str] | None = None
        #: every file of the source this run found (set by the pipeline), for ``prune``
        self.found_files: set[str] | None = None
        self.memory_limit = memory_limit
        #: Delta tables this run opened, each at the version its last operation left: a
        #: table's log is read once a run, not for every check and commit (3-5 ms each)
        self._tables: dict[str, DeltaTable] = {}
        self._losers: pa.Table | None = None  # rows a commit leaves out (see commit)
        lake.init()
        # owned by this process: a later writer removes it only once this process is gone
        self.staging = lake.new_staging("ingest")
        self.default_run = source_run(corpus, source)

    def emitter(self, prefix: str = "p0", flush_rows: int = 50_000) -> StagingEmitter:
        return StagingEmitter(self.corpus, self.staging, prefix, flush_rows, self.default_run)

    def abort(self) -> None:
        """Forget everything staged (nothing was committed), or what a commit left there."""
        self.lake.remove_staging(self.staging)

    # -- the run's view of the Delta tables -----------------------------------------------
    def _files(self, table: str, snap: Snapshot) -> list[str]:
        """Parquet files of ``table`` in ``snap``, from the table this run holds open when it
        is at that version (the run itself made it), else from the lake's manifest or log."""
        dt = self._tables.get(table)
        v = snap.table_versions.get(table)
        if dt is not None and v is not None and dt.version() == v:
            return dt.file_uris()
        return self.lake.files(table, snap)

    def _delta(self, table: str, version: int | None = None) -> DeltaTable:
        """``table`` at ``version`` (None: the latest, which under the write lock is the
        version this run's own last commit left), opened once a run."""
        dt = self._tables.get(table)
        if dt is None or (version is not None and dt.version() != version):
            path = str(self.lake.table_path(table))
            dt = DeltaTable(path) if version is None else DeltaTable(path, version=version)
            self._tables[table] = dt
        return dt

    def _committed(self, table: str) -> int:
        """The version of ``table`` after this run's commit to it."""
        dt = self._tables.get(table)
        if dt is None:
            return self._delta(table).version()
        dt.update_incremental()
        return dt.version()

    # -- commit ----------------------------------------------------------------------------
    def commit(self, summaries: list[StagingSummary]) -> tuple[IngestStats, Snapshot | None]:
        """Publish the staged rows as one new lake version; None when nothing was new."""
        stats = IngestStats()
        sessions, failed = [], set()
        for s in summaries:
            stats.accepted.update(s.accepted)
            stats.rejected.update(s.rejected)
            failed.update(s.failed_units)
        copies = sum(s.default_run_row for s in summaries)
        if copies > 1:  # one run, staged by each parallel emitter
            stats.accepted["runs"] -= copies - 1
        for s in summaries:  # a failed unit's sessions are dropped with it: no duplicates
            sessions.extend(x for x in s.sessions if x[1] not in failed)
        losers = self._reject_duplicate_sessions(sessions, stats)
        # rows to leave out: a duplicate session's (session_id, unit), a failed unit's all,
        # then sessions whose own row was rejected (their rejects stay)
        lost = [x for s in summaries for x in s.lost_sessions if x[1] not in failed]
        losers = losers + [(None, u) for u in sorted(failed)] + lost
        try:
            with self.lake.write_lock():
                base = self.lake.snapshot()
                self.lake.repair(base)
                versions = dict(base.table_versions)
                con = duckdb.connect(
                    config={
                        "memory_limit": self.memory_limit,
                        "temp_directory": str(self.staging / "_tmp"),
                    }
                )
                try:
                    self._losers = _losers_table(losers, len(lost)) if losers else None
                    if self._losers is not None:
                        con.register("_losers", self._losers)
                    sources = {
                        t: self._source(con, t, bool(losers), stats)
                        for t in TABLES
                        if (self.staging / t).is_dir()
                    }
                    replaced, keys_gone, stale_in = (
                        self._changes(con, base, sources) if self.replace else (set(), {}, {})
                    )
                    stats.replaced_sessions = len(replaced)
                    pruned = (
                        self._pruned(con, base, sources, keys_gone) - replaced
                        if self.prune
                        else set()
                    )
                    if self.replace and self.read_files:  # gone from a file read again
                        pruned |= (
                            self._pruned(con, base, sources, keys_gone, files=self.read_files)
                            - replaced
                        )
                    stats.pruned_sessions = len(pruned)
                    # frames come from the frames index, not from sources: a replaced
                    # session keeps them; a pruned one (its source is gone) does not
                    # a replaced session's rows go from the tables where they changed
                    # only: rows it still holds as they were stay (no delete and no append:
                    # a one-letter edit commits the tables it touched, not every table);
                    # rows that say where they were read from (the session's own, its
                    # documents, media) are replaced with any change, as they may name
                    # another file now without another value
                    gone_of = {
                        t: pruned
                        if t in NOT_FROM_SOURCES
                        else (replaced if t in SAYS_WHERE_FROM else stale_in.get(t, set())) | pruned
                        for t in TABLES
                    }
                    touched = [t for t in TABLES if gone_of[t] or keys_gone.get(t)]
                    for table, (removed, version) in zip(
                        touched,
                        self._each_table(
                            con,
                            lambda _cur, t: self._delete(t, base, gone_of[t], keys_gone.get(t, [])),
                            touched,
                        ),
                        strict=True,
                    ):
                        if removed:
                            stats.removed[table] = removed
                            versions[table] = version
                    after = replace(base, table_versions=dict(versions))
                    if "rejects" in sources:
                        sources["rejects"] = self._new_rejects(con, sources["rejects"], after)
                    # each table's checks and Delta commit are independent and release the
                    # GIL (DuckDB, delta-rs): run side by side; runs after sessions, which
                    # decide whether the default run is used
                    first = [t for t in sources if t != "runs"]
                    for table, (added, version) in zip(
                        first,
                        self._each_table(
                            con, lambda cur, t: self._append(cur, t, after, sources[t]), first
                        ),
                        strict=True,
                    ):
                        if added:
                            stats.added[table] = added
                            versions[table] = version
                    if "runs" in sources:
                        now = replace(base, table_versions=dict(versions))
                        src = self._used_runs(sources["runs"], now)
                        added, version = self._append(con, "runs", after, src)
                        if added:
                            stats.added["runs"] = added
                            versions["runs"] = version
                finally:
                    con.close()
                snap = None
                if stats.added or stats.removed:
                    snap = self.lake.commit_snapshot(
                        operation="ingest",
                        corpus=self.corpus,
                        source=self.source,
                        table_versions=versions,
                        rows_added=dict(stats.added),
                        rows_removed=dict(stats.removed),
                        files={
                            t: dt.file_uris()
                            for t, dt in self._tables.items()
                            if dt.version() == versions.get(t)
                        },
                    )
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
            raw = head_bytes(path) if path.is_file() else source
            em.reject(
                source_file=source,
                target_table="sessions",
                record_kind="session",
                record_ref="$.session_id",
                raw=raw,
                session_id=sid,
                reason=f"session_id {sid!r} was already read from {first[sid][1]} in "
                "this run; give each session its own id (this file was not ingested)",
            )
        stats.rejected.update(em.close().rejected)
        return losers

    def _source(
        self, con, table: str, has_losers: bool, stats: IngestStats
    ) -> tuple[str, list, bool]:
        """SQL reading one table's staged rows (without the rows of rejected duplicate
        sessions, and of a key staged more than once only the first), the staged files, and
        whether rows were dropped (the files then cannot be adopted as they are).

        A key staged twice (a scenario that a task file and a config both name, the default
        run each parallel emitter stages) keeps the row of the first unit, in the order of the
        source's units, and within a unit the first row it staged: the rule for sessions,
        and the same row whichever rows a re-ingest reads again. (``DISTINCT ON`` alone keeps
        an arbitrary one: an edit of the file that lost could make it win, and the lake then
        differed from a fresh ingest of the same folder.)"""
        folder = self.staging / table
        files = sorted(str(p) for p in folder.glob("*.parquet"))
        source = f"read_parquet({string_list(files)})"
        keys = ", ".join(TABLES[table].key)
        # one 64-bit hash of the keys groups twice as fast as the key texts; only equal
        # hashes (repeated keys, or rarely two keys that collide) need the exact check
        repeats = bool(
            con.sql(
                f"SELECT 1 FROM {source} GROUP BY hash({keys}) HAVING count(*) > 1 LIMIT 1"
            ).fetchall()
            and con.sql(
                f"SELECT 1 FROM {source} GROUP BY {keys} HAVING count(*) > 1 LIMIT 1"
            ).fetchall()
        )
        if not (has_losers or repeats):
            return source, files, False
        # each staged row with its unit (the file beside it) and its place: part, row
        placed = " UNION ALL ".join(
            f"SELECT _d.* EXCLUDE (file_row_number), _u.{UNIT}, {i} AS _part, "
            f"_d.file_row_number AS _row FROM read_parquet({string_list([f])}, "
            f"file_row_number=true) _d POSITIONAL JOIN "
            f"read_parquet({string_list([str(folder / UNITS_DIR / Path(f).name)])}) _u"
            for i, f in enumerate(files)
        )
        rows = f"({placed})"
        if has_losers:
            # a rejected session's rejects say why it is missing: they stay
            keep = " AND NOT l.keep_rejects" if table == "rejects" else ""
            # a loser with no session_id is a failed unit: all its rows go
            match = (
                f"(SELECT 1 FROM _losers l WHERE l.{UNIT} = w.{UNIT}{keep} AND "
                "(l.session_id IS NULL OR l.session_id = w.session_id))"
            )
            dropped = con.sql(f"SELECT count(*) FROM {rows} w WHERE EXISTS {match}").fetchall()
            if table != "rejects":  # (rejects are counted apart, as rejected)
                stats.accepted[table] -= dropped[0][0]
            rows = f"(SELECT * FROM {rows} w WHERE NOT EXISTS {match})"
        if repeats:
            first = f"ORDER BY {keys}, {UNIT}, _part, _row"
            rows = f"(SELECT DISTINCT ON ({keys}) * FROM {rows} {first})"
        return f"(SELECT * EXCLUDE ({UNIT}, _part, _row) FROM {rows})", files, True

    def _lake_rows(
        self,
        table: str,
        snap: Snapshot,
        source: str,
        scenarios: str | None = None,
        sessions: str | None = None,
    ) -> str | None:
        """SQL of this corpus's lake rows that the staged rows could collide with: rows of
        the sessions they name, and session-less rows (scenarios, runs) with their keys;
        with ``scenarios`` (the staged scenarios), every session-less row of a scenario read
        again (its agents, its relationships: ``attrs.scenario_id``), so that one the
        scenario no longer has is found gone."""
        existing = self._files(table, snap)
        if not existing:
            return None
        spec = TABLES[table]
        own = [k for k in spec.key if k not in ("corpus", "session_id")]
        rows = (
            f"(SELECT {', '.join(spec.columns)} FROM read_parquet({string_list(existing)}, "
            f"union_by_name=true) WHERE corpus = {string_literal(self.corpus)})"
        )
        read = (
            f" UNION SELECT session_id FROM {sessions}"
            if sessions is not None and table != "sessions"
            else ""
        )
        sql = (
            f"SELECT * FROM {rows} WHERE session_id <> '' AND session_id IN "
            f"(SELECT DISTINCT session_id FROM {source}{read})"
        )
        if own:
            sql += (
                f" UNION ALL SELECT l.* FROM {rows} l SEMI JOIN (SELECT {', '.join(own)} "
                f"FROM {source} WHERE session_id = '') s USING ({', '.join(own)}) "
                "WHERE l.session_id = ''"
            )
        if scenarios is not None and table in SCENARIO_ROWS:
            sql += (
                f" UNION SELECT * FROM {rows} WHERE session_id = '' AND attrs->>'scenario_id' "
                f"IN (SELECT scenario_id FROM {scenarios})"
            )
        return f"({sql})"

    def _changes(
        self, con, base: Snapshot, sources: dict
    ) -> tuple[set[str], dict[str, list[tuple]], dict[str, set[str]]]:
        """What re-ingesting changed: the sessions with a lake row that the run no longer
        has as it was (edited or gone), and per table the session-less keys likewise. Rows
        are compared without the columns that only say where they were read from."""

        scenarios = sources["scenarios"][0] if "scenarios" in sources else None
        read_now = sources["sessions"][0] if "sessions" in sources else None

        def stale(cur, table: str) -> list[tuple]:
            source = sources[table][0]
            lake_rows = self._lake_rows(table, base, source, scenarios, read_now)
            if lake_rows is None:
                return []
            spec = TABLES[table]
            cols = ", ".join(c for c in spec.columns if c not in WHERE_FROM or c in spec.key)
            own = [k for k in spec.key if k not in ("corpus", "session_id")]
            # one pass: the session of each stale row, or the keys of a session-less one
            what = ", ".join(
                ["session_id"] + [f"CASE WHEN session_id = '' THEN {k} END" for k in own]
            )
            return cur.sql(
                f"SELECT DISTINCT {what} FROM (SELECT {cols} FROM {lake_rows} "
                f"EXCEPT SELECT {cols} FROM {source})"
            ).fetchall()

        # rejects: ids hash the file path; a fixed or newly broken record shows in the table
        # its row belongs to anyway
        tables = [t for t in sources if t != "rejects"]
        sessions: set[str] = set()
        by_table: dict[str, set[str]] = {}
        keys: dict[str, list[tuple]] = {}
        for table, rows in zip(tables, self._each_table(con, stale, tables), strict=True):
            mine = {r[0] for r in rows if r[0]}  # (not '' nor NULL)
            sessions |= mine
            if mine:
                by_table[table] = mine
            gone = [r[1:] for r in rows if r[0] == ""]
            if gone and len(gone[0]):
                keys[table] = gone
        # a table the run staged nothing for can still hold rows of a session it read (all of
        # a session's annotations taken out of its file)
        for table, rows in self._unstaged_rows(con, base, sources, read_now).items():
            sessions |= rows
            by_table.setdefault(table, set()).update(rows)
        keys.update(self._stale_rejects(con, base, sources))
        return sessions, keys, by_table

    def _unstaged_rows(self, con, base: Snapshot, sources: dict, read: str | None) -> dict:
        """Per table the run staged no rows for: the sessions read now (``read``: the staged
        sessions) that it holds rows of. (Tables with staged rows find theirs in
        :meth:`_changes`, which reads the sessions their rows name and those read now.)"""
        if read is None:
            return {}
        out: dict[str, set[str]] = {}
        for table in TABLES:
            if table in sources or table in NOT_FROM_SOURCES or table == "rejects":
                continue
            existing = self._files(table, base)
            if not existing or "session_id" not in TABLES[table].columns:
                continue
            rows = con.sql(
                f"SELECT DISTINCT session_id FROM read_parquet({string_list(existing)}, "
                f"union_by_name=true) WHERE corpus = {string_literal(self.corpus)} AND "
                f"session_id <> '' AND session_id IN (SELECT session_id FROM {read})"
            ).fetchall()
            if rows:
                out[table] = {r[0] for r in rows}
        return out

    def _used_runs(self, staged: tuple[str, list, bool], snap: Snapshot) -> tuple[str, list, bool]:
        """The runs the source names, and the default run only when some session of the
        lake (as this run leaves it) belongs to it: a corpus re-read from another folder
        stages a new default run that no session takes (its sessions are unchanged, so they
        keep their run)."""
        sessions = self._files("sessions", snap)
        if not sessions:
            return staged
        source, files, _losers = staged
        used = (
            f"(SELECT * FROM {source} WHERE run_id <> "
            f"{string_literal(self.default_run['run_id'])} OR run_id IN (SELECT run_id FROM "
            f"read_parquet({string_list(sessions)}, union_by_name=true) WHERE corpus = "
            f"{string_literal(self.corpus)} AND run_id IS NOT NULL))"
        )
        return used, files, True  # filtered: its files cannot be adopted as they are

    def _stale_rejects(self, con, base: Snapshot, sources: dict) -> dict[str, list[tuple]]:
        """Rejects of the sessions this run read that it did not reject again: the record
        was fixed (it lands now) or is gone, so the reject would only mislead. Rejects are
        compared by what they say (``SAME_REJECT``), not by their id, which hashes the
        file's path."""
        existing = self._files("rejects", base)
        if not existing or ("sessions" not in sources and not self.read_files):
            return {}
        which = []
        if "sessions" in sources:
            which.append(
                f"(session_id <> '' AND session_id IN (SELECT session_id FROM "
                f"{sources['sessions'][0]}))"
            )
        if self.read_files:  # any reject of a file read again (a file's own, say)
            con.register("_reread", pa.table({"f": sorted(self.read_files)}))
            which.append("source_file IN (SELECT f FROM _reread)")
        if self.prune and self.found_files is not None:  # of a file that is gone
            root = self.source.rstrip("/")
            con.register("_found", pa.table({"f": sorted(self.found_files)}))
            which.append(
                f"((source_file = {string_literal(root)} OR starts_with(source_file, "
                f"{string_literal(root + '/')})) AND source_file NOT IN (SELECT f FROM _found))"
            )
        lake_rejects = (
            f"(SELECT * FROM read_parquet({string_list(existing)}, "
            f"union_by_name=true) WHERE corpus = {string_literal(self.corpus)} AND "
            f"({' OR '.join(which)}))"
        )
        # a reject staged again spares the lake's: from the same file, or from a file the
        # lake holds no such reject of (a moved folder). A copy's reject, whose file has its
        # own, does not spare the original's once the original is gone
        held = (
            f"(SELECT * FROM read_parquet({string_list(existing)}, union_by_name=true) "
            f"WHERE corpus = {string_literal(self.corpus)})"
        )
        same = " AND ".join(f"s.{c} = l.{c}" for c in SAME_REJECT)
        same_held = " AND ".join(f"h.{c} = s.{c}" for c in SAME_REJECT)
        again = (
            f" WHERE NOT EXISTS (SELECT 1 FROM {sources['rejects'][0]} s WHERE {same} AND "
            f"(s.source_file = l.source_file OR NOT EXISTS (SELECT 1 FROM {held} h WHERE "
            f"h.source_file = s.source_file AND {same_held})))"
            if "rejects" in sources
            else ""
        )
        gone = con.sql(f"SELECT l.reject_id FROM {lake_rejects} l{again}").fetchall()
        return {"rejects": gone} if gone else {}

    def _new_rejects(
        self, con, staged: tuple[str, list, bool], snap: Snapshot
    ) -> tuple[str, list, bool]:
        """Only rejects the lake does not hold yet, by what they say: the same bad record
        read again from a moved folder is not a new reject. One the lake holds from another
        file that is still there is (a copy of a file: a fresh ingest rejects each)."""
        existing = self._files("rejects", snap)
        if not existing:
            return staged
        source, files, _losers = staged
        cols = ", ".join(SAME_REJECT)
        held = (
            f"(SELECT {cols}, source_file FROM read_parquet({string_list(existing)}, "
            f"union_by_name=true) WHERE corpus = {string_literal(self.corpus)})"
        )
        same = " AND ".join(f"s.{c} = l.{c}" for c in SAME_REJECT)
        if self.found_files is not None:
            # the files of the lake's rejects that this run still finds (a few, where the
            # run's files can be thousands): a reject of one of them spares only its own
            con.register("_found_now", pa.table({"f": sorted(self.found_files)}))
            still = sorted(
                r[0]
                for r in con.sql(
                    f"SELECT DISTINCT source_file FROM {held} SEMI JOIN _found_now "
                    "ON source_file = f"
                ).fetchall()
            )
            con.unregister("_found_now")
            if still:
                same += (
                    " AND (l.source_file = s.source_file OR NOT list_contains("
                    f"{string_list(still)}, l.source_file))"
                )
        fresh = f"(SELECT s.* FROM {source} s ANTI JOIN {held} l ON {same})"
        return fresh, files, True  # filtered: its files cannot be adopted as they are

    def _pruned(
        self, con, base: Snapshot, sources: dict, keys: dict, files: set[str] | None = None
    ) -> set[str]:
        """Sessions (and, into ``keys``, scenarios, landmarks and runs) read earlier from files
        under the ingested path that this run did not find: their sources are gone. With
        ``files`` (the files this run read), those read earlier from one of them that the
        run no longer has: the file was read again and no longer holds them (taken out, or
        now rejected whole), as a fresh ingest of it would not."""
        root = self.source.rstrip("/")

        def under(column: str) -> str:
            if files is not None:
                return f"{column} IN (SELECT f FROM _read_files)"
            return (
                f"({column} = {string_literal(root)} OR starts_with({column}, "
                f"{string_literal(root + '/')}))"
            )

        if files is not None:
            con.register("_read_files", pa.table({"f": sorted(files)}))
        elif self.found_files is not None:
            con.register("_found_files", pa.table({"f": sorted(self.found_files)}))
        found = {t: src for t, (src, _f, _l) in sources.items()}
        gone: set[str] = set()
        # (table, the column naming where a row was read from, its key, which rows)
        tables = [
            ("sessions", "source_file", ("session_id",), ""),
            ("scenarios", "source_file", ("scenario_id",), ""),
            # a map's landmarks: session-less, keyed by map and landmark
            ("landmarks", "source_file", ("map_id", "landmark_id"), " AND l.session_id = ''"),
        ]
        if files is None:  # a run's source is the ingested path, not one of its files
            tables.append(("runs", "source", ("run_id",), ""))
        for table, column, key, which in tables:
            existing = self._files(table, base)
            if not existing:
                continue
            match = " AND ".join(f"s.{k} = l.{k}" for k in key)
            still = (
                f"EXISTS (SELECT 1 FROM {found[table]} s WHERE {match})"
                if table in found
                else "false"
            )
            moved = (
                # or read again from another file, the one it was read from gone: it is
                # replaced, so that it names the file it now comes from
                f" OR l.{column} NOT IN (SELECT f FROM _found_files)"
                if files is None
                and self.found_files is not None
                and table in found
                and table != "runs"
                else ""
            )
            rows = con.sql(
                f"SELECT DISTINCT {', '.join('l.' + k for k in key)} FROM read_parquet("
                f"{string_list(existing)}, union_by_name=true) l WHERE l.corpus = "
                f"{string_literal(self.corpus)} AND {under('l.' + column)}{which} AND "
                f"(NOT {still}{moved})"
            ).fetchall()
            if table == "sessions":
                gone |= {r[0] for r in rows}
            elif rows:
                keys.setdefault(table, []).extend(rows)
                if table == "scenarios":  # and the scenario's agents and relationships
                    self._rows_of_scenarios(con, base, [r[0] for r in rows], keys)
        return gone

    def _rows_of_scenarios(self, con, base: Snapshot, ids: list[str], keys: dict) -> None:
        """Add to ``keys`` the session-less rows of the scenarios ``ids`` (gone from their
        source): their participants and relationship edges (``attrs.scenario_id``)."""
        con.register("_gone_scenarios", pa.table({"s": sorted(set(ids))}))
        for table in SCENARIO_ROWS:
            existing = self._files(table, base)
            if not existing:
                continue
            own = [k for k in TABLES[table].key if k not in ("corpus", "session_id")]
            rows = con.sql(
                f"SELECT DISTINCT {', '.join(own)} FROM read_parquet({string_list(existing)}, "
                f"union_by_name=true) WHERE corpus = {string_literal(self.corpus)} AND "
                "session_id = '' AND attrs->>'scenario_id' IN (SELECT s FROM _gone_scenarios)"
            ).fetchall()
            if rows:
                keys.setdefault(table, []).extend(rows)

    def _delete(
        self, table: str, base: Snapshot, sessions: set[str], keys: list[tuple]
    ) -> tuple[int, int | None]:
        """Delete this corpus's rows of ``sessions`` and the session-less ``keys`` from one
        table; return (rows deleted, new Delta version). No commit when none match."""
        existing = self._files(table, base)
        if not existing or not (sessions or keys):
            return 0, None
        own = [k for k in TABLES[table].key if k not in ("corpus", "session_id")]
        terms = []
        if sessions:
            terms.append(
                f"(session_id <> '' AND session_id IN "
                f"({', '.join(map(string_literal, sorted(sessions)))}))"
            )
        # keys of a table keyed by session are of its session-less rows; rejects are keyed
        # by their own id alone
        scope = "session_id = '' AND " if "session_id" in TABLES[table].key else ""
        for key in keys:
            terms.append(
                f"({scope}"
                + " AND ".join(
                    f"{c} = {string_literal(str(v))}" for c, v in zip(own, key, strict=True)
                )
                + ")"
            )
        predicate = f"corpus = {string_literal(self.corpus)} AND ({' OR '.join(terms)})"
        # deltalake prunes files by their statistics, rewrites those that hold a match and
        # commits nothing when none does (it says how many rows went): no count over every
        # file first. The rewrite of a large file for one session is what remains
        dt = self._delta(table, base.table_versions[table])
        n = int(dt.delete(predicate).get("num_deleted_rows") or 0)
        if not n:
            return 0, None
        return n, dt.version()  # (a delete moves the table object to its own commit)

    def _each_table(self, con, work, tables: list[str]) -> list:
        """``work(cursor, table)`` for each of ``tables``, side by side in threads, each on
        its own cursor of ``con`` (one database: the memory limit holds for all of them).
        DuckDB and delta-rs release the GIL, and a table's checks and commit are independent
        of another's."""
        if len(tables) < 2:
            return [work(con, t) for t in tables]

        def one(table: str):
            cur = con.cursor()
            try:
                if self._losers is not None:  # a registered table belongs to its connection
                    cur.register("_losers", self._losers)
                return work(cur, table)
            finally:
                cur.close()

        with ThreadPoolExecutor(min(len(tables), os.cpu_count() or 1, 4)) as pool:
            return list(pool.map(one, tables))

    def _append(self, con, table: str, base: Snapshot, staged: tuple[str, list, bool]):
        """Add one table's staged rows to the lake; return (rows added, new Delta version).

        The common case (no duplicate sessions, no repeated keys, nothing already in the
        lake) adopts the staged files as Delta data files: a metadata-only commit. Otherwise
        DuckDB filters the rows and they are rewritten.
        """
        spec = TABLES[table]
        source, files, has_losers = staged  # no key twice (:meth:`_source`)
        keys = ", ".join(spec.key)
        existing = self._files(table, base)
        # only the sessions this run touches can collide: prune the scan to them
        in_lake = (
            (
                f"(SELECT {keys} FROM read_parquet({string_list(existing)}, "
                f"union_by_name=true) WHERE session_id IN (SELECT DISTINCT session_id "
                f"FROM {source}))"
            )
            if existing
            else None
        )
        collides = (
            in_lake
            and con.sql(
                f"SELECT 1 FROM {source} SEMI JOIN {in_lake} USING ({keys}) LIMIT 1"
            ).fetchall()
        )
        if not (has_losers or collides):
            return self._adopt(table, files)
        query = f"SELECT * FROM {source}"
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
        if table not in self._tables and not DeltaTable.is_deltatable(str(path)):
            path.parent.mkdir(parents=True, exist_ok=True)
            self._tables[table] = DeltaTable.create(str(path), schema=schema)
        actions, rows = [], 0
        for f in files:
            n = pq.read_metadata(f).num_rows
            if n == 0:
                continue
            name = f"part-{uuid.uuid4().hex}.parquet"
            os.replace(f, path / name)
            st = (path / name).stat()
            actions.append(
                AddAction(
                    name,
                    st.st_size,
                    {},
                    int(st.st_mtime * 1000),
                    True,
                    json.dumps({"numRecords": n}),
                )
            )
            rows += n
        if not actions:
            return 0, None
        self._delta(table).create_write_transaction(actions, mode="append", schema=schema)
        return rows, self._committed(table)

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
        write_deltalake(
            str(path), pa.RecordBatchReader.from_batches(schema, batches()), mode="append"
        )
        return counted, self._committed(table)
