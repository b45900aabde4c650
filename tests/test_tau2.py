"""tau2-bench ingestor on the real published samples in ../shared/data/tau2, plus robustness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_kolab_fast import canon

from conftest import SAMPLES, parse_with
from graphlake.ingest.base import CollectingEmitter
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql

DATA = SAMPLES / "tau2"
RESULTS = DATA / "telecom_grok-3_5sims.json"


def parse(path: Path) -> CollectingEmitter:
    return parse_with("tau2", path)


def q(lake, sql):
    return run_sql(sql, lake, max_rows=None).table.to_pylist()


@pytest.fixture(scope="module")
def tau2_lake(tmp_path_factory):
    lake = tmp_path_factory.mktemp("tau2") / "lake"
    ingest_path("tau2", RESULTS, lake)
    return lake


def test_counts_match_the_source(tau2_lake):
    src = json.loads(RESULTS.read_text())
    sims = src["simulations"]
    n_msgs = sum(len(s["messages"]) for s in sims)
    n_calls = sum(len(m.get("tool_calls") or []) for s in sims for m in s["messages"])
    (row,) = q(
        tau2_lake,
        """SELECT
        (SELECT count(*) FROM sessions) AS sessions,
        (SELECT count(*) FROM events WHERE kind IN ('message', 'tool_result')) AS messages,
        (SELECT count(*) FROM events WHERE kind = 'tool_call') AS calls,
        (SELECT count(*) FROM scenarios) AS scenarios,
        (SELECT count(*) FROM rejects) AS rejects""",
    )
    assert row == {
        "sessions": len(sims),
        "messages": n_msgs,
        "calls": n_calls,
        "scenarios": len(src["tasks"]),
        "rejects": 0,
    }
    assert (len(sims), n_msgs, n_calls) == (5, 218, 56)  # as data/README.md describes them


def test_every_tool_result_is_linked_to_its_call_and_requestor(tau2_lake):
    rows = q(
        tau2_lake,
        """
        SELECT r.session_id, r.request_id, c.actor AS caller, r.initiator, c.initiator AS ci
        FROM events r LEFT JOIN events c ON c.session_id = r.session_id
             AND c.request_id = r.request_id AND c.kind = 'tool_call'
        WHERE r.kind = 'tool_result'""",
    )
    assert rows and all(r["caller"] is not None for r in rows)
    assert all(r["initiator"] == r["ci"] for r in rows)
    # user-side tool calls are human-side control actions (HAS-Bench 3.2)
    user_calls = q(
        tau2_lake,
        "SELECT DISTINCT channel, initiator, actor_type FROM events "
        "WHERE kind = 'tool_call' AND actor = 'user'",
    )
    assert user_calls == [{"channel": "control", "initiator": "human", "actor_type": "human"}]


def test_times_are_relative_to_the_simulation_start(tau2_lake):
    src = json.loads(RESULTS.read_text())["simulations"][0]
    from datetime import datetime

    start = datetime.fromisoformat(src["start_time"])
    third = datetime.fromisoformat(src["messages"][2]["timestamp"])
    (row,) = q(
        tau2_lake, f"SELECT t FROM events WHERE session_id = '{src['id']}' AND event_id = 'm2'"
    )
    assert row["t"] == pytest.approx((third - start).total_seconds())


def test_rewards_become_outcome_annotations(tau2_lake):
    src = json.loads(RESULTS.read_text())["simulations"]
    rows = {
        r["session_id"]: r["value"]
        for r in q(tau2_lake, "SELECT session_id, value FROM annotations WHERE label = 'reward'")
    }
    assert rows == {s["id"]: s["reward_info"]["reward"] for s in src}
    checks = q(tau2_lake, "SELECT count(*) AS n FROM annotations WHERE label LIKE 'action_check:%'")
    assert checks[0]["n"] == sum(len(s["reward_info"]["action_checks"] or []) for s in src)


def test_tokens_and_costs_are_kept(tau2_lake):
    rows = q(
        tau2_lake,
        "SELECT sum(CAST(json_extract(attrs, '$.usage.completion_tokens') "
        "AS BIGINT)) AS tokens FROM events WHERE kind = 'message'",
    )
    src = json.loads(RESULTS.read_text())["simulations"]
    expected = sum(
        (m.get("usage") or {}).get("completion_tokens", 0)
        for s in src
        for m in s["messages"]
        if m["role"] != "tool"
    )
    assert rows[0]["tokens"] == expected
    cost = q(
        tau2_lake,
        "SELECT sum(CAST(json_extract(attrs, '$.agent_cost') AS DOUBLE)) AS c FROM sessions",
    )
    assert cost[0]["c"] == pytest.approx(sum(s["agent_cost"] for s in src))


def test_results_without_simulations_and_task_files(tmp_path):
    out = parse(DATA / "airline_gpt-4.1_no_sims.json")
    assert len(out.tables["scenarios"]) == 5 and "sessions" not in out.tables
    out = parse(DATA / "airline_tasks.json")
    assert len(out.tables["scenarios"]) == 50
    assert all(s["scenario_id"].startswith("airline/") for s in out.tables["scenarios"])
    mock = parse(DATA / "mock_tasks.json").tables["scenarios"]
    assert len(mock) == 10 and mock[0]["goal"].startswith("You are a team member")


def test_reingest_adds_nothing(tmp_path):
    lake = tmp_path / "lake"
    ingest_path("tau2", RESULTS, lake)
    stats, snap = ingest_path("tau2", RESULTS, lake)
    assert snap is None and not stats.added


def _results(sims) -> dict:
    return {
        "timestamp": "2025-01-01T00:00:00",
        "info": {"environment_info": {"domain_name": "mock"}},
        "tasks": [],
        "simulations": sims,
    }


def test_bad_records_are_rejected_and_the_rest_lands(tmp_path):
    good_msg = {"role": "user", "content": "hi", "timestamp": "2025-01-01T00:00:01"}
    sims = [
        {
            "id": "s1",
            "task_id": "t",
            "start_time": "2025-01-01T00:00:00",
            "messages": [
                good_msg,
                {"role": "narrator", "timestamp": "2025-01-01T00:00:02"},
                {"role": "assistant", "content": "x", "timestamp": "yesterday"},
            ],
        },
        {"task_id": "no id", "messages": []},
    ]
    f = tmp_path / "r.json"
    f.write_text(json.dumps(_results(sims)))
    (tmp_path / "broken.json").write_text("{")
    out = parse(tmp_path)
    reasons = sorted(r["reason"] for r in out.tables["rejects"])
    assert any("role 'narrator' is not assistant, user or tool" in r for r in reasons)
    assert any("'yesterday' is not ISO 8601" in r for r in reasons)
    assert any("a simulation needs an 'id'" in r for r in reasons)
    assert any("not valid JSON" in r for r in reasons)
    assert [e["text"] for e in out.tables["events"]] == ["hi"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "role",
                    "messages",
                    "timestamp",
                    "content",
                    "tool_calls",
                    "start_time",
                    "simulations",
                    "tasks",
                    "info",
                    "name",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=15,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(json_values)
def test_never_raises_and_every_simulation_is_accounted_for(tmp_path_factory, doc):
    folder = tmp_path_factory.mktemp("t")
    (folder / "f.json").write_text(json.dumps(doc))
    out = parse(folder)
    with pytest.MonkeyPatch.context() as mp:  # read whole by orjson, or streamed: the same
        whole, streamed = _streamed_and_whole(folder, mp)
    assert whole == streamed
    sims = doc.get("simulations") if isinstance(doc, dict) else None
    if isinstance(sims, list):
        kinds = [r["record_kind"] for r in out.tables.get("rejects", [])]
        assert len(out.tables.get("sessions", [])) + kinds.count("simulation") == len(sims)


VOICE_RUN = Path(__file__).parent / "fixtures" / "tau2_runs" / "voice_run"


def test_folder_run_with_full_duplex_ticks(tmp_path):
    """tau2's folder layout (results.json + simulations/<id>.json) holding full-duplex
    simulations: one run, four sessions, speech chunks joined into utterances whose
    intervals overlap where both sides spoke at once."""
    lake = tmp_path / "lake"
    ingest_path("tau2", VOICE_RUN / "results.json", lake)  # the metadata file names the run
    (run,) = q(lake, "SELECT * FROM runs")
    assert (run["name"], run["agent"], run["agent_model"], run["user_model"]) == (
        "voice_run",
        "discrete_time_audio_native_agent",
        "gpt-realtime",
        "gpt-4.1",
    )
    assert run["policy"] == "Only look up orders the user names."
    assert json.loads(run["settings"])["num_trials"] == 2
    sessions = q(lake, "SELECT session_id, run_id, source_file FROM sessions ORDER BY 1")
    assert [s["session_id"] for s in sessions] == [
        "voice-t1-0",
        "voice-t1-1",
        "voice-t2-0",
        "voice-t2-1",
    ]
    assert {s["run_id"] for s in sessions} == {run["run_id"]}
    assert all(s["source_file"].endswith(f"simulations/{s['session_id']}.json") for s in sessions)
    speech = q(
        lake,
        "SELECT actor, t, t_end, text FROM events WHERE session_id = 'voice-t1-0' "
        "AND kind = 'message' ORDER BY t",
    )
    assert [(e["actor"], e["t"], e["t_end"], e["text"]) for e in speech] == [
        ("assistant", 0.0, pytest.approx(0.8), "Hello, how can I help you today?"),
        ("user", pytest.approx(0.4), pytest.approx(1.2), "Hi, I need to check my order."),
        ("user", pytest.approx(1.4), pytest.approx(1.8), "It's W1. Thanks."),
    ]
    assert speech[1]["t"] < speech[0]["t_end"]  # overlapping speech stays two intervals
    call = q(
        lake,
        "SELECT e.text, r.text AS result FROM events e JOIN events r USING "
        "(session_id, request_id) WHERE e.kind = 'tool_call' AND "
        "r.kind = 'tool_result' AND session_id = 'voice-t1-0'",
    )
    assert call == [{"text": "get_order", "result": '{"status": "shipped"}'}]
    # a tick's own fields (a transcript, wall-clock time) are kept on the session
    attrs = json.loads(
        q(lake, "SELECT attrs FROM sessions WHERE session_id = 'voice-t1-0'")[0]["attrs"]
    )
    assert attrs["tick_fields"]["9"]["user_transcript"] == "thanks"


def test_folder_run_with_a_missing_simulation_file(tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(VOICE_RUN, run)
    (run / "simulations" / "voice-t2-1.json").unlink()
    (run / "simulations" / "voice-t2-0.json").write_text("{broken")
    out = parse(tmp_path)
    assert [s["session_id"] for s in out.tables["sessions"]] == ["voice-t1-0", "voice-t1-1"]
    assert any("voice-t2-1.json is missing" in r["reason"] for r in out.tables["rejects"])
    assert any(
        r["source_file"].endswith("voice-t2-0.json") and "not valid JSON" in r["reason"]
        for r in out.tables["rejects"]
    )


def test_a_run_without_simulations_keeps_its_run(tmp_path):
    doc = {
        "timestamp": "2025-01-01T00:00:00",
        "info": {
            "agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1"},
            "environment_info": {"domain_name": "mock", "policy": "Be kind."},
        },
        "tasks": [{"id": "t1"}],
        "simulations": [],
        "format_version": 2,
    }
    import shutil

    src = tmp_path / "src"
    shutil.copytree(VOICE_RUN, src / "voice_run")  # sessions of another run, same ingest
    (src / "r.json").write_text(json.dumps(doc))
    ingest_path("tau2", src, tmp_path / "lake")
    assert q(tmp_path / "lake", "SELECT name, agent_model, policy FROM runs ORDER BY 1") == [
        {"name": "r", "agent_model": "gpt-4.1", "policy": "Be kind."},
        {
            "name": "voice_run",
            "agent_model": "gpt-realtime",
            "policy": "Only look up orders the user names.",
        },
    ]
    (attrs,) = q(tmp_path / "lake", "SELECT attrs FROM runs WHERE name = 'r'")
    assert json.loads(attrs["attrs"])["format_version"] == 2  # a top-level field kept


def _streamed_and_whole(path: Path, monkeypatch) -> tuple[dict, dict]:
    """A path's rows read whole by orjson (the default for files up to 64 MiB) and streamed
    pass by pass with ijson (forced by a zero size limit)."""
    whole = canon(parse(path).tables)
    monkeypatch.setenv("GRAPHLAKE_TAU2_WHOLE_FILE_BYTES", "0")
    streamed = canon(parse(path).tables)
    monkeypatch.delenv("GRAPHLAKE_TAU2_WHOLE_FILE_BYTES")
    return whole, streamed


@pytest.mark.parametrize(
    "path",
    [
        *sorted(DATA.glob("*.json")),
        *sorted((Path(__file__).parent / "fixtures" / "tau2_runs").iterdir()),
    ],
    ids=lambda p: p.name,
)
def test_a_file_read_whole_gives_the_rows_the_stream_gives(path, monkeypatch):
    whole, streamed = _streamed_and_whole(path, monkeypatch)
    assert whole == streamed and (whole.get("sessions") or whole.get("scenarios"))


def test_a_domain_kept_as_one_task_per_file_lands_its_tasks(tmp_path, monkeypatch):
    """Some tau2 domains keep each task in its own file (``<domain>/tasks/task_*.json``, one
    Task object, loaded by tau2 with a glob): each is a scenario of the domain the folder
    names, read whole or streamed alike; it was rejected as "neither a results file nor a
    task file"."""
    tasks = json.loads((DATA / "airline_tasks.json").read_text())[:3]
    folder = tmp_path / "retail" / "tasks"
    folder.mkdir(parents=True)
    for k, task in enumerate(tasks):
        (folder / f"task_{k}.json").write_text(json.dumps(task, indent=2))
    out = parse(tmp_path / "retail")
    assert not out.tables.get("rejects")
    got = sorted(s["scenario_id"] for s in out.tables["scenarios"])
    assert got == sorted(f"retail/{t['id']}" for t in tasks)
    whole, streamed = _streamed_and_whole(folder / "task_0.json", monkeypatch)
    assert whole == streamed and len(whole["scenarios"]) == 1


def test_results_files_named_results_take_their_folder_as_the_run_name(tmp_path):
    """tau2 names every run's file results.json; nine runs in one lake were nine runs called
    "results". The folder that holds the file names the run instead."""
    import shutil

    for name, src in (
        ("grok-telecom", RESULTS),
        ("gpt-airline", DATA / "airline_gpt-4.1_no_sims.json"),
    ):
        (tmp_path / name).mkdir()
        shutil.copy(src, tmp_path / name / "results.json")
    names = sorted(r["name"] for r in parse(tmp_path).tables["runs"])
    assert names == ["gpt-airline", "grok-telecom"]
    assert [r["name"] for r in parse(RESULTS).tables["runs"]] == [RESULTS.stem]
