"""Text search over node labels, node details and chat turns (the ``texts`` LanceDB table).

Ranked like frame search: full text (BM25) and MiniLM similarity, fused by reciprocal rank;
each hit carries the same workflow context as a frame hit.
"""

from __future__ import annotations

from graphlake.errors import GraphlakeError
from graphlake.query.connection import Connection
from graphlake.search.context import workflow_context
from graphlake.search.filters import SearchFilters
from graphlake.search.frames import open_table, text_rankings
from graphlake.search.fusion import rrf

TEXT_COLUMNS = [
    "text_id",
    "corpus",
    "session_id",
    "source",
    "ref_id",
    "t",
    "step_id",
    "actor_type",
    "text",
]


def search_text(
    lake_root, con: Connection, query: str, *, filters: SearchFilters | None = None, k: int = 10
) -> list[dict]:
    if not query or not query.strip():
        raise GraphlakeError("give a text to search for")
    if k < 1:
        raise GraphlakeError("--k must be at least 1")
    filters = filters or SearchFilters()
    table = open_table(lake_root, "texts")
    rankings, rows = text_rankings(
        table, query, filters.where("texts"), max(4 * k, 50), TEXT_COLUMNS
    )
    fused = rrf(rankings)[:k]
    hits = []
    for text_id, score, found in fused:
        r = rows[text_id]
        hits.append(
            {
                "session_id": r["session_id"],
                "corpus": r["corpus"],
                "source": r["source"],
                "ref_id": r["ref_id"],
                "t": r["t"],
                "score": round(score, 6),
                "matched": found,
                "text": r["text"],
                "actor_type": r["actor_type"],
            }
        )
    with_t = [h for h in hits if h["t"] is not None]
    for hit, ctx in zip(with_t, workflow_context(con, with_t), strict=True):
        hit.update(ctx)
    for hit, (text_id, _, _) in zip(hits, fused, strict=True):
        if hit["t"] is None:  # untimed rows (a node without times): the step it declares
            hit.update(
                {
                    "step_id": rows[text_id]["step_id"],
                    "nodes": [],
                    "node_ids": [],
                    "chat_before": None,
                }
            )
    return hits
