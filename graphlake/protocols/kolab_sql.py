"""Every Kolab instance's window and context rows, computed for all instances at once in one
DuckDB statement when the protocol's index is built (the fast path of ``kolab.build``).

Cutting a context in Python costs converting the session's rows from Arrow for every instance;
here the join does the cutting for all instances together, so an instance fetch only renders
the few rows already chosen. The rule is the one ``SessionData.graph`` and ``SessionData.chat``
apply, and ``tests/test_protocols.py`` checks that both choose the same rows for every instance
and condition (as ``kolab_fast`` and the record parser are checked on ingest):

* a node enters when one of its occurrences started before the cut-off and ends at or after
  the window's start (or it is the target AI node and started by the cut-off), with its
  earliest such start; sessions without occurrence rows use the node rows' own times;
* an action edge enters when both its ends did;
* a chat message enters when it was sent in [t0, cut-off).

The lists are aggregated unordered (an ordered list aggregate sorts every group and was 3x
slower at 100k sessions); ``ordered_context`` puts one instance's few rows in order.
"""

from __future__ import annotations

#: Windows (Kolab Table 4) over the target rows ``t`` of each protocol: adds t0, cutoff,
#: keep_node (the node exempt from the start rule).
WINDOWS = {
    "kolab-1a": "t.t_source AS t0, coalesce(t.response_t_end, t.ai_t_end) AS cutoff",
    "kolab-1b": "t.t_source AS t0, t.ai_t_end AS cutoff",
    "kolab-1c": "least(t.t_source, coalesce(kb.t_start, t.t_source)) AS t0, t.ai_t_end AS cutoff",
    "kolab-1d": "least(0.0, coalesce(fs.first_start, 0.0)) AS t0, t.ai_t_end AS cutoff",
    "kolab-2a": "st.t_start AS t0, st.t_end AS cutoff",
    "kolab-2b": "st.t_start AS t0, st.t_end AS cutoff",
}

_STEP_NAME = (
    "CASE WHEN {s}.step_id IS NULL THEN coalesce({ref}, '') ELSE "
    "coalesce(nullif({s}.name, ''), nullif({s}.badge, ''), {s}.step_id) END"
)

_PICKED = """
    SELECT t.corpus, t.session_id, t.target, o.node_id, min(o.t_start) AS t_first
    FROM t JOIN occ o ON o.corpus = t.corpus AND o.session_id = t.session_id
    WHERE o.t_start IS NOT NULL AND (
        (o.t_start < t.cutoff AND coalesce(o.t_end, o.t_start) >= t.t0)
        OR (o.node_id = t.keep_node AND o.t_start <= t.cutoff))
    GROUP BY t.corpus, t.session_id, t.target, o.node_id"""

_G_NODES = """
    SELECT p.corpus, p.session_id, p.target,
           list({{'node_id': p.node_id, 'step_id': n.step_id, 'actor_type': n.actor_type,
                  'actor': n.actor, 'label': n.label, 'detail': n.detail,
                  't_start': p.t_first}}) AS ctx_nodes
    FROM picked p JOIN nodes n ON n.corpus = p.corpus AND n.session_id = p.session_id
         AND n.node_id = p.node_id
    GROUP BY p.corpus, p.session_id, p.target"""

_G_EDGES = """
    SELECT a.corpus, a.session_id, a.target,
           list({{'src': e.src, 'dst': e.dst, 'kind': e.kind, 'edge_id': e.edge_id}})
               AS ctx_edges
    FROM picked a JOIN edges e ON e.corpus = a.corpus AND e.session_id = a.session_id
         AND e.src = a.node_id AND e.level = 'action'
    JOIN picked b ON b.corpus = a.corpus AND b.session_id = a.session_id
         AND b.target = a.target AND b.node_id = e.dst
    GROUP BY a.corpus, a.session_id, a.target"""

_G_CHAT = """
    SELECT t.corpus, t.session_id, t.target,
           list({{'event_id': e.event_id, 't': e.t, 'actor_type': e.actor_type,
                  'text': e.text, 'seq': e.seq}}) AS ctx_chat
    FROM t JOIN events e ON e.corpus = t.corpus AND e.session_id = t.session_id
    WHERE e.kind = 'message' AND e.t IS NOT NULL AND e.t >= t.t0 AND e.t < t.cutoff
    GROUP BY t.corpus, t.session_id, t.target"""

