-- view: run_outcomes
-- description: one row per scenario episode (sessions with a scenario_id): the run it belongs to (run_id, see runs), domain, condition, agent, termination, and the outcome: success (a 'pass' or 'reward' outcome of 1), partial-credit score, delivered, safety
WITH runs AS (
    SELECT s.corpus, s.session_id, s.run_id, s.scenario_id,
           coalesce(s.domain, '(none)') AS domain,
           coalesce(s.condition, '(none)') AS condition,
           coalesce(p.name, '(unknown)') AS agent,
           json_extract_string(s.attrs, '$.termination_reason') AS termination
    FROM sessions s
    LEFT JOIN (SELECT corpus, session_id, string_agg(DISTINCT name, ' + ' ORDER BY name) AS name
               FROM participants WHERE role = 'agent' GROUP BY corpus, session_id) p
         ON p.corpus = s.corpus AND p.session_id = s.session_id
    WHERE s.scenario_id IS NOT NULL
),
outcome AS (
    SELECT corpus, session_id,
           max(value) FILTER (WHERE label IN ('pass', 'reward')) >= 1 AS success,
           coalesce(avg(value) FILTER (WHERE label LIKE 'reward_breakdown:%'
                                           OR label LIKE 'dimension:%'),
                    max(value) FILTER (WHERE label IN ('task_score', 'reward'))) AS score,
           max(value) FILTER (WHERE label = 'delivered') AS delivered,
           avg(value) FILTER (WHERE label = 'safety') AS safety
    FROM annotations WHERE kind = 'outcome'
    GROUP BY corpus, session_id
)
SELECT r.*, coalesce(o.success, false) AS success, o.score, o.safety,
       coalesce(o.delivered >= 1,
                r.termination IN ('user_stop', 'agent_stop', 'delivered')) AS delivered
FROM runs r LEFT JOIN outcome o ON o.corpus = r.corpus AND o.session_id = r.session_id
