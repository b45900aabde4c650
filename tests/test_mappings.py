"""The mapping language: shipped mappings on real public files (tests/fixtures/samples, each
compared with an independent parse by the json module), documented-shape files, the errors a
wrong mapping gets (with its line), attrs keeping every unmapped field, per-record rejects,
``ingest auto`` and ``graphlake mapping`` on the command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphlake import ingest
from graphlake.ingest.base import CollectingEmitter
from graphlake.ingest.mapping import MappingError, load
from graphlake.ingest.mapping.ingestor import MappingIngestor

SAMPLES = Path(__file__).parent / "fixtures" / "samples"
SHAPES = Path(__file__).parent / "fixtures" / "mapping_formats"


def run_mapping(name_or_path: str | Path, path: Path) -> CollectingEmitter:
    ing = (
        MappingIngestor(load(name_or_path))
        if isinstance(name_or_path, Path)
        else ingest.get(name_or_path)
    )
    out = CollectingEmitter(ing.name)
    ing.parse_many(ing.units(path), 0, out)
    return out


def rows(out: CollectingEmitter, table: str) -> list[dict]:
    return out.tables.get(table, [])


# -- real public files, each against an independent parse -----------------------------------


@pytest.mark.parametrize("name", ["umshini_debate0.json", "umshini_deception0.json"])
def test_chatarena_umshini_log_equals_its_messages(name):
    """Each message an event in the list's order, its turn in attrs: the deception log gives
    the moderator's "Roles are being swapped" the turn of the message before it, so a turn is
    no order (with seq = turn the two tied)."""
    path = SAMPLES / "chatarena" / name
    messages = json.loads(path.read_text())
    out = run_mapping("chatarena", path)
    assert not rows(out, "rejects")
    events = sorted(rows(out, "events"), key=lambda r: r["seq"])
    assert [(e["actor"], e["seq"], e["text"], json.loads(e["attrs"])) for e in events] == [
        (m["name"], i, m["text"], {"turn": m["turn"]}) for i, m in enumerate(messages)
    ]
    assert {e["actor_type"] for e in events if e["actor"] == "Moderator"} == {"system"}
    speakers = [m for m in messages if m["name"] != "Moderator"]
    nodes = sorted(rows(out, "nodes"), key=lambda n: int(n["node_id"][1:]))
    assert [(n["actor"], n["detail"]) for n in nodes] == [(m["name"], m["text"]) for m in speakers]
    assert len(rows(out, "edges")) == len(speakers) - 1
    verdict = re.search(r"WINNER:\s*(\S+)", messages[-1]["text"])
    outcomes = [a["label"] for a in rows(out, "annotations")]
    assert outcomes == ([verdict.group(1)] if verdict else [])
    if name == "umshini_debate0.json":
        assert outcomes == ["Proponent"]
    assert {p["participant_id"] for p in rows(out, "participants")} == {m["name"] for m in messages}
    [session] = rows(out, "sessions")
    assert session["attrs"] is None  # every field of every message has a column


def test_agentbench_error_log_one_session_per_line():
    path = SAMPLES / "agentbench" / "medagentbench_gemini-2.0_error.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = run_mapping("agentbench", path)
    assert not rows(out, "rejects")
    sessions = {s["session_id"]: s for s in rows(out, "sessions")}
    prefix = f"samples:agentbench:{path.name.removesuffix('.jsonl')}"
    assert set(sessions) == {f"{prefix}:{r['index']}" for r in records}
    for r in records:
        s = sessions[f"{prefix}:{r['index']}"]
        assert s["started_at"].timestamp() == pytest.approx(r["time"]["timestamp"] / 1000)
        # what no column reads stays: the time as text, the output's own index
        attrs = json.loads(s["attrs"])
        assert attrs["time"] == {"str": r["time"]["str"]}
        assert attrs["output"] == {"index": None, "history": None}  # null, not a list
    assert sum(len(r["output"]["history"] or []) for r in records) == len(rows(out, "events"))
    labels = sorted((a["kind"], a["label"]) for a in rows(out, "annotations"))
    assert labels == sorted(
        [("outcome", r["output"]["status"]) for r in records]
        + [("error", r["error"]) for r in records if r["error"]]
    )


def test_taubench_v1_results_file():
    path = SAMPLES / "taubench" / "tool-calling-deepseek-v3_range_0-1_error.json"
    results = json.loads(path.read_text())
    out = run_mapping("taubench", path)
    assert not rows(out, "rejects")
    assert len(rows(out, "sessions")) == len(results)
    rewards = [a for a in rows(out, "annotations") if a["kind"] == "reward"]
    assert [a["value"] for a in rewards] == [r["reward"] for r in results]
    errors = [a for a in rows(out, "annotations") if a["label"] == "error"]
    assert [e["text"].split("\n", 1)[0] for e in errors] == [r["info"]["error"] for r in results]
    assert len(rows(out, "events")) == sum(len(r["traj"]) for r in results)


def test_minisweagent_v2_trajectory_with_its_exit_message():
    """mini-swe-agent 2.x: tool calls with ``extra.actions`` and the raw API response, tool
    messages with their raw output, and a closing ``exit`` message (the harness's, not the
    model's)."""
    path = SAMPLES / "minisweagent" / "django__django-11099.excerpt.traj.json"
    doc = json.loads(path.read_text())
    messages = doc["messages"]
    out = run_mapping("minisweagent", path)
    assert not rows(out, "rejects")
    [session] = rows(out, "sessions")
    assert session["session_id"] == doc["instance_id"]
    assert session["condition"] == doc["info"]["config"]["model"]["model_name"]
    events = sorted(rows(out, "events"), key=lambda e: e["seq"])
    assert [(e["actor"], e["text"]) for e in events] == [
        (m["role"], m["content"]) for m in messages
    ]
    kinds = {"system": "instruction", "assistant": "message", "tool": "observation"}
    expected_kinds = [
        "control" if m["role"] == "exit" else "instruction" if i <= 1 else kinds[m["role"]]
        for i, m in enumerate(messages)
    ]
    assert [e["kind"] for e in events] == expected_kinds
    assert events[-1]["actor_type"] == "system"  # the harness's exit, not the model speaking
    stamped = [(e["seq"], e["timestamp"].timestamp()) for e in events if e["timestamp"]]
    assert stamped == [
        (i, pytest.approx(m["extra"]["timestamp"]))
        for i, m in enumerate(messages)
        if "timestamp" in m.get("extra", {})
    ]
    calls = [json.loads(e["payload"]) for e in events if e["actor"] == "assistant"]
    assert calls == [m["tool_calls"] for m in messages if m["role"] == "assistant"]
    nodes = sorted(rows(out, "nodes"), key=lambda n: n["node_id"])
    acting = [(i, m) for i, m in enumerate(messages) if i > 0 and m["role"] != "exit"]
    assert len(nodes) == len(acting) and len(rows(out, "edges")) == len(acting) - 1
    assert [n["label"] for n in nodes] == [
        "instruction" if i == 1 else "action" if m["role"] == "assistant" else "observation"
        for i, m in acting
    ]
    outcome = next(a for a in rows(out, "annotations") if a["kind"] == "outcome")
    assert (outcome["label"], outcome["text"]) == (
        doc["info"]["exit_status"],
        doc["info"]["submission"],
    )


def test_atif_from_another_writer_results_as_their_own_steps(tmp_path):
    """OpenAgents' ATIF (schema_version "1.4", agent.model, calls as {id, name, arguments},
    each result its own system step naming its call): every call and result lands, paired."""
    path = SAMPLES / "atif" / "tbench-regex-log.trajectory.json"
    doc = json.loads(path.read_text())
    out = run_mapping("harbor_atif", path)
    assert not rows(out, "rejects")
    [session] = rows(out, "sessions")
    assert (session["session_id"], session["condition"]) == (
        doc["session_id"],
        doc["agent"]["model"],
    )
    events = rows(out, "events")
    messages = sorted((e for e in events if e["kind"] == "message"), key=lambda e: e["seq"])
    assert [(e["seq"], e["actor"], e["text"]) for e in messages] == [
        (s["step_id"], s["source"], s["message"]) for s in doc["steps"]
    ]
    calls = {e["request_id"]: e for e in events if e["kind"] == "tool_call"}
    doc_calls = {c["id"]: (s, c) for s in doc["steps"] for c in s.get("tool_calls", [])}
    assert set(calls) == set(doc_calls)
    for cid, (step, call) in doc_calls.items():
        assert (calls[cid]["text"], calls[cid]["seq"]) == (call["name"], step["step_id"])
        assert json.loads(calls[cid]["payload"]) == call["arguments"]
    results = {e["request_id"]: e for e in events if e["kind"] == "tool_result"}
    doc_results = {
        s["message"].removeprefix("Tool result for "): s for s in doc["steps"] if "observation" in s
    }
    assert set(results) == set(doc_results) == set(doc_calls)  # every call answered
    for cid, step in doc_results.items():
        got = results[cid]
        assert got["text"] == step["observation"]["content"]
        assert got["status"] == (None if step["observation"]["result"]["success"] else "error")
    [cost] = rows(out, "annotations")
    assert cost["value"] == doc["final_metrics"]["total_cost_usd"]
    # `ingest auto` takes it for this mapping, and the Kolab reader refuses it
    from graphlake.ingest.auto import choose

    (tmp_path / path.name).write_bytes(path.read_bytes())
    assert {n: [p.name for p in f] for n, f in choose(tmp_path).by_ingestor.items()} == {
        "harbor_atif": [path.name]
    }
    kolab = ingest.get("kolab")
    refused = CollectingEmitter("kolab")
    kolab.parse_many(kolab.units(tmp_path), 0, refused)
    assert not rows(refused, "sessions")
    assert "harbor_atif" in rows(refused, "rejects")[0]["reason"]


def test_openhands_2024_output_with_history_as_pairs():
    """OpenHands before its event stream (2024, evaluation/gorilla): history as [action,
    observation] pairs, "No observation" placeholders, instances keyed by question_id, the
    benchmark's verdicts as booleans. Each action and real observation is one event; the
    placeholders are none; the verdicts are outcome annotations."""
    path = SAMPLES / "openhands" / "output_gpt-4o-2024-05-13_tf.first1.jsonl"
    [line] = [json.loads(t) for t in path.read_text().splitlines()]
    out = run_mapping("openhands_eval", path)
    assert not rows(out, "rejects")
    [session] = rows(out, "sessions")
    assert session["session_id"] == str(line["question_id"])
    assert session["condition"] == line["metadata"]["agent_class"]
    said = [
        step
        for pair in line["history"]
        for step in pair
        if step.get("observation") != "null"  # OpenHands' NullObservation
    ]
    events = sorted(rows(out, "events"), key=lambda e: (e["seq"], e["event_id"]))
    assert [(e["actor"], e["kind"], e["text"]) for e in events] == [
        (s["source"], s["action"], s["message"]) for s in said
    ]
    assert len(rows(out, "nodes")) == len(said)
    verdicts = {a["label"]: a["value"] for a in rows(out, "annotations")}
    assert verdicts == {
        "correct" if line["correct"] else "incorrect": float(line["correct"]),
        "hallucination": float(line["hallucination"]),
    }
    attrs = json.loads(session["attrs"])
    assert attrs["text"] == line["text"] and attrs["model_id"] == line["model_id"]


def test_openhands_agent_sdk_output_equals_its_events():
    """The Agent SDK's evaluation output (OpenHands/benchmarks, OpenAgentSafety, October 2025):
    history as the SDK's events, with uuid ids, action and observation objects, and each
    observation naming its action by ``action_id``. Each event is one event and one node, in
    history order, of its action's or observation's own kind; an observation answers (and is
    caused by) its action; the benchmark's final score is an outcome, the rest of
    ``test_result`` stays in attrs. (Before: every event a reject, a uuid is no seq.)"""
    path = SAMPLES / "openhands" / "output_openagentsafety_gpt-4o-2025-10-30.excerpt.jsonl"
    [line] = [json.loads(t) for t in path.read_text().splitlines()]
    out = run_mapping("openhands_eval", path)
    assert not rows(out, "rejects")
    [session] = rows(out, "sessions")
    assert session["session_id"] == line["instance_id"]
    assert session["condition"] == line["metadata"]["llm"]["model"]

    def said(event: dict) -> str:  # a finish's message, else the command, or what it printed
        if "action" in event:
            return event["action"].get("message") or event["action"]["command"]
        return event["observation"].get("message") or event["observation"]["output"]

    history = line["history"]
    events = sorted(rows(out, "events"), key=lambda e: e["seq"])
    assert [(e["seq"], e["actor"], e["kind"], e["text"], e["request_id"]) for e in events] == [
        (
            i,
            h["source"],
            (h.get("action") or h.get("observation"))["kind"],
            said(h),
            h.get("action_id", h["id"]),
        )
        for i, h in enumerate(history)
    ]
    assert [json.loads(e["payload"]) if e["payload"] else None for e in events] == [
        h.get("action") for h in history
    ]
    assert len(rows(out, "nodes")) == len(history)
    caused = [(e["src"], e["dst"]) for e in rows(out, "edges") if e["kind"] == "caused_by"]
    assert sorted(caused) == sorted(
        (f"ev{h['action_id']}", f"ev{h['id']}") for h in history if "action_id" in h
    )
    [score] = rows(out, "annotations")
    assert (score["label"], score["value"]) == (
        "final_score",
        line["test_result"]["final_score"]["result"],
    )
    assert (
        json.loads(session["attrs"])["test_result"]["checkpoints"]
        == (line["test_result"]["checkpoints"])
    )


# -- documented shapes ------------------------------------------------------------------------


def test_harbor_atif_steps_tool_calls_and_results():
    path = SHAPES / "harbor_trajectory.json"
    doc = json.loads(path.read_text())
    out = run_mapping("harbor_atif", path)
    assert not rows(out, "rejects")
    ev = rows(out, "events")
    calls = [c for s in doc["steps"] for c in s.get("tool_calls", [])]
    results = [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])]
    assert len([e for e in ev if e["kind"] == "message"]) == len(doc["steps"])
    assert [e["request_id"] for e in ev if e["kind"] == "tool_call"] == [
        c["tool_call_id"] for c in calls
    ]
    assert [e["request_id"] for e in ev if e["kind"] == "tool_result"] == [
        r["source_call_id"] for r in results
    ]
    [s] = rows(out, "sessions")
    assert s["session_id"] == doc["session_id"] and s["duration_s"] == 9.0
    step2 = next(n for n in rows(out, "nodes") if n["node_id"] == "step2")
    assert json.loads(step2["attrs"])["reasoning_content"] == doc["steps"][1]["reasoning_content"]


