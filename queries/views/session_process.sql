-- view: session_process
-- description: one row per session with events: turns, tool calls, human and agent steps, human intervention rate, initiative entropy and tokens (HAS-Bench 4.3)
WITH steps AS (
    SELECT corpus, session_id, actor, actor_type, kind,
           coalesce(CAST(json_extract(attrs, '$.usage.prompt_tokens') AS BIGINT), 0)
           + coalesce(CAST(json_extract(attrs, '$.usage.completion_tokens') AS BIGINT), 0)
               AS tokens
    FROM events
    WHERE kind IN ('message', 'tool_call')
),
by_actor AS (
    SELECT corpus, session_id, actor, count(*) AS n FROM steps GROUP BY ALL
),
entropy AS (
    SELECT corpus, session_id,
           -sum((n / total) * log2(n / total)) AS initiative_entropy
    FROM (SELECT *, sum(n) OVER (PARTITION BY corpus, session_id) AS total FROM by_actor)
    GROUP BY corpus, session_id
)
SELECT s.corpus, s.session_id,
       count(*) FILTER (WHERE s.kind = 'message') AS turns,
       count(*) FILTER (WHERE s.kind = 'tool_call') AS tool_calls,
       count(*) FILTER (WHERE s.actor_type = 'human') AS human_steps,
       count(*) FILTER (WHERE s.actor_type = 'ai') AS agent_steps,
       count(*) FILTER (WHERE s.actor_type = 'human') / count(*) AS human_intervention_rate,
       any_value(e.initiative_entropy) AS initiative_entropy,
       sum(s.tokens) AS tokens
FROM steps s
JOIN entropy e ON e.corpus = s.corpus AND e.session_id = s.session_id
GROUP BY s.corpus, s.session_id
