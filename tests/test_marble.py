"""MultiAgentBench (MARBLE) ingestor on the real samples, plus rejects and robustness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES, parse_with

DATA = SAMPLES / "marble"


def parse(path):
    return parse_with("marble", path)


def test_tasks_agents_and_relationships_match_the_source():
    tasks = [
        json.loads(ln)
        for ln in (DATA / "coding_main.first20.jsonl").read_text().splitlines()
        if ln.strip()
    ]
    out = parse(DATA / "coding_main.first20.jsonl")
    assert [s["scenario_id"] for s in out.tables["scenarios"]] == [
        f"coding/{t['task_id']}" for t in tasks
    ]
    assert len(out.tables["participants"]) == sum(len(t["agents"]) for t in tasks)
    assert len(out.tables["edges"]) == sum(
        len({tuple(r) for r in t["relationships"]}) for t in tasks
    )
    assert {e["level"] for e in out.tables["edges"]} == {"participant"}
    assert "rejects" not in out.tables


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
    good = {
        "scenario": "coding",
        "task_id": 1,
        "agents": [{"agent_id": "a"}, {"agent_id": "b"}],
        "relationships": [["a", "b", "supervises"]],
        "task": {"content": "x"},
    }
    lines = [
        good,
        {**good, "task_id": 2, "relationships": [["a", "zed", "supervises"]]},
        {**good, "task_id": 3, "relationships": [["a", "b"]]},
        {**good, "task_id": None},
    ]
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


lines = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "task_id": st.integers(0, 3) | st.none(),
                "agents": st.lists(
                    st.fixed_dictionaries({"agent_id": st.sampled_from(["a", "b", ""])}), max_size=2
                ),
                "relationships": st.lists(
                    st.lists(st.sampled_from(["a", "b", "c"]), max_size=3), max_size=2
                ),
            }
        ),
        st.integers(),
        st.text(max_size=3),
    ),
    max_size=6,
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines)
def test_never_raises_and_every_line_is_accounted_for(tmp_path_factory, items):
    f = tmp_path_factory.mktemp("m") / "t.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in items) + "\n")
    out = parse(f)
    assert len(out.tables.get("scenarios", [])) + len(out.tables.get("rejects", [])) == len(items)


RESULT_LOG = Path(__file__).parent / "fixtures" / "marble" / "result_log.jsonl"


def test_engine_result_log_runs_become_sessions_with_their_scores():
    """MARBLE's engine appends one line per run; each is a session whose events follow the
    iterations and whose outcome annotations are the evaluator's scores, read independently
    here from the log."""
    out = parse_with("marble", RESULT_LOG)
    runs = [json.loads(line) for line in RESULT_LOG.read_text().splitlines()]
    sessions = {s["session_id"]: s for s in out.tables["sessions"]}
    assert sorted(sessions) == ["result_log:1", "result_log:2"]  # line 3 is broken
    (rej,) = out.tables["rejects"]
    assert rej["record_ref"] == "line 3" and "iterations" in rej["reason"]
    for lineno, run in ((1, runs[0]), (2, runs[1])):
        sid = f"result_log:{lineno}"
        assert sessions[sid]["condition"] == run["coordination_mode"]
        assert sessions[sid]["goal"] == run["task"]
        events = [e for e in out.tables["events"] if e["session_id"] == sid]
        n_assign = sum(len(it["task_assignments"]) for it in run["iterations"])
        assert sum(e["kind"] == "task_assignment" for e in events) == n_assign
        assert sum(e["kind"] == "summary" for e in events) == len(run["iterations"])
        assert sum(e["kind"] == "message" for e in events) == sum(
            len(it["communications"]) for it in run["iterations"]
        )
        assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
        scores = {
            a["annotation_id"]: a["value"]
            for a in out.tables["annotations"]
            if a["session_id"] == sid
        }
        assert [scores[f"planning_scores/{i}"] for i in range(len(run["planning_scores"]))] == run[
            "planning_scores"
        ]
        assert [
            scores[f"communication_scores/{i}"] for i in range(len(run["communication_scores"]))
        ] == run["communication_scores"]
        assert scores["token_usage"] == run["token_usage"]
        for agent, kpi in run["agent_kpis"].items():
            assert scores[f"kpi/{agent}"] == kpi
    # star mode: the planner assigns; chain mode: each agent takes its own link
    star = [e for e in out.tables["events"] if e["session_id"] == "result_log:1"]
    assert {e["actor"] for e in star if e["kind"] == "task_assignment"} == {"planner"}
    chain = [e for e in out.tables["events"] if e["session_id"] == "result_log:2"]
    assert [e["actor"] for e in chain if e["kind"] == "task_result"] == ["agent1", "agent3"]
    # rationale text is not a score, but it is kept
    assert json.loads(sessions["result_log:1"]["attrs"])["code_quality"]["rationale"] == "clean"


def test_a_value_that_does_not_fit_its_column_is_one_reject_in_a_batch(tmp_path):
    """Task rows reach the lake as Arrow batches; an agent whose ``type`` is a number (a
    text column) is a reject naming the column, and every other row of the batch lands."""
    from graphlake.pipeline import ingest_path
    from graphlake.query import run_sql

    lines = [
        {
            "scenario": "coding",
            "task_id": k,
            "agents": [{"agent_id": "a", "type": 5 if k == 7 else "CodingAgent"}],
            "relationships": [],
            "task": {"content": f"task {k}"},
        }
        for k in range(20)
    ]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "t.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    lake = tmp_path / "lake"
    ingest_path("marble", tmp_path / "in", lake)

    def q(sql):
        return run_sql(sql, lake).table.to_pylist()

    (reject,) = q("SELECT record_ref, reason FROM rejects")
    assert reject["record_ref"] == "participants.role"
    assert reject["reason"].startswith("column role holds string, and 5 is not one")
    assert q("SELECT count(*) AS n FROM participants") == [{"n": 19}]
    assert q("SELECT count(*) AS n FROM scenarios") == [{"n": 20}]


def _lake_rows(lake: Path) -> dict[str, list]:
    """Every table's rows, sorted, without the columns that differ from run to run."""
    import graphlake
    from graphlake.schema import TABLES

    gl = graphlake.connect(lake, max_rows=0, timeout_s=0)
    volatile = {"run_id", "ingested_at"}
    out = {}
    for name, spec in TABLES.items():
        cols = ", ".join(f.name for f in spec.schema if f.name not in volatile)
        out[name] = sorted(map(repr, gl.sql(f"SELECT {cols} FROM {name}").to_pylist()))
    return out