def test_minisweagent_and_openhands_shapes():
    mini = json.loads((SHAPES / "astropy__astropy-12907.traj.json").read_text())
    out = run_mapping("minisweagent", SHAPES / "astropy__astropy-12907.traj.json")
    assert not rows(out, "rejects")
    assert len(rows(out, "events")) == len(mini["messages"])
    outcome = next(a for a in rows(out, "annotations") if a["kind"] == "outcome")
    assert outcome["label"] == mini["info"]["exit_status"]
    cost = next(a for a in rows(out, "annotations") if a["label"] == "instance_cost_usd")
    assert cost["value"] == mini["info"]["model_stats"]["instance_cost"]

    line = json.loads((SHAPES / "openhands_output.jsonl").read_text())
    out = run_mapping("openhands_eval", SHAPES / "openhands_output.jsonl")
    assert not rows(out, "rejects")
    assert len(rows(out, "events")) == len(line["history"])
    caused = [e for e in rows(out, "edges") if e["kind"] == "caused_by"]
    assert [(e["src"], e["dst"]) for e in caused] == [
        (f"ev{h['cause']}", f"ev{h['id']}") for h in line["history"] if "cause" in h
    ]


# -- the language ----------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


BASE = """\
graphlake_mapping: 1
name: lab
source:
  format: jsonl
sessions:
  id: sid
  columns:
    title: title
events:
  from: $.turns[*]
  columns:
    actor: who
    text: said
    t: at
"""


