"""MultiAgentBench (MARBLE) ingestor on the real samples, plus rejects and robustness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import parse_with
from graphlake.config import samples_dir

DATA = (samples_dir() or Path("/nonexistent")) / "marble"
needs_data = pytest.mark.skipif(not (DATA / "coding_config_1.yaml").exists(),
                                reason="shared MARBLE samples not present")


def parse(path):
    return parse_with("marble", path)


@needs_data
def test_tasks_agents_and_relationships_match_the_source():
    tasks = [json.loads(ln) for ln in (DATA / "coding_main.first20.jsonl").read_text()
             .splitlines() if ln.strip()]
    out = parse(DATA / "coding_main.first20.jsonl")
    assert [s["scenario_id"] for s in out.tables["scenarios"]] == \
        [f"coding/{t['task_id']}" for t in tasks]
    assert len(out.tables["participants"]) == sum(len(t["agents"]) for t in tasks)
    assert len(out.tables["edges"]) == sum(len({tuple(r) for r in t["relationships"]})
                                           for t in tasks)
    assert {e["level"] for e in out.tables["edges"]} == {"participant"}
    assert "rejects" not in out.tables


@needs_data
def test_yaml_config_reads_coordinate_mode_as_coordination_mode():
    out = parse(DATA / "coding_config_1.yaml")
    (s,) = out.tables["scenarios"]
    assert s["scenario_id"] == "coding/coding_config_1"
    assert s["coordination_mode"] == "graph"
    assert json.loads(s["attrs"])["spelled"] == "coordinate_mode"
    assert json.loads(s["attrs"])["llm"].startswith("together_ai/")
    edges = {(e["src"], e["dst"]) for e in out.tables["edges"]}
    assert ("coding/coding_config_1/agent1", "coding/coding_config_1/agent2") in edges


def test_bad_tasks_are_rejected(tmp_path):
    good = {"scenario": "coding", "task_id": 1, "agents": [{"agent_id": "a"}, {"agent_id": "b"}],
            "relationships": [["a", "b", "supervises"]], "task": {"content": "x"}}
    lines = [good, {**good, "task_id": 2, "relationships": [["a", "zed", "supervises"]]},
             {**good, "task_id": 3, "relationships": [["a", "b"]]}, {**good, "task_id": None}]
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n{nope\n")
    (tmp_path / "c.yaml").write_text("a: [b\n")
    out = parse(tmp_path)
    reasons = [r["reason"] for r in out.tables["rejects"]]
    assert any("names 'zed', which is not one of the scenario's participants" in r for r in reasons)
    assert any("is not a [source, target, relation] triple" in r for r in reasons)
    assert any("needs a task_id" in r for r in reasons)
    assert any("not valid JSON" in r for r in reasons)
    assert any("not valid YAML" in r for r in reasons)
    assert [s["scenario_id"] for s in out.tables["scenarios"]] == ["coding/1"]


lines = st.lists(st.one_of(
    st.fixed_dictionaries({"task_id": st.integers(0, 3) | st.none(),
                           "agents": st.lists(st.fixed_dictionaries(
                               {"agent_id": st.sampled_from(["a", "b", ""])}), max_size=2),
                           "relationships": st.lists(st.lists(st.sampled_from(["a", "b", "c"]),
                                                              max_size=3), max_size=2)}),
    st.integers(), st.text(max_size=3)), max_size=6)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines)
def test_never_raises_and_every_line_is_accounted_for(tmp_path_factory, items):
    f = tmp_path_factory.mktemp("m") / "t.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in items) + "\n")
    out = parse(f)
    assert len(out.tables.get("scenarios", [])) + len(out.tables.get("rejects", [])) == \
        len(items)
