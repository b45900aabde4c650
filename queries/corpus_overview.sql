-- name: corpus_overview
-- title: Every corpus side by side: sessions, events, human share of events, adoption and outcome rates
-- description: One row per corpus in the lake. Human share counts events whose actor is a person (simulated users included, as HAS-Bench treats them); adoption rate is R_A over adoption annotations; success rate is the share of sessions whose 'pass' or 'reward' outcome is 1.
WITH ev AS (
    SELECT corpus, count(*) AS events,
           count(*) FILTER (WHERE actor_type = 'human') / count(*) AS human_share
    FROM events GROUP BY corpus
),
ad AS (
    SELECT corpus, count(*) AS responses,
           count(*) FILTER (WHERE label = 'adopt') / count(*) AS adoption_rate,
           count(*) FILTER (WHERE label = 'modify') / count(*) AS modification_rate
    FROM annotations WHERE kind = 'adoption' GROUP BY corpus
),
oc AS (
    SELECT corpus, avg((v >= 1)::INT) AS success_rate
    FROM (SELECT corpus, session_id, max(value) AS v FROM annotations
          WHERE kind = 'outcome' AND label IN ('pass', 'reward') GROUP BY ALL)
    GROUP BY corpus
),
se AS (SELECT corpus, count(*) AS sessions FROM sessions GROUP BY corpus),
sc AS (SELECT corpus, count(*) AS scenarios FROM scenarios GROUP BY corpus)
SELECT c.corpus, coalesce(se.sessions, 0) AS sessions,
       coalesce(sc.scenarios, 0) AS scenarios, coalesce(ev.events, 0) AS events,
       ev.human_share, ad.responses, ad.adoption_rate, ad.modification_rate, oc.success_rate
FROM (SELECT corpus FROM se UNION SELECT corpus FROM sc UNION SELECT corpus FROM ev) c
LEFT JOIN se USING (corpus) LEFT JOIN sc USING (corpus) LEFT JOIN ev USING (corpus)
LEFT JOIN ad USING (corpus) LEFT JOIN oc USING (corpus)
ORDER BY c.corpus
