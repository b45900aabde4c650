-- name: has_process
-- title: Process metrics per session (HAS-Bench 4.3): human intervention rate, initiative entropy, interaction cost
-- description: One row per session with events. Steps are messages and tool calls (tool results are the environment answering, not a step). Human intervention rate = human steps / all steps. Initiative entropy = Shannon entropy (bits) of the share of steps each participant initiated. Tokens sum the prompt and completion tokens recorded on messages (attrs.usage).
-- param: corpus text = NULL | Only this corpus (all when omitted).
WITH steps AS (
    SELECT corpus, session_id, actor, actor_type, kind,
           coalesce(CAST(json_extract(attrs, '$.usage.prompt_tokens') AS BIGINT), 0)
           + coalesce(CAST(json_extract(attrs, '$.usage.completion_tokens') AS BIGINT), 0)
               AS tokens
    FROM events
    WHERE kind IN ('message', 'tool_call') AND corpus = coalesce($corpus, corpus)
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
ORDER BY s.corpus, s.session_id
