"""HAS-Bench metrics as named queries, checked by hand on small tau2-format fixtures."""

from __future__ import annotations

import json

import pytest

from graphlake.lake import Lake, LakeRun
from graphlake.pipeline import ingest_path
from graphlake.query import named, run_sql


def run_named(name, lake, **params):
    q = named.get(name)
    return run_sql(
        q.sql, lake, params=q.bind({k: str(v) for k, v in params.items()}), max_rows=None
    ).table.to_pylist()


def msg(role, t, content="x", calls=None, usage=None, **extra):
    return {
        "role": role,
        "content": content,
        "tool_calls": calls,
        "turn_idx": 0,
        "timestamp": f"2025-01-01T00:00:{t:02d}",
        "usage": usage,
        **extra,
    }


def simulation(sid, task, reward, termination="user_stop", messages=None):
    return {
        "id": sid,
        "task_id": task,
        "trial": 0,
        "start_time": "2025-01-01T00:00:00",
        "duration": 10.0,
        "termination_reason": termination,
        "messages": messages or [],
        "reward_info": {"reward": reward, "reward_breakdown": {"DB": reward}},
    }


def results(sims):
    return {
        "timestamp": "2025-01-01T00:00:00",
        "info": {
            "agent_info": {"llm": "agent-llm"},
            "user_info": {"llm": "user-llm"},
            "environment_info": {"domain_name": "mock"},
        },
        "tasks": [{"id": "A"}, {"id": "B"}],
        "simulations": sims,
    }


@pytest.fixture
def outcome_lake(tmp_path):
    # task A: 1 of 3 runs pass; task B: 2 of 3 pass; one run of B hits the step limit
    sims = [simulation(f"a{i}", "A", r) for i, r in enumerate([1.0, 0.0, 0.0])]
    sims += [
        simulation(f"b{i}", "B", r, "max_steps" if i == 2 else "user_stop")
        for i, r in enumerate([1.0, 1.0, 0.0])
    ]
    (tmp_path / "r.json").write_text(json.dumps(results(sims)))
    ingest_path("tau2", tmp_path / "r.json", tmp_path / "lake")
    return tmp_path / "lake"


def test_pass_at_k_task_score_and_delivery_by_hand(outcome_lake):
    (row,) = run_named("has_outcomes", outcome_lake)
    assert (row["n_scenarios"], row["n_episodes"], row["agent"]) == (2, 6, "agent-llm")
    assert row["n_runs"] == 1 and row["runs"] == row["run_id"]
    # pass@1: mean of c/n per task = (1/3 + 2/3) / 2
    assert row["pass_at_k"] == pytest.approx(0.5)
    assert row["task_score"] == pytest.approx(0.5)
    assert row["delivery_rate"] == pytest.approx(5 / 6)
    assert row["safety_rate"] is None
    # pass@2: A: 1 - C(2,2)/C(3,2) = 2/3; B: n - c = 1 < 2 -> 1; mean 5/6
    (row2,) = run_named("has_outcomes", outcome_lake, k=2)
    assert row2["pass_at_k"] == pytest.approx(5 / 6)
    # pass@4 is undefined with 3 runs per task
    assert run_named("has_outcomes", outcome_lake, k=4)[0]["pass_at_k"] is None


