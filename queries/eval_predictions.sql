-- name: eval_predictions
-- title: One saved evaluation run's predictions, wrong ones first, each with its gold
-- description: The predictions of a run saved with `bench score --save`, `POST /benchmarks/{id}/score?save=true` or ingested from an inspect_ai log (corpus evals; run_id as eval_runs lists it): the instance, its gold, the label as scored, the answer as the model gave it, and the outcome (wrong; invalid: no label could be read from the answer; right), in that order. The workbench links each instance to what the model saw (#/instance?protocol=&condition=&id=).
-- param: run text | The run's id (eval_runs' run_id).
-- param: wrong_only bool = false | Only the wrong and invalid predictions.
-- param: instance text = NULL | Only this instance's prediction (the workbench's instance preview asks for one).
SELECT p.target_id AS instance_id, json_extract_string(p.attrs, '$.gold') AS gold,
       p.label AS predicted, p.text AS answer,
       CASE WHEN p.value = 1 THEN 'right' WHEN p.value = 0 THEN 'wrong' ELSE 'invalid' END
           AS outcome,
       s.scenario_id AS protocol, s.condition, r.agent_model AS model
FROM annotations p
JOIN sessions s ON s.corpus = p.corpus AND s.session_id = p.session_id
JOIN runs r ON r.corpus = s.corpus AND r.run_id = s.run_id
WHERE p.corpus = 'evals' AND p.session_id = $run AND p.kind = 'prediction'
  AND (NOT $wrong_only OR coalesce(p.value, 0) = 0)
  AND p.target_id = coalesce($instance, p.target_id)
ORDER BY CASE WHEN p.value = 0 THEN 0 WHEN p.value IS NULL THEN 1 ELSE 2 END, instance_id
