-- name: almanac_alignment_progress
-- title: Almanac alignment over task progress (the Figure 4 series)
-- description: Per condition and role, actions binned by progress (the action's time over its session's last action time, in quarters 1-4), with the share annotated 'aligned' among those that carry an alignment label.
-- param: corpus text = almanac | The corpus holding Almanac sessions.
WITH acts AS (
    SELECT e.session_id, e.event_id, e.t, p.role, s.condition,
           max(e.t) OVER (PARTITION BY e.session_id) AS t_max
    FROM events e
    JOIN sessions s ON s.corpus = e.corpus AND s.session_id = e.session_id
    JOIN participants p ON p.corpus = e.corpus AND p.session_id = e.session_id
         AND p.participant_id = e.actor
    WHERE e.corpus = $corpus
),
labelled AS (
    SELECT a.*, m.text AS alignment,
           CASE WHEN a.t_max > 0 THEN least(4, 1 + floor(4 * a.t / a.t_max))::INTEGER
                ELSE 1 END AS quarter
    FROM acts a
    JOIN annotations m ON m.corpus = $corpus AND m.session_id = a.session_id
         AND m.target_id = a.event_id AND m.kind = 'mental_model' AND m.label = 'alignment'
)
SELECT condition, role, quarter, count(*) AS n,
       round(avg((alignment = 'aligned')::INT), 4) AS aligned_share
FROM labelled
GROUP BY condition, role, quarter
ORDER BY condition, role, quarter
