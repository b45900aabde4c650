"""Materialized views: derived views kept as lake tables, brought up to date by ``refresh``.

``adoptions`` resolves every adoption triple's three ends to steps and times,
``adoption_chains`` follows each request through its responses in time order, and
``co_occurrences`` pairs the occurrences of a session that overlap in time (a join index for
"what happened while the agent worked"). Computed at query time they join and sort millions of
rows on every call (2 to 10 s each at 100k sessions), yet each depends only on the rows of one
session, and a session's rows change only when an ingest run adds to them. So :func:`refresh`
computes them with the view's own SQL (``queries/views/``, still the single definition) for
the sessions whose rows changed, and commits the result as Delta tables in a lake version of
its own. Queries then read the tables.

* ``graphlake ingest`` refreshes right after its run's commit (``--no-refresh`` to skip, e.g.
  between the runs of a bulk load; ``graphlake lake refresh`` later). ``ingest_path`` itself
  only ingests, so that a run stays one version.
* A table records what it was computed from, in its Delta configuration: the definition (a
  hash of the view's SQL, the views it reads and the graph macros) and the versions of the
  canonical tables it read. The catalog reads it only when both match the snapshot being
  queried; otherwise it computes the view from its SQL. A stale table is never read.
* A refresh recomputes the sessions that appear in the input files added since the recorded
  versions, replacing their rows; a missing table, or one of another definition, is recomputed
  for every session. ``lake compact`` rewrites files without changing rows, so it moves the
  recorded versions along with it.
* Sessions are computed in groups of about ``CHUNK_ROWS`` input rows: memory stays bounded.
* Spark keeps computing the views from the SQL, so the conformance tests compare the
  materialized rows with an independent evaluation of the definition.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from dataclasses import dataclass, field
from functools import cache

import duckdb
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from graphlake.lake.store import Lake, Snapshot
from graphlake.schema.duckdb_views import (
    create_macros,
    create_table_views,
    derived_schema,
    files_select,
    string_literal,
)
from graphlake.schema.graph_macros import MACROS
from graphlake.schema.views import (
    DERIVED_VIEWS,
    MATERIALIZED,
    VIEW_ORDER,
    depends_on,
    reads,
    standalone_sql,
)

#: Delta table configuration keys: the definition a table was computed with, and the versions
#: of the canonical tables it was computed from (JSON).
DEFINITION_KEY = "graphlake.definition"
INPUTS_KEY = "graphlake.inputs"

#: Sessions are recomputed in groups of about this many input rows (bounded memory).
CHUNK_ROWS = 1_000_000


@cache
def definition(name: str) -> str:
    """A hash of everything a materialized view's rows depend on besides the data."""
    text = standalone_sql(name) + "".join(m.create_sql() for m in MACROS.values())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@cache
def inputs() -> tuple[str, ...]:
    """The canonical tables the materialized views read."""
    return tuple(sorted(frozenset().union(*map(depends_on, MATERIALIZED))))


def input_versions(snap: Snapshot) -> str:
    """The versions of the input tables in ``snap``, as recorded in a table's configuration."""
    return json.dumps({t: snap.table_versions.get(t) for t in inputs()}, sort_keys=True)


def current_files(
    lake: Lake, name: str, snap: Snapshot, *, use_manifest: bool = True
) -> list[str] | None:
    """The files of materialized view ``name`` in ``snap``, or None when ``snap`` has no such
    table or it is stale: computed with another definition or from other input versions (then
    compute the view instead). The newest version's manifest says so without opening the
    table, while its view sources are unchanged (:mod:`graphlake.lake.current`)."""
    if use_manifest and (found := lake.current_of(snap)) is not None and name in found.kept:
        kept = found.kept[name]
        return None if kept is None else list(kept)
    dt = lake.delta(name, snap)
    if dt is None:
        return None
    conf = dt.metadata().configuration
    if conf.get(DEFINITION_KEY) != definition(name) or conf.get(INPUTS_KEY) != input_versions(snap):
        return None
    return dt.file_uris()


@dataclass
class RefreshReport:
    """What a refresh did: rows written per view, sessions recomputed, seconds taken."""

    snapshot: Snapshot | None = None
    rows: dict[str, int] = field(default_factory=dict)
    sessions: int | None = None  # None: every session (a full recomputation)
    seconds: float = 0.0
    #: sessions left out of co_occurrences for having more overlapping pairs than the cap
    #: (listed in the co_occurrence_overflow view)
    crowded: int = 0