def test_a_large_task_file_read_in_slices_by_two_workers_lands_as_read_whole(tmp_path, monkeypatch):
    """A .jsonl file past SLICE_MIN_BYTES is cut at line ends, and worker processes parse its
    slices: the lake holds the same rows and rejects as one reader of the whole file gives,
    with every reject's line number counted in the whole file (a bad line, a blank one and a
    last line without its line end fall in later slices)."""
    from graphlake.demo.public_gen import write_marble_corpus
    from graphlake.ingest import base
    from graphlake.pipeline import ingest_path

    src = write_marble_corpus(tmp_path / "gen", tasks=60)
    (f,) = src.glob("*.jsonl")
    lines = f.read_text().splitlines()
    lines[40:40] = ["{not json", "", '{"task_id": null, "agents": []}']
    f.write_text("\n".join(lines))  # no line end after the last
    whole_stats, _ = ingest_path("marble", src, tmp_path / "whole", workers=1)
    assert whole_stats.units == 1
    monkeypatch.setattr(base, "SLICE_MIN_BYTES", 1)
    monkeypatch.setattr(base, "SLICE_BYTES", 2_000)
    sliced_stats, _ = ingest_path("marble", src, tmp_path / "sliced", workers=2)
    assert sliced_stats.units > 4
    whole, sliced = _lake_rows(tmp_path / "whole"), _lake_rows(tmp_path / "sliced")
    assert len(whole["scenarios"]) == 60 and len(whole["rejects"]) == 2
    assert any("line 41" in r for r in whole["rejects"])
    assert sliced == whole


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["", "a", "bb", "ccc\r", "{}" * 7]), max_size=40),
    st.booleans(),
    st.lists(st.integers(0, 200), max_size=6),
    st.integers(1, 9),
)
def test_slices_are_cut_at_line_ends_and_know_their_first_line(lines, last_end, targets, block):
    """However the targets and the read blocks fall, the slices cover the file end to end,
    each but the last ends at a line end, and each knows the number of its first line."""
    import io

    from graphlake.ingest.base import _cut_at_lines

    data = ("\n".join(lines) + ("\n" if last_end else "")).encode()
    spans = _cut_at_lines(io.BytesIO(data), len(data), sorted(targets), block)
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    for (_a, end, _f), (start, _e, _g) in zip(spans, spans[1:], strict=False):
        assert end == start and data[end - 1 : end] == b"\n"
    for start, end, first in spans:
        assert start < end or len(spans) == 1
        assert first == 1 + data[:start].count(b"\n")