def test_unmapped_fields_stay_in_attrs_and_bad_lines_are_rejects(tmp_path):
    m = write(tmp_path, BASE)
    data = tmp_path / "logs.jsonl"
    data.write_text(
        '{"sid": "s1", "title": "one", "lab_note": {"x": 1}, "turns": '
        '[{"who": "ann", "said": "hi", "at": 0.5, "mood": "calm"}]}\n'
        "{not json\n"
        '{"sid": "s2", "title": "two", "turns": [{"who": "bot", "said": "yo", "at": "soon"}]}\n'
    )
    out = run_mapping(m, data)
    sessions = {s["session_id"]: s for s in rows(out, "sessions")}
    assert set(sessions) == {"s1", "s2"}
    assert json.loads(sessions["s1"]["attrs"]) == {"lab_note": {"x": 1}}
    [ev] = [e for e in rows(out, "events") if e["session_id"] == "s1"]
    assert json.loads(ev["attrs"]) == {"mood": "calm"} and ev["t"] == 0.5
    rejects = rows(out, "rejects")
    bad_line = next(r for r in rejects if r["record_ref"] == "line 2")
    assert "not valid JSON" in bad_line["reason"]
    bad_time = next(r for r in rejects if r["session_id"] == "s2")
    # the reason names the mapping file and line of the column whose value did not convert
    assert "events.t (m.yaml:14)" in bad_time["reason"] and "soon" in bad_time["reason"]
    # and it keeps the item as the source has it
    assert json.loads(bad_time["raw"]) == {"who": "bot", "said": "yo", "at": "soon"}


