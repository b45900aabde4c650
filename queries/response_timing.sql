-- name: response_timing
-- title: Timing of human responses to AI outputs (Kolab section 4.3)
-- description: Per corpus and response label (adopt, modify, reject): how many responses, the share given in a later step than the AI output, and the seconds from the end of the AI output to the start of the response (quartiles, mean). Responses without resolved times count in n but not in the delays.
-- param: corpus text = NULL | Only this corpus (all corpora when omitted).
SELECT corpus, label, count(*) AS n_responses,
       round(avg(CASE WHEN cross_step THEN 1.0 ELSE 0.0 END), 4) AS cross_step_share,
       count(response_t_start - ai_t_end) AS n_timed,
       percentile_cont(0.25) WITHIN GROUP (ORDER BY response_t_start - ai_t_end) AS delay_p25_s,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY response_t_start - ai_t_end) AS delay_median_s,
       percentile_cont(0.75) WITHIN GROUP (ORDER BY response_t_start - ai_t_end) AS delay_p75_s,
       round(avg(response_t_start - ai_t_end), 3) AS delay_mean_s
FROM adoptions
WHERE corpus = coalesce($corpus, corpus)
GROUP BY corpus, label
ORDER BY corpus, label