def refresh(lake: Lake, *, full: bool = False, memory_limit: str = "1GB") -> RefreshReport:
    """Bring every materialized view up to date with the lake's latest version, committing the
    result as a new lake version (none when they already are). ``full`` recomputes every
    session even when an incremental refresh would do."""
    t0 = time.perf_counter()
    report = RefreshReport()
    with lake.write_lock():
        base = lake.snapshot()
        if not base.table_versions:
            return report
        lake.repair(base)
        target = input_versions(base)
        changed: set[tuple[str, str]] | None = set()  # None: all sessions
        behind: set[str] = set()  # the input versions the stale tables were computed from
        for name in MATERIALIZED:
            dt = lake.delta(name, base)
            conf = dt.metadata().configuration if dt is not None else {}
            if full or dt is None or conf.get(DEFINITION_KEY) != definition(name):
                changed = None
                break
            if conf.get(INPUTS_KEY) != target:
                behind.add(conf.get(INPUTS_KEY) or "{}")
        else:
            if not behind:
                return report
            for recorded in behind:  # the tables are refreshed together: usually one
                since = _changed_sessions(lake, base, json.loads(recorded))
                if since is None:
                    changed = None
                    break
                changed |= since
        staging = lake.new_staging("refresh")  # DuckDB spills here; owned, so cleanable
        con = duckdb.connect(
            config={
                "memory_limit": memory_limit,
                "temp_directory": str(staging),
                "preserve_insertion_order": False,
            }
        )
        try:
            versions = dict(base.table_versions)
            made = _recompute(con, lake, base, changed, target, report)
            versions.update({name: v for name, (_n, v) in made.items()})
        finally:
            con.close()
            lake.remove_staging(staging)
        report.snapshot = lake.commit_snapshot(
            operation="refresh", corpus=None, source=None, table_versions=versions, rows_added={}
        )
    report.rows = {name: n for name, (n, _v) in made.items()}
    report.sessions = None if changed is None else len(changed)
    report.seconds = time.perf_counter() - t0
    return report


def carry_over(lake: Lake, base: Snapshot, versions: dict[str, int]) -> None:
    """After a rewrite that changed no rows (compaction), let the tables that were current at
    ``base`` say they are current at ``versions`` too (updates ``versions`` in place)."""
    after = input_versions(Snapshot(0, None, "", None, None, versions, {}))
    if after == input_versions(base):
        return
    for name in MATERIALIZED:
        if current_files(lake, name, base) is None or name not in versions:
            continue
        dt = DeltaTable(str(lake.table_path(name)))
        dt.alter.set_table_properties({INPUTS_KEY: after}, raise_if_not_exists=False)
        versions[name] = DeltaTable(str(lake.table_path(name))).version()


# ------------------------------------------------------------------------------ internals


def _files(lake: Lake, table: str, version: int | None) -> list[str]:
    if version is None:
        return []
    return DeltaTable(str(lake.table_path(table)), version=version).file_uris()


def _changed_sessions(
    lake: Lake, base: Snapshot, recorded: dict[str, int | None]
) -> set[tuple[str, str]] | None:
    """(corpus, session) of every row in input files added or removed since ``recorded`` (a
    re-ingest that replaced or pruned sessions removes files); None when that cannot be told
    (an old version's log is gone), which means: recompute everything."""
    new_files: list[str] = []
    try:
        for t in inputs():
            old = set(_files(lake, t, recorded.get(t)))
            now = set(_files(lake, t, base.table_versions.get(t)))
            new_files += sorted(now - old) + sorted(old - now)
    except Exception:  # deltalake raises plain exceptions for versions it cannot load
        return None
    if not new_files:
        return set()
    con = duckdb.connect()
    try:
        return set(
            con.execute(
                "SELECT DISTINCT corpus, session_id FROM read_parquet(?, union_by_name=true)",
                [new_files],
            ).fetchall()
        )
    except duckdb.IOException:  # a removed file already vacuumed: recompute everything
        return None
    finally:
        con.close()


def _recompute(
    con: duckdb.DuckDBPyConnection,
    lake: Lake,
    base: Snapshot,
    changed: set[tuple[str, str]] | None,
    target: str,
    report: RefreshReport,
) -> dict[str, tuple[int, int]]:
    """Write each view's rows for ``changed`` sessions (None: all); {view: (rows, version)}."""

    files = {t: _files(lake, t, base.table_versions.get(t)) for t in inputs()}
    create_table_views(con, files)
    create_macros(con)
    if changed is not None:
        con.register(
            "_changed",
            pa.table(
                {
                    "corpus": [c for c, _s in sorted(changed)],
                    "session_id": [s for _c, s in sorted(changed)],
                }
            ),
        )
    chunks = _chunks(con, changed is not None)
    out: dict[str, tuple[int, int]] = {}
    for name in MATERIALIZED:
        schema = derived_schema(name)
        if changed is None:  # a new, empty table (replacing any rows of another definition)
            _create(lake, name, schema)
        else:
            _delete_sessions(lake, name, base, changed)
        # the views before this one read the rows just written, not a recomputation
        done = {dep: _files(lake, dep, v) for dep, (_n, v) in out.items()}
        n, _v = _append(lake, name, _compute(con, name, files, done, chunks, report), schema)
        dt = DeltaTable(str(lake.table_path(name)))
        dt.alter.set_table_properties({INPUTS_KEY: target}, raise_if_not_exists=False)
        out[name] = (n, DeltaTable(str(lake.table_path(name))).version())
    return out


