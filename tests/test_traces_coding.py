"""Coding-agent trajectories land as sessions: SWE-agent ``.traj`` files and OpenHands event
lists. Neither tool runs here; the files follow the shapes their projects document (SWE-agent's
trajectory: ``trajectory``, ``history``, ``info``; OpenHands' event stream: ``id``, ``source``,
``action`` / ``observation``, ``cause``, ``llm_metrics``)."""

from __future__ import annotations

import json
from pathlib import Path

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


DEEP = "[" * 1500 + "]" * 1500  # deeper than JSON writers recurse (about 1,000 levels)


def test_one_odd_swe_agent_step_is_one_reject_and_the_others_land(tmp_path):
    """A step that is not an object, an action that is not text, a step holding a value
    nested deeper than JSON writers allow: each was the whole trajectory's failure."""
    import copy

    traj = copy.deepcopy(TRAJ)
    traj["trajectory"].insert(1, "a line of text where a step belongs")
    traj["trajectory"][2]["action"] = {"command": "edit", "args": [242, 242]}
    traj["trajectory"].append({"action": "ls", "observation": "x", "deep": "@"})
    path = tmp_path / "odd.traj"
    path.write_text(json.dumps(traj).replace('"@"', DEEP))
    ingest_path("traces", path, tmp_path / "lake")
    lake = tmp_path / "lake"
    rejects = _q(lake, "SELECT record_ref, reason FROM rejects ORDER BY record_ref")
    assert any(r["record_ref"] == "trajectory[1]" and "not a step object" in r["reason"]
               for r in rejects)  # fmt: skip
    [s] = _q(lake, "SELECT session_id FROM sessions")
    labels = [n["label"] for n in _q(lake, "SELECT label FROM nodes WHERE actor_type = 'ai'")]
    assert '{"args":[242,242],"command":"edit"}' in labels and len(labels) >= 3


def test_an_openhands_event_too_deep_to_write_is_one_reject_and_the_others_land(tmp_path):
    events = [*EVENTS, {"id": 99, "source": "agent", "action": "run", "args": "@"}]
    path = tmp_path / "conv-deep.json"
    path.write_text(json.dumps(events).replace('"@"', DEEP))
    ingest_path("traces", path, tmp_path / "lake")
    lake = tmp_path / "lake"
    reasons = [r["reason"] for r in _q(lake, "SELECT reason FROM rejects")]
    assert len(reasons) == 3 and any("nested deeper" in r for r in reasons)
    assert len(_q(lake, "SELECT * FROM nodes")) == 6


def test_a_session_whose_own_row_is_rejected_takes_its_nodes_and_events_with_it(
    tmp_path, monkeypatch
):
    """A SWE-agent history too large for the session's attrs (a 60 MB history) rejected the
    session but landed its nodes and events, orphans of a session that is not there."""
    monkeypatch.setenv("GRAPHLAKE_MAX_ATTRS_BYTES", "20000")
    big = {**TRAJ, "history": [*TRAJ["history"], {"role": "user", "content": "x" * 50_000}]}
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "big.traj").write_text(json.dumps(big))
    (tmp_path / "in" / "small.traj").write_text(json.dumps(TRAJ))
    ingest_path("traces", tmp_path / "in", tmp_path / "lake")
    lake = tmp_path / "lake"
    assert [s["session_id"] for s in _q(lake, "SELECT session_id FROM sessions")] == ["small"]
    for table in ("nodes", "events", "edges", "participants", "annotations"):
        assert {r["session_id"] for r in _q(lake, f"SELECT session_id FROM {table}")} == {
            "small"
        }, table
    [r] = _q(lake, "SELECT session_id, reason FROM rejects")
    assert r["session_id"] == "big" and "other rows were left out" in r["reason"]


def test_a_byte_that_is_not_utf8_costs_no_record_in_any_trace_format(tmp_path):
    """One invalid byte in one string lost the whole file in every trace reader. It is now
    read as U+FFFD, the file's records all land, and one reject says where the byte was."""
    from graphlake.demo.traces import write_demo_traces

    write_demo_traces(tmp_path / "src", seed=1)
    for fmt in ("otel", "openinference", "langfuse", "swe-agent", "openhands"):
        [path] = [p for p in (tmp_path / "src").rglob("*") if p.parent.name == fmt]
        good, _ = ingest_path("traces", path, tmp_path / f"good-{fmt}")
        data = path.read_bytes()
        at = data.find(b'": "', 200) + 4
        bad = tmp_path / f"bad-{fmt}" / path.name
        bad.parent.mkdir()
        bad.write_bytes(data[:at] + b"\xff\xfe" + data[at:])
        got, _ = ingest_path("traces", bad, tmp_path / f"lake-{fmt}")
        assert got.accepted["nodes"] == good.accepted["nodes"], fmt
        encoding = _q(
            tmp_path / f"lake-{fmt}",
            "SELECT record_ref, reason FROM rejects WHERE record_kind = 'encoding'",
        )
        assert [r["record_ref"] for r in encoding] == [f"byte {at}"], fmt
        assert "not UTF-8" in encoding[0]["reason"]