def test_who_spoke_is_read_from_the_engines_from_to_lines(tmp_path):
    """The engine writes each communication as "From agent1 to agent2: ..."; messages had no
    actor. One text may hold several such lines: each is a message of its own speaker."""
    run = json.loads(RESULT_LOG.read_text().splitlines()[0])
    run["iterations"][0]["communications"] = [
        "From agent1 to agent2: the parser returns a list\nof tokens",
        "From agent2 to agent1: ok\nFrom agent1 to agent3: please review",
        "no speaker here",
    ]
    path = tmp_path / "result_log.jsonl"
    path.write_text(json.dumps(run) + "\n")
    out = parse_with("marble", path)
    msgs = [e for e in out.tables["events"] if e["kind"] == "message"]
    assert [(m["actor"], m["text"]) for m in msgs] == [
        ("agent1", "the parser returns a list\nof tokens"),
        ("agent2", "ok"),
        ("agent1", "please review"),
        (None, "no speaker here"),
    ]
    assert json.loads(msgs[2]["attrs"]) == {"to": "agent3"}
    assert "agent3" in {p["participant_id"] for p in out.tables["participants"]}


def test_session_headers_are_not_messages_and_per_role_scores_are_annotations(tmp_path):
    """The engine heads a conversation with "In Session <uuid>": it names the conversation
    of the messages below it and is not a message. A bargaining run's task_evaluation holds
    one object per role (buyer, seller): each of its scores is an annotation on that role."""
    run = json.loads(RESULT_LOG.read_text().splitlines()[0])
    run["iterations"][0]["communications"] = [
        "In Session 6a1f0c2e-9b1d-4c55-8f7e-2f3c1d0e9a11\n"
        "From buyer to seller: 120 for the lamp?\nFrom seller to buyer: 150, final",
    ]
    run["task_evaluation"] = {
        "buyer": {"effectiveness": 7, "progress": 8},
        "seller": {"effectiveness": 9, "progress": 8},
    }
    path = tmp_path / "result_log.jsonl"
    path.write_text(json.dumps(run) + "\n")
    out = parse_with("marble", path)
    msgs = [e for e in out.tables["events"] if e["kind"] == "message"]
    assert [(m["actor"], m["text"]) for m in msgs] == [
        ("buyer", "120 for the lamp?"),
        ("seller", "150, final"),
    ]
    assert json.loads(msgs[0]["attrs"])["conversation"].startswith("6a1f0c2e")
    per_role = {
        (a["target_id"], a["label"]): a["value"]
        for a in out.tables["annotations"]
        if a["label"].startswith("task_evaluation")
    }
    expected = {
        (role, f"task_evaluation:{k}"): float(v)
        for role, scores in run["task_evaluation"].items()
        for k, v in scores.items()
    }
    assert per_role == expected


def _odd_runs() -> list[dict]:
    """Runs in every shape the engine's fields allow: results as {agent_id, result} or
    {agent: result} (with non-text results and numeric ids), communications that are lists,
    one string, objects, null, padded text, headers with and without colons, blank headers;
    iterations without a summary, with extra fields, with only a number; scores of every type;
    nested per-role evaluations beside flat ones."""
    runs = [json.loads(line) for line in RESULT_LOG.read_text().splitlines()][:2]
    a, b = json.loads(json.dumps(runs[0])), json.loads(json.dumps(runs[1]))
    a["iterations"][0]["communications"] = [
        "From agent1 to agent2: the parser returns a list\nof tokens",
        "From agent2 to agent1: ok\nFrom agent1 to agent3: please review",
        "no speaker here",
        "  padded whole text  \n",
        {"obj": 1, "a": [2]},
        None,
        5,
        "pre text\nIn Session abc-1\nFrom buyer to seller: 120?\nFrom seller to buyer: 150\n"
        "In Session x2:\nloose words\n",
        "\n  \nIn Session s3\n",
        "From agent1 to agent2: a control \x02 character\nFrom agent2 to agent1: \x01 too",
    ]
    a["iterations"][1]["communications"] = "From agent1 to agent2: a single string"
    a["task_evaluation"] = {
        "buyer": {"effectiveness": 7, "progress": 8, "why": "ok", "flag": True},
        "seller": {"effectiveness": 9.5},
        "overall": 3,
        "note": "x",
    }
    a["iterations"][0]["task_results"] = [
        {"agent_id": "agent9", "result": {"k": 1, "b": 2}},
        {"agent1": "r1", "agent2": "r2"},
        "junk",
        {"agent_id": 7, "result": "seven"},
    ]
    a["iterations"][0]["extra_field"] = {"z": 1, "a": 2}
    del b["iterations"][0]["summary"]
    b["iterations"][1]["summary"] = None
    b["iterations"].append({"iteration": 9})
    b["planning_scores"] = [1, "x", True, 2.5, None]
    b["coordination_mode"] = ""
    b["task"] = {"not": "text"}
    return [
        a,
        b,
        {"iterations": [], "task": "   spaced\t\ttitle  "},
        {"iterations": [1, {}], "task": "bad"},
        {"iterations": None},
    ]


