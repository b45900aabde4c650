"""Sessions, and one session's graph, events and chat, sliced by step, window or hops."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response
from starlette.concurrency import run_in_threadpool

from graphlake.cursors import KeyCursor, OffsetCursor
from graphlake.protocols.render import NODE_FIELDS, render_chat, render_dot, render_graph
from graphlake.server.errors import NotFound
from graphlake.server.models import Chat, Event, Graph, Media, Page, Session, Timeline
from graphlake.server.state import Serving, get_state, json_response
from graphlake.server.timeline import build_timeline

router = APIRouter(prefix="/sessions", tags=["sessions"])

_LIST_CURSOR = KeyCursor("GET /sessions", arity=2)
_EVENTS_CURSOR = OffsetCursor("GET /sessions/{corpus}/{session_id}/events")

StateDep = Annotated[Serving, Depends(get_state)]


@router.get("", response_model=Page[Session])
async def list_sessions(
    state: StateDep,
    corpus: str | None = None,
    domain: str | None = None,
    participant: str | None = None,
    condition: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
):
    """Sessions in (corpus, session_id) order, filtered by corpus, domain, participant id and
    condition."""
    if not state.sessions.ready:
        await run_in_threadpool(state.sessions.load)
    key = _LIST_CURSOR.decode(cursor)
    after = (key[0], key[1]) if key else (None, None)
    rows = state.sessions.page(
        corpus=corpus,
        domain=domain,
        condition=condition,
        participant=participant,
        after=after,
        limit=limit + 1,
    )
    nxt = None
    if len(rows) > limit:
        last = rows[limit - 1]
        nxt = _LIST_CURSOR.encode([last["corpus"], last["session_id"]])
    return json_response({"items": rows[:limit], "next_cursor": nxt})


def _session(state: Serving, corpus: str, session_id: str):
    data = state.bench.sessions.get(corpus, session_id)
    if data is None:
        raise NotFound(
            f"no session {session_id!r} in corpus {corpus!r}; list them with "
            f"GET /sessions?corpus={corpus}"
        )
    return data


def _hops(data, node: str, hops: int) -> set[str]:
    adj: dict[str, set[str]] = {}
    for e in data.edges:
        adj.setdefault(e["src"], set()).add(e["dst"])
        adj.setdefault(e["dst"], set()).add(e["src"])
    seen, frontier = {node}, {node}
    for _ in range(hops):
        frontier = {m for n in frontier for m in adj.get(n, ())} - seen
        seen |= frontier
    return seen


@router.get(
    "/{corpus}/{session_id:path}/graph",
    response_model=Graph,
    responses={200: {"content": {"text/plain": {}, "text/vnd.graphviz": {}}}},
)
async def session_graph(
    state: StateDep,
    corpus: str,
    session_id: str,
    step: Annotated[str | None, Query(description="a step_id")] = None,
    t0: float | None = None,
    t1: float | None = None,
    node: Annotated[str | None, Query(description="centre node_id")] = None,
    hops: Annotated[int, Query(ge=0, le=50)] = 1,
    format: Literal["json", "text", "dot"] = "json",
):
    """The action graph of a session: all of it, one step, the nodes that started in
    [t0, t1), or ``hops`` edges around ``node`` (either direction); as JSON, as the Kolab A.6
    text rendering, or as Graphviz DOT."""
    args = (state, corpus, session_id, step, t0, t1, node, hops, format)
    if state.bench.sessions.in_memory(corpus):  # rows in memory: no thread hop
        return _graph(*args)
    return await run_in_threadpool(_graph, *args)


def _graph(state, corpus, session_id, step, t0, t1, node, hops, format):
    data = _session(state, corpus, session_id)
    if step is not None:
        s = data.step(step)
        if s is None:
            raise NotFound(
                f"session {session_id!r} has no step {step!r}; steps: "
                f"{', '.join(x['step_id'] for x in data.steps)}"
            )
        keep = {o["node_id"] for o in data.occurrences if o["step_id"] == step}
        nodes, edges = data.graph(float("-inf"), float("inf"))
        nodes = [n for n in nodes if n["node_id"] in keep]
    elif t0 is not None or t1 is not None:
        nodes, _ = data.graph(
            t0 if t0 is not None else float("-inf"), t1 if t1 is not None else float("inf")
        )
    else:
        nodes, _ = data.graph(float("-inf"), float("inf"))
    if node is not None:
        if not any(o["node_id"] == node for o in data.occurrences):
            raise NotFound(f"session {session_id!r} has no node {node!r}")
        near = _hops(data, node, hops)
        nodes = [n for n in nodes if n["node_id"] in near]
    ids = {n["node_id"] for n in nodes}
    edges = [e for e in data.edges if e["src"] in ids and e["dst"] in ids]
    if format == "dot":
        return Response(render_dot(nodes, edges, session_id), media_type="text/vnd.graphviz")
    g = render_graph(nodes, edges)
    if format == "text":
        return Response(g.text, media_type="text/plain; charset=utf-8")
    order = {nid: i for i, nid in enumerate(g.node_ids)}
    return json_response(
        {
            "corpus": corpus,
            "session_id": session_id,
            "selection": {"step": step, "t0": t0, "t1": t1, "node": node, "hops": hops},
            "nodes": [
                {k: n.get(k) for k in NODE_FIELDS}
                for n in sorted(nodes, key=lambda n: order[n["node_id"]])
            ],
            "edges": [{"src": e["src"], "dst": e["dst"], "kind": e["kind"]} for e in edges],
            "text": g.text,
            "node_ids": g.node_ids,
        }
    )


def _in_window(e, t0, t1) -> bool:
    if t0 is None and t1 is None:
        return True
    if e["t"] is None:
        return False
    return (t0 is None or e["t"] >= t0) and (t1 is None or e["t"] < t1)


@router.get("/{corpus}/{session_id:path}/events", response_model=Page[Event])
def session_events(
    state: StateDep,
    corpus: str,
    session_id: str,
    t0: float | None = None,
    t1: float | None = None,
    kind: str | None = None,
    channel: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
):
    """Events in time order, those at t0 <= t < t1 when a window is given."""
    data = _session(state, corpus, session_id)
    rows = [
        e
        for e in data.events
        if _in_window(e, t0, t1)
        and (kind is None or e["kind"] == kind)
        and (channel is None or e["channel"] == channel)
    ]
    start = _EVENTS_CURSOR.decode(cursor, state.con.version)
    page = rows[start : start + limit]
    nxt = None
    if start + limit < len(rows):
        nxt = _EVENTS_CURSOR.encode(state.con.version, start + limit)
    return json_response({"items": page, "next_cursor": nxt})


@router.get("/{corpus}/{session_id:path}/chat", response_model=Chat)
def session_chat(
    state: StateDep, corpus: str, session_id: str, t0: float | None = None, t1: float | None = None
):
    """Chat messages sent at t0 <= t < t1, with the <human> / <ai> rendering."""
    data = _session(state, corpus, session_id)
    turns = data.chat(
        t0 if t0 is not None else float("-inf"), t1 if t1 is not None else float("inf")
    )
    return json_response(
        {
            "turns": [
                {
                    "event_id": m["event_id"],
                    "t": m["t"],
                    "actor_type": m["actor_type"],
                    "text": m["text"],
                }
                for m in turns
            ],
            "text": render_chat(turns),
        }
    )


@router.get("/{corpus}/{session_id:path}/media", response_model=Page[Media])
def session_media(state: StateDep, corpus: str, session_id: str):
    """The session's recordings (metadata; fetch one with GET /media/{media_id}/file)."""
    data = _session(state, corpus, session_id)
    return json_response(
        {
            "items": [{"corpus": corpus, "session_id": session_id, **m} for m in data.media],
            "next_cursor": None,
        }
    )


@router.get("/{corpus}/{session_id:path}/timeline", response_model=Timeline)
def session_timeline(state: StateDep, corpus: str, session_id: str):
    """Everything the workbench's timeline draws, in one answer: swimlanes per participant, every
    node occurrence and every event no node stands for, step bands with their ratings, edges,
    adoption triples, recordings and, for agent traces, the outcome."""
    return json_response(build_timeline(state.con, _session(state, corpus, session_id)))


# Last: its session_id takes the rest of the path, so the routes above, whose paths end in a
# word of their own (/graph, /timeline, ...), must be tried first.
@router.get("/{corpus}/{session_id:path}", response_model=Session)
async def get_session(state: StateDep, corpus: str, session_id: str):
    """One session's row."""
    if not state.sessions.ready:
        await run_in_threadpool(state.sessions.load)
    row = state.sessions.one(corpus, session_id)
    if row is None:
        _session(state, corpus, session_id)  # raises the 404 with its hint
    return json_response(row)