def test_runs_are_kept_apart_unless_pooled(tmp_path):
    """Two results files of one model (a plain and a retrying agent, 2 trials each) are two
    runs: pass@3 is undefined for each; pooled they are 4 trials, and the row says so."""
    src = tmp_path / "runs"
    src.mkdir()
    for day, (name, rewards) in enumerate((("plain", [1.0, 0.0]), ("retry", [1.0, 1.0])), 1):
        doc = results([simulation(f"{name}{i}", "A", r) for i, r in enumerate(rewards)])
        doc["timestamp"] = f"2025-01-0{day}T00:00:00"
        (src / f"{name}.json").write_text(json.dumps(doc))
    ingest_path("tau2", src, tmp_path / "lake")
    rows = run_named("has_outcomes", tmp_path / "lake", k=2)
    assert len(rows) == 2 and {r["n_episodes"] for r in rows} == {2}
    assert [r["n_runs"] for r in rows] == [1, 1]
    assert sorted(r["pass_at_k"] for r in rows) == [1.0, 1.0]
    assert {r["pass_at_k"] for r in run_named("has_outcomes", tmp_path / "lake", k=3)} == {None}
    (pooled,) = run_named("has_outcomes", tmp_path / "lake", k=3, pool="true")
    assert (pooled["run_id"], pooled["n_runs"], pooled["n_episodes"]) == ("(pooled)", 2, 4)
    assert sorted(pooled["runs"].split(", ")) == sorted(r["run_id"] for r in rows)
    assert pooled["pass_at_k"] == 1.0  # 3 of 4 pass: any 3 tries hold a success


def test_process_metrics_by_hand(tmp_path):
    usage = {"prompt_tokens": 10, "completion_tokens": 5}
    call_a = [{"id": "c1", "name": "lookup", "arguments": {}, "requestor": "assistant"}]
    call_u = [{"id": "c2", "name": "toggle", "arguments": {}, "requestor": "user"}]
    messages = [
        msg("user", 1, usage=usage),
        msg("assistant", 2, calls=call_a, usage=usage),
        msg("tool", 3, id="c1", requestor="assistant"),
        msg("user", 4, calls=call_u, usage=usage),
        msg("tool", 5, id="c2", requestor="user"),
        msg("assistant", 6, usage=usage),
    ]
    (tmp_path / "r.json").write_text(
        json.dumps(results([simulation("s", "A", 1.0, messages=messages)]))
    )
    ingest_path("tau2", tmp_path / "r.json", tmp_path / "lake")
    (row,) = run_named("has_process", tmp_path / "lake")
    # steps: 4 messages + 2 tool calls; human: 2 user messages + the user's tool call
    assert (row["turns"], row["tool_calls"], row["human_steps"], row["agent_steps"]) == (4, 2, 3, 3)
    assert row["human_intervention_rate"] == pytest.approx(0.5)
    assert row["initiative_entropy"] == pytest.approx(1.0)  # 3 and 3 steps: one bit
    assert row["tokens"] == 4 * 15


def test_rescue_rate_by_hand(tmp_path):
    lake = Lake(tmp_path / "lake")
    run = LakeRun(lake, "hasbench", "test")
    em = run.emitter()
    verdicts = {
        ("t1", "A1"): 0,
        ("t1", "A3"): 1,  # rescued
        ("t2", "A1"): 0,
        ("t2", "A3"): 0,  # still failing
        ("t3", "A1"): 1,
        ("t3", "A3"): 0,  # broken
        ("t4", "A1"): 0,
    }  # never run under A3: not counted
    for (task, level), ok in verdicts.items():
        sid = f"{task}-{level}"
        em.row(
            "sessions", {"session_id": sid, "scenario_id": task, "condition": level, "domain": "d"}
        )
        em.row(
            "participants",
            {
                "session_id": sid,
                "participant_id": "agent",
                "role": "agent",
                "name": "m",
                "kind": "ai",
            },
        )
        em.row(
            "annotations",
            {
                "session_id": sid,
                "annotation_id": "pass",
                "kind": "outcome",
                "label": "pass",
                "value": float(ok),
            },
        )
    run.commit([em.close()])
    (row,) = run_named("has_rescue", lake, from_condition="A1", to_condition="A3")
    assert (row["failed_before"], row["rescued"], row["broken"]) == (2, 1, 1)
    assert row["rescue_rate"] == pytest.approx(0.5)
    # the sessions name no run: they belong to the ingest source's run, which the row names
    assert row["runs"] == run.default_run["run_id"]
