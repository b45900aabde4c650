"""Graph primitives as SQL macros, so they work inside any statement:

    SELECT * FROM descendants('kolab', 'hand-1', 'seg1a/n1', 3)
    SELECT * FROM ancestors('kolab', 'hand-1', 'seg2a/n3', NULL)      -- NULL: no hop limit
    SELECT * FROM neighborhood('kolab', 'hand-1', 'seg1a/n2', 1)       -- k hops, either way
    SELECT * FROM window_nodes('kolab', 'hand-1', 40, 60)              -- occurrences overlapping
    SELECT * FROM step_nodes('kolab', 'hand-1', 'seg1a')               -- one step's subgraph
    SELECT * FROM cycles('kolab', 'hand-1', 6)                         -- simple cycles, <= 6 nodes
    SELECT allen(a.t_start, a.t_end, b.t_start, b.t_end)               -- Allen's relation of a to b

Each macro is declared once here. DuckDB registers them as macros; for Spark (and any engine
without macros) :func:`expand_macros` inlines them into the statement as subqueries and CASE
expressions, so both engines run the same relational plan.

Reachability never enumerates paths. The recursion carries (node, hops) pairs and every step
keeps only DISTINCT pairs; since each step adds exactly one hop, that is the same set a UNION
recursion keeps, and it is the form Spark accepts (Spark refuses UNION in recursive CTEs).
The work is bounded by nodes x hop limit; without a limit the limit is the session's node
count, which no shortest path can exceed. Each result reports the fewest hops.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from graphlake.config import co_occurrence_cap, co_occurrence_lake_cap


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...]
    body: str  # a query (table macro) or an expression (scalar macro), DuckDB dialect
    table: bool = True
    doc: str = ""

    @property
    def usage(self) -> str:
        """The call as a reader writes it, e.g. ``descendants(corpus, session_id, node_id,
        max_hops)``: for errors and help."""
        return f"{self.name}({', '.join(_READABLE.get(p, p) for p in self.params)})"

    def create_sql(self) -> str:
        kind = "TABLE " if self.table else ""
        return f"CREATE MACRO {self.name}({', '.join(self.params)}) AS {kind}{self.body}"


#: The macros' short parameter names as their callers know them.
_READABLE = {"c": "corpus", "s": "session_id", "start": "node_id", "step": "step_id"}

_HOP_LIMIT = (
    "least(coalesce(max_hops, 1000000000), (SELECT count(*) FROM nodes n "
    "WHERE n.corpus = c AND n.session_id = s))"
)


def _reach(name: str, frm: str, to: str, doc: str, directed: bool = True) -> Macro:
    arcs = (
        f"SELECT {frm} AS a, {to} AS b FROM edges WHERE corpus = c AND session_id = s "
        "AND level = 'action'"
    )
    if not directed:
        arcs += (
            f" UNION ALL SELECT {to}, {frm} FROM edges WHERE corpus = c "
            "AND session_id = s AND level = 'action'"
        )
    body = (
        f"WITH RECURSIVE _reach(node_id, hops) AS (SELECT start, 0 UNION ALL "
        f"SELECT DISTINCT e.b, r.hops + 1 FROM _reach r JOIN ({arcs}) e ON e.a = r.node_id "
        f"WHERE r.hops < {_HOP_LIMIT}) "
        f"SELECT node_id, CAST(min(hops) AS INTEGER) AS hops FROM _reach "
        f"WHERE node_id <> start GROUP BY node_id"
    )
    return Macro(name, ("c", "s", "start", "max_hops"), body, doc=doc)


_ALLEN = """CASE
  WHEN a_end < b_start THEN 'before'
  WHEN b_end < a_start THEN 'after'
  WHEN a_end = b_start AND a_start < a_end AND b_start < b_end THEN 'meets'
  WHEN b_end = a_start AND a_start < a_end AND b_start < b_end THEN 'met_by'
  WHEN a_start = b_start AND a_end = b_end THEN 'equals'
  WHEN a_start = b_start AND a_end < b_end THEN 'starts'
  WHEN a_start = b_start THEN 'started_by'
  WHEN a_end = b_end AND a_start > b_start THEN 'finishes'
  WHEN a_end = b_end THEN 'finished_by'
  WHEN a_start > b_start AND a_end < b_end THEN 'during'
  WHEN a_start < b_start AND a_end > b_end THEN 'contains'
  WHEN a_start < b_start THEN 'overlaps'
  ELSE 'overlapped_by' END"""

_CYCLES = """WITH RECURSIVE _arcs AS (
  SELECT DISTINCT src, dst FROM edges WHERE corpus = c AND session_id = s AND level = 'action'
), _walk(start, node, path) AS (
  SELECT src, dst, [src, dst] FROM _arcs WHERE dst > src
  UNION ALL
  SELECT w.start, a.dst, list_append(w.path, a.dst) FROM _walk w JOIN _arcs a ON a.src = w.node
  WHERE a.dst > w.start AND NOT list_contains(w.path, a.dst) AND array_length(w.path) < max_len
)
SELECT w.path AS cycle, CAST(array_length(w.path) AS INTEGER) AS length
FROM _walk w JOIN _arcs a ON a.src = w.node AND a.dst = w.start
WHERE array_length(w.path) <= max_len
UNION ALL
SELECT [src] AS cycle, 1 AS length FROM _arcs WHERE src = dst AND max_len >= 1"""

MACROS: dict[str, Macro] = {
    m.name: m
    for m in (
        _reach("descendants", "src", "dst", "nodes reachable from node_id, with the fewest hops"),
        _reach("ancestors", "dst", "src", "nodes that reach node_id, with the fewest hops"),
        _reach(
            "neighborhood",
            "src",
            "dst",
            "the max_hops-hop context around node_id, either direction",
            directed=False,
        ),
        Macro(
            "window_nodes",
            ("c", "s", "t0", "t1"),
            "SELECT o.node_id, o.seq, o.t_start, o.t_end, o.step_id, o.actor_type "
            "FROM node_occurrences o WHERE o.corpus = c AND o.session_id = s "
            "AND o.t_start <= t1 AND o.t_end >= t0",
            doc="node occurrences overlapping the time window [t0, t1]",
        ),
        Macro(
            "step_nodes",
            ("c", "s", "step"),
            "SELECT n.node_id, n.actor_type, n.label, n.t_start, n.t_end, "
            "(SELECT count(*) FROM edges e WHERE e.corpus = c AND e.session_id = s "
            "AND e.level = 'action' AND e.src = n.node_id AND e.step_id = step) AS out_edges "
            "FROM nodes n WHERE n.corpus = c AND n.session_id = s AND n.step_id = step",
            doc="the nodes of one step (segment), with their out-edges inside it",
        ),
        Macro(
            "cycles",
            ("c", "s", "max_len"),
            _CYCLES,
            doc="simple cycles of at most max_len nodes, each once, starting at its least node",
        ),
        Macro(
            "co_occurrence_cap",
            (),
            str(co_occurrence_cap()),
            table=False,
            doc="ordered pairs of overlapping occurrences a session may have in co_occurrences "
            "($GRAPHLAKE_CO_OCCURRENCE_CAP); sessions past it are in co_occurrence_overflow",
        ),
        Macro(
            "co_occurrence_lake_cap",
            (),
            str(co_occurrence_lake_cap()),
            table=False,
            doc="rows co_occurrences may hold for the whole lake "
            "($GRAPHLAKE_CO_OCCURRENCE_LAKE_CAP); past it the sessions with the most pairs "
            "are left out, largest first, and listed in co_occurrence_overflow",
        ),
        Macro(
            "allen",
            ("a_start", "a_end", "b_start", "b_end"),
            _ALLEN,
            table=False,
            doc="Allen's interval relation of [a_start, a_end] to [b_start, b_end]",
        ),
    )
}
TABLE_MACROS = {name for name, m in MACROS.items() if m.table}


def _substitute(tree: exp.Expression, params: tuple[str, ...], args: list[exp.Expression]):
    values = dict(zip(params, args, strict=True))

    def swap(node):
        if isinstance(node, exp.Column) and not node.table and node.name in values:
            return values[node.name].copy()
        return node

    return tree.transform(swap)


def expand_macros(tree: exp.Expression) -> exp.Expression:
    """Inline every graph macro call in ``tree`` (a DuckDB-dialect AST), for engines
    without macros. Table macros become subqueries, ``allen`` a CASE expression."""

    def inline(node):
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous):
            name = node.this.name.lower()
            if name in TABLE_MACROS:
                m = MACROS[name]
                args = list(node.this.expressions)
                if len(args) != len(m.params):
                    return node
                body = _substitute(sqlglot.parse_one(m.body, read="duckdb"), m.params, args)
                body = expand_macros(body)
                alias = node.alias or name
                return exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        if (
            isinstance(node, exp.Anonymous)
            and node.name.lower() in MACROS
            and not MACROS[node.name.lower()].table
        ):
            m = MACROS[node.name.lower()]
            body = sqlglot.parse_one(m.body, read="duckdb")
            return exp.Paren(this=_substitute(body, m.params, list(node.expressions)))
        return node

    return tree.transform(inline)