def test_the_result_log_mapping_reads_odd_runs_as_the_python_reader_does(tmp_path):
    """``ingest/marble_results.yaml`` re-expresses the Python result-log reader in the mapping
    language; on runs of every odd shape both give the same rows, table by table, and the
    same rejects."""
    from graphlake.ingest.base import CollectingEmitter
    from graphlake.ingest.marble import MarbleIngestor

    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _odd_runs()))

    def rows(ing):
        out = CollectingEmitter("marble")
        for unit in ing.units(path):
            ing.parse(unit, out)
        return {
            t: sorted(
                json.dumps(
                    {
                        k: v
                        for k, v in r.items()
                        if k not in ("corpus", "reject_id") and v is not None
                    },
                    sort_keys=True,
                    default=str,
                )
                for r in rs
            )
            for t, rs in out.tables.items()
        }

    by_mapping, by_python = MarbleIngestor(), MarbleIngestor()
    by_mapping.reader, by_python.reader = "mapping", "python"
    mapped, python = rows(by_mapping), rows(by_python)
    assert mapped == python
    assert len(python["events"]) > 25 and len(python["rejects"]) == 2


def test_the_result_log_mapping_gives_the_golden_tables(tmp_path, monkeypatch):
    """The golden tables of the result-log corpus, ingested into a real lake with the
    mapping reading the runs: the same as the Python reader's, unchanged."""
    from test_golden_corpora import test_every_table_matches_its_golden

    monkeypatch.setenv("GRAPHLAKE_MARBLE_READER", "mapping")
    test_every_table_matches_its_golden(tmp_path, "marble_results")


@pytest.mark.parametrize("reader", ["python", "mapping"])
def test_a_real_engine_result_log_equals_its_json(reader, monkeypatch):
    """A result log MARBLE's engine wrote (its Minecraft iteration ablation, gpt-4o-mini, graph
    mode, one iteration): the task assigned to three agents, their results as {agent_id,
    result}, the planner's summary, no communications, scores of -1 (none that iteration), a
    task evaluation and the run's profiles and relationships as text. Both readers land it as
    the json module reads it, and keep what has no column."""
    monkeypatch.setenv("GRAPHLAKE_MARBLE_READER", reader)
    path = DATA / "minecraft_discussion_gpt-4o-mini_1.first1.jsonl"
    [run] = [json.loads(line) for line in path.read_text().splitlines()]
    out = parse(path)
    assert not out.tables.get("rejects")
    [session] = out.tables["sessions"]
    assert (session["goal"], session["condition"]) == (run["task"], run["coordination_mode"])
    expected = []
    for it in run["iterations"]:
        expected += [("task_assignment", a, t) for a, t in it["task_assignments"].items()]
        expected += [("task_result", r["agent_id"], r["result"]) for r in it["task_results"]]
        expected.append(("summary", "planner", it["summary"]))
    events = sorted(out.tables["events"], key=lambda e: e["seq"])
    assert [(e["kind"], e["actor"], e["text"]) for e in events] == expected
    scores = {a["label"]: a["value"] for a in out.tables["annotations"]}
    assert scores == {
        "planning_score": run["planning_scores"][0],
        "communication_score": run["communication_scores"][0],
        "token_usage": run["token_usage"],
        "total_milestones": run["total_milestones"],
        "task_evaluation": run["task_evaluation"],
    }
    kept = json.loads(session["attrs"])
    assert {k: kept[k] for k in ("agent_profiles", "relationship", "yaml_file")} == {
        k: run[k] for k in ("agent_profiles", "relationship", "yaml_file")
    }
    assert json.loads(events[-1]["attrs"]) == {
        "continue_simulation": run["iterations"][0]["continue_simulation"]
    }