def test_a_field_read_below_another_leaves_what_is_not_an_object(tmp_path):
    """A mapping reading ``meta.cost`` takes only that field out of attrs: a record whose
    ``meta`` is a number keeps it, one without ``meta`` does not get an empty one, one whose
    ``meta`` holds more keeps the rest (a merge patch alone turned the number into {})."""
    m = write(tmp_path, BASE.replace("    title: title", "    title: title\n    goal: meta.cost"))
    data = tmp_path / "logs.jsonl"
    lines = [
        {"sid": "a", "title": "t", "meta": 5, "turns": []},
        {"sid": "b", "title": "t", "turns": []},
        {"sid": "c", "title": "t", "meta": {"cost": "3", "by": "x"}, "turns": []},
        {"sid": "d", "title": "t", "meta": {"cost": "4"}, "turns": []},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = run_mapping(m, data)
    attrs = {s["session_id"]: s["attrs"] and json.loads(s["attrs"]) for s in rows(out, "sessions")}
    assert attrs == {"a": {"meta": 5}, "b": None, "c": {"meta": {"by": "x"}}, "d": {"meta": {}}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("    text: said", "    txt: said"), r"m\.yaml:13: events has no column 'txt'.*'text'"),
        (("  format: jsonl", "  format: xml"), r"m\.yaml:4: source\.format"),
        (("    actor: who", "    actor: upper(who"), r"m\.yaml:12: events\.actor"),
        (("    actor: who", "    actor: no_such_fn(who)"), r"m\.yaml:\d+: .*no_such_fn"),
        (("  id: sid", "  id: sid\n  colums: {}"), r"m\.yaml:\d+: sessions: .*colums"),
    ],
)
def test_a_wrong_mapping_names_its_line(tmp_path, change, message):
    m = write(tmp_path, BASE.replace(*change))
    with pytest.raises(MappingError, match=message):
        load(m)


