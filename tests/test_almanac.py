"""Almanac ingestor (graphlake's interchange format) on a hand-written fixture."""

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

AL = FIXTURES / "almanac"
SCHEMAS = Path(__file__).parent.parent / "schemas"


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    lake = tmp_path_factory.mktemp("almanac") / "lake"
    ingest_path("almanac", AL, lake)
    return lake


def q(lake, sql):
    return run_sql(sql, lake, max_rows=None).table.to_pylist()


def test_fixture_follows_the_json_schemas():
    session = json.loads((SCHEMAS / "almanac-session.schema.json").read_text())
    for line in (AL / "s01.jsonl").read_text().splitlines()[:6]:
        jsonschema.validate(json.loads(line), session)
    jsonschema.validate(
        json.loads((AL / "maps" / "m1.json").read_text()),
        json.loads((SCHEMAS / "almanac-map.schema.json").read_text()),
    )


def test_actions_in_time_order_with_roles_and_mental_models(lake):
    ev = q(lake, "SELECT kind, actor, initiator FROM events ORDER BY seq")
    assert [e["kind"] for e in ev] == ["message", "draw", "draw", "undo", "erase"]
    assert ev[0]["initiator"] == "guide" and ev[1]["initiator"] == "follower"
    mm = q(
        lake,
        "SELECT label, text FROM annotations WHERE target_id = 'a2' "
        "AND kind = 'mental_model' ORDER BY label",
    )
    assert mm == [
        {"label": "alignment", "text": "aligned"},
        {"label": "partner_intent", "text": "Waiting for more information"},
        {"label": "rationale", "text": "Give the start."},
        {"label": "self_reasoning", "text": "Explaining the route"},
        {"label": "team_goal", "text": "Executing agreed plan"},
    ]
    persona = q(lake, "SELECT persona FROM participants WHERE role = 'guide'")[0]["persona"]
    assert json.loads(persona)["teamq"] == {"share_information": 3}
    (s,) = q(lake, "SELECT condition, split FROM sessions")
    assert s == {"condition": "C_not_visible", "split": "test"}


def grid(lake, seq):
    return [
        (r["row"], r["col"])
        for r in q(
            lake,
            f"SELECT row, col FROM canvas_cells WHERE seq <= {seq} GROUP BY row, col "
            "HAVING sum(delta) > 0 ORDER BY row, col",
        )
    ]


def test_canvas_is_stored_as_changes_and_rebuilt_at_any_action(lake):
    assert q(lake, "SELECT count(*) AS n FROM canvas_cells") == [{"n": 6}]
    assert grid(lake, 3) == [(0, 0), (0, 1), (1, 1)]
    assert grid(lake, 4) == [(0, 0), (0, 1), (1, 1), (2, 1)]
    assert grid(lake, 5) == [(0, 0), (0, 1), (1, 1)]  # undo
    assert grid(lake, 6) == [(0, 0), (0, 1)]  # erase


def test_map_landmarks_and_cells_are_queryable(lake):
    rows = q(
        lake,
        "SELECT landmark_id, on_giver_map, on_follower_map, "
        "json_array_length(json_extract(attrs, '$.cells')) AS n_cells "
        "FROM landmarks WHERE landmark_id <> '_map' ORDER BY 1",
    )
    assert rows == [
        {"landmark_id": "pyramid", "on_giver_map": True, "on_follower_map": False, "n_cells": 4},
        {
            "landmark_id": "suspension bridge",
            "on_giver_map": None,
            "on_follower_map": None,
            "n_cells": 3,
        },
    ]
    grid_size = q(
        lake,
        "SELECT json_extract(attrs, '$.grid_size') AS g FROM landmarks WHERE landmark_id = '_map'",
    )
    assert json.loads(grid_size[0]["g"]) == [10, 12]


def test_bad_actions_are_rejected_and_the_rest_lands(lake):
    reasons = [r["reason"] for r in q(lake, "SELECT reason FROM rejects ORDER BY reason")]
    assert sorted(reasons, key=lambda r: int(r.split()[1].rstrip(":"))) == [
        "line 7: actor 'P9' is not a participant of session s01",
        "line 8: action 'wave' is none of message, draw, erase, undo, reset",
        "line 9: draw canvas: [0, -1] is not a [row, col] pair of non-negative integers",
        "line 10: grounding_act 'shrug' is none of initiate, continue, acknowledge, repair, "
        "request_repair, request_acknowledge, cancel, other",
    ]


def test_almanac_queries_by_hand(lake):
    qa = named.get("almanac_action_types")
    rows = run_sql(qa.sql, lake, params=qa.bind({})).table.to_pylist()
    follower = {r["action"]: (r["n"], r["share"]) for r in rows if r["role"] == "follower"}
    assert follower == {"draw": (2, 0.5), "undo": (1, 0.25), "erase": (1, 0.25)}
    qp = named.get("almanac_alignment_progress")
    rows = run_sql(qp.sql, lake, params=qp.bind({})).table.to_pylist()
    # t_max = 15: guide's message at 4 s is quarter 2; follower's labelled actions at 9.5,
    # 12 and 13 s are quarters 3, 4, 4 (aligned, misaligned, aligned)
    assert [(r["role"], r["quarter"], r["n"], r["aligned_share"]) for r in rows] == [
        ("follower", 3, 1, 1.0),
        ("follower", 4, 2, 0.5),
        ("guide", 2, 1, 1.0),
    ]
    qg = named.get("almanac_alignment_by_act")
    rows = run_sql(qg.sql, lake, params=qg.bind({})).table.to_pylist()
    # acts: initiate (message at 4 s, aligned), acknowledge (draw at 9.5 s, aligned),
    # repair (draw at 12 s, misaligned); the undo at 13 s has no act
    assert [(r["act"], r["n"], r["aligned_share"], r["misaligned_share"]) for r in rows] == [
        ("acknowledge", 1, 1.0, 0.0),
        ("initiate", 1, 1.0, 0.0),
        ("repair", 1, 0.0, 1.0),
    ]


line = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["action", "session"]),
            "actor": st.sampled_from(["P1", "P2", "x"]),
            "action": st.sampled_from(["message", "draw", "undo", "reset", "jump"]),
            "t": st.one_of(st.floats(0, 100), st.just(-1), st.text(max_size=2)),
        },
        optional={
            "canvas": st.lists(st.lists(st.integers(-1, 3), max_size=3), max_size=3),
            "mental_model": st.dictionaries(
                st.sampled_from(["alignment", "zzz"]), st.text(max_size=3)
            ),
        },
    ),
    st.integers(),
    st.text(max_size=3),
)
HEADER = {
    "type": "session",
    "session_id": "h",
    "map_id": "m",
    "condition": "C_visible",
    "participants": [{"id": "P1", "role": "guide"}, {"id": "P2", "role": "follower"}],
}


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(line, max_size=10))
def test_never_raises_and_every_action_is_accounted_for(tmp_path_factory, lines):
    f = tmp_path_factory.mktemp("a") / "s.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in [HEADER, *lines]) + "\n")
    out = parse_with("almanac", f)
    events = len(out.tables.get("events", []))
    rejects = len(out.tables.get("rejects", []))
    assert events + rejects == len(lines)
