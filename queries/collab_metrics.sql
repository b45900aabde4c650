-- name: collab_metrics
-- title: Collaboration dynamics per session (Kolab section 4.2)
-- description: One row per session: burstiness B, workflow topology W, AI retention R_A and R_M, solo lead-in, mean collaboration rating, and the counts behind them. Exactly which events each metric counts: docs/metrics.md. Rows of the session_metrics view (its SQL: queries/views/session_metrics.sql).
-- param: corpus text = NULL | Only sessions of this corpus (all corpora when omitted).
SELECT *
FROM session_metrics
WHERE corpus = coalesce($corpus, corpus)
ORDER BY corpus, session_id
