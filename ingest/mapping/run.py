"""Running a compiled mapping over one batch of records, and deriving what the source leaves
implicit (relative times, session start and length, participants, sequence edges)."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pyarrow as pa
from sqlglot import exp

from graphlake.ingest.mapping.compile import CompiledBlock, Plan, positional_ids
from graphlake.ingest.mapping.expressions import sql
from graphlake.ingest.mapping.spec import ID_COLUMN

#: The tables blocks fill below sessions, and each one's key within a session
KEYS = {**ID_COLUMN, "edges": "edge_id"}
ITEM_TABLES = ("participants", "steps", "nodes", "events", "annotations", "edges")


def _blocks_of(plan: Plan, table: str) -> list[CompiledBlock]:
    return [b for b in plan.blocks if b.block.table == table and b.select]


def statements(plan: Plan, check: bool = False) -> Iterator[tuple[tuple[str, int], str]]:
    """Every statement of the plan in order, each with (what, mapping line) to blame
    (``check``: each block also alone first, so that an error names its block's line)."""
    for stmt in plan.setup:
        yield ("source", plan.mapping.sessions.where_line), stmt
    for table in ITEM_TABLES:
        blocks = _blocks_of(plan, table)
        if not blocks:
            continue
        if check:
            for b in blocks:
                yield (
                    (f"{table} block", b.block.where_line),
                    f"CREATE OR REPLACE TEMP VIEW m_b{b.number} AS {b.select}",
                )
        # every block of the table in one relation, its accepted rows and its rejects both
        # read from it. Where ids are positions (no repeats to rank) it is a view: each
        # reader computes only the columns it asks for, where a table would copy every
        # column of every row once more. Where ids may repeat, the ranking reads every
        # column anyway, and a table spares the rejects a second evaluation
        union = " UNION ALL BY NAME ".join(
            f"SELECT {b.number} AS _blk, * FROM ({b.select})" for b in blocks
        )
        kind = "VIEW" if _unique_ids(plan, table) else "TABLE"
        yield (
            (f"{table} block", blocks[0].block.where_line),
            f"CREATE OR REPLACE TEMP {kind} m_ball_{table} AS {union}",
        )
    yield from _derived(plan)


def _columns(plan: Plan, table: str) -> set[str]:
    cols: set[str] = set()
    for b in _blocks_of(plan, table):
        cols.update(c.name for c in b.columns)
    return cols


def _union(plan: Plan, table: str) -> str | None:
    if not _blocks_of(plan, table):
        return None
    return f"SELECT * FROM m_ball_{table} WHERE _why = ''"


def _derived(plan: Plan) -> Iterator[tuple[tuple[str, int], str]]:
    line = plan.mapping.sessions.where_line
    absolute: dict[str, set[str]] = {}
    for b in plan.blocks:
        for c in b.columns:
            if c.absolute_time:
                absolute.setdefault(b.block.table, set()).add(c.name)
    # the unions of each table's blocks, ids made unique (a repeat is a reject)
    for table in ITEM_TABLES:
        union = _union(plan, table)
        key = KEYS[table]
        if union is None:
            continue
        if table == "edges":
            union = (
                "SELECT *, src || '->' || dst || ':' || kind AS edge_id FROM ("
                + union
                + ") WHERE src IS NOT NULL AND dst IS NOT NULL"
            )
        if _unique_ids(plan, table):  # ids made from positions are unique by construction
            yield (
                (f"{table} rows", line),
                f"CREATE OR REPLACE TEMP VIEW m_u_{table} AS SELECT *, 1 AS _rep FROM ({union})",
            )
            continue
        # ids that repeat are found by a hash aggregate; only their rows are ranked (the
        # first one lands), the others keep _rep = 1 without a sort
        yield (
            (f"{table} rows", line),
            (
                f"CREATE OR REPLACE TEMP TABLE m_u_{table} AS WITH u AS ({union}), "
                f"d AS (SELECT _session_id, {key} FROM u GROUP BY ALL HAVING count(*) > 1) "
                f"SELECT *, 1 AS _rep FROM u ANTI JOIN d USING (_session_id, {key}) UNION ALL "
                f"SELECT *, row_number() OVER (PARTITION BY _session_id, {key} ORDER BY _ord) AS _rep "
                f"FROM (SELECT * FROM u SEMI JOIN d USING (_session_id, {key}))"
            ),
        )
    # the session start: as mapped, else the earliest absolute time of its rows
    times = []
    for table, cols in absolute.items():
        for c in cols:
            times.append(f"SELECT _session_id, min({c}) AS t0 FROM m_u_{table} GROUP BY ALL")
    for table in ("events",):
        if "timestamp" in _columns(plan, table):
            times.append(f"SELECT _session_id, min(timestamp) AS t0 FROM m_u_{table} GROUP BY ALL")
    mapped_start = "started_at" in plan.sessions.block.columns
    start_expr = "any_value(s.started_at)" if mapped_start else "NULL::TIMESTAMPTZ"
    union_t0 = (
        " UNION ALL ".join(times)
        if times
        else "SELECT NULL::VARCHAR AS _session_id, NULL::TIMESTAMPTZ AS t0 WHERE false"
    )
    yield (
        ("session start", line),
        (
            "CREATE OR REPLACE TEMP TABLE m_start AS SELECT s._session_id, "
            f"coalesce({start_expr}, min(x.t0)) AS t0 FROM m_sessions s LEFT JOIN ({union_t0}) x "
            "USING (_session_id) WHERE s._why = '' GROUP BY s._session_id"
        ),
    )
    for table in ITEM_TABLES:
        if _union(plan, table) is None:
            continue
        cols = absolute.get(table, set())
        sets = [
            f"epoch(m_u_{table}.{c}::TIMESTAMPTZ) - epoch(m_start.t0) AS {c}" for c in sorted(cols)
        ]
        if (
            table == "events"
            and "timestamp" in _columns(plan, table)
            and "t" not in _columns(plan, table)
        ):
            sets.append(f"epoch(m_u_{table}.timestamp) - epoch(m_start.t0) AS t")
        if not sets:  # the rows as they are
            yield (
                (f"{table} rows", line),
                f"CREATE OR REPLACE TEMP VIEW m_all_{table} AS SELECT * FROM m_u_{table}",
            )
            continue
        repl = ", ".join(sets)
        exclude = f" EXCLUDE ({', '.join(sorted(cols))})" if cols else ""
        yield (  # absolute times made relative to the session start
            (f"{table} times", line),
            (
                f"CREATE OR REPLACE TEMP VIEW m_all_{table} AS SELECT m_u_{table}.*{exclude}, {repl} "
                f"FROM m_u_{table} LEFT JOIN m_start USING (_session_id)"
            ),
        )
    # participants derived from the events: one for each distinct id they mention
    derive = [b for b in plan.blocks if b.block.table == "participants" and b.block.derive]
    if derive and _union(plan, "events") is not None:
        yield (
            ("participants (derived)", derive[0].block.where_line),
            _derived_participants(plan, derive[0]),
        )
    # sequence edges between consecutive nodes of a session
    for b in plan.blocks:
        if b.block.table == "edges" and b.block.sequence and _union(plan, "nodes") is not None:
            kind = sql(exp.Literal.string(b.block.kind or "sequential"))
            flat = all(len(nb.block.from_paths) <= 1 for nb in _blocks_of(plan, "nodes"))
            position = "_ord[1]" if flat else "_ord"  # a number sorts faster than a list
            order = (
                f"t_start NULLS LAST, {position}"
                if "t_start" in _columns(plan, "nodes")
                else position
            )
            yield (
                ("sequence edges", b.block.where_line),
                (
                    f"CREATE OR REPLACE TEMP TABLE m_seq{b.number} AS SELECT _session_id, _unit, _file, "
                    f"_ord, src, node_id AS dst, {kind} AS kind, 'action' AS level, "
                    f"src || '->' || node_id || ':' || {kind} AS edge_id, 1 AS _rep FROM ("
                    f"SELECT _session_id, _unit, _file, _ord, node_id, "
                    f"lag(node_id) OVER (PARTITION BY _session_id ORDER BY {order}) AS src "
                    f"FROM (SELECT _session_id, _unit, _file, _ord, node_id"
                    f"{', t_start' if 't_start' in _columns(plan, 'nodes') else ''} "
                    "FROM m_all_nodes WHERE _rep = 1)) WHERE src IS NOT NULL"
                ),
            )


def _derived_participants(plan: Plan, b: CompiledBlock) -> str:
    """One participant for each distinct value of the derive ``ids`` over the event rows, in
    order of first mention (``seq`` when mapped, else position; within an event, ids in the
    order written), ``order`` sorting first; kind is the first mention's actor_type unless a
    column says otherwise."""
    ev_cols = _columns(plan, "events")
    ids = b.extra["ids"]
    actor_type = "actor_type" if "actor_type" in ev_cols else "NULL::VARCHAR"
    pos = "[coalesce(seq, 0)::BIGINT]" if "seq" in ev_cols else "_ord"
    mentions = (
        f"SELECT _session_id, _unit, _file, {actor_type} AS actor_type, {pos} AS _pos, "
        f"unnest([{', '.join(f'(({i}))::VARCHAR' for i in ids)}]) AS participant_id, "
        f"generate_subscripts([{', '.join('NULL' for _ in ids)}], 1) AS _k FROM m_all_events WHERE _rep = 1"
    )
    first = (
        "SELECT _session_id, participant_id, min(_unit) AS _unit, any_value(_file) AS _file, "
        "arg_min(actor_type, list_append(_pos, _k)) AS actor_type, min(list_append(_pos, _k)) AS _first "
        f"FROM ({mentions}) WHERE participant_id IS NOT NULL GROUP BY _session_id, participant_id"
    )
    order = f"(({b.extra['order']}))::BIGINT" if "order" in b.extra else "0::BIGINT"
    named = {c.name for c in b.columns}
    cols = [f"{c.value} AS {c.name}" for c in b.columns if c.name != "participant_id"]
    if "kind" not in named:
        cols.append("actor_type AS kind")
    if "name" not in named:
        cols.append("participant_id AS name")
    return (
        "CREATE OR REPLACE TEMP TABLE m_derived_participants AS SELECT _session_id, participant_id, "
        f"{', '.join(cols)}, _unit, list_prepend({order}, _first) AS _ord, _file, 1 AS _rep "
        f"FROM ({first})"
    )


def _unique_ids(plan: Plan, table: str) -> bool:
    """Whether ``table``'s ids are unique by construction (:func:`positional_ids`)."""
    return positional_ids(table, [b.block for b in _blocks_of(plan, table)])


def outputs(plan: Plan) -> dict[str, str]:
    """The final query of each canonical table (canonical names, ``_unit`` and ``_file``)."""
    out: dict[str, str] = {}
    sess_cols = set(plan.sessions.block.columns)
    have_events = _union(plan, "events") is not None
    have_nodes = _union(plan, "nodes") is not None
    parts_tables = []
    if _union(plan, "participants") is not None:
        parts_tables.append(
            "SELECT _session_id, participant_id, _ord, _unit FROM m_all_participants WHERE _rep = 1"
        )
    if any(b.block.derive for b in plan.blocks if b.block.table == "participants") and have_events:
        parts_tables.append(
            "SELECT _session_id, participant_id, _ord, _unit FROM m_derived_participants"
        )
    extra = []
    joins = []
    if "started_at" not in sess_cols:
        extra.append("m_start.t0 AS started_at")
        joins.append("LEFT JOIN m_start USING (_session_id)")
    if "duration_s" not in sess_cols and (have_events or have_nodes):
        ends = []
        if have_events:
            ev = _columns(plan, "events") | (
                {"t"} if "timestamp" in _columns(plan, "events") else set()
            )
            if "t" in ev:
                ends.append(
                    "SELECT _session_id, max(coalesce(t_end, t)) AS e FROM m_all_events GROUP BY ALL"
                    if "t_end" in ev
                    else "SELECT _session_id, max(t) AS e FROM m_all_events GROUP BY ALL"
                )
        if have_nodes and "t_end" in _columns(plan, "nodes"):
            ends.append("SELECT _session_id, max(t_end) AS e FROM m_all_nodes GROUP BY ALL")
        if ends:
            extra.append("m_dur.e AS duration_s")
            joins.append(
                f"LEFT JOIN (SELECT _session_id, max(e) AS e FROM ({' UNION ALL '.join(ends)}) GROUP BY ALL) m_dur USING (_session_id)"
            )
    if "participants" not in sess_cols and parts_tables:
        extra.append("coalesce(m_plist.participants, []::VARCHAR[]) AS participants")
        joins.append(
            "LEFT JOIN (SELECT _session_id, list(participant_id ORDER BY _ord) AS participants FROM "
            f"({' UNION ALL '.join(parts_tables)}) GROUP BY ALL) m_plist USING (_session_id)"
        )
    out["sessions"] = (
        f"SELECT m_sessions.*, _file AS source_file, _session_id AS session_id{''.join(', ' + e for e in extra)} "
        f"FROM m_sessions {' '.join(joins)} WHERE _why = ''"
    )
    for table in ITEM_TABLES:
        queries = []
        if _union(plan, table) is not None:
            queries.append(f"SELECT *, _session_id AS session_id FROM m_all_{table} WHERE _rep = 1")
        if (
            table == "participants"
            and any(b.block.derive for b in plan.blocks if b.block.table == "participants")
            and have_events
        ):
            queries.append(
                "SELECT *, _session_id AS session_id FROM m_derived_participants WHERE participant_id NOT IN "
                "(SELECT participant_id FROM m_all_participants p WHERE p._session_id = m_derived_participants._session_id)"
                if _union(plan, "participants") is not None
                else "SELECT *, _session_id AS session_id FROM m_derived_participants"
            )
        if table == "edges":
            for b in plan.blocks:
                if b.block.table == "edges" and b.block.sequence and have_nodes:
                    queries.append(f"SELECT *, _session_id AS session_id FROM m_seq{b.number}")
        if queries:
            out[table] = " UNION ALL BY NAME ".join(queries)
    return out


def rejects_sql(plan: Plan) -> list[tuple[str, str]]:
    """(target table, query) of every rejected record: columns _unit, _file, ref, reason, raw,
    session_id."""
    m = plan.mapping
    qs = [
        (
            "sessions",
            "SELECT _unit, _file, 'line ' || _line AS ref, 'line ' || _line || ' is not valid JSON: "
            "fix or remove it; the other records of the file were read' AS reason, rtrim(_text, chr(13) || chr(10)) AS raw, "
            "NULL AS session_id, 'line' AS kind FROM m_bad",
        ),
        (
            "sessions",
            "SELECT _unit, _file, "
            + (
                "'line ' || _line"  # a JSON Lines record is its line
                if m.source["format"] == "jsonl"
                else f"CASE WHEN _n > 1 THEN {sql(exp.Literal.string((m.source.get('records') or '$').removesuffix('[*]')))} || '[' || _rec_index || ']' ELSE '$' END"
            )
            + " AS ref, _why AS reason, _record::VARCHAR AS raw, _session_id AS session_id, "
            f"{sql(exp.Literal.string(m.sessions.record or 'session'))} AS kind "
            "FROM m_sessions WHERE _why <> ''",
        ),
    ]
    if plan.setup and any("m_norecs" in s for s in plan.setup):
        records = m.source.get("records")
        reason = (
            f"the mapping {m.path.name} looks for its sessions at {records} (source.records), "
            "and this document has none there: is it a file of this format?"
        )
        qs.append(
            (
                "sessions",
                f"SELECT _unit, _file, '$' AS ref, {sql(exp.Literal.string(reason))} AS reason, "
                "left(_doc::VARCHAR, 4096) AS raw, NULL AS session_id, 'file' AS kind FROM m_norecs",
            )
        )
    for t in ITEM_TABLES:
        if not _blocks_of(plan, t):
            continue
        qs.append(
            (
                t,
                f"SELECT _unit, _file, {sql(exp.Literal.string(t + ' item '))} || array_to_string(_ord, '.') AS ref, "
                f"_why AS reason, _raw AS raw, _session_id AS session_id, 'row' AS kind FROM m_ball_{t} WHERE _why <> ''",
            )
        )
    for t in ITEM_TABLES:
        if _union(plan, t) is None or _unique_ids(plan, t):
            continue
        key = KEYS[t]
        head = sql(exp.Literal.string(f"{t}.{key} "))
        tail = sql(
            exp.Literal.string(
                f": the mapping's `id` for {t} must be unique in a session (the first one landed)"
            )
        )
        qs.append(
            (
                t,
                f"SELECT _unit, _file, {sql(exp.Literal.string(t + ' item '))} || array_to_string(_ord, '.') AS ref, "
                f"{head} || {key} || ' repeats within session ' || _session_id || {tail} AS reason, "
                f"_raw AS raw, _session_id AS session_id, 'row' AS kind FROM m_all_{t} WHERE _rep > 1",
            )
        )
    return qs


def execute(
    plan: Plan, con: duckdb.DuckDBPyConnection, src: pa.Table
) -> tuple[dict[str, pa.Table], list[dict]]:
    """Run ``plan`` over ``src``: each table's rows (canonical columns where mapped, plus
    ``_unit``) and the rejects, as dicts."""
    _reset(con)
    register_functions(con)
    con.register("src", src)
    try:
        for _what, stmt in statements(plan):
            con.execute(stmt)
        tables = {t: _canonical_rows(con, t, q) for t, q in outputs(plan).items()}
        rejects: list[dict] = []
        for table, q in rejects_sql(plan):
            cur = con.sql(q)
            names = cur.columns
            for row in cur.fetchall():
                rejects.append({"table": table, **dict(zip(names, row, strict=True))})
    finally:
        con.unregister("src")
        _reset(con)
    return tables, rejects


#: graphlake's canonical JSON text (compact, keys sorted), for columns with ``json: true``
CANONICAL_JSON = "graphlake_canonical_json"


def register_functions(con: duckdb.DuckDBPyConnection) -> None:
    """The Python functions compiled mappings call, registered once per connection."""
    if con.execute(
        f"SELECT count(*) FROM duckdb_functions() WHERE function_name = '{CANONICAL_JSON}'"
    ).fetchall()[0][0]:
        return
    import orjson

    from graphlake.ingest.base import to_json

    def canonical(texts: pa.Array) -> pa.Array:
        return pa.array(
            [None if t is None else to_json(orjson.loads(t)) for t in texts.to_pylist()],
            pa.string(),
        )

    con.create_function(  # type: ignore[call-overload]
        CANONICAL_JSON, canonical, ["VARCHAR"], "VARCHAR", type="arrow", side_effects=False
    )


def _canonical_rows(con: duckdb.DuckDBPyConnection, table: str, query: str) -> pa.Table:
    """``query``'s canonical columns (and ``_unit``) as Arrow: the working columns (the
    record's JSON, positions) never leave DuckDB."""
    from graphlake.schema import TABLES

    wanted = set(TABLES[table].columns) | {"_unit"}
    cols = [c for c in con.sql(query).columns if c in wanted]
    # no ORDER BY: the lake is a set of rows, read in key order by whoever needs an order
    return con.sql(f"SELECT {', '.join(cols)} FROM ({query})").to_arrow_table()


def _reset(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the plan's temporary tables and views (the connection is shared by every mapping
    a process runs; one mapping's view must not meet another's table of the same name)."""
    for kind, name in con.sql(
        "SELECT 'VIEW', view_name FROM duckdb_views() WHERE temporary AND view_name LIKE 'm\\_%' ESCAPE '\\' "
        "UNION ALL SELECT 'TABLE', table_name FROM duckdb_tables() WHERE temporary AND table_name LIKE 'm\\_%' ESCAPE '\\'"
    ).fetchall():
        con.execute(f"DROP {kind} IF EXISTS {exp.to_identifier(name).sql(dialect='duckdb')}")
