"""Protocols over event traces: Almanac next-action and mental-model prediction (Almanac 4.1,
4.2) and HAS-Bench / tau2 outcome forecasting from a trace prefix (HAS-Bench 4.1, 4.3).

Almanac: for a target action of one participant, the context is the interaction history up to
that action (every earlier action of both participants, in order), the participant's persona
and, in the ``history-mental-model`` condition, the mental models annotated on the
participant's earlier actions (the paper's "+Mental Model" setting). Next action: predict the
action type (message, draw, erase, undo, reset), and for a draw the cells; mental model:
predict the category of one dimension (team_goal, partner_intent, self_reasoning).

Trace prefix: a session's events up to, and not including, the event at ``fraction`` of the
trace, then forecast whether the run passes (HAS-Bench ``pass``; tau2: reward within 1e-6 of 1).
These prompts are graphlake's own; the papers publish none for them.
"""

from __future__ import annotations

import json
import math

from graphlake.protocols.session import SessionData
from graphlake.protocols.spec import Param, ProtocolSpec

ACTION_TYPES = ("message", "draw", "erase", "undo", "reset")
MM_DIMENSIONS = ("team_goal", "partner_intent", "self_reasoning")
_ROLE = Param("role", "str", "all", "whose actions are targets", ("all", "guide", "follower"))

SPECS = {
    s.id: s
    for s in (
        ProtocolSpec(
            id="almanac-next-action",
            description="Predict a participant's next action (type; "
            "cells for a draw) from the interaction history",
            task="next_action",
            unit="one action after the first of an Almanac session",
            window="session start -> target action",
            cutoff="the target action (history holds strictly earlier actions)",
            labels=ACTION_TYPES,
            conditions=("history", "history-mental-model"),
            source="Almanac 4.1, 4.2",
            params=(_ROLE,),
        ),
        ProtocolSpec(
            id="almanac-mental-model",
            description="Predict the category of a participant's mental "
            "model at an action from the history, mental-model history and persona",
            task="mental_model",
            unit="one action with a mental-model annotation",
            window="session start -> target action",
            cutoff="the target action",
            labels=(),
            conditions=("history-mental-model",),
            source="Almanac 4.1, 4.2",
            params=(
                _ROLE,
                Param("dimension", "str", "team_goal", "mental-model dimension", MM_DIMENSIONS),
            ),
        ),
        *(
            ProtocolSpec(
                id=f"{corpus}-prefix",
                description=f"Forecast whether a {name} run passes from its "
                "trace up to a chosen event",
                task="outcome",
                unit="one session with an outcome",
                window="session start -> the event at `fraction` of the trace (or `event`)",
                cutoff="that event (the prefix holds strictly earlier events)",
                labels=("PASS", "FAIL"),
                conditions=("trace",),
                source=source,
                params=(
                    Param(
                        "fraction",
                        "float",
                        0.5,
                        "share of the trace before the cut-off event, in (0, 1]",
                    ),
                    Param(
                        "event",
                        "str",
                        None,
                        "cut at this event_id instead (sessions without it have no instance)",
                    ),
                ),
            )
            for corpus, name, source in (
                ("hasbench", "HAS-Bench", "HAS-Bench 4.1, 4.3"),
                ("tau2", "tau2-bench", "tau2-bench results (reward)"),
            )
        ),
    )
}

_ALMANAC_TARGETS = """
WITH acts AS (
    SELECT e.corpus, e.session_id, e.event_id, e.seq, e.t, e.kind, e.actor, p.role,
           row_number() OVER (PARTITION BY e.session_id ORDER BY e.seq, e.event_id) AS k
    FROM events e LEFT JOIN participants p ON p.corpus = e.corpus
         AND p.session_id = e.session_id AND p.participant_id = e.actor
    WHERE e.corpus = 'almanac' AND e.kind IN ('message', 'draw', 'erase', 'undo', 'reset'))
SELECT a.corpus, a.session_id, a.event_id AS target, a.seq, a.t, a.actor, a.role,
       {gold} AS gold {extra}
FROM acts a {join}
WHERE a.k > 1 AND ($role = 'all' OR a.role = $role) {where}
"""
_CELLS = "list_sort(list(DISTINCT [c.row, c.col]) FILTER (WHERE c.delta > 0))"


def needs_session(spec: ProtocolSpec) -> bool:
    """Contexts are cut from the session's rows."""
    return True


