"""DuckDB views over one lake snapshot: the tables of DESIGN section 4, plus derived views.

Each canonical table becomes a view over exactly the Parquet files its pinned Delta version
lists (``read_parquet([...])``), so DuckDB scans the lake in place: no copy, projection and
filter pushdown, all cores. A table with no files yet is an empty view with the right columns,
so every query works on a new lake.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from graphlake.lake import Lake, Snapshot
from graphlake.query.graph_macros import MACROS
from graphlake.schema import TABLES

_DUCK_TYPES = {
    pa.string(): "VARCHAR", pa.float64(): "DOUBLE", pa.int32(): "INTEGER",
    pa.int64(): "BIGINT", pa.bool_(): "BOOLEAN", pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ",
    pa.list_(pa.string()): "VARCHAR[]",
}

#: Views derived from the canonical tables. Name -> (SQL, one line of documentation).
DERIVED_VIEWS: dict[str, tuple[str, str]] = {
    "adoptions": ("""
SELECT a.corpus, a.session_id, a.annotation_id, a.source_node, a.ai_node, a.response_node,
       a.label, an.actor AS ai_actor,
       sn.step_id AS source_step, an.step_id AS ai_step, rn.step_id AS response_step,
       coalesce(so.t_start, sn.t_start) AS source_t_start,
       coalesce(so.t_end, sn.t_end) AS source_t_end,
       coalesce(ao.t_start, an.t_start) AS ai_t_start,
       coalesce(ao.t_end, an.t_end) AS ai_t_end,
       coalesce(ro.t_start, rn.t_start) AS response_t_start,
       coalesce(ro.t_end, rn.t_end) AS response_t_end,
       an.step_id IS DISTINCT FROM rn.step_id AS cross_step
FROM annotations a
LEFT JOIN nodes sn ON sn.corpus = a.corpus AND sn.session_id = a.session_id
     AND sn.node_id = a.source_node
LEFT JOIN nodes an ON an.corpus = a.corpus AND an.session_id = a.session_id
     AND an.node_id = a.ai_node
LEFT JOIN nodes rn ON rn.corpus = a.corpus AND rn.session_id = a.session_id
     AND rn.node_id = a.response_node
LEFT JOIN node_occurrences so ON so.corpus = a.corpus AND so.session_id = a.session_id
     AND so.node_id = a.source_node AND so.seq = a.source_seq
LEFT JOIN node_occurrences ao ON ao.corpus = a.corpus AND ao.session_id = a.session_id
     AND ao.node_id = a.ai_node AND ao.seq = a.ai_seq
LEFT JOIN node_occurrences ro ON ro.corpus = a.corpus AND ro.session_id = a.session_id
     AND ro.node_id = a.response_node AND ro.seq = a.response_seq
WHERE a.kind = 'adoption'
""", "one adopt/modify/reject triple with the three nodes' steps and resolved occurrence times"),
    "adoption_chains": ("""
SELECT corpus, session_id,
       coalesce(source_node, ai_node) AS chain_root,
       source_node IS NULL AS rooted_at_ai,
       count(*)::INTEGER AS chain_length,
       list(label ORDER BY response_t_start, annotation_id) AS labels,
       arg_max(label, response_t_start) AS final_label,
       list(DISTINCT response_step ORDER BY response_step) AS response_steps,
       list(ai_node ORDER BY response_t_start, annotation_id) AS ai_nodes,
       count(DISTINCT ai_node)::INTEGER AS n_ai_outputs,
       min(coalesce(source_t_start, ai_t_start)) AS t_start,
       max(response_t_end) AS t_end,
       max(response_t_end) - min(coalesce(source_t_start, ai_t_start)) AS span_s,
       bool_or(cross_step) AS crosses_steps
FROM adoptions
GROUP BY corpus, session_id, coalesce(source_node, ai_node), source_node IS NULL
""", "one request followed through every AI output and response it led to, across steps"),
}


def _empty_select(schema: pa.Schema) -> str:
    cols = ", ".join(f"CAST(NULL AS {_DUCK_TYPES[f.type]}) AS {f.name}" for f in schema)
    return f"SELECT {cols} WHERE false"


def _quote_list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


@dataclass
class Catalog:
    """A DuckDB connection whose views show one lake snapshot, plus their column lists."""

    con: duckdb.DuckDBPyConnection
    snapshot: Snapshot
    columns: dict[str, list[str]] = field(default_factory=dict)

    def close(self) -> None:
        self.con.close()


def open_catalog(lake: Lake, version: int | None = None, *, threads: int | None = None,
                 memory_limit: str | None = None) -> Catalog:
    """Connect DuckDB to ``lake`` at ``version`` (latest when None)."""
    snap = lake.snapshot(version)
    config = {}
    if threads:
        config["threads"] = threads
    if memory_limit:
        config["memory_limit"] = memory_limit
    con = duckdb.connect(config=config)
    cat = Catalog(con, snap)
    for name, spec in TABLES.items():
        files = lake.files(name, snap)
        if files:
            cols = ", ".join(spec.schema.names)
            body = f"SELECT {cols} FROM read_parquet({_quote_list(files)}, union_by_name=true)"
        else:
            body = _empty_select(spec.schema)
        con.execute(f"CREATE VIEW {name} AS {body}")
        cat.columns[name] = list(spec.schema.names)
    for macro in MACROS.values():
        con.execute(macro.create_sql())
    for name, (sql, _doc) in DERIVED_VIEWS.items():
        con.execute(f"CREATE VIEW {name} AS {sql}")
        cat.columns[name] = [d[0] for d in con.execute(f"SELECT * FROM {name} LIMIT 0").description]
    return cat
