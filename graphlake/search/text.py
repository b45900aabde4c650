"""Text search over node labels, node details and chat turns (the ``texts`` LanceDB table).

Ranked like frame search: full text (BM25) and MiniLM similarity, fused by reciprocal rank,
short queries by the words they show first; each distinct text is one hit (``sessions`` lists
the other sessions it occurs in, ``n_sessions`` counts them all), with the same workflow
context as a frame hit.
"""

from __future__ import annotations

from graphlake.errors import GraphlakeError
from graphlake.query.connection import Connection
from graphlake.search.context import workflow_context
from graphlake.search.filters import SearchFilters
from graphlake.search.frames import open_table, text_rankings
from graphlake.search.fusion import rrf
from graphlake.search.rank import query_words, why, words_first, words_present

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


#: Sessions listed per distinct text at most (the count says how many there are in all).
MAX_SESSIONS_LISTED = 100


def _sessions_of(table, texts: list[str], where: str | None) -> dict[str, set[str]]:
    """Every session (within the filters) in which each of ``texts`` occurs: a line that 24
    sessions share is one hit naming them, not 24 hits."""
    from graphlake.vision.store import sql_str

    if not texts:
        return {}
    cond = f"text IN ({', '.join(sql_str(t) for t in texts)})"
    rows = (
        table.search()
        .where(f"({cond}) AND ({where})" if where else cond)
        .select(["text", "session_id"])
        .limit(max(table.count_rows(), 1))
        .to_list()
    )
    out: dict[str, set[str]] = {t.strip(): set() for t in texts}
    for r in rows:
        out.setdefault((r["text"] or "").strip(), set()).add(r["session_id"])
    return out


def search_text(
    lake_root, con: Connection, query: str, *, filters: SearchFilters | None = None, k: int = 10
) -> list[dict]:
    if not query or not query.strip():
        raise GraphlakeError("give a text to search for")
    if k < 1:
        raise GraphlakeError("--k must be at least 1")
    filters = filters or SearchFilters()
    table = open_table(lake_root, "texts")
    where = filters.where("texts")
    rankings, rows = text_rankings(table, query, where, max(8 * k, 100), TEXT_COLUMNS)
    fused = words_first(query, rrf(rankings), lambda i: rows[i].get("text"))
    words = query_words(query)
    hits: list[dict] = []
    chosen: list[tuple] = []
    by_text: dict[str, int] = {}
    variants: dict[str, set[str]] = {}  # the texts as stored, by their stripped form
    for text_id, score, found in fused:  # each distinct text once, at its best rank
        r = rows[text_id]
        key = (r["text"] or "").strip()
        variants.setdefault(key, set()).add(r["text"] or "")
        if key in by_text or len(hits) == k:
            continue
        by_text[key] = len(hits)
        chosen.append((text_id, score, found))
        hits.append(
            {
                "session_id": r["session_id"],
                "corpus": r["corpus"],
                "source": r["source"],
                "ref_id": r["ref_id"],
                "t": r["t"],
                "score": round(score, 6),
                "matched": found,
                "why": why(found, words_present(words, r["text"]), len(words)),
                "text": r["text"],
                "actor_type": r["actor_type"],
            }
        )
    stored = sorted({v for key in by_text for v in variants[key]})
    for key, sessions in _sessions_of(table, stored, where).items():
        if key not in by_text:
            continue
        hit = hits[by_text[key]]
        hit["sessions"] = sorted(sessions - {hit["session_id"]})[:MAX_SESSIONS_LISTED]
        hit["n_sessions"] = len(sessions | {hit["session_id"]})
    fused = chosen
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
