-- name: eval_runs
-- title: Saved evaluation runs side by side: each model in each condition, with its metrics
-- description: One row per run saved with `graphlake bench score --save`, `POST /benchmarks/{id}/score?save=true` or ingested from an inspect_ai log of the graphlake/bench task (corpus evals), newest first: the protocol, the model, the input condition, when, how many instances it predicted and how many the protocol has, and its headline metrics (accuracy, macro F1, macro precision and recall for labels; MAE and exact agreement for ratings). Per-class F1 and every other number of the report are the run's metric annotations (label f1:<class>); each prediction is an annotation of kind prediction, value 1 when right and 0 when wrong.
-- param: protocol text = % | The protocol (LIKE pattern; % for every one).
SELECT s.scenario_id AS protocol, r.agent_model AS model, s.condition, s.started_at AS saved_at,
       max(m.value) FILTER (WHERE m.label = 'n') AS n_scored,
       max(m.value) FILTER (WHERE m.label = 'n_instances') AS n_instances,
       max(m.value) FILTER (WHERE m.label = 'accuracy') AS accuracy,
       max(m.value) FILTER (WHERE m.label = 'macro_f1') AS macro_f1,
       max(m.value) FILTER (WHERE m.label = 'macro_precision') AS macro_precision,
       max(m.value) FILTER (WHERE m.label = 'macro_recall') AS macro_recall,
       max(m.value) FILTER (WHERE m.label = 'mae') AS mae,
       max(m.value) FILTER (WHERE m.label = 'exact') AS exact,
       r.name AS run_name, r.source, s.session_id AS run_id
FROM sessions s
JOIN runs r ON r.corpus = s.corpus AND r.run_id = s.run_id
LEFT JOIN annotations m ON m.corpus = s.corpus AND m.session_id = s.session_id
     AND m.kind = 'metric'
WHERE s.corpus = 'evals' AND s.scenario_id LIKE $protocol
GROUP BY ALL
ORDER BY saved_at DESC, protocol, model
