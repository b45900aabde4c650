-- view: adoption_chains
-- description: one request followed through every AI output and response it led to, across steps, and on through responses that became the next request
-- A chain starts at a request (source node) and takes in every adopt / modify / reject triple
-- of that request, and of every later request made from a response in the chain (a person
-- who modifies an AI output and prompts again from there refines the same chain). Triples
-- without a request form chains rooted at their AI node. When a response-turned-request
-- descends from several starts, it joins the chain of the least start node id.
WITH RECURSIVE triples AS (
    -- the triples' own ends, read from annotations: adoptions (one row per triple) is then
    -- named once, so a query that needs few of its columns computes only those
    SELECT corpus, session_id, source_node, response_node
    FROM annotations WHERE kind = 'adoption'
),
links AS (
    -- the request `node` was a response in a triple whose request is `parent`
    SELECT DISTINCT c.corpus, c.session_id, c.source_node AS node, p.source_node AS parent
    FROM triples c
    JOIN triples p ON p.corpus = c.corpus AND p.session_id = c.session_id
         AND p.response_node = c.source_node
    WHERE p.source_node IS NOT NULL AND p.source_node <> c.source_node
),
link_nodes AS (
    SELECT corpus, session_id, node FROM links
    UNION
    SELECT corpus, session_id, parent FROM links
),
sized_links AS (
    -- n: the requests in the session's refinement graph. An ancestor is n - 1 links away at
    -- most (a path without repeats), so the walk stops there: a loop of refinements ends
    -- after n steps, not after the cap of 64, with the same (node, ancestor) pairs
    SELECT l.*, s.n
    FROM links l
    JOIN (SELECT corpus, session_id, count(*) AS n FROM link_nodes GROUP BY corpus, session_id) s
      ON s.corpus = l.corpus AND s.session_id = l.session_id
),
up (corpus, session_id, node, ancestor, hops) AS (
    SELECT DISTINCT corpus, session_id, node, node, 0 FROM links
    UNION ALL
    SELECT DISTINCT u.corpus, u.session_id, u.node, l.parent, u.hops + 1
    FROM up u
    JOIN sized_links l ON l.corpus = u.corpus AND l.session_id = u.session_id
         AND l.node = u.ancestor
    WHERE u.hops < 64 AND u.hops < l.n - 1
),
roots AS (
    -- a start is an ancestor that was no one's response; a loop of refinements with no start
    -- falls back to its least node id
    SELECT u.corpus, u.session_id, u.node,
           coalesce(min(u.ancestor) FILTER (WHERE s.node IS NULL), min(u.ancestor)) AS root
    FROM (SELECT DISTINCT corpus, session_id, node, ancestor FROM up) u
    LEFT JOIN (SELECT DISTINCT corpus, session_id, node FROM links) s
         ON s.corpus = u.corpus AND s.session_id = u.session_id AND s.node = u.ancestor
    GROUP BY u.corpus, u.session_id, u.node
),
rooted AS (
    SELECT a.*, coalesce(r.root, a.source_node, a.ai_node) AS chain_root
    FROM adoptions a
    LEFT JOIN roots r ON r.corpus = a.corpus AND r.session_id = a.session_id
         AND r.node = a.source_node
),
-- Most chains are one triple. Those skip the aggregation (its ordered and distinct lists cost
-- most of the view): rows whose chain key hashes to a value no other row has are chains of
-- one. A hash shared by two chains only sends their rows through the aggregation as well.
hashed AS (
    SELECT *, hash(corpus, session_id, chain_root, source_node IS NULL) AS chain_hash
    FROM rooted
),
sized AS (
    SELECT h.*, c.rows_with_hash
    FROM hashed h
    JOIN (SELECT chain_hash, count(*) AS rows_with_hash FROM hashed GROUP BY chain_hash) c
      ON c.chain_hash = h.chain_hash
)
SELECT corpus, session_id, chain_root, source_node IS NULL AS rooted_at_ai,
       1::INTEGER AS chain_length,
       [label] AS labels,
       -- arg_max skips a row whose ordering time is NULL
       CASE WHEN response_t_start IS NOT NULL THEN label END AS final_label,
       [response_step] AS response_steps,
       [ai_node] AS ai_nodes,
       (ai_node IS NOT NULL)::INTEGER AS n_ai_outputs,
       (source_node IS NOT NULL)::INTEGER AS n_requests,
       coalesce(source_t_start, ai_t_start) AS t_start,
       response_t_end AS t_end,
       response_t_end - coalesce(source_t_start, ai_t_start) AS span_s,
       cross_step AS crosses_steps
FROM sized WHERE rows_with_hash = 1
UNION ALL
SELECT corpus, session_id, chain_root,
       source_node IS NULL AS rooted_at_ai,
       count(*)::INTEGER AS chain_length,
       list(label ORDER BY response_t_start, annotation_id) AS labels,
       arg_max(label, response_t_start) AS final_label,
       list(DISTINCT response_step ORDER BY response_step) AS response_steps,
       list(ai_node ORDER BY response_t_start, annotation_id) AS ai_nodes,
       count(DISTINCT ai_node)::INTEGER AS n_ai_outputs,
       count(DISTINCT source_node)::INTEGER AS n_requests,
       min(coalesce(source_t_start, ai_t_start)) AS t_start,
       max(response_t_end) AS t_end,
       max(response_t_end) - min(coalesce(source_t_start, ai_t_start)) AS span_s,
       bool_or(cross_step) AS crosses_steps
FROM sized WHERE rows_with_hash > 1
GROUP BY corpus, session_id, chain_root, source_node IS NULL
