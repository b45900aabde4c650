"""Scenario-level participants and relationship edges, shared by the agent-benchmark ingestors.

A benchmark scenario (a MARBLE task, a HAS-Bench task) names agents, users and relationship
triples before any run exists. graphlake keeps them as ``participants`` and participant-level
``edges`` with ``session_id`` ``''`` and ids qualified by the scenario (``coding/1/agent2``),
so relationships are queryable by SQL next to the runs that enact them.
"""

from __future__ import annotations

from graphlake.ingest.base import to_json

AGENT_KNOWN = frozenset({"agent_id", "type", "profile"})
USER_KNOWN = frozenset({"user_id", "type", "persona"})


class BadScenario(ValueError):
    """A scenario record that cannot be ingested; the message is the reject reason."""


def agent_rows(agents, sid: str) -> list[dict]:
    """``participants`` rows for a scenario's agents (kind ai)."""
    rows = []
    for k, a in enumerate(agents or []):
        if not isinstance(a, dict) or not a.get("agent_id"):
            raise BadScenario(f"{sid}: agents[{k}] has no agent_id")
        rows.append(
            {
                "session_id": "",
                "participant_id": f"{sid}/{a['agent_id']}",
                "kind": "ai",
                "role": a.get("type"),
                "name": str(a["agent_id"]),
                "persona": to_json({"profile": a.get("profile")}),
                "attrs": to_json(
                    {"scenario_id": sid, **{k2: v for k2, v in a.items() if k2 not in AGENT_KNOWN}}
                ),
            }
        )
    return rows


def user_rows(users, sid: str) -> list[dict]:
    """``participants`` rows for a scenario's (simulated) human users."""
    rows = []
    for k, u in enumerate(users or []):
        if not isinstance(u, dict) or not u.get("user_id"):
            raise BadScenario(f"{sid}: users[{k}] has no user_id")
        rows.append(
            {
                "session_id": "",
                "participant_id": f"{sid}/{u['user_id']}",
                "kind": "human",
                "role": u.get("type") or "user",
                "name": str(u["user_id"]),
                "persona": to_json(u.get("persona")) if u.get("persona") else None,
                "attrs": to_json(
                    {"scenario_id": sid, **{k2: v for k2, v in u.items() if k2 not in USER_KNOWN}}
                ),
            }
        )
    return rows


def relationship_rows(triples, sid: str, known: set[str]) -> list[dict]:
    """Participant-level ``edges`` for ``[source, target, relation]`` triples."""
    rows, seen = [], set()
    for k, rel in enumerate(triples or []):
        if not isinstance(rel, list) or len(rel) != 3 or not all(isinstance(x, str) for x in rel):
            raise BadScenario(
                f"{sid}: relationships[{k}] is not a [source, target, relation] triple"
            )
        a, b, kind = rel
        src, dst = f"{sid}/{a}", f"{sid}/{b}"
        missing = [x for x in (src, dst) if known and x not in known]
        if missing:
            who = missing[0].split("/")[-1]
            raise BadScenario(
                f"{sid}: relationships[{k}] names {who!r}, which is not one of "
                "the scenario's participants"
            )
        edge_id = f"{src}->{dst}:{kind}"
        if edge_id in seen:
            continue  # the same triple written twice says nothing new
        seen.add(edge_id)
        rows.append(
            {
                "session_id": "",
                "edge_id": edge_id,
                "src": src,
                "dst": dst,
                "kind": kind,
                "level": "participant",
                "attrs": to_json({"scenario_id": sid}),
            }
        )
    return rows