def test_a_repeated_session_id_is_a_reject_and_the_first_lands(tmp_path):
    m = write(tmp_path, BASE)
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.jsonl").write_text('{"sid": "s1", "title": "first"}\n')
    (data / "b.jsonl").write_text('{"sid": "s1", "title": "second"}\n')
    out = run_mapping(m, data)
    assert [s["title"] for s in rows(out, "sessions")] == ["first"]
    [rej] = rows(out, "rejects")
    assert "repeats" in rej["reason"] and rej["source_file"].endswith("b.jsonl")


def test_every_shipped_mapping_checks_and_is_listed():
    shipped = ingest.mapping_paths()
    assert {
        "chatarena",
        "agentbench",
        "taubench",
        "minisweagent",
        "openhands_eval",
        "harbor_atif",
    } <= set(shipped)
    for name, path in shipped.items():
        assert load(path).name == name  # a mapping file is named as its mapping


def test_auto_picks_per_file_and_rejects_what_nothing_reads(tmp_path):
    from graphlake.ingest.auto import choose

    for src in [
        SAMPLES / "chatarena" / "umshini_debate0.json",
        SAMPLES / "agentbench" / "medagentbench_gemini-2.0_error.jsonl",
        SAMPLES / "taubench" / "tool-calling-deepseek-v3_range_0-1_error.json",
        SAMPLES / "minisweagent" / "django__django-11099.excerpt.traj.json",
        SAMPLES / "openhands" / "output_gpt-4o-2024-05-13_tf.first1.jsonl",
        SAMPLES / "openhands" / "output_openagentsafety_gpt-4o-2025-10-30.excerpt.jsonl",
        *SHAPES.glob("*.json*"),
    ]:
        (tmp_path / src.name).write_bytes(src.read_bytes())
    (tmp_path / "notes.json").write_text('{"hello": "world"}')
    choice = choose(tmp_path)
    picked = {n: sorted(p.name for p in files) for n, files in choice.by_ingestor.items()}
    assert picked == {
        "agentbench": ["medagentbench_gemini-2.0_error.jsonl"],
        "chatarena": ["umshini_debate0.json"],
        "harbor_atif": ["harbor_trajectory.json"],
        "minisweagent": [
            "astropy__astropy-12907.traj.json",
            "django__django-11099.excerpt.traj.json",
        ],
        "openhands_eval": [
            "openhands_output.jsonl",
            "output_gpt-4o-2024-05-13_tf.first1.jsonl",
            "output_openagentsafety_gpt-4o-2025-10-30.excerpt.jsonl",
        ],
        "taubench": ["tool-calling-deepseek-v3_range_0-1_error.json"],
    }
    assert [p.name for p in choice.unmatched] == ["notes.json"]


