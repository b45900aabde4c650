"""The browser workbench: its page at ``/`` and the one listing only it needs, sessions with
their metrics (everything else it reads through the same endpoints evaluators use)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import FileResponse
from sqlglot import exp

from graphlake.cursors import OffsetCursor
from graphlake.server.models import SessionOverviewPage
from graphlake.server.state import Serving, get_state, json_response

STATIC = Path(__file__).resolve().parent.parent / "static"

router = APIRouter(tags=["workbench"])
_OVERVIEW_CURSOR = OffsetCursor("GET /workbench/sessions")
StateDep = Annotated[Serving, Depends(get_state)]

#: Columns the session table shows, and so the ones it may sort by.
OVERVIEW_COLUMNS = (
    "corpus",
    "session_id",
    "title",
    "domain",
    "condition",
    "duration_s",
    "n_nodes",
    "n_ai_nodes",
    "n_responses",
    "burstiness",
    "topology_w",
    "retention_adopt",
    "retention_modify",
    "collaboration_rating",
    "output_quality_rating",
    "success",
    "score",
    "termination",
)
SortColumn = Literal[OVERVIEW_COLUMNS]  # type: ignore[valid-type]

_FROM = """
FROM sessions s
LEFT JOIN session_metrics m ON m.corpus = s.corpus AND m.session_id = s.session_id
LEFT JOIN run_outcomes r ON r.corpus = s.corpus AND r.session_id = s.session_id
WHERE ($corpus IS NULL OR s.corpus = $corpus) AND ($domain IS NULL OR s.domain = $domain)
  AND ($session IS NULL OR s.session_id = $session)
  AND ($q IS NULL OR contains(lower(concat_ws(' ', s.session_id, s.title, s.goal)), lower($q)))
  AND ($success IS NULL OR r.success = $success)
"""
_SELECT = """
SELECT s.corpus, s.session_id, s.title, s.domain, s.condition, s.duration_s,
       m.n_nodes, m.n_ai_nodes, m.n_responses, m.burstiness, m.topology_w,
       m.retention_adopt, m.retention_modify, m.collaboration_rating,
       m.output_quality_rating, r.success, r.score, r.termination,
       EXISTS (SELECT 1 FROM media md WHERE md.corpus = s.corpus
               AND md.session_id = s.session_id) AS has_recording
"""


@router.get("/", include_in_schema=False)
def index():
    """The workbench page (its scripts and styles are under /static)."""
    return FileResponse(
        STATIC / "index.html", media_type="text/html", headers={"Cache-Control": "no-cache"}
    )


@router.get("/workbench/sessions", response_model=SessionOverviewPage)
def session_overview(
    state: StateDep,
    corpus: str | None = None,
    domain: str | None = None,
    session: Annotated[str | None, Query(description="exactly this session_id")] = None,
    q: Annotated[str | None, Query(description="words in id, title or goal")] = None,
    success: Annotated[
        bool | None, Query(description="agent traces: passed (true) or failed")
    ] = None,
    sort: SortColumn = "session_id",
    order: Literal["asc", "desc"] = "asc",
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
):
    """Sessions with their collaboration metrics (session_metrics) and, for agent traces,
    their outcome (run_outcomes): filtered, sorted by any column, a page at a time, with the
    number of sessions that match."""
    start = _OVERVIEW_CURSOR.decode(cursor, state.con.version)
    params = {
        "corpus": corpus,
        "domain": domain,
        "session": session,
        "q": q or None,
        "success": success,
    }
    # sort is one of OVERVIEW_COLUMNS (checked by FastAPI), and goes in quoted by sqlglot
    column = exp.to_identifier(sort, quoted=True).sql("duckdb")
    rows = state.con.rows(
        f"{_SELECT} {_FROM} ORDER BY {column} {order.upper()} NULLS LAST, s.corpus, "
        f"s.session_id LIMIT $limit OFFSET $offset",
        {**params, "limit": limit + 1, "offset": start},
    )
    total = state.con.rows(f"SELECT count(*) AS n {_FROM}", params)[0]["n"]
    nxt = None
    if len(rows) > limit:
        nxt = _OVERVIEW_CURSOR.encode(state.con.version, start + limit)
    return json_response(
        {"items": rows[:limit], "next_cursor": nxt, "total": total, "offset": start}
    )
