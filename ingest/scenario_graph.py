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
#: The columns of a participant and of a relationship edge, in the order of their tuples
PARTICIPANT_FIELDS = ("session_id", "participant_id", "kind", "role", "name", "persona", "attrs")
EDGE_FIELDS = ("session_id", "edge_id", "src", "dst", "kind", "level", "attrs")


class BadScenario(ValueError):
    """A scenario record that cannot be ingested; the message is the reject reason."""


def agent_tuples(agents, sid: str) -> list[tuple]:
    """``participants`` rows (:data:`PARTICIPANT_FIELDS`) for a scenario's agents (kind ai).
    Agents that carry only the fields with a column share one attrs text."""
    rows = []
    plain = None
    for k, a in enumerate(agents or []):
        if not isinstance(a, dict) or not a.get("agent_id"):
            raise BadScenario(f"{sid}: agents[{k}] has no agent_id")
        if AGENT_KNOWN.issuperset(a):
            plain = plain or to_json({"scenario_id": sid})
            attrs = plain
        else:
            attrs = to_json(
                {"scenario_id": sid, **{k2: v for k2, v in a.items() if k2 not in AGENT_KNOWN}}
            )
        rows.append(
            (
                "", f"{sid}/{a['agent_id']}", "ai", a.get("type"), str(a["agent_id"]),
                to_json({"profile": a.get("profile")}), attrs,
            )
        )  # fmt: skip
    return rows


def user_tuples(users, sid: str) -> list[tuple]:
    """``participants`` rows (:data:`PARTICIPANT_FIELDS`) for a scenario's (simulated)
    human users."""
    rows = []
    for k, u in enumerate(users or []):
        if not isinstance(u, dict) or not u.get("user_id"):
            raise BadScenario(f"{sid}: users[{k}] has no user_id")
        rows.append(
            (
                "", f"{sid}/{u['user_id']}", "human", u.get("type") or "user",
                str(u["user_id"]), to_json(u.get("persona")) if u.get("persona") else None,
                to_json(
                    {"scenario_id": sid, **{k2: v for k2, v in u.items() if k2 not in USER_KNOWN}}
                ),
            )
        )  # fmt: skip
    return rows


def relationship_tuples(triples, sid: str, known: set[str]) -> list[tuple]:
    """Participant-level ``edges`` (:data:`EDGE_FIELDS`) for ``[source, target, relation]``
    triples."""
    rows, seen = [], set()
    attrs = to_json({"scenario_id": sid})
    for k, rel in enumerate(triples or []):
        if not (
            isinstance(rel, list)
            and len(rel) == 3
            and isinstance(rel[0], str)
            and isinstance(rel[1], str)
            and isinstance(rel[2], str)
        ):
            raise BadScenario(
                f"{sid}: relationships[{k}] is not a [source, target, relation] triple"
            )
        a, b, kind = rel
        src, dst = f"{sid}/{a}", f"{sid}/{b}"
        if known and (src not in known or dst not in known):
            who = a if src not in known else b
            raise BadScenario(
                f"{sid}: relationships[{k}] names {who!r}, which is not one of "
                "the scenario's participants"
            )
        edge_id = f"{src}->{dst}:{kind}"
        if edge_id in seen:
            continue  # the same triple written twice says nothing new
        seen.add(edge_id)
        rows.append(("", edge_id, src, dst, kind, "participant", attrs))
    return rows


def as_dicts(rows: list[tuple], fields: tuple[str, ...]) -> list[dict]:
    """Tuples of :func:`agent_tuples` and the others as the emitter's row dicts."""
    return [dict(zip(fields, r, strict=True)) for r in rows]
