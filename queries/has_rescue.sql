-- name: has_rescue
-- title: HAS-Bench Table 4: outcomes under two conditions, their deltas, and the rescue rate
-- description: Per corpus, domain and agent, comparing from_condition with to_condition (e.g. A1 and A3). pass@1 is the mean per-scenario success rate (c / n) under each condition and task score the mean partial credit, each with its delta (to - from). Rescue rate: among the scenarios that fail under from_condition and were also run under to_condition, the share that succeed under to_condition; a scenario succeeds under a condition when the majority of its runs there succeed (with one run per condition, as in the paper, that run). Broken: succeeded under from, fail under to. delivery_rate_to and human_interaction_rate_to are the process columns (DR, HIR) under to_condition. The two conditions are usually two runs; runs names every run a row pools (runs table).
-- param: from_condition text | Condition the tasks failed under (e.g. A1).
-- param: to_condition text | Condition that may rescue them (e.g. A3).
-- param: corpus text = NULL | Only this corpus (all when omitted).
WITH runs AS (
    SELECT r.*, p.human_intervention_rate
    FROM run_outcomes r
    LEFT JOIN session_process p ON p.corpus = r.corpus AND p.session_id = r.session_id
    WHERE r.condition IN ($from_condition, $to_condition)
      AND r.corpus = coalesce($corpus, r.corpus)
),
verdict AS (
    SELECT corpus, domain, agent, scenario_id, condition,
           avg(CASE WHEN success THEN 1.0 ELSE 0.0 END) AS pass_rate,
           avg(CASE WHEN success THEN 1.0 ELSE 0.0 END) > 0.5 AS succeeded
    FROM runs GROUP BY corpus, domain, agent, scenario_id, condition
),
paired AS (
    SELECT f.corpus, f.domain, f.agent, f.scenario_id, f.succeeded AS before,
           t.succeeded AS after
    FROM verdict f JOIN verdict t ON t.corpus = f.corpus AND t.domain = f.domain
         AND t.agent = f.agent AND t.scenario_id = f.scenario_id
    WHERE f.condition = $from_condition AND t.condition = $to_condition
),
rescue AS (
    SELECT corpus, domain, agent,
           count(*) FILTER (WHERE NOT before) AS failed_before,
           count(*) FILTER (WHERE NOT before AND after) AS rescued,
           count(*) FILTER (WHERE before AND NOT after) AS broken
    FROM paired GROUP BY corpus, domain, agent
),
per_condition AS (
    SELECT v.corpus, v.domain, v.agent,
           avg(v.pass_rate) FILTER (WHERE v.condition = $from_condition) AS pass_at_1_from,
           avg(v.pass_rate) FILTER (WHERE v.condition = $to_condition) AS pass_at_1_to
    FROM verdict v GROUP BY v.corpus, v.domain, v.agent
),
per_run AS (
    SELECT corpus, domain, agent,
           avg(score) FILTER (WHERE condition = $from_condition) AS task_score_from,
           avg(score) FILTER (WHERE condition = $to_condition) AS task_score_to,
           avg(CASE WHEN delivered THEN 1.0 ELSE 0.0 END)
               FILTER (WHERE condition = $to_condition) AS delivery_rate_to,
           avg(human_intervention_rate) FILTER (WHERE condition = $to_condition)
               AS human_interaction_rate_to,
           string_agg(DISTINCT coalesce(run_id, '(none)'), ', '
                      ORDER BY coalesce(run_id, '(none)')) AS runs
    FROM runs GROUP BY corpus, domain, agent
)
SELECT c.corpus, c.domain, c.agent,
       c.pass_at_1_from, c.pass_at_1_to, c.pass_at_1_to - c.pass_at_1_from AS pass_at_1_delta,
       r.task_score_from, r.task_score_to, r.task_score_to - r.task_score_from
           AS task_score_delta,
       coalesce(x.failed_before, 0) AS failed_before, coalesce(x.rescued, 0) AS rescued,
       coalesce(x.broken, 0) AS broken,
       CASE WHEN x.failed_before > 0 THEN x.rescued / x.failed_before END AS rescue_rate,
       r.delivery_rate_to, r.human_interaction_rate_to, r.runs
FROM per_condition c
JOIN per_run r ON r.corpus = c.corpus AND r.domain = c.domain AND r.agent = c.agent
LEFT JOIN rescue x ON x.corpus = c.corpus AND x.domain = c.domain AND x.agent = c.agent
ORDER BY c.corpus, c.domain, c.agent
