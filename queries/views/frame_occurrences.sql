-- view: frame_occurrences
-- description: each frame with the node occurrences whose interval overlaps the time it was on screen ([t, t_end)); active_at_t marks those running at the frame's own time t
SELECT f.corpus, f.session_id, f.frame_id, f.media_id, f.t, f.t_end,
       o.node_id, o.seq, o.step_id, o.actor_type,
       o.t_start AS occurrence_t_start, o.t_end AS occurrence_t_end,
       (o.t_start <= f.t AND f.t <= o.t_end) AS active_at_t
FROM frames f
JOIN node_occurrences o
  ON o.corpus = f.corpus AND o.session_id = f.session_id
 AND o.t_start < f.t_end AND o.t_end >= f.t
