"""Coding-agent trajectories land as sessions: SWE-agent ``.traj`` files and OpenHands event
lists. Neither tool runs here; the files follow the shapes their projects document (SWE-agent's
trajectory: ``trajectory``, ``history``, ``info``; OpenHands' event stream: ``id``, ``source``,
``action`` / ``observation``, ``cause``, ``llm_metrics``)."""

from __future__ import annotations

import json

from graphlake.api import connect
from graphlake.demo.trace_shapes import EVENTS, TRAJ
from graphlake.pipeline import ingest_path


def _q(lake, sql):
    return connect(lake).sql(sql).to_pylist()


def test_a_swe_agent_trajectory_lands_with_its_human_turn_steps_and_stats(tmp_path):
    path = tmp_path / "astropy__astropy-12907.traj"
    path.write_text(json.dumps(TRAJ))
    stats, _ = ingest_path("traces", path, tmp_path / "lake")
    assert not stats.rejected
    lake = tmp_path / "lake"
    [s] = _q(lake, "SELECT * FROM sessions")
    assert s["session_id"] == "astropy__astropy-12907" and s["duration_s"] == 1.7
    assert s["goal"].startswith("separability_matrix does not compute")
    nodes = _q(lake, "SELECT node_id, actor_type, label FROM nodes ORDER BY t_start, node_id")
    assert [n["actor_type"] for n in nodes].count("ai") == 3
    assert nodes[0] == {"node_id": "prompt", "actor_type": "human", "label": "issue"}
    assert [n["label"] for n in nodes if n["actor_type"] == "ai"][:2] == [
        "find_file separable.py",
        "edit 242:242",
    ]
    chain = _q(lake, "SELECT count(*) AS n FROM edges WHERE kind = 'next'")[0]["n"]
    assert chain == 6  # prompt -> a0 -> o0 -> a1 -> o1 -> a2 -> o2
    usage = {
        a["label"]: a["value"]
        for a in _q(lake, "SELECT label, value FROM annotations WHERE kind = 'usage'")
    }
    assert usage == {"input_tokens": 51234.0, "output_tokens": 812.0, "cost_total": 0.42,
                     "api_calls": 3.0}  # fmt: skip
    [outcome] = _q(lake, "SELECT label, text FROM annotations WHERE kind = 'outcome'")
    assert outcome["label"] == "submitted" and outcome["text"].startswith("diff --git")
    kept = json.loads(s["attrs"])
    assert kept["environment"] == "swe_main" and len(kept["history"]) == 4


def test_an_openhands_event_list_lands_with_causes_errors_and_usage(tmp_path):
    path = tmp_path / "conv-17.json"
    path.write_text(json.dumps(EVENTS))
    stats, _ = ingest_path("traces", path, tmp_path / "lake")
    lake = tmp_path / "lake"
    reasons = sorted(r["reason"] for r in _q(lake, "SELECT reason FROM rejects"))
    assert len(reasons) == 2 and "appears twice" in reasons[1] and "needs an id" in reasons[0]
    nodes = {n["node_id"]: n for n in _q(lake, "SELECT * FROM nodes")}
    assert len(nodes) == 6
    assert nodes["0"]["actor_type"] == "human" and nodes["1"]["actor_type"] == "ai"
    assert nodes["2"]["actor"] == "tool:run" and nodes["2"]["t_start"] == 3.0
    causes = _q(lake, "SELECT src, dst FROM edges WHERE kind = 'causes' ORDER BY src")
    assert causes == [{"src": "1", "dst": "2"}, {"src": "3", "dst": "4"}]
    events = _q(lake, "SELECT kind, text, request_id FROM events ORDER BY seq")
    assert [e["kind"] for e in events] == [
        "message", "tool_call", "tool_result", "tool_call", "error", "tool_call"
    ]  # fmt: skip
    assert events[2]["request_id"] == "1"
    usage = {a["label"]: a["value"] for a in _q(lake, "SELECT label, value FROM annotations")}
    assert usage == {"input_tokens": 2100.0, "output_tokens": 95.0, "cost_total": 0.03}
    [s] = _q(lake, "SELECT goal, duration_s FROM sessions")
    assert s == {"goal": "Add a --dry-run flag", "duration_s": 20.0}


def test_the_forced_ingestors_refuse_each_others_files(tmp_path):
    traj = tmp_path / "a.traj"
    traj.write_text(json.dumps(TRAJ))
    ingest_path("openhands", traj, tmp_path / "lake")
    [r] = _q(tmp_path / "lake", "SELECT reason FROM rejects")
    assert "not an OpenHands event list" in r["reason"]


def test_a_trajectory_whose_history_starts_past_the_sniffed_prefix_is_still_one(tmp_path):
    """SWE-agent writes ``trajectory`` first; with long observations its ``history`` and
    ``info`` keys start megabytes in. Detection reads the document's structure, not a prefix."""
    traj = {
        "trajectory": TRAJ["trajectory"],
        **{k: v for k, v in TRAJ.items() if k != "trajectory"},
    }
    traj["trajectory"] = [
        {**step, "observation": step.get("observation", "") + "x" * 40_000}
        for step in traj["trajectory"]
    ]
    path = tmp_path / "long.traj"
    path.write_text(json.dumps(traj))
    assert path.read_bytes().find(b'"history"') > 64 << 10
    stats, _ = ingest_path("traces", path, tmp_path / "lake")
    assert not stats.rejected
    [s] = _q(tmp_path / "lake", "SELECT session_id FROM sessions")
    assert s["session_id"] == "long"
