-- view: co_occurrence_overflow
-- description: sessions co_occurrences leaves out, so that it cannot grow as the square: those whose overlapping occurrence pairs exceed co_occurrence_cap() ($GRAPHLAKE_CO_OCCURRENCE_CAP, 1,000,000 ordered pairs a session; limit_kind 'session'), and, when the rest would exceed co_occurrence_lake_cap() rows for the whole lake ($GRAPHLAKE_CO_OCCURRENCE_LAKE_CAP, 20,000,000), the sessions with the most pairs until the others fit (limit_kind 'lake'); read their overlaps with window_nodes() instead
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
),
-- the sessions under the per-session cap, smallest first: those whose running total of
-- pairs passes the lake's cap are left out (the largest go, the most sessions stay)
ranked AS (
    SELECT *, sum(overlapping_pairs) OVER (
               ORDER BY overlapping_pairs, corpus, session_id
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running
    FROM counted
    WHERE overlapping_pairs > 0 AND overlapping_pairs <= co_occurrence_cap()
)
SELECT corpus, session_id, occurrences, overlapping_pairs,
       CAST(co_occurrence_cap() AS BIGINT) AS cap, 'session' AS limit_kind
FROM counted
WHERE overlapping_pairs > co_occurrence_cap()
UNION ALL
SELECT corpus, session_id, occurrences, overlapping_pairs,
       CAST(co_occurrence_lake_cap() AS BIGINT) AS cap, 'lake' AS limit_kind
FROM ranked
WHERE running > co_occurrence_lake_cap()
