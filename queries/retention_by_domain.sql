-- name: retention_by_domain
-- title: AI retention by domain (Kolab Figure 3c)
-- description: Per corpus and domain: responses, adoption rate R_A, modification rate R_M, rejection rate, and the median seconds from the end of the AI output to the start of the response, per label.
-- param: corpus text = NULL | Only this corpus (all corpora when omitted).
SELECT ad.corpus,
       coalesce(s.domain, '(none)') AS domain,
       count(*) AS n_responses,
       round(count(*) FILTER (WHERE ad.label = 'adopt') / count(*), 4) AS retention_adopt,
       round(count(*) FILTER (WHERE ad.label = 'modify') / count(*), 4) AS retention_modify,
       round(count(*) FILTER (WHERE ad.label = 'reject') / count(*), 4) AS reject_rate,
       median(ad.response_t_start - ad.ai_t_end) FILTER (WHERE ad.label = 'adopt')
           AS median_delay_adopt_s,
       median(ad.response_t_start - ad.ai_t_end) FILTER (WHERE ad.label = 'modify')
           AS median_delay_modify_s,
       median(ad.response_t_start - ad.ai_t_end) FILTER (WHERE ad.label = 'reject')
           AS median_delay_reject_s
FROM adoptions ad
LEFT JOIN sessions s ON s.corpus = ad.corpus AND s.session_id = ad.session_id
WHERE ad.corpus = coalesce($corpus, ad.corpus)
GROUP BY ad.corpus, coalesce(s.domain, '(none)')
ORDER BY ad.corpus, retention_adopt
