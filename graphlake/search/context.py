"""The workflow around a moment: its step, the nodes running, and the chat turn before it.

Read from the lake (one DuckDB query for all hits of a search), so a hit shows the lake's
current labels whatever was stored with the vectors.
"""

from __future__ import annotations

from graphlake.query.connection import Connection

_CONTEXT_SQL = """
WITH h AS (
    SELECT unnest($i) AS i, unnest($c) AS corpus, unnest($s) AS session_id, unnest($t) AS t
)
SELECT h.i,
    (SELECT st.step_id FROM steps st
      WHERE st.corpus = h.corpus AND st.session_id = h.session_id
        AND st.t_start <= h.t AND (st.t_end IS NULL OR h.t <= st.t_end)
      ORDER BY st.t_start DESC LIMIT 1) AS step_id,
    (SELECT list(struct_pack(node_id := o.node_id, label := n.label,
                             actor_type := o.actor_type) ORDER BY o.t_start, o.node_id)
       FROM node_occurrences o
       JOIN nodes n ON n.corpus = o.corpus AND n.session_id = o.session_id
        AND n.node_id = o.node_id
      WHERE o.corpus = h.corpus AND o.session_id = h.session_id
        AND o.t_start <= h.t AND h.t <= o.t_end) AS active,
    (SELECT struct_pack(event_id := e.event_id, t := e.t, actor := e.actor,
                        actor_type := e.actor_type, text := e.text)
       FROM events e
      WHERE e.corpus = h.corpus AND e.session_id = h.session_id AND e.channel = 'chat'
        AND e.t <= h.t
      ORDER BY e.t DESC, e.seq DESC LIMIT 1) AS chat_before
FROM h ORDER BY h.i
"""


def workflow_context(con: Connection, hits: list[dict]) -> list[dict]:
    """For each hit (with corpus, session_id, t): step_id, nodes (labels of the node
    occurrences running at t), node_ids, and chat_before (the last chat turn at or before t)."""
    if not hits:
        return []
    params = {
        "i": list(range(len(hits))),
        "c": [h["corpus"] for h in hits],
        "s": [h["session_id"] for h in hits],
        "t": [float(h["t"]) for h in hits],
    }
    rows = con.rows(_CONTEXT_SQL, params)
    out = []
    for row in rows:
        active = row["active"] or []
        out.append(
            {
                "step_id": row["step_id"],
                "nodes": [a["label"] for a in active],
                "node_ids": [a["node_id"] for a in active],
                "chat_before": row["chat_before"],
            }
        )
    return out
