-- view: event_frames
-- description: each event with the frame on screen when it happened (the kept frame whose [t, t_end) holds the event's time)
SELECT e.corpus, e.session_id, e.event_id, e.t, e.kind, e.actor, e.node_id,
       f.frame_id, f.media_id, f.t AS frame_t, f.t_end AS frame_t_end
FROM events e
JOIN frames f
  ON f.corpus = e.corpus AND f.session_id = e.session_id
 AND e.t >= f.t AND e.t < f.t_end
