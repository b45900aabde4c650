-- view: co_occurrences
-- description: two occurrences of one session that overlap in time (each pair in both orders), with Allen's relation of the other to this one
-- What happened while the agent worked: the human's occurrences that overlap an AI occurrence
-- are the rows with actor_type = 'ai' and other_actor_type = 'human'. Intervals that only touch
-- (one ends as the other starts) do not overlap. Sessions in co_occurrence_overflow (more
-- pairs than co_occurrence_cap()) are left out: their rows would grow as the square.
WITH occ AS (
    SELECT n.* FROM node_occurrences n
    LEFT JOIN co_occurrence_overflow x ON x.corpus = n.corpus AND x.session_id = n.session_id
    WHERE x.session_id IS NULL
)
SELECT o.corpus, o.session_id, o.node_id, o.seq, o.actor_type, o.step_id,
       o.t_start, o.t_end,
       p.node_id AS other_node_id, p.seq AS other_seq, p.actor_type AS other_actor_type,
       p.step_id AS other_step_id, p.t_start AS other_t_start, p.t_end AS other_t_end,
       allen(p.t_start, p.t_end, o.t_start, o.t_end) AS relation
FROM occ o
JOIN occ p
  ON p.corpus = o.corpus AND p.session_id = o.session_id
 AND p.t_start < o.t_end AND o.t_start < p.t_end
WHERE p.node_id <> o.node_id OR p.seq <> o.seq
