"""GET /corpora: every corpus in the lake with its size."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from graphlake.cursors import KeyCursor
from graphlake.server.models import Corpus, Page
from graphlake.server.state import Serving, get_state

router = APIRouter(tags=["corpora"])
_CURSOR = KeyCursor("GET /corpora")

_SQL = """
WITH s AS (SELECT corpus, count(*) AS sessions FROM sessions GROUP BY corpus),
     e AS (SELECT corpus, count(*) AS events FROM events GROUP BY corpus),
     n AS (SELECT corpus, count(*) AS nodes FROM nodes GROUP BY corpus)
SELECT c.corpus, coalesce(s.sessions, 0) AS sessions, coalesce(e.events, 0) AS events,
       coalesce(n.nodes, 0) AS nodes
FROM (SELECT corpus FROM s UNION SELECT corpus FROM e UNION SELECT corpus FROM n) c
LEFT JOIN s USING (corpus) LEFT JOIN e USING (corpus) LEFT JOIN n USING (corpus)
WHERE $after IS NULL OR c.corpus > $after
ORDER BY c.corpus LIMIT $limit
"""


@router.get("/corpora", response_model=Page[Corpus])
def list_corpora(
    state: Annotated[Serving, Depends(get_state)],
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
):
    """Corpora with their session, event and node counts."""
    after = _CURSOR.decode(cursor)
    rows = state.con.rows(_SQL, {"after": after and after[0], "limit": limit + 1})
    nxt = _CURSOR.encode([rows[limit - 1]["corpus"]]) if len(rows) > limit else None
    return {"items": rows[:limit], "next_cursor": nxt}