def targets_sql(spec: ProtocolSpec, params: dict) -> tuple[str, dict]:
    """SQL for every instance of ``spec`` (corpus, session_id, target, gold, ...)."""
    if spec.task == "next_action":
        sql = _ALMANAC_TARGETS.format(
            gold="a.kind",
            extra=f", {_CELLS} AS gold_cells",
            join="LEFT JOIN canvas_cells c ON c.corpus = a.corpus AND c.session_id = "
            "a.session_id AND c.event_id = a.event_id",
            where="GROUP BY ALL",
        )
        return sql, {"role": params["role"]}
    if spec.task == "mental_model":
        sql = _ALMANAC_TARGETS.format(
            gold="m.text",
            extra="",
            where="AND m.text IS NOT NULL",
            join="JOIN annotations m ON m.corpus = a.corpus AND m.session_id = a.session_id "
            "AND m.target_id = a.event_id AND m.kind = 'mental_model' "
            "AND m.label = $dim",
        )
        return sql, {"role": params["role"], "dim": params["dimension"]}
    corpus = spec.id.removesuffix("-prefix")
    if corpus == "tau2":
        gold = "CASE WHEN abs(max(value) - 1) <= 1e-6 THEN 'PASS' ELSE 'FAIL' END"
        label = "reward"
    else:
        gold = "CASE WHEN max(value) >= 1 THEN 'PASS' ELSE 'FAIL' END"
        label = "pass"
    return (
        f"SELECT corpus, session_id, session_id AS target, {gold} AS gold "
        "FROM annotations a WHERE corpus = $c AND kind = 'outcome' AND label = $l "
        "AND value IS NOT NULL AND ($event IS NULL OR EXISTS (SELECT 1 FROM events e "
        "WHERE e.corpus = a.corpus AND e.session_id = a.session_id "
        "AND e.event_id = $event)) GROUP BY corpus, session_id",
        {"c": corpus, "l": label, "event": params["event"]},
    )


def _line(e: dict, roles: dict) -> str:
    who = roles.get(e["actor"]) or e["actor"] or e["actor_type"] or "system"
    what = (
        e["kind"]
        if not e["channel"] or e["channel"] in ("chat", "canvas")
        else f"{e['kind']}/{e['channel']}"
    )
    t = "" if e["t"] is None else f"[{e['t']:.1f}s] "
    body = e["text"] or ""
    if not body and e.get("payload"):
        body = e["payload"]
    return f"{t}{who} ({what}): {body}".rstrip()


def build(
    spec: ProtocolSpec, data: SessionData, ref: dict, condition: str, params: dict
) -> tuple[str, dict]:
    roles = {p["participant_id"]: p["role"] or p["name"] for p in data.participants}
    if spec.task == "outcome":
        return _prefix(spec, data, params, roles)
    history = data.events_before(cutoff_seq=ref["seq"])
    persona = next(
        (p["persona"] for p in data.participants if p["participant_id"] == ref["actor"]), None
    )
    role = ref["role"] or roles.get(ref["actor"]) or ref["actor"]
    inputs = {
        "target": {"event_id": ref["target"], "actor": ref["actor"], "role": role},
        "cutoff": ref["t"],
        "cutoff_seq": ref["seq"],
        "persona": json.loads(persona) if persona else None,
        "history": [
            {
                "event_id": e["event_id"],
                "seq": e["seq"],
                "t": e["t"],
                "actor": e["actor"],
                "kind": e["kind"],
                "text": e["text"],
            }
            for e in history
        ],
    }
    parts = [
        f"You are simulating the {role} in a Map Task session: two people reproduce a "
        "route on a map through text messages and drawing.",
        f"Your persona: {persona or 'not recorded'}",
        "Interaction so far, in order:",
        "\n".join(_line(e, roles) for e in history),
    ]
    if condition == "history-mental-model":
        seen = {e["event_id"] for e in history if e["actor"] == ref["actor"]}
        mms = [m for m in data.mental_models if m["target_id"] in seen]
        inputs["mental_models"] = mms
        parts += [
            "Your mental model at your earlier actions:",
            "\n".join(f"{m['target_id']} {m['label']}: {m['text']}" for m in mms),
        ]
    if spec.task == "next_action":
        parts.append(
            "Predict your next action. Output its type, one of: "
            f"{', '.join(ACTION_TYPES)}; for draw, also the grid cells as [row, col]."
        )
    else:
        parts.append(
            f"Predict your {params['dimension'].replace('_', ' ')} at your next "
            "action. Output its category only."
        )
    return "\n".join(parts), inputs


def _prefix(spec, data: SessionData, params: dict, roles: dict) -> tuple[str, dict]:
    frac = min(max(params["fraction"], 1e-9), 1.0)
    events = data.events
    k = min(len(events) - 1, max(0, math.ceil(frac * len(events)) - 1)) if events else 0
    if params.get("event") is not None:
        k = next(i for i, e in enumerate(events) if e["event_id"] == params["event"])
    cut = events[k] if events else None
    prefix = events[:k]
    inputs = {
        "cutoff_event": cut["event_id"] if cut else None,
        "cutoff": cut["t"] if cut else None,
        "cutoff_index": k,
        "goal": data.goal,
        "trace": [
            {
                "event_id": e["event_id"],
                "seq": e["seq"],
                "t": e["t"],
                "actor": e["actor"],
                "actor_type": e["actor_type"],
                "kind": e["kind"],
                "channel": e["channel"],
                "text": e["text"],
            }
            for e in prefix
        ],
    }
    prompt = "\n".join(
        [
            "You are given the beginning of a run in which an AI agent works on a task with a "
            "(simulated) human user.",
            f"Task: {data.goal}",
            "Trace so far, in order:",
            "\n".join(_line(e, roles) for e in prefix),
            "Predict whether the run will pass its evaluation. Output exactly one label: "
            "`PASS` or `FAIL`",
        ]
    )
    return prompt, inputs
