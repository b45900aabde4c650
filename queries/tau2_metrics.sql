-- name: tau2_metrics
-- title: tau2-bench's own metrics per run: pass^k for every k, and avg_reward
-- description: One row per (run, k), as tau2-bench computes them (src/tau2/metrics/agent_metrics.py). Simulations that ended in an infrastructure error are left out. A simulation succeeds when its reward is within 1e-6 of 1. pass^k (pass_hat_k) of a task is C(successes, k) / C(trials, k), averaged over the tasks of the file; k runs from 1 to the smaller of the run's num_trials and the fewest trials any task has. avg_reward is the mean reward over the simulations kept. A run is one results file or run folder (runs table: its agent implementation, models, user simulator); runs are never pooled, whatever model they share. Not the same question as pass@k in has_outcomes, which asks whether any of k tries succeeds.
-- param: corpus text = tau2 | The corpus holding the tau2 results.
WITH sims AS (
    SELECT s.run_id AS run_key, s.session_id, s.scenario_id AS task_id,
           json_extract_string(s.attrs, '$.termination_reason') AS termination,
           TRY_CAST(json_extract_string(run.settings, '$.num_trials') AS INTEGER) AS num_trials,
           r.value AS reward
    FROM sessions s
    LEFT JOIN runs run ON run.corpus = s.corpus AND run.run_id = s.run_id
    LEFT JOIN annotations r ON r.corpus = s.corpus AND r.session_id = s.session_id
         AND r.kind = 'outcome' AND r.label = 'reward'
    WHERE s.corpus = $corpus AND s.scenario_id IS NOT NULL
),
evaluated AS (
    SELECT * FROM sims WHERE termination IS NULL OR termination <> 'infrastructure_error'
),
per_task AS (
    SELECT run_key, task_id, count(*) AS n,
           count(*) FILTER (WHERE reward >= 1 - 1e-6 AND reward <= 1 + 1e-6) AS c
    FROM evaluated GROUP BY run_key, task_id
),
per_file AS (
    SELECT e.run_key, avg(e.reward) AS avg_reward, count(*) AS n_simulations,
           count(DISTINCT e.task_id) AS n_tasks, max(e.num_trials) AS num_trials
    FROM evaluated e GROUP BY e.run_key
),
infra AS (
    SELECT run_key, count(*) AS infra_errors FROM sims
    WHERE termination = 'infrastructure_error' GROUP BY run_key
),
bound AS (
    SELECT f.run_key, least(coalesce(f.num_trials, min(t.n)), min(t.n)) AS max_k
    FROM per_file f JOIN per_task t ON t.run_key = f.run_key
    GROUP BY f.run_key, f.num_trials
),
ks AS (SELECT unnest(generate_series(1, 100)) AS k),
js AS (SELECT unnest(generate_series(0, 99)) AS j),
per_task_k AS (
    -- C(c, k) / C(n, k) = prod_{j<k} (c-j) / (n-j) when c >= k, else 0
    SELECT t.run_key, t.task_id, ks.k,
           CASE WHEN t.c < ks.k THEN 0.0
                ELSE exp(sum(ln((t.c - js.j) / (t.n - js.j)))) END AS pass_hat
    FROM per_task t
    JOIN bound b ON b.run_key = t.run_key
    JOIN ks ON ks.k <= b.max_k
    JOIN js ON js.j < ks.k
    GROUP BY t.run_key, t.task_id, ks.k, t.c, t.n
)
SELECT p.run_key AS run_id, run.name AS run, run.agent, run.agent_model,
       run.user_model, p.k, avg(p.pass_hat) AS pass_hat_k, f.avg_reward,
       f.n_tasks, f.n_simulations, coalesce(i.infra_errors, 0) AS infra_errors
FROM per_task_k p
JOIN per_file f ON f.run_key = p.run_key
LEFT JOIN infra i ON i.run_key = p.run_key
LEFT JOIN runs run ON run.corpus = $corpus AND run.run_id = p.run_key
GROUP BY p.run_key, run.name, run.agent, run.agent_model, run.user_model, p.k,
         f.avg_reward, f.n_tasks, f.n_simulations, i.infra_errors
ORDER BY run.name, p.run_key, p.k
