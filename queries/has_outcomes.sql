-- name: has_outcomes
-- title: Outcome metrics per run, agent and condition (HAS-Bench 4.3): pass@k, task score, delivery, safety
-- description: One row per (corpus, run, domain, condition, agent); runs are kept apart unless pool is true, and the runs column always names the runs a row covers. An episode succeeds when its 'pass' or 'reward' outcome is 1. pass@k is the unbiased estimator 1 - C(n-c, k) / C(n, k) per scenario (n episodes, c successes), averaged over scenarios with at least k episodes; the ratio is computed as the product over j < k of (n-c-j) / (n-j), which needs no log-gamma and so runs on Spark too. Task score averages each episode's partial credits (reward_breakdown / dimension outcomes, else the reward). Delivery: episodes that ended by a stop rather than a step or error limit, or whose 'delivered' outcome is 1. Safety: mean of 'safety' outcomes (NULL when the corpus records none). For tau2-bench's own pass^k and avg_reward see tau2_metrics.
-- param: corpus text = NULL | Only this corpus (all when omitted).
-- param: k int = 1 | The k of pass@k.
-- param: pool bool = false | Pool the runs of one agent, domain and condition into one row (run_id is then '(pooled)'; runs lists what was pooled).
WITH per_run AS (
    SELECT *, CASE WHEN $pool THEN '(pooled)' ELSE coalesce(run_id, '(none)') END AS grp
    FROM run_outcomes WHERE corpus = coalesce($corpus, corpus)
),
per_task AS (
    SELECT corpus, grp, domain, condition, agent, scenario_id, count(*) AS n,
           count(*) FILTER (WHERE success) AS c
    FROM per_run GROUP BY corpus, grp, domain, condition, agent, scenario_id
),
ks AS (SELECT unnest(generate_series(0, $k - 1)) AS j),
per_task_pass AS (
    -- C(n-c, k) / C(n, k) = prod_{j<k} (n-c-j) / (n-j); every factor is positive when n-c >= k
    SELECT t.corpus, t.grp, t.domain, t.condition, t.agent, t.scenario_id, t.n,
           CASE WHEN t.n < $k THEN NULL
                WHEN t.n - t.c < $k THEN 1.0
                ELSE 1.0 - exp(sum(ln((t.n - t.c - ks.j) / (t.n - ks.j)))) END AS pass_at_k
    FROM per_task t CROSS JOIN ks
    GROUP BY t.corpus, t.grp, t.domain, t.condition, t.agent, t.scenario_id, t.n, t.c
),
per_group AS (
    SELECT corpus, grp, domain, condition, agent, avg(score) AS task_score,
           avg(delivered::INT) AS delivery_rate, avg(safety) AS safety_rate
    FROM per_run GROUP BY corpus, grp, domain, condition, agent
),
run_list AS (
    -- the runs each row covers (no DISTINCT aggregate: Spark cannot mix two of them)
    SELECT corpus, grp, domain, condition, agent, count(*) AS n_runs,
           string_agg(run, ', ' ORDER BY run) AS runs
    FROM (SELECT DISTINCT corpus, grp, domain, condition, agent,
                 coalesce(run_id, '(none)') AS run FROM per_run) r
    GROUP BY corpus, grp, domain, condition, agent
)
SELECT t.corpus, t.grp AS run_id, t.domain, t.condition, t.agent,
       count(*) AS n_scenarios, sum(t.n)::BIGINT AS n_episodes,
       avg(t.pass_at_k) AS pass_at_k,
       g.task_score, g.delivery_rate, g.safety_rate, l.n_runs, l.runs
FROM per_task_pass t
JOIN per_group g ON g.corpus = t.corpus AND g.grp = t.grp AND g.domain = t.domain
     AND g.condition = t.condition AND g.agent = t.agent
JOIN run_list l ON l.corpus = t.corpus AND l.grp = t.grp AND l.domain = t.domain
     AND l.condition = t.condition AND l.agent = t.agent
GROUP BY t.corpus, t.grp, t.domain, t.condition, t.agent, g.task_score, g.delivery_rate,
         g.safety_rate, l.n_runs, l.runs
ORDER BY t.corpus, t.domain, t.condition, t.agent, t.grp
