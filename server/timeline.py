"""One session laid out for the workbench's timeline: swimlanes (one per participant),
bars, step bands, edges, adoption triples and step ratings, in the shape the page draws
without reshaping.

Why a separate payload: the page needs every occurrence of a node (a loop is several bars),
the events no node stands for (chat turns, clarifications, tool calls), the adoption labels
and the ratings together; fetching them as graph + events + SQL would be four round trips and
a join in JavaScript. Columns are sent as parallel arrays (``{"t_start": [...], ...}``) so a
2,000-node session is one compact answer the chart takes as its dataset.
"""

from __future__ import annotations

from graphlake.protocols.session import SessionData
from graphlake.query.connection import Connection

#: Lanes in this order, top to bottom: the people, then the machines they work with.
_LANE_ORDER = {
    "human": 0,
    "user": 1,
    "simulated_user": 1,
    "ai": 2,
    "agent": 3,
    "tool": 4,
    "system": 5,
    "environment": 6,
}

_ADOPTIONS = """
SELECT annotation_id, source_node, ai_node, response_node, label
FROM annotations
WHERE corpus = $c AND session_id = $s AND kind = 'adoption'
ORDER BY annotation_id
"""

_RATINGS = """
SELECT step_id, label, avg(value) AS value
FROM annotations
WHERE corpus = $c AND session_id = $s AND kind = 'rating'
  AND label IN ('collaboration', 'output_quality')
GROUP BY step_id, label ORDER BY step_id, label
"""

_OUTCOME = """
SELECT success, score, delivered, termination, agent
FROM run_outcomes WHERE corpus = $c AND session_id = $s
"""


def lane_of(actor_type: str | None, actor: str | None) -> tuple[str, str]:
    """(lane id, lane label) for an actor no participant stands for: one lane per actor."""
    kind = actor_type or "unknown"
    who = actor or kind
    label = who if who == kind else f"{who} ({kind})"
    return f"{kind}:{who}", label


def participant_lanes(participants: list[dict]) -> dict[str, tuple[str, str]]:
    """Actor name -> (lane id, lane label) of the participant it names.

    Sources name one person two ways: Kolab's nodes say ``user`` where its chat says
    ``P000``, Almanac's actions say ``guide`` where its events say ``alm0000-G``. An actor
    is its participant when it is the participant's id, or its name where no other
    participant of the session has that name (HAS-Bench's two agents both run gpt-4.1)."""
    names: dict[str, list[dict]] = {}
    for p in participants:
        if p.get("name"):
            names.setdefault(p["name"], []).append(p)
    out: dict[str, tuple[str, str]] = {}
    for p in participants:
        pid, name = p["participant_id"], p.get("name")
        label = (
            f"{pid} ({p.get('kind') or 'participant'})"
            if name in (None, pid)
            else f"{name} ({pid})"
        )
        out[pid] = (f"participant:{pid}", label)
    for name, ps in names.items():
        if len(ps) == 1 and name not in out:
            out[name] = out[ps[0]["participant_id"]]
    return out


def _columns(rows: list[dict], names: tuple[str, ...]) -> dict[str, list]:
    return {n: [r.get(n) for r in rows] for n in names}


def build_timeline(con: Connection, data: SessionData) -> dict:
    """The timeline payload of one session (see the module docstring)."""
    p = {"c": data.corpus, "s": data.session_id}
    lanes: dict[str, dict] = {}
    people = participant_lanes(data.participants)

    def lane(actor_type, actor) -> str:
        lid, label = people.get(actor) or lane_of(actor_type, actor)
        if lid not in lanes:
            lanes[lid] = {"id": lid, "label": label, "actor_type": actor_type or "unknown"}
        return lid

    occ = [
        {**o, "lane": lane(o["actor_type"], o["actor"])}
        for o in data.occurrences
        if o["t_start"] is not None
    ]
    # events a node already stands for are drawn as that node's bar
    events = [
        {**e, "lane": lane(e["actor_type"], e["actor"])}
        for e in data.events
        if e["t"] is not None and e["node_id"] is None
    ]
    order = sorted(lanes.values(), key=lambda x: (_LANE_ORDER.get(x["actor_type"], 9), x["label"]))
    for i, x in enumerate(order):
        x["index"] = i
    index = {x["id"]: x["index"] for x in order}
    ratings: dict[str, dict] = {}
    for r in con.rows(_RATINGS, p):
        ratings.setdefault(r["step_id"], {})[r["label"]] = r["value"]
    info = data.info
    outcome = con.rows(_OUTCOME, p)  # agent traces only: sessions with a scenario
    ends = [o["t_end"] or o["t_start"] for o in occ] + [e["t_end"] or e["t"] for e in events]
    ends += [s["t_end"] for s in data.steps if s["t_end"] is not None]
    return {
        "corpus": data.corpus,
        "session_id": data.session_id,
        "info": {k: info.get(k) for k in ("title", "goal", "domain", "condition", "split")},
        "duration_s": max(ends, default=0.0),
        "lanes": order,
        "steps": [
            {
                **{k: s[k] for k in ("step_id", "ordinal", "badge", "name", "t_start", "t_end")},
                "ratings": ratings.get(s["step_id"], {}),
            }
            for s in data.steps
        ],
        "occurrences": {
            **_columns(
                occ,
                (
                    "node_id",
                    "t_start",
                    "t_end",
                    "step_id",
                    "actor_type",
                    "actor",
                    "label",
                    "detail",
                ),
            ),
            "lane": [index[o["lane"]] for o in occ],
        },
        "events": {
            **_columns(
                events, ("event_id", "t", "t_end", "kind", "channel", "actor_type", "actor", "text")
            ),
            "lane": [index[e["lane"]] for e in events],
        },
        "edges": [{"src": e["src"], "dst": e["dst"], "kind": e["kind"]} for e in data.edges],
        "adoptions": con.rows(_ADOPTIONS, p),
        "media": [
            {"media_id": m["media_id"], "kind": m["kind"], "duration_s": m["duration_s"]}
            for m in data.media
        ],
        "outcome": outcome[0] if outcome else None,
    }
