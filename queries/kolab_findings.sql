-- name: kolab_findings
-- title: Collaboration dynamics findings (Kolab section 4.3) as rank correlations
-- description: One row per finding: Spearman's rho (Pearson's r over average ranks, so ties count as scipy counts them) and Pearson's r between two per-session metrics of session_metrics, over the sessions where both are known, with n and the t statistic (t = rho * sqrt((n - 2) / (1 - rho^2)), n - 2 degrees of freedom) for the p-value. Findings: burstiness B against solo lead-in; branching W against the collaboration rating; adoption R_A against the collaboration rating; burstiness against the collaboration rating.
-- param: corpus text = kolab | Sessions of this corpus.
WITH m AS (
    SELECT * FROM session_metrics WHERE corpus = $corpus
),
pairs AS (
    SELECT 'burstiness vs solo lead-in' AS finding, burstiness AS x, solo_lead_in AS y FROM m
    UNION ALL
    SELECT 'branching W vs collaboration rating', topology_w, collaboration_rating FROM m
    UNION ALL
    SELECT 'adoption R_A vs collaboration rating', retention_adopt, collaboration_rating FROM m
    UNION ALL
    SELECT 'burstiness vs collaboration rating', burstiness, collaboration_rating FROM m
),
known AS (
    SELECT * FROM pairs WHERE x IS NOT NULL AND y IS NOT NULL
),
ranked AS (
    -- average rank of ties: the first rank of the tie plus half the tie's width
    SELECT finding, x, y,
           rank() OVER (PARTITION BY finding ORDER BY x)
             + (count(*) OVER (PARTITION BY finding, x) - 1) / 2.0 AS rx,
           rank() OVER (PARTITION BY finding ORDER BY y)
             + (count(*) OVER (PARTITION BY finding, y) - 1) / 2.0 AS ry
    FROM known
),
stats AS (
    SELECT finding, count(*) AS n, corr(rx, ry) AS spearman_rho, corr(x, y) AS pearson_r
    FROM ranked GROUP BY finding
)
SELECT finding, n, round(spearman_rho, 6) AS spearman_rho, round(pearson_r, 6) AS pearson_r,
       CASE WHEN n > 2 AND abs(spearman_rho) < 1
            THEN round(spearman_rho * sqrt((n - 2) / (1 - spearman_rho * spearman_rho)), 6)
       END AS t_stat
FROM stats
ORDER BY finding