_SQL = """
WITH t0_ AS ({targets}),
k_back AS (  -- kolab-1c: the k-th step before the AI node's step (the first, when fewer)
    SELECT t.corpus, t.session_id, t.target, s.t_start,
           row_number() OVER (PARTITION BY t.corpus, t.session_id, t.target
                              ORDER BY s.ordinal DESC, s.step_id DESC) AS rn,
           count(*) OVER (PARTITION BY t.corpus, t.session_id, t.target) AS n
    FROM t0_ t JOIN steps a ON a.corpus = t.corpus AND a.session_id = t.session_id
         AND a.step_id = {ai_step}
    JOIN steps s ON s.corpus = t.corpus AND s.session_id = t.session_id
         AND s.ordinal < a.ordinal AND s.t_start IS NOT NULL
    WHERE $k IS NOT NULL),
first_start AS (
    SELECT corpus, session_id, min(t_start) AS first_start FROM steps WHERE corpus = $corpus
    GROUP BY corpus, session_id),
t AS (
    SELECT t.*, {window}, {keep} AS keep_node
    FROM t0_ t
    LEFT JOIN k_back kb ON kb.corpus = t.corpus AND kb.session_id = t.session_id
         AND kb.target = t.target AND kb.rn = least($k, kb.n)
    LEFT JOIN first_start fs ON fs.corpus = t.corpus AND fs.session_id = t.session_id
    LEFT JOIN steps st ON st.corpus = t.corpus AND st.session_id = t.session_id
         AND st.step_id = t.target),
occ AS (
    SELECT corpus, session_id, node_id, t_start, t_end FROM node_occurrences
    WHERE corpus = $corpus
    UNION ALL
    SELECT n.corpus, n.session_id, n.node_id, n.t_start, n.t_end FROM nodes n
    WHERE n.corpus = $corpus AND NOT EXISTS (
        SELECT 1 FROM node_occurrences o WHERE o.corpus = n.corpus
        AND o.session_id = n.session_id)),
picked AS (
{picked}),
g_nodes AS (
{g_nodes}),
g_edges AS (
{g_edges}),
g_chat AS (
{g_chat}),
info AS (
    SELECT s.corpus, s.session_id,
           coalesce(nullif(s.goal, ''), nullif((SELECT any_value(sc.goal) FROM scenarios sc
               WHERE sc.corpus = s.corpus AND sc.scenario_id = s.scenario_id), ''),
               nullif(s.title, ''), '') AS goal,
           coalesce(nullif(json_extract_string(s.attrs, '$.meta.occupation'), ''),
                    nullif(s.domain, '') || ' professional', 'professional') AS occupation
    FROM sessions s WHERE s.corpus = $corpus),
media AS (
    SELECT corpus, session_id, min(media_id) AS media_id,
           arg_min(duration_s, media_id) AS media_duration_s
    FROM media WHERE corpus = $corpus GROUP BY corpus, session_id)
SELECT t.*, coalesce(gn.ctx_nodes, []) AS ctx_nodes, coalesce(ge.ctx_edges, []) AS ctx_edges,
       coalesce(gc.ctx_chat, []) AS ctx_chat, i.goal,
       CASE WHEN lower(left(i.occupation, 1)) IN ('a', 'e', 'i', 'o', 'u') THEN 'an '
            ELSE 'a ' END || i.occupation AS profession,
       {ai_step_name} AS ai_step_name, {user_step_name} AS user_step_name,
       {target_step_name} AS target_step_name, m.media_id, m.media_duration_s
FROM t
LEFT JOIN g_nodes gn ON gn.corpus = t.corpus AND gn.session_id = t.session_id
     AND gn.target = t.target
LEFT JOIN g_edges ge ON ge.corpus = t.corpus AND ge.session_id = t.session_id
     AND ge.target = t.target
LEFT JOIN g_chat gc ON gc.corpus = t.corpus AND gc.session_id = t.session_id
     AND gc.target = t.target
LEFT JOIN info i ON i.corpus = t.corpus AND i.session_id = t.session_id
LEFT JOIN steps sa ON sa.corpus = t.corpus AND sa.session_id = t.session_id
     AND sa.step_id = {ai_step}
LEFT JOIN steps sr ON sr.corpus = t.corpus AND sr.session_id = t.session_id
     AND sr.step_id = {user_step}
LEFT JOIN steps sg ON sg.corpus = t.corpus AND sg.session_id = t.session_id
     AND sg.step_id = t.target
LEFT JOIN media m ON m.corpus = t.corpus AND m.session_id = t.session_id
"""


#: Protocols whose windows are short enough to hold every instance's rows in the index (1c and
#: 1d span whole steps or the workflow so far: 85 s and gigabytes at 100k sessions; their
#: contexts are cut from the session's rows per fetch instead).
PRECOMPUTED = frozenset({"kolab-1a", "kolab-1b", "kolab-2a", "kolab-2b"})
_NONE = (
    "SELECT NULL::VARCHAR AS corpus, NULL::VARCHAR AS session_id, NULL::VARCHAR AS "
    "target, {cols} WHERE false"
)


def with_contexts(pid: str, targets: str, rating: bool) -> str:
    """``targets`` (the protocol's instance rows) with their window, session facts and, for
    the protocols in ``PRECOMPUTED``, their context rows."""
    ai, user = ("NULL", "NULL") if rating else ("t.ai_step", "t.response_step")
    if pid in PRECOMPUTED:
        parts = {"picked": _PICKED, "g_nodes": _G_NODES, "g_edges": _G_EDGES, "g_chat": _G_CHAT}
    else:
        parts = {
            "picked": _NONE.format(cols="NULL::VARCHAR AS node_id"),
            "g_nodes": _NONE.format(cols="NULL AS ctx_nodes"),
            "g_edges": _NONE.format(cols="NULL AS ctx_edges"),
            "g_chat": _NONE.format(cols="NULL AS ctx_chat"),
        }
    return _SQL.format(
        **{k: v.replace("{{", "{").replace("}}", "}") for k, v in parts.items()},
        targets=targets,
        window=WINDOWS[pid],
        keep="NULL" if rating else "t.ai_node",
        ai_step=ai,
        user_step=user,
        ai_step_name=_STEP_NAME.format(s="sa", ref=ai),
        user_step_name=_STEP_NAME.format(s="sr", ref=user),
        target_step_name=_STEP_NAME.format(s="sg", ref="t.target"),
    )


def ordered_context(ref: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """One instance's nodes (by first start, then id), action edges (by edge_id) and chat turns
    (by time, order, id), in the order ``SessionData`` gives them."""
    nodes = sorted(ref["ctx_nodes"], key=lambda n: (n["t_start"], n["node_id"]))
    edges = [
        {k: e[k] for k in ("src", "dst", "kind")}
        for e in sorted(ref["ctx_edges"], key=lambda e: e["edge_id"])
    ]
    turns = [
        {k: m[k] for k in ("event_id", "t", "actor_type", "text")}
        for m in sorted(
            ref["ctx_chat"], key=lambda m: (m["t"], m["seq"] is None, m["seq"] or 0, m["event_id"])
        )
    ]
    return nodes, edges, turns
