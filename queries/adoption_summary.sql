-- name: adoption_summary
-- title: Adopt / modify / reject counts and rates by corpus, domain and AI actor
-- description: One row per (corpus, domain, ai_actor, label) with the count and its share of all responses in that (corpus, domain, ai_actor) group; the per-domain rates are Kolab's Figure 3(c) retention by sector.
-- param: corpus text = NULL | Only this corpus (all corpora when omitted).
WITH a AS (
    SELECT ad.corpus, coalesce(s.domain, '(none)') AS domain,
           coalesce(ad.ai_actor, '(unknown)') AS ai_actor, ad.label
    FROM adoptions ad
    LEFT JOIN sessions s ON s.corpus = ad.corpus AND s.session_id = ad.session_id
    WHERE ad.corpus = coalesce($corpus, ad.corpus)
),
c AS (
    SELECT corpus, domain, ai_actor, label, count(*) AS n
    FROM a GROUP BY corpus, domain, ai_actor, label
)
SELECT corpus, domain, ai_actor, label, n,
       sum(n) OVER (PARTITION BY corpus, domain, ai_actor) AS n_group,
       round(n / sum(n) OVER (PARTITION BY corpus, domain, ai_actor), 4) AS rate
FROM c
ORDER BY corpus, domain, ai_actor, label
