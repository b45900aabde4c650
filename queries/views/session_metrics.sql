-- view: session_metrics
-- description: one row per session: the collaboration dynamics of Kolab 4.2 (burstiness B, topology W, retention R_A / R_M, solo lead-in, ratings) and the counts behind them; docs/metrics.md says what each counts
WITH sess AS (
    SELECT corpus, session_id, domain, title
    FROM sessions
),
-- B: inter-event intervals between the starts of AI node occurrences (each is one
-- human-agent interaction: the agent acting on a request), in time order.
ai_occ AS (
    SELECT corpus, session_id, t_start, step_id
    FROM node_occurrences
    WHERE actor_type = 'ai' AND t_start IS NOT NULL
),
gaps AS (
    SELECT corpus, session_id,
           t_start - lag(t_start) OVER (PARTITION BY corpus, session_id ORDER BY t_start) AS gap
    FROM ai_occ
),
burst AS (
    SELECT corpus, session_id, count(gap) AS n_intervals,
           avg(gap) AS mu, stddev_pop(gap) AS sigma
    FROM gaps GROUP BY corpus, session_id
),
-- W: branch nodes (more than one distinct successor: nodes.out_degree, counted at ingest
-- from the same action-level edges) over the number of action-level edges.
topo AS (
    SELECT corpus, session_id, count(*) AS n_edges
    FROM edges WHERE level = 'action'
    GROUP BY corpus, session_id
),
-- R_A, R_M: adoption annotations (one per user_response tuple).
ret AS (
    SELECT corpus, session_id, count(*) AS n_responses,
           count(*) FILTER (WHERE label = 'adopt') AS n_adopt,
           count(*) FILTER (WHERE label = 'modify') AS n_modify,
           count(*) FILTER (WHERE label = 'reject') AS n_reject
    FROM annotations WHERE kind = 'adoption'
    GROUP BY corpus, session_id
),
-- Solo lead-in: per step segment, the share of the segment elapsed before its first AI
-- occurrence (1.0 when the segment has none), averaged over the session's timed segments.
first_ai AS (
    SELECT corpus, session_id, step_id, min(t_start) AS t_first
    FROM ai_occ GROUP BY corpus, session_id, step_id
),
lead AS (
    SELECT s.corpus, s.session_id, count(*) AS n_steps,
           avg(CASE WHEN s.t_end > s.t_start THEN
                    least(1.0, greatest(0.0,
                        (coalesce(f.t_first, s.t_end) - s.t_start) / (s.t_end - s.t_start)))
               END) AS solo_lead_in
    FROM steps s
    LEFT JOIN first_ai f ON f.corpus = s.corpus AND f.session_id = s.session_id
         AND f.step_id = s.step_id
    GROUP BY s.corpus, s.session_id
),
node_counts AS (
    SELECT corpus, session_id, count(*) AS n_nodes,
           count(*) FILTER (WHERE actor_type = 'ai') AS n_ai_nodes,
           count(*) FILTER (WHERE out_degree > 1) AS n_branch_nodes
    FROM nodes GROUP BY corpus, session_id
),
rating AS (
    SELECT corpus, session_id,
           avg(value) FILTER (WHERE label = 'collaboration') AS collaboration_rating,
           avg(value) FILTER (WHERE label = 'output_quality') AS output_quality_rating
    FROM annotations WHERE kind = 'rating'
    GROUP BY corpus, session_id
)
SELECT sess.corpus, sess.session_id, sess.domain, sess.title,
       CASE WHEN burst.n_intervals >= 2 AND burst.sigma + burst.mu > 0
            THEN (burst.sigma - burst.mu) / (burst.sigma + burst.mu) END AS burstiness,
       CASE WHEN topo.n_edges > 0 THEN node_counts.n_branch_nodes / topo.n_edges END
           AS topology_w,
       CASE WHEN ret.n_responses > 0 THEN ret.n_adopt / ret.n_responses END AS retention_adopt,
       CASE WHEN ret.n_responses > 0 THEN ret.n_modify / ret.n_responses END AS retention_modify,
       lead.solo_lead_in,
       rating.collaboration_rating, rating.output_quality_rating,
       coalesce(lead.n_steps, 0) AS n_steps,
       coalesce(node_counts.n_nodes, 0) AS n_nodes,
       coalesce(node_counts.n_ai_nodes, 0) AS n_ai_nodes,
       coalesce(topo.n_edges, 0) AS n_edges,
       coalesce(node_counts.n_branch_nodes, 0) AS n_branch_nodes,
       coalesce(burst.n_intervals, 0) + CASE WHEN burst.n_intervals IS NULL THEN 0 ELSE 1 END
           AS n_interactions,
       coalesce(ret.n_responses, 0) AS n_responses,
       coalesce(ret.n_adopt, 0) AS n_adopt,
       coalesce(ret.n_modify, 0) AS n_modify,
       coalesce(ret.n_reject, 0) AS n_reject
FROM sess
LEFT JOIN burst ON burst.corpus = sess.corpus AND burst.session_id = sess.session_id
LEFT JOIN topo ON topo.corpus = sess.corpus AND topo.session_id = sess.session_id
LEFT JOIN ret ON ret.corpus = sess.corpus AND ret.session_id = sess.session_id
LEFT JOIN lead ON lead.corpus = sess.corpus AND lead.session_id = sess.session_id
LEFT JOIN node_counts ON node_counts.corpus = sess.corpus
     AND node_counts.session_id = sess.session_id
LEFT JOIN rating ON rating.corpus = sess.corpus AND rating.session_id = sess.session_id
