-- name: has_rescue
-- title: HAS rescue rate between two conditions (HAS-Bench 5, Table 4)
-- description: Per corpus, domain and agent, among the scenarios that fail under from_condition and were also run under to_condition, the share that succeed under to_condition (e.g. from A1 to A3). A scenario succeeds under a condition when the majority of its runs there succeed (with one run per condition, as in the paper, that run). Also counts the scenarios broken (succeeded under from, fail under to).
-- param: from_condition text | Condition the tasks failed under (e.g. A1).
-- param: to_condition text | Condition that may rescue them (e.g. A3).
-- param: corpus text = NULL | Only this corpus (all when omitted).
WITH runs AS (
    SELECT s.corpus, s.scenario_id, coalesce(s.domain, '(none)') AS domain, s.condition,
           coalesce(p.name, '(unknown)') AS agent,
           coalesce((SELECT max(a.value) >= 1 FROM annotations a
                     WHERE a.corpus = s.corpus AND a.session_id = s.session_id
                       AND a.kind = 'outcome' AND a.label IN ('pass', 'reward')), false)
               AS success
    FROM sessions s
    LEFT JOIN (SELECT corpus, session_id, string_agg(DISTINCT name, ' + ' ORDER BY name) AS name
               FROM participants WHERE role = 'agent' GROUP BY corpus, session_id) p
         ON p.corpus = s.corpus AND p.session_id = s.session_id
    WHERE s.condition IN ($from_condition, $to_condition)
      AND s.corpus = coalesce($corpus, s.corpus)
),
verdict AS (
    SELECT corpus, domain, agent, scenario_id, condition,
           avg(success::INT) > 0.5 AS succeeded
    FROM runs GROUP BY ALL
),
paired AS (
    SELECT f.corpus, f.domain, f.agent, f.scenario_id, f.succeeded AS before,
           t.succeeded AS after
    FROM verdict f JOIN verdict t ON t.corpus = f.corpus AND t.domain = f.domain
         AND t.agent = f.agent AND t.scenario_id = f.scenario_id
    WHERE f.condition = $from_condition AND t.condition = $to_condition
)
SELECT corpus, domain, agent,
       count(*) FILTER (WHERE NOT before) AS failed_before,
       count(*) FILTER (WHERE NOT before AND after) AS rescued,
       count(*) FILTER (WHERE before AND NOT after) AS broken,
       CASE WHEN count(*) FILTER (WHERE NOT before) > 0
            THEN count(*) FILTER (WHERE NOT before AND after)
                 / count(*) FILTER (WHERE NOT before) END AS rescue_rate
FROM paired
GROUP BY corpus, domain, agent
ORDER BY corpus, domain, agent
