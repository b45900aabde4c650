"""Hypothesis properties of the Kolab parser.

1. It never raises, whatever JSON it is given.
2. Every input record is accounted for: accepted + rejected = records in the source, for
   steps, nodes, time intervals, edges and user_response tuples.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphlake.ingest.base import CollectingEmitter
from graphlake.ingest.kolab_graph import GraphParser

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)

clock = st.integers(0, 7200).map(lambda t: f"{t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}")
time_text = st.one_of(
    st.tuples(clock, clock).map(lambda p: f"{min(p)}-{max(p)}"),  # valid
    st.tuples(clock, clock).map(lambda p: f"{p[0]}-{p[1]}"),  # maybe reversed
    st.sampled_from(["", "00:61:00-00:62:00", "soon", "00:01:00"]),  # invalid
)
ids = st.sampled_from(["n1", "n2", "n3", "n4", "", None, 7])
node = st.fixed_dictionaries(
    {
        "id": ids,
        "actor": st.sampled_from(["user", "claude", "grok", None]),
        "actor_type": st.sampled_from(["user", "ai", "claude", "robot", None]),
        "label": st.text(max_size=5),
        "time": st.lists(time_text, max_size=3),
    },
    optional={
        "user_response": st.lists(
            st.one_of(
                st.tuples(
                    ids,
                    ids,
                    st.sampled_from(["adopt", "modify", "reject", "meh"]),
                    time_text,
                    time_text,
                    time_text,
                ).map(list),
                json_values,
            ),
            max_size=3,
        ),
    },
)
edge = st.one_of(
    st.fixed_dictionaries(
        {"from": ids, "to": ids, "type": st.sampled_from(["sequential", "loop"])}
    ),
    json_values,
)
step = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["seg1a", "seg2a", "seg1b", "", None]),
            "start_seconds": st.one_of(st.integers(0, 3000), st.none(), st.text(max_size=3)),
            "end_seconds": st.one_of(st.integers(0, 6000), st.none()),
            "nodes": st.lists(st.one_of(node, json_values), max_size=5),
            "edges": st.lists(edge, max_size=5),
        }
    ),
    json_values,
)
graph = st.fixed_dictionaries(
    {"session_id": st.sampled_from(["s1", "", None]), "steps": st.lists(step, max_size=4)}
)


def parse(obj) -> CollectingEmitter:
    out = CollectingEmitter("kolab")
    GraphParser(out, "mem.json").parse(obj, "fallback")
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_never_raises_on_arbitrary_json(obj):
    out = parse(obj)
    # whatever it was, it is accounted for: a session or a reject
    assert out.tables.get("sessions") or out.tables.get("rejects")


def _n(value) -> int:
    """How many records a list field holds (a lone non-list value is one record)."""
    if value is None:
        return 0
    return len(value) if isinstance(value, list) else 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph)
def test_every_record_is_accepted_or_rejected(g):
    g = json.loads(json.dumps(g))  # what a file would give the parser
    out = parse(g)
    rejects = out.tables.get("rejects", [])
    refs = {r["record_ref"] for r in rejects}
    by_kind: dict[str, int] = {}
    for r in rejects:
        by_kind[r["record_kind"]] = by_kind.get(r["record_kind"], 0) + 1
    accepted = {t: len(rows) for t, rows in out.tables.items()}
    assert accepted.get("sessions", 0) + by_kind.get("session", 0) == 1

    steps = g["steps"]
    whole_step_rejects = sum(
        1
        for i in range(len(steps))
        if f"steps[{i}]" in refs
        and any(r["record_kind"] == "step" and r["record_ref"] == f"steps[{i}]" for r in rejects)
    )
    assert accepted.get("steps", 0) + whole_step_rejects == len(steps)

    # walk the source: records inside a rejected record travel in its raw payload
    exp_nodes = exp_times = exp_responses = exp_edges = 0
    for i, st_ in enumerate(steps):
        if not isinstance(st_, dict) or any(
            r["record_ref"] == f"steps[{i}]" and r["record_kind"] == "step" for r in rejects
        ):
            continue
        nodes = st_.get("nodes") if isinstance(st_.get("nodes"), list) else []
        edges = st_.get("edges") if isinstance(st_.get("edges"), list) else []
        exp_edges += len(edges)
        exp_nodes += len(nodes)
        for j, n in enumerate(nodes):
            if f"steps[{i}].nodes[{j}]" in refs or not isinstance(n, dict):
                continue
            exp_times += _n(n.get("time"))
            exp_responses += (
                _n(n.get("user_response"))
                if isinstance(n.get("user_response"), list)
                else (1 if n.get("user_response") is not None else 0)
            )
    assert accepted.get("nodes", 0) + by_kind.get("node", 0) == exp_nodes
    assert accepted.get("node_occurrences", 0) + by_kind.get("node_time", 0) == exp_times
    assert accepted.get("annotations", 0) + by_kind.get("user_response", 0) == exp_responses
    assert accepted.get("edges", 0) + by_kind.get("edge", 0) == exp_edges
