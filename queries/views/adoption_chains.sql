-- view: adoption_chains
-- description: one request followed through every AI output and response it led to, across steps
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