def _chunks(con: duckdb.DuckDBPyConnection, narrow: bool) -> list[str]:
    """The sessions to compute, as SQL conditions each selecting about CHUNK_ROWS input rows:
    a range of session ids of one corpus (which Parquet statistics prune), narrowed to the
    ``_changed`` sessions when ``narrow``."""
    counts = " UNION ALL ".join(
        f"SELECT corpus, session_id, count(*) AS n FROM {t} GROUP BY ALL" for t in inputs()
    )
    only = " SEMI JOIN _changed USING (corpus, session_id)" if narrow else ""
    rows = con.execute(
        f"SELECT corpus, session_id, sum(n) FROM ({counts}){only} GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    groups: list[list] = []  # [corpus, first session, last session, rows]
    for c, sid, n in rows:
        if not groups or groups[-1][0] != c or groups[-1][3] >= CHUNK_ROWS:
            groups.append([c, sid, sid, 0])
        groups[-1][2] = sid
        groups[-1][3] += n
    tail = (
        " AND session_id IN (SELECT session_id FROM _changed WHERE corpus = {c})" if narrow else ""
    )
    lit = string_literal
    return [
        f"corpus = {lit(c)} AND session_id BETWEEN {lit(lo)} AND {lit(hi)}" + tail.format(c=lit(c))
        for c, lo, hi, _n in groups
    ]


def _compute(
    con: duckdb.DuckDBPyConnection,
    name: str,
    files: dict[str, list[str]],
    done: dict[str, list[str]],
    chunks: list[str],
    report: RefreshReport,
):
    """Batches of view ``name``, one group of sessions at a time."""

    for where in chunks:
        create_table_views(con, files, where=where)
        for dep, dep_files in done.items():
            con.execute(
                f"CREATE OR REPLACE VIEW {dep} AS "
                f"{files_select(dep_files, derived_schema(dep), where)}"
            )
        for dep in VIEW_ORDER:  # the views it reads that are not kept: from their SQL, once
            if dep in reads(name) and dep not in done:
                con.execute(f"CREATE OR REPLACE TEMP TABLE {dep} AS {DERIVED_VIEWS[dep][0]}")
        if name == "co_occurrences":  # the sessions it leaves out: said, not silent
            counted = con.sql("SELECT count(*) FROM co_occurrence_overflow").fetchall()
            report.crowded += counted[0][0]
        reader = con.sql(DERIVED_VIEWS[name][0]).to_arrow_reader(100_000)
        try:
            yield from reader
        finally:
            reader.close()


def _delete_sessions(lake: Lake, name: str, base: Snapshot, changed: set[tuple[str, str]]) -> None:
    """Drop the rows a refresh replaces (only sessions the table already has rows for)."""
    files = lake.files(name, base)
    if not files or not changed:
        return
    con = duckdb.connect()
    try:
        con.register(
            "_changed",
            pa.table({"corpus": [c for c, _s in changed], "session_id": [s for _c, s in changed]}),
        )
        present = con.execute(
            "SELECT DISTINCT corpus, session_id FROM read_parquet(?) "
            "SEMI JOIN _changed USING (corpus, session_id)",
            [files],
        ).fetchall()
    finally:
        con.close()
    by_corpus: dict[str, list[str]] = {}
    for c, s in present:
        by_corpus.setdefault(c, []).append(s)
    if by_corpus:
        DeltaTable(str(lake.table_path(name))).delete(
            " OR ".join(
                f"(corpus = {string_literal(c)} AND session_id IN "
                f"({', '.join(map(string_literal, ids))}))"
                for c, ids in sorted(by_corpus.items())
            )
        )


def _create(lake: Lake, name: str, schema: pa.Schema) -> None:
    path = lake.table_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    exists = DeltaTable.is_deltatable(str(path))
    DeltaTable.create(
        str(path),
        schema=schema,
        mode="overwrite" if exists else "error",
        configuration={DEFINITION_KEY: definition(name)},
        raise_if_key_not_exists=False,
    )


def _append(lake: Lake, name: str, batches, schema: pa.Schema) -> tuple[int, int]:
    """Stream the batches into the table; return (rows, version)."""
    path = lake.table_path(name)
    nonempty = (b.cast(schema) for b in batches if b.num_rows)
    first = next(nonempty, None)
    counted = 0
    if first is not None:

        def counting():
            nonlocal counted
            for b in itertools.chain([first], nonempty):
                counted += b.num_rows
                yield b

        write_deltalake(
            str(path), pa.RecordBatchReader.from_batches(schema, counting()), mode="append"
        )
    return counted, DeltaTable(str(path)).version()
