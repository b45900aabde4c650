-- view: adoptions
-- description: one adopt/modify/reject triple with the three nodes' steps and resolved occurrence times
-- The plan is written for the size of the join, not only for its meaning: sessions get an
-- integer key first, so the large joins match (integer, short node id) rather than three
-- strings, and the three ends of a triple are joined back one role at a time instead of
-- regrouped (a GROUP BY of every end by annotation cost more than the joins themselves).
WITH
-- one integer per session that has triples (any numbering does; the window is ordered
-- because Spark numbers rows only in an ordered window)
session_keys AS (
    SELECT corpus, session_id, row_number() OVER (ORDER BY corpus, session_id) AS sk
    FROM (SELECT DISTINCT corpus, session_id FROM annotations WHERE kind = 'adoption') s
),
a AS (
    SELECT a0.corpus, a0.session_id, a0.annotation_id, a0.source_node, a0.ai_node,
           a0.response_node, a0.label, a0.source_seq, a0.ai_seq, a0.response_seq, k.sk
    FROM annotations a0
    JOIN session_keys k ON k.corpus = a0.corpus AND k.session_id = a0.session_id
    WHERE a0.kind = 'adoption'
),
-- the three ends of every triple as rows, so nodes and occurrences are each joined once
ends AS (
    SELECT sk, annotation_id, 0 AS role, source_node AS node_id, source_seq AS seq
    FROM a WHERE source_node IS NOT NULL
    UNION ALL
    SELECT sk, annotation_id, 1, ai_node, ai_seq FROM a
    UNION ALL
    SELECT sk, annotation_id, 2, response_node, response_seq FROM a
    WHERE response_node IS NOT NULL
),
keyed_nodes AS (
    SELECT k.sk, n.node_id, n.step_id, n.actor, n.t_start, n.t_end
    FROM nodes n JOIN session_keys k ON k.corpus = n.corpus AND k.session_id = n.session_id
),
keyed_occurrences AS (
    SELECT k.sk, o.node_id, o.seq, o.t_start, o.t_end
    FROM node_occurrences o
    JOIN session_keys k ON k.corpus = o.corpus AND k.session_id = o.session_id
),
-- an end's step and actor from its node; its times from the occurrence it names, else the node's
resolved AS (
    SELECT e.sk, e.annotation_id, e.role, n.step_id, n.actor,
           coalesce(o.t_start, n.t_start) AS t_start, coalesce(o.t_end, n.t_end) AS t_end
    FROM ends e
    LEFT JOIN keyed_nodes n ON n.sk = e.sk AND n.node_id = e.node_id
    LEFT JOIN keyed_occurrences o ON o.sk = e.sk AND o.node_id = e.node_id AND o.seq = e.seq
),
-- (annotation, role) is unique in ends, and node and occurrence keys in their tables, so each
-- join below finds at most one row
src AS (SELECT * FROM resolved WHERE role = 0),
ai AS (SELECT * FROM resolved WHERE role = 1),
resp AS (SELECT * FROM resolved WHERE role = 2)
SELECT a.corpus, a.session_id, a.annotation_id, a.source_node, a.ai_node, a.response_node,
       a.label, ai.actor AS ai_actor, src.step_id AS source_step, ai.step_id AS ai_step,
       resp.step_id AS response_step,
       src.t_start AS source_t_start, src.t_end AS source_t_end,
       ai.t_start AS ai_t_start, ai.t_end AS ai_t_end,
       resp.t_start AS response_t_start, resp.t_end AS response_t_end,
       ai.step_id IS DISTINCT FROM resp.step_id AS cross_step
FROM a
LEFT JOIN src ON src.sk = a.sk AND src.annotation_id = a.annotation_id
LEFT JOIN ai ON ai.sk = a.sk AND ai.annotation_id = a.annotation_id
LEFT JOIN resp ON resp.sk = a.sk AND resp.annotation_id = a.annotation_id