REAL_TRAJ = (
    Path(__file__).parent
    / "fixtures"
    / "samples"
    / "sweagent"
    / "klieret__swe-agent-test-repo-i1.traj"
)


def test_a_real_swe_agent_trajectory_takes_its_issue_not_the_demonstration(tmp_path):
    """A trajectory SWE-agent wrote (its own test data: GPT-4 fixing a missing colon, 2024):
    history starts with the system prompt and a demonstration, a worked example of another
    issue sent as a ``user`` message marked ``is_demo``. The session's goal and its human turn
    were that demonstration; now they are the issue, and the steps, stats and outcome land
    as the json module reads them."""
    doc = json.loads(REAL_TRAJ.read_text())
    stats, _ = ingest_path("traces", REAL_TRAJ, tmp_path / "lake")
    assert not stats.rejected
    lake = tmp_path / "lake"
    [issue] = [m for m in doc["history"] if m["role"] == "user" and not m.get("is_demo")][:1]
    [s] = _q(lake, "SELECT session_id, goal FROM sessions")
    assert s == {"session_id": "klieret__swe-agent-test-repo-i1", "goal": issue["content"]}
    [prompt] = _q(lake, "SELECT detail FROM nodes WHERE node_id = 'prompt'")
    assert prompt["detail"] == issue["content"]
    steps = doc["trajectory"]
    actions = _q(
        lake, "SELECT label, detail FROM nodes WHERE actor_type = 'ai' ORDER BY t_start, node_id"
    )
    assert [(a["label"], a["detail"]) for a in actions] == [
        (st["action"].splitlines()[0], st["thought"]) for st in steps
    ]
    usage = {
        a["label"]: a["value"]
        for a in _q(lake, "SELECT label, value FROM annotations WHERE kind = 'usage'")
    }
    model = doc["info"]["model_stats"]
    assert usage == {
        "input_tokens": model["tokens_sent"],
        "output_tokens": model["tokens_received"],
        "cost_total": model["instance_cost"],
        "api_calls": model["api_calls"],
    }
    [outcome] = _q(lake, "SELECT label, text FROM annotations WHERE kind = 'outcome'")
    assert outcome == {"label": doc["info"]["exit_status"], "text": doc["info"]["submission"]}


REAL_EVENTS = (
    Path(__file__).parent / "fixtures" / "samples" / "openhands" / "basic_interactions.json"
)


def test_a_real_openhands_replay_trajectory_keeps_its_turns_and_usage(tmp_path):
    """An event list OpenHands wrote (its runtime tests' replay trajectory, February 2025): a
    person and the agent in three exchanges, then a ``finish`` whose model response carries
    the call's token usage. There are no ``llm_metrics``: the usage was lost; now it is the
    responses' own, as the json module reads them."""
    doc = json.loads(REAL_EVENTS.read_text())
    stats, _ = ingest_path("openhands", REAL_EVENTS, tmp_path / "lake")
    assert not stats.rejected
    lake = tmp_path / "lake"
    roles = {"user": "human", "agent": "ai"}
    nodes = _q(lake, "SELECT node_id, actor_type, detail FROM nodes ORDER BY t_start")
    assert [(n["node_id"], n["actor_type"], n["detail"]) for n in nodes] == [
        (str(e["id"]), roles[e["source"]], e["message"]) for e in doc
    ]
    [s] = _q(lake, "SELECT goal FROM sessions")
    assert s["goal"] == doc[0]["message"]
    usage = {a["label"]: a["value"] for a in _q(lake, "SELECT label, value FROM annotations")}
    [reply] = [
        e["tool_call_metadata"]["model_response"]["usage"] for e in doc if "tool_call_metadata" in e
    ]
    assert usage == {
        "input_tokens": reply["prompt_tokens"],
        "output_tokens": reply["completion_tokens"],
        "cache_read_tokens": reply["prompt_tokens_details"]["cached_tokens"],
    }


def test_one_model_response_behind_two_actions_counts_once(tmp_path):
    """OpenHands attaches the model response to every action it produced (two tool calls of
    one reply carry the same response): its usage is counted once."""
    doc = json.loads(REAL_EVENTS.read_text())
    finish = doc[-1]
    twin = {**finish, "id": 16, "action": "think", "message": "twin action of the same reply"}
    path = tmp_path / "twice.json"
    path.write_text(json.dumps([*doc, twin]))
    ingest_path("openhands", path, tmp_path / "lake")
    usage = {
        a["label"]: a["value"]
        for a in _q(tmp_path / "lake", "SELECT label, value FROM annotations")
    }
    assert (
        usage["input_tokens"]
        == finish["tool_call_metadata"]["model_response"]["usage"]["prompt_tokens"]
    )
