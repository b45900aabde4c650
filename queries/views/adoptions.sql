-- view: adoptions
-- description: one adopt/modify/reject triple with the three nodes' steps and resolved occurrence times
WITH a AS (
    SELECT corpus, session_id, annotation_id, source_node, ai_node, response_node, label,
           source_seq, ai_seq, response_seq
    FROM annotations WHERE kind = 'adoption'
),
-- the three ends of every triple as rows, so nodes and occurrences are each joined once
-- (one row per end and role, so max() below just picks it)
ends AS (
    SELECT corpus, session_id, annotation_id, 0 AS role, source_node AS node_id,
           source_seq AS seq FROM a WHERE source_node IS NOT NULL
    UNION ALL
    SELECT corpus, session_id, annotation_id, 1, ai_node, ai_seq FROM a
    UNION ALL
    SELECT corpus, session_id, annotation_id, 2, response_node, response_seq FROM a
    WHERE response_node IS NOT NULL
),
resolved AS (
    SELECT e.corpus, e.session_id, e.annotation_id, e.role, n.step_id, n.actor,
           coalesce(o.t_start, n.t_start) AS t_start, coalesce(o.t_end, n.t_end) AS t_end
    FROM ends e
    LEFT JOIN nodes n ON n.corpus = e.corpus AND n.session_id = e.session_id
         AND n.node_id = e.node_id
    LEFT JOIN node_occurrences o ON o.corpus = e.corpus AND o.session_id = e.session_id
         AND o.node_id = e.node_id AND o.seq = e.seq
),
per_annotation AS (
    SELECT corpus, session_id, annotation_id,
           max(actor) FILTER (WHERE role = 1) AS ai_actor,
           max(step_id) FILTER (WHERE role = 0) AS source_step,
           max(step_id) FILTER (WHERE role = 1) AS ai_step,
           max(step_id) FILTER (WHERE role = 2) AS response_step,
           max(t_start) FILTER (WHERE role = 0) AS source_t_start,
           max(t_end) FILTER (WHERE role = 0) AS source_t_end,
           max(t_start) FILTER (WHERE role = 1) AS ai_t_start,
           max(t_end) FILTER (WHERE role = 1) AS ai_t_end,
           max(t_start) FILTER (WHERE role = 2) AS response_t_start,
           max(t_end) FILTER (WHERE role = 2) AS response_t_end
    FROM resolved GROUP BY corpus, session_id, annotation_id
)
SELECT a.corpus, a.session_id, a.annotation_id, a.source_node, a.ai_node, a.response_node,
       a.label, p.ai_actor, p.source_step, p.ai_step, p.response_step,
       p.source_t_start, p.source_t_end, p.ai_t_start, p.ai_t_end,
       p.response_t_start, p.response_t_end,
       p.ai_step IS DISTINCT FROM p.response_step AS cross_step
FROM a JOIN per_annotation p ON p.corpus = a.corpus AND p.session_id = a.session_id
     AND p.annotation_id = a.annotation_id
