-- view: co_occurrence_overflow
-- description: sessions whose overlapping occurrence pairs exceed co_occurrence_cap() ($GRAPHLAKE_CO_OCCURRENCE_CAP, 1,000,000 ordered pairs a session): co_occurrences leaves them out, so one session of thousands of mutually overlapping nodes cannot grow it quadratically; read their overlaps with window_nodes() instead
-- The pairs are counted without forming them, in one sort per session: an occurrence o
-- overlaps every p with p.t_start < o.t_end, except those with p.t_end <= o.t_start. Over all
-- starts and ends in time order (an end before a start at the same time), the first count is
-- the starts seen before each end, the second the ends seen up to each start.
WITH marks AS (
    SELECT corpus, session_id, t_start AS t, 1 AS is_start, CAST(t_start < t_end AS INTEGER) AS self
    FROM node_occurrences WHERE t_start IS NOT NULL AND t_end IS NOT NULL
    UNION ALL
    SELECT corpus, session_id, t_end, 0, 0
    FROM node_occurrences WHERE t_start IS NOT NULL AND t_end IS NOT NULL
),
swept AS (
    SELECT corpus, session_id, is_start, self,
           sum(is_start) OVER w AS starts_so_far,
           sum(1 - is_start) OVER w AS ends_so_far
    FROM marks
    WINDOW w AS (PARTITION BY corpus, session_id ORDER BY t, is_start
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
counted AS (
    SELECT corpus, session_id, CAST(sum(is_start) AS BIGINT) AS occurrences,
           CAST(sum(CASE WHEN is_start = 0 THEN starts_so_far ELSE 0 END)
                - sum(CASE WHEN is_start = 1 THEN ends_so_far ELSE 0 END)
                - sum(self) AS BIGINT) AS overlapping_pairs
    FROM swept
    GROUP BY corpus, session_id
)
SELECT corpus, session_id, occurrences, overlapping_pairs,
       CAST(co_occurrence_cap() AS BIGINT) AS cap
FROM counted
WHERE overlapping_pairs > co_occurrence_cap()
