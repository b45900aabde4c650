-- view: adoptions
-- description: one adopt/modify/reject triple with the three nodes' steps and resolved occurrence times
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
