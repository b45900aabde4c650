-- name: almanac_action_types
-- title: Almanac action-type distribution per role and condition (Almanac 3.3.2)
-- description: One row per (condition, role, action type): how many actions of that type, and their share of the role's actions in that condition.
-- param: corpus text = almanac | The corpus holding Almanac sessions.
WITH a AS (
    SELECT s.condition, p.role, e.kind, count(*) AS n
    FROM events e
    JOIN sessions s ON s.corpus = e.corpus AND s.session_id = e.session_id
    JOIN participants p ON p.corpus = e.corpus AND p.session_id = e.session_id
         AND p.participant_id = e.actor
    WHERE e.corpus = $corpus AND e.kind IN ('message', 'draw', 'erase', 'undo', 'reset')
    GROUP BY ALL
)
SELECT condition, role, kind AS action, n,
       round(n / sum(n) OVER (PARTITION BY condition, role), 4) AS share
FROM a
ORDER BY condition, role, action
