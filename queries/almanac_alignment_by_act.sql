-- name: almanac_alignment_by_act
-- title: Almanac mental-model alignment by grounding act (the Figure 4 bar chart)
-- description: Per condition and grounding act (Traum 1995, as coded in Almanac 3.3.2): how many actions carry both an act and an alignment label, and the shares annotated aligned, misaligned and unsure. Acknowledgements should sit high and repairs low.
-- param: corpus text = almanac | The corpus holding Almanac sessions.
WITH acts AS (
    SELECT g.session_id, g.target_id AS event_id, g.label AS act, s.condition
    FROM annotations g
    JOIN sessions s ON s.corpus = g.corpus AND s.session_id = g.session_id
    WHERE g.corpus = $corpus AND g.kind = 'grounding_act'
),
labelled AS (
    SELECT a.*, m.text AS alignment
    FROM acts a
    JOIN annotations m ON m.corpus = $corpus AND m.session_id = a.session_id
         AND m.target_id = a.event_id AND m.kind = 'mental_model' AND m.label = 'alignment'
)
SELECT condition, act, count(*) AS n,
       round(avg(CASE WHEN alignment = 'aligned' THEN 1.0 ELSE 0.0 END), 4) AS aligned_share,
       round(avg(CASE WHEN alignment = 'misaligned' THEN 1.0 ELSE 0.0 END), 4)
           AS misaligned_share,
       round(avg(CASE WHEN alignment = 'unsure' THEN 1.0 ELSE 0.0 END), 4) AS unsure_share
FROM labelled
GROUP BY condition, act
ORDER BY condition, aligned_share DESC, act
