-- name: has_process
-- title: Process metrics per session (HAS-Bench 4.3): human intervention rate, initiative entropy, interaction cost
-- description: One row per session with events. Steps are messages and tool calls (tool results are the environment answering, not a step). Human intervention rate = human steps / all steps. Initiative entropy = Shannon entropy (bits) of the share of steps each participant initiated. Tokens sum the prompt and completion tokens recorded on messages (attrs.usage). Rows of the session_process view (its SQL: queries/views/session_process.sql).
-- param: corpus text = NULL | Only this corpus (all when omitted).
SELECT *
FROM session_process
WHERE corpus = coalesce($corpus, corpus)
ORDER BY corpus, session_id
