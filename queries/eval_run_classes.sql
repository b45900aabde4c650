-- name: eval_run_classes
-- title: Saved evaluation runs class by class: F1 and recall of each gold class, per model and condition
-- description: One row per saved run (corpus evals) of a label protocol and class: the run's per-class F1 and recall as its score report gave them (metric annotations f1:<class> and recall:<class>), how many of the scored instances have that gold class and how many of those the model got wrong. The rows of one protocol lay each model in each condition side by side, class by class (Kolab's Table 5 reports the macro F1 these average to; eval_runs has it). Rating protocols have no classes and no rows here.
-- param: protocol text = % | The protocol (LIKE pattern; % for every one).
WITH per_class AS (
    SELECT m.corpus, m.session_id, split_part(m.label, ':', 2) AS class,
           max(m.value) FILTER (WHERE starts_with(m.label, 'f1:')) AS f1,
           max(m.value) FILTER (WHERE starts_with(m.label, 'recall:')) AS recall
    FROM annotations m
    WHERE m.corpus = 'evals' AND m.kind = 'metric'
      AND (starts_with(m.label, 'f1:') OR starts_with(m.label, 'recall:'))
    GROUP BY ALL
),
gold AS (
    SELECT p.corpus, p.session_id, json_extract_string(p.attrs, '$.gold') AS class,
           count(*) AS n_gold,
           count(*) FILTER (WHERE coalesce(p.value, 0) = 0) AS n_wrong
    FROM annotations p
    WHERE p.corpus = 'evals' AND p.kind = 'prediction'
    GROUP BY ALL
)
SELECT s.scenario_id AS protocol, r.agent_model AS model, s.condition, c.class,
       c.f1, c.recall, coalesce(g.n_gold, 0) AS n_gold, coalesce(g.n_wrong, 0) AS n_wrong,
       s.session_id AS run_id
FROM per_class c
JOIN sessions s ON s.corpus = c.corpus AND s.session_id = c.session_id
JOIN runs r ON r.corpus = s.corpus AND r.run_id = s.run_id
LEFT JOIN gold g ON g.corpus = c.corpus AND g.session_id = c.session_id AND g.class = c.class
WHERE s.scenario_id LIKE $protocol
ORDER BY protocol, class, model, s.condition
