"""Graph primitives as DuckDB table macros, so they work inside any SQL statement:

    SELECT * FROM descendants('kolab', 'hand-1', 'seg1a/n1', 3)
    SELECT * FROM ancestors('kolab', 'hand-1', 'seg2a/n3', NULL)      -- NULL: no hop limit
    SELECT * FROM window_nodes('kolab', 'hand-1', 40, 60)              -- occurrences overlapping
    SELECT * FROM neighborhood('kolab', 'hand-1', 'seg1a/n2', 1)       -- k hops, either way

Reachability never enumerates paths: the recursion carries (node, hops) pairs and UNION
dedupes them, so the work is bounded by nodes x hop limit; without a limit the limit is the
session's node count, which no shortest path can exceed. Each result reports the fewest hops.
(Path enumeration, the pattern language and Spark portability are the next steps of issue 4.)
"""

from __future__ import annotations

_HOP_LIMIT = ("least(coalesce(max_hops, 1000000000), (SELECT count(*) FROM nodes n "
              "WHERE n.corpus = c AND n.session_id = s))")


def _reach(name: str, frm: str, to: str, directed: bool = True) -> str:
    arcs = (f"SELECT {frm} AS a, {to} AS b FROM edges WHERE corpus = c AND session_id = s "
            "AND level = 'action'")
    if not directed:
        arcs += (f" UNION ALL SELECT {to}, {frm} FROM edges WHERE corpus = c "
                 "AND session_id = s AND level = 'action'")
    return (f"CREATE MACRO {name}(c, s, start, max_hops) AS TABLE "
            f"WITH RECURSIVE _reach(node_id, hops) AS (SELECT start, 0 UNION "
            f"SELECT e.b, r.hops + 1 FROM _reach r JOIN ({arcs}) e ON e.a = r.node_id "
            f"WHERE r.hops < {_HOP_LIMIT}) "
            f"SELECT node_id, min(hops)::INTEGER AS hops FROM _reach "
            f"WHERE node_id <> start GROUP BY node_id")


MACROS: dict[str, str] = {
    "descendants": _reach("descendants", "src", "dst"),
    "ancestors": _reach("ancestors", "dst", "src"),
    "neighborhood": _reach("neighborhood", "src", "dst", directed=False),
    "window_nodes": (
        "CREATE MACRO window_nodes(c, s, t0, t1) AS TABLE "
        "SELECT o.node_id, o.seq, o.t_start, o.t_end, o.step_id, o.actor_type "
        "FROM node_occurrences o WHERE o.corpus = c AND o.session_id = s "
        "AND o.t_start <= t1 AND o.t_end >= t0"),
}
