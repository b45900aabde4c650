"""HAS-Bench ingestor: B.3.2 task YAML and graphlake's trace format, on a hand-written fixture."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, parse_with
from graphlake.pipeline import ingest_path
from graphlake.query import named, run_sql

HB = FIXTURES / "hasbench"
SCHEMA = json.loads(
    (Path(__file__).parent.parent / "schemas" / "hasbench-trace.schema.json").read_text()
)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    lake = tmp_path_factory.mktemp("hasbench") / "lake"
    ingest_path("hasbench", HB, lake)
    return lake


def q(lake, sql):
    return run_sql(sql, lake, max_rows=None).table.to_pylist()


def test_valid_fixture_lines_follow_the_json_schema():
    lines = (HB / "traces.jsonl").read_text().splitlines()[:11]
    for line in lines:
        jsonschema.validate(json.loads(line), SCHEMA)


def test_tasks_become_scenarios_with_participants_and_relationship_edges(lake):
    rows = q(
        lake,
        "SELECT scenario_id, domain, coordination_mode, known_info, unknown_info "
        "FROM scenarios ORDER BY 1",
    )
    assert rows == [
        {
            "scenario_id": "retail_A_001",
            "domain": "retail",
            "coordination_mode": "star",
            "known_info": '{"order_id":"W123"}',
            "unknown_info": '["email"]',
        },
        {
            "scenario_id": "retail_B_002",
            "domain": "retail",
            "coordination_mode": "chain",
            "known_info": '{"order_id":"W9"}',
            "unknown_info": "[]",
        },
    ]
    edges = q(lake, "SELECT src, dst, kind FROM edges WHERE level = 'participant' ORDER BY 1, 2")
    assert edges[0] == {
        "src": "retail_A_001/agent_0",
        "dst": "retail_A_001/agent_1",
        "kind": "handoff",
    }
    assert len(edges) == 3


def test_runs_steps_channels_and_lifecycle(lake):
    runs = q(lake, "SELECT session_id, condition, scenario_id FROM sessions ORDER BY 1")
    assert runs == [
        {"session_id": "r1", "condition": "A1", "scenario_id": "retail_A_001"},
        {"session_id": "r2", "condition": "A3", "scenario_id": "retail_A_001"},
    ]
    ch = q(
        lake,
        "SELECT kind, initiator, request_id, status FROM events "
        "WHERE session_id = 'r2' AND channel IN ('clarification', 'control') "
        "AND kind <> 'user_action' ORDER BY seq",
    )
    assert ch == [
        {"kind": "clarification", "initiator": "agent", "request_id": "q1", "status": "pending"},
        {"kind": "clarification", "initiator": "agent", "request_id": "q1", "status": "answered"},
        {"kind": "control", "initiator": "human", "request_id": "q2", "status": "expired"},
    ]
    ua = q(lake, "SELECT channel, initiator, text FROM events WHERE kind = 'user_action'")
    assert ua == [{"channel": "control", "initiator": "human", "text": "approve_refund"}]


def test_every_bad_line_is_rejected_with_a_reason(lake):
    reasons = [r["reason"] for r in q(lake, "SELECT reason FROM rejects ORDER BY reason")]
    assert len(reasons) == 4
    assert any("run_id 'r9' has no 'run' line before it" in r for r in reasons)
    assert any("agency_level 'A9' is not one of A1-A5" in r for r in reasons)
    assert any("channel 'telepathy'" in r for r in reasons)
    assert any("not valid JSON" in r for r in reasons)


def test_outcomes_feed_the_has_metrics(lake):
    q_ = named.get("has_outcomes")
    rows = run_sql(q_.sql, lake, params=q_.bind({})).table.to_pylist()
    by_level = {r["condition"]: r for r in rows}
    assert by_level["A1"]["pass_at_k"] == 0.0 and by_level["A3"]["pass_at_k"] == 1.0
    assert by_level["A1"]["task_score"] == pytest.approx(0.25)  # mean of the two dimensions
    assert by_level["A3"]["safety_rate"] == 1.0 and by_level["A1"]["delivery_rate"] == 1.0
    assert by_level["A1"]["agent"] == "gpt-4.1"  # two agents of one model: one run, not two
    q_ = named.get("has_rescue")
    (r,) = run_sql(
        q_.sql, lake, params=q_.bind({"from_condition": "A1", "to_condition": "A3"})
    ).table.to_pylist()
    assert (r["failed_before"], r["rescued"], r["rescue_rate"]) == (1, 1, 1.0)
    judge = q(lake, "SELECT label, value FROM annotations WHERE label LIKE 'judge:%' ORDER BY 1")
    assert judge == [
        {"label": "judge:CQS", "value": 4.5},
        {"label": "judge:CRJ", "value": 3.0},
        {"label": "judge:FUR", "value": 4.0},
    ]


line = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["run", "step", "channel_event", "outcome", "x"]),
            "run_id": st.sampled_from(["r1", "r2", "", None]),
        },
        optional={
            "task_id": st.sampled_from(["t", ""]),
            "step": st.integers(-1, 3),
            "pass": st.booleans(),
            "actions": st.lists(
                st.fixed_dictionaries(
                    {
                        "actor": st.sampled_from(["agent_0", "user_0", "z"]),
                        "kind": st.sampled_from(["message", "oops"]),
                    }
                ),
                max_size=2,
            ),
            "channel": st.sampled_from(["feedback", "nope"]),
            "initiator": st.sampled_from(["agent", "human"]),
            "status": st.sampled_from(["pending", "answered"]),
            "event_id": st.sampled_from(["e1", "e2"]),
            "agency_level": st.sampled_from(["A1", "A7"]),
        },
    ),
    st.integers(),
    st.text(max_size=3),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(line, max_size=10))
def test_never_raises_and_every_line_is_accepted_or_rejected(tmp_path_factory, lines):
    f = tmp_path_factory.mktemp("h") / "t.jsonl"
    text = [json.dumps(x) for x in lines]
    f.write_text("\n".join(text) + "\n")
    out = parse_with("hasbench", f)
    rejected = sum(1 for r in out.tables.get("rejects", []) if r["record_kind"] == "trace_line")
    # each accepted line leaves a mark: a session, an outcome 'pass', a step or channel event
    accepted = (
        len(out.tables.get("sessions", []))
        + sum(1 for a in out.tables.get("annotations", []) if a["label"] == "pass")
        + sum(
            1
            for e in out.tables.get("events", [])
            if e["kind"] == "step" or e["event_id"].startswith("c/")
        )
    )
    assert accepted + rejected == sum(1 for t in text if t.strip())
