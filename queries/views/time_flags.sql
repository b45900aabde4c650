-- view: time_flags
-- description: times that look wrong, one row per record and flag, so they can be found rather than silently trusted (nothing is changed or dropped): events that go backwards (earlier than the event before them in their source's order), times before the session start or over 30 days after it, absolute timestamps before 1990 or after 2100, and node occurrences that end before they start
WITH ordered AS (
    SELECT corpus, session_id, event_id, seq, t, timestamp,
           lag(t) OVER (PARTITION BY corpus, session_id ORDER BY seq) AS previous_t
    FROM events
)
SELECT corpus, session_id, 'events' AS source_table, event_id AS record_id, t,
       'backwards' AS flag, previous_t AS compared_with
FROM ordered WHERE t < previous_t
UNION ALL
SELECT corpus, session_id, 'events', event_id, t, 'before_session_start', 0.0
FROM events WHERE t < 0
UNION ALL
SELECT corpus, session_id, 'events', event_id, t, 'over_30_days_in', 2592000.0
FROM events WHERE t > 2592000
UNION ALL
SELECT corpus, session_id, 'events', event_id, t, 'timestamp_out_of_range', NULL
FROM events
WHERE timestamp < CAST('1990-01-01' AS TIMESTAMPTZ)
   OR timestamp > CAST('2100-01-01' AS TIMESTAMPTZ)
UNION ALL
SELECT corpus, session_id, 'node_occurrences', node_id || '#' || CAST(seq AS VARCHAR), t_start,
       'before_session_start', 0.0
FROM node_occurrences WHERE t_start < 0
UNION ALL
SELECT corpus, session_id, 'node_occurrences', node_id || '#' || CAST(seq AS VARCHAR), t_start,
       'over_30_days_in', 2592000.0
FROM node_occurrences WHERE t_start > 2592000
UNION ALL
SELECT corpus, session_id, 'node_occurrences', node_id || '#' || CAST(seq AS VARCHAR), t_start,
       'ends_before_start', t_end
FROM node_occurrences WHERE t_end < t_start