@pytest.mark.subprocess
def test_cli_ingest_mapping_and_auto(tmp_path):
    lake = tmp_path / "lake"
    m = write(tmp_path, BASE)
    data = tmp_path / "in" / "logs.jsonl"
    data.parent.mkdir()
    data.write_text('{"sid": "s1", "turns": [{"who": "ann", "said": "hi", "at": 1}]}\n')

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "graphlake", *args, "--lake", str(lake)],
            capture_output=True,
            text=True,
            timeout=600,
        )

    done = cli("ingest", "--mapping", str(m), str(data.parent), "-q")
    assert done.returncode == 0, done.stderr
    got = cli("sql", "SELECT corpus, session_id FROM sessions", "--format", "csv")
    assert got.stdout.replace('"', "").split() == ["corpus,session_id", "lab,s1"]
    again = cli("ingest", "--mapping", str(m), str(data.parent), "-q")
    assert again.returncode == 0 and "nothing new" in again.stdout  # re-ingest adds nothing
    done = cli("ingest", "auto", str(SAMPLES / "chatarena"), "-q")
    assert done.returncode == 0 and "read as chatarena" in done.stderr
    bad = write(tmp_path, BASE.replace("    text: said", "    txt: said"), "bad.yaml")
    checked = subprocess.run(
        [sys.executable, "-m", "graphlake", "mapping", "check", str(bad)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 1 and "bad.yaml:13" in checked.stderr


def test_draft_is_a_mapping_that_checks(tmp_path):
    from graphlake.ingest.mapping.draft import draft

    sample = SAMPLES / "agentbench" / "medagentbench_gemini-2.0_error.jsonl"
    m = tmp_path / "draft.yaml"
    m.write_text(draft([sample], "drafted"))
    mapping = load(m)
    assert mapping.name == "drafted" and mapping.source["format"] == "jsonl"
    out = run_mapping(m, sample)
    assert len(rows(out, "sessions")) == len(sample.read_text().splitlines())


def test_a_harbor_trajectory_is_never_a_kolab_session(tmp_path):
    """ATIF has ``steps`` and ``session_id`` like a Kolab graph: the Kolab reader refuses it
    and says which reader to use, and the traces reader's hint names harbor_atif."""
    from graphlake.errors import WrongCorpusError
    from graphlake.pipeline import ingest_path

    src = tmp_path / "in"
    src.mkdir()
    (src / "trajectory.json").write_bytes((SHAPES / "harbor_trajectory.json").read_bytes())
    with pytest.raises(WrongCorpusError, match="graphlake ingest harbor_atif"):
        ingest_path("traces", src, tmp_path / "lake")
    out = CollectingEmitter("kolab")
    kolab = ingest.get("kolab")
    kolab.parse_many(kolab.units(src), 0, out)
    assert not rows(out, "sessions")
    [rej] = rows(out, "rejects")
    assert "graphlake ingest harbor_atif" in rej["reason"]


CSV_MAPPING = """\
graphlake_mapping: 1
name: turns_table
source:
  format: {fmt}
  group_by: conv
sessions:
  columns:
    title: conv
events:
  from: $rows
  columns:
    seq: turn
    actor: speaker
    text: utterance
"""


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_table_rows_grouped_into_sessions(tmp_path, fmt):
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    m = write(tmp_path, CSV_MAPPING.format(fmt=fmt))
    table = pa.table(
        {
            "conv": ["c1", "c1", "c2"],
            "turn": [0, 1, 0],
            "speaker": ["ann", "bot", "ann"],
            "utterance": ["hi", "hello", "bye"],
            "mood": ["calm", "calm", "tired"],
        }
    )
    data = tmp_path / "in"
    data.mkdir()
    if fmt == "csv":
        pacsv.write_csv(table, data / "turns.csv")
    else:
        pq.write_table(table, data / "turns.parquet")
    out = run_mapping(m, data)
    assert not rows(out, "rejects")
    assert sorted(s["session_id"] for s in rows(out, "sessions")) == ["c1", "c2"]
    got = sorted((e["session_id"], e["seq"], e["actor"], e["text"]) for e in rows(out, "events"))
    assert got == [("c1", 0, "ann", "hi"), ("c1", 1, "bot", "hello"), ("c2", 0, "ann", "bye")]
    # the row's unmapped field stays with it
    assert {json.loads(e["attrs"])["mood"] for e in rows(out, "events")} == {"calm", "tired"}


def test_zip_members_are_read_and_bounded(tmp_path, monkeypatch):
    import zipfile

    m = write(tmp_path, BASE)
    data = tmp_path / "in"
    data.mkdir()
    with zipfile.ZipFile(data / "logs.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.jsonl", '{"sid": "z1", "turns": [{"who": "ann", "said": "hi", "at": 0}]}\n')
        zf.writestr("big.jsonl", '{"sid": "z2", "pad": "' + "x" * 5000 + '"}\n')
        zf.writestr("notes.txt", "not a member of this format")
    monkeypatch.setenv("GRAPHLAKE_MAX_FILE_BYTES", "4096")
    out = run_mapping(m, data)
    assert [s["session_id"] for s in rows(out, "sessions")] == ["z1"]
    [rej] = rows(out, "rejects")
    assert rej["source_file"].endswith("logs.zip!big.jsonl") and "inflates to" in rej["reason"]


def test_explain_says_which_fields_land_where_and_what_goes_to_attrs(tmp_path):
    from graphlake.ingest.mapping.draft import explain

    m = write(tmp_path, BASE)
    data = tmp_path / "logs.jsonl"
    data.write_text(
        '{"sid": "s1", "title": "t", "lab_note": 1, '
        '"turns": [{"who": "a", "said": "b", "at": 0, "mood": "x"}]}\n'
    )
    rows_ = {(r[0], r[1]): r[2] for r in explain(load(m), [data])}
    assert rows_[("events.actor", "who")] == "who"
    assert rows_[("session record", "-> attrs")] == "lab_note"
    assert rows_[("$.turns[*]", "-> attrs")] == "mood"


def test_a_repeated_item_id_is_a_reject_and_the_first_lands(tmp_path):
    m = write(tmp_path, BASE.replace("  from: $.turns[*]\n", "  from: $.turns[*]\n  id: who\n"))
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.jsonl").write_text(
        '{"sid": "s1", "turns": [{"who": "ann", "said": "one"}, {"who": "ann", "said": "two"}]}\n'
    )
    out = run_mapping(m, data)
    assert [(e["event_id"], e["text"]) for e in rows(out, "events")] == [("ann", "one")]
    [rej] = rows(out, "rejects")
    assert "events.event_id ann repeats within session s1" in rej["reason"]
    assert json.loads(rej["raw"])["said"] == "two"


def test_a_batch_that_fails_is_read_again_file_by_file_without_repeats(tmp_path, monkeypatch):
    """Whatever a batch raises, its files are parsed one by one: nothing the failed batch
    read is emitted twice (rows and rejects are emitted only once its plan has run)."""
    import graphlake.ingest.mapping.ingestor as ingestor_module

    m = write(tmp_path, BASE)
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.jsonl").write_text('{"sid": "s1", "turns": []}\n')
    (data / "b.jsonl").write_text('{"sid": "s2", "turns": []}\n')
    (data / "c.txt").write_text("not this format")
    real = ingestor_module.execute

    def fails_on_batches(plan, con, src):
        if len(set(src.column("_unit").to_pylist())) > 1:
            raise RuntimeError("a batch that fails")
        return real(plan, con, src)

    monkeypatch.setattr(ingestor_module, "execute", fails_on_batches)
    out = run_mapping(m, data)
    assert sorted(s["session_id"] for s in rows(out, "sessions")) == ["s1", "s2"]
    assert [r["source_file"].rsplit("/", 1)[-1] for r in rows(out, "rejects")] == ["c.txt"]


def test_explain_reads_object_members_splits_and_fields_further_up():
    """The MARBLE result-log mapping goes down object members (`$.*`), text splits and
    `parent.parent.x`; explain names what each column reads and what stays in attrs."""
    from pathlib import Path

    from graphlake.ingest.mapping.draft import explain

    root = Path(__file__).resolve().parent.parent
    rows_ = explain(
        load(root / "ingest" / "marble_results.yaml"),
        [root / "tests" / "fixtures" / "marble" / "result_log.jsonl"],
    )
    left = {r[0]: r[2] for r in rows_ if r[1] == "-> attrs"}
    steps = [r[2] for r in rows_ if r[0] == "events.step_id"]  # one row per events block
    assert any("parent.parent.parent.iteration" in s for s in steps)
    assert any("_value" in r[2] for r in rows_ if r[0] == "events.text")
    assert left["session record"] == "final_output"
    assert left["$.iterations[*]"] == "agent_kpis, continue_simulation, total_milestones"
    assert left["$.iterations[*] / $.task_results[*]"].startswith("(nothing")


def test_threads_parse_a_mapping_corpus_into_the_lake_one_thread_makes(tmp_path):
    """A mapping's plan runs in DuckDB, which releases the GIL, so the pipeline parses its
    files in threads of this process (Ingestor.parse_in_threads), each chunk staged by its own
    emitter: the lake they make is the one a single thread makes, rejects included."""
    import threading

    from graphlake.lake import Lake
    from graphlake.lake.fingerprint import fingerprint
    from graphlake.pipeline import ingest_path

    sample = (SAMPLES / "agentbench" / "medagentbench_gemini-2.0_error.jsonl").read_text()
    corpus = tmp_path / "outputs" / "run"
    for k in range(7):
        folder = corpus / f"model{k}" / "task"
        folder.mkdir(parents=True)
        (folder / "runs.jsonl").write_text(sample + ("{not json\n" if k == 3 else ""))
    names: set[str] = set()

    def seen(done: int, total: int, path: Path) -> None:
        names.add(threading.current_thread().name)

    one, _ = ingest_path("agentbench", corpus, tmp_path / "one", workers=1, on_unit=seen)
    assert not any(n.startswith("graphlake-parse") for n in names)
    three, _ = ingest_path("agentbench", corpus, tmp_path / "three", workers=3, on_unit=seen)
    assert any(n.startswith("graphlake-parse") for n in names)
    assert one.accepted == three.accepted and one.rejected == three.rejected
    assert one.rejected["sessions"] == 1 and one.accepted["sessions"] == 7 * len(
        sample.splitlines()
    )
    assert fingerprint(Lake(tmp_path / "one")) == fingerprint(Lake(tmp_path / "three"))


def test_thread_chunks_are_contiguous_and_about_equal_in_bytes(tmp_path):
    from graphlake.ingest.base import SourceUnit
    from graphlake.pipeline import thread_chunks

    sizes = [5, 1, 1, 1, 1, 1, 10, 10, 2, 8]
    units = []
    for k, size in enumerate(sizes):
        (tmp_path / f"{k}.jsonl").write_bytes(b"x" * size)
        units.append(SourceUnit(tmp_path / f"{k}.jsonl", "jsonl"))
    chunks = thread_chunks(units, 2)
    assert chunks[0][0] == 0 and chunks[-1][1] == len(units)
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:], strict=False))
    assert [sum(sizes[s:e]) for s, e in chunks] == [20, 20]
    assert thread_chunks(units[:1], 4) == [(0, 1)]
