"""Kolab parser units: identity and resolution rules, and every reject reason."""

from __future__ import annotations

import copy

import pytest

from conftest import HAND, parse_kolab, write_graph


def base_graph() -> dict:
    """Two segments of one step visited twice (seg2a, seg2b) with repeated local ids."""
    return {
        "session_id": "t1",
        "participant_id": "P9",
        "title": "T",
        "goal": "G",
        "steps": [
            {
                "key": "seg2a",
                "badge": "Step-2",
                "step_name": "Draft",
                "start_seconds": 0,
                "end_seconds": 100,
                "nodes": [
                    {
                        "id": "n1",
                        "actor": "user",
                        "actor_type": "user",
                        "label": "ask",
                        "time": ["00:00:00-00:00:10"],
                    },
                    {
                        "id": "n2",
                        "actor": "claude",
                        "actor_type": "ai",
                        "label": "draft",
                        "time": ["00:00:10-00:00:30", "00:01:00-00:01:10"],
                    },
                    {
                        "id": "n3",
                        "actor": "user",
                        "actor_type": "user",
                        "label": "edit",
                        "time": ["00:00:30-00:00:50"],
                    },
                ],
                "edges": [
                    {"from": "n1", "to": "n2", "type": "sequential"},
                    {"from": "n2", "to": "n3", "type": "sequential"},
                ],
            },
            {
                "key": "seg2b",
                "badge": "Step-2",
                "step_name": "Draft",
                "start_seconds": 200,
                "end_seconds": 300,
                "nodes": [
                    {
                        "id": "n1",
                        "actor": "user",
                        "actor_type": "user",
                        "label": "reuse",
                        "time": ["00:03:20-00:03:40"],
                    },
                    {
                        "id": "n2",
                        "actor": "grok",
                        "actor_type": "ai",
                        "label": "check",
                        "time": ["00:03:40-00:04:00"],
                    },
                ],
                "edges": [{"from": "n1", "to": "n2", "type": "sequential"}],
            },
        ],
    }


def run(tmp_path, graph) -> tuple:
    path = write_graph(tmp_path / "in", graph, "g.json")
    out = parse_kolab(path)
    return out, out.tables.get("rejects", [])


def only_reject(rejects, kind):
    hits = [r for r in rejects if r["record_kind"] == kind]
    assert len(hits) == 1, rejects
    return hits[0]


def test_node_ids_are_qualified_by_segment_and_keep_local_id(tmp_path):
    out, rejects = run(tmp_path, base_graph())
    assert rejects == []
    ids = {(n["node_id"], n["local_id"]) for n in out.tables["nodes"]}
    assert ("seg2a/n1", "n1") in ids and ("seg2b/n1", "n1") in ids
    assert {e["src"] for e in out.tables["edges"]} == {"seg2a/n1", "seg2a/n2", "seg2b/n1"}


def test_repeated_times_become_occurrences(tmp_path):
    out, _ = run(tmp_path, base_graph())
    occ = [
        (o["seq"], o["t_start"], o["t_end"])
        for o in out.tables["node_occurrences"]
        if o["node_id"] == "seg2a/n2"
    ]
    assert occ == [(0, 10.0, 30.0), (1, 60.0, 70.0)]
    node = next(n for n in out.tables["nodes"] if n["node_id"] == "seg2a/n2")
    assert (node["t_start"], node["t_end"], node["n_occurrences"]) == (10.0, 70.0, 2)


def test_response_resolves_in_own_segment_first(tmp_path):
    g = base_graph()
    g["steps"][1]["nodes"].append(
        {
            "id": "n3",
            "actor": "user",
            "actor_type": "user",
            "label": "use",
            "time": ["00:04:00-00:04:30"],
            "user_response": [
                ["n1", "n2", "adopt", "00:03:20-00:03:40", "00:03:40-00:04:00", "00:04:00-00:04:30"]
            ],
        }
    )
    out, rejects = run(tmp_path, g)
    assert rejects == []
    (a,) = out.tables["annotations"]
    assert (a["source_node"], a["ai_node"], a["response_node"]) == (
        "seg2b/n1",
        "seg2b/n2",
        "seg2b/n3",
    )


def test_response_falls_back_to_other_segments_and_picks_the_occurrence(tmp_path):
    g = base_graph()
    g["steps"][1]["nodes"].append(
        {
            "id": "n3",
            "actor": "user",
            "actor_type": "user",
            "label": "use",
            "time": ["00:04:00-00:04:30"],
            "user_response": [
                [
                    "n1",
                    "n2",
                    "modify",
                    "00:00:00-00:00:10",
                    "00:01:00-00:01:10",
                    "00:04:00-00:04:30",
                ]
            ],
        }
    )
    out, rejects = run(tmp_path, g)
    assert rejects == []
    (a,) = out.tables["annotations"]
    assert (a["source_node"], a["ai_node"], a["ai_seq"], a["label"]) == (
        "seg2a/n1",
        "seg2a/n2",
        1,
        "modify",
    )


def test_time_inside_an_occurrence_resolves(tmp_path):
    g = base_graph()
    g["steps"][0]["nodes"][2]["user_response"] = [
        ["n1", "n2", "adopt", "00:00:02-00:00:05", "00:00:15-00:00:20", "00:00:30-00:00:50"]
    ]
    out, rejects = run(tmp_path, g)
    assert rejects == [] and out.tables["annotations"][0]["ai_seq"] == 0


def test_empty_source_is_legal(tmp_path):
    g = base_graph()
    g["steps"][0]["nodes"][2]["user_response"] = [
        ["", "n2", "reject", "", "00:00:10-00:00:30", "00:00:30-00:00:50"]
    ]
    out, rejects = run(tmp_path, g)
    assert rejects == []
    a = out.tables["annotations"][0]
    assert a["source_node"] is None and a["label"] == "reject"


def test_several_labels_on_one_node_are_separate_annotations(tmp_path):
    g = base_graph()
    g["steps"][0]["nodes"][2]["user_response"] = [
        ["n1", "n2", "adopt", "00:00:00-00:00:10", "00:00:10-00:00:30", "00:00:30-00:00:50"],
        ["n1", "n2", "modify", "00:00:00-00:00:10", "00:00:10-00:00:30", "00:00:30-00:00:50"],
    ]
    out, _ = run(tmp_path, g)
    assert [a["annotation_id"] for a in out.tables["annotations"]] == [
        "seg2a/n3#ur0",
        "seg2a/n3#ur1",
    ]


# -- reject reasons ----------------------------------------------------------------------
def _with_response(tup):
    g = base_graph()
    g["steps"][0]["nodes"][2]["user_response"] = [tup]
    return g


@pytest.mark.parametrize(
    "tup,fragments",
    [
        (
            ["n1", "n9", "adopt", "00:00:00-00:00:10", "00:00:10-00:00:30", "00:00:30-00:00:50"],
            ["'n9'", "resolves to no node occurrence", "no segment has it"],
        ),
        (
            ["n1", "n2", "adopt", "00:00:00-00:00:10", "00:05:00-00:05:10", "00:00:30-00:00:50"],
            ["'n2' at 00:05:00-00:05:10", "seg2a/n2 at 00:00:10-00:00:30, 00:01:00-00:01:10"],
        ),
        (
            ["n1", "n2", "maybe", "", "00:00:10-00:00:30", "00:00:30-00:00:50"],
            ["'maybe' is not one of adopt, modify, reject"],
        ),
        (["n1", "n2", "adopt"], ["expected [source_node_id"]),
        (
            ["n1", "n2", "adopt", "00:00:00-00:00:10", "soon", "00:00:30-00:00:50"],
            ["claude_node_id time", "'soon'"],
        ),
        (
            ["n1", "n3", "adopt", "00:00:00-00:00:10", "00:00:30-00:00:50", "00:00:30-00:00:50"],
            ["resolved to seg2a/n3, a human node"],
        ),
        (
            ["n2", "n2", "adopt", "00:00:10-00:00:30", "00:00:10-00:00:30", "00:00:30-00:00:50"],
            ["source_node_id 'n2' resolved to seg2a/n2, an AI node"],
        ),
        (
            ["n1", "n2", "adopt", "00:00:00-00:00:10", "00:00:10-00:00:30", "00:09:00-00:09:10"],
            ["user_response_time '00:09:00-00:09:10' lies in no time interval of seg2a/n3"],
        ),
    ],
)
def test_unresolvable_responses_are_rejected_with_the_id_and_why(tmp_path, tup, fragments):
    out, rejects = run(tmp_path, _with_response(tup))
    r = only_reject(rejects, "user_response")
    assert r["target_table"] == "annotations"
    assert r["record_ref"] == "steps[0].nodes[2].user_response[0]"
    assert "seg2a/n3" in r["reason"]
    for f in fragments:
        assert f in r["reason"]
    assert "annotations" not in out.tables  # nothing guessed
    assert len(out.tables["nodes"]) == 5  # the rest of the file landed


def test_ambiguous_reference_is_rejected(tmp_path):
    g = base_graph()
    # n1 exists in seg2a and seg2b; no time given and not in the responding segment
    g["steps"].append(
        {
            "key": "seg3a",
            "start_seconds": 300,
            "end_seconds": 400,
            "nodes": [
                {
                    "id": "n7",
                    "actor": "user",
                    "actor_type": "user",
                    "time": ["00:05:00-00:05:10"],
                    "user_response": [
                        ["n1", "n2", "adopt", "", "00:00:10-00:00:30", "00:05:00-00:05:10"]
                    ],
                }
            ],
        }
    )
    _, rejects = run(tmp_path, g)
    assert "in several segments" in only_reject(rejects, "user_response")["reason"]


def test_unparseable_node_time_rejects_only_that_interval(tmp_path):
    g = base_graph()
    g["steps"][0]["nodes"][0]["time"].append("00:61:00-00:62:00")
    out, rejects = run(tmp_path, g)
    r = only_reject(rejects, "node_time")
    assert r["record_ref"] == "steps[0].nodes[0].time[1]" and "past 59" in r["reason"]
    assert r["raw"] == "00:61:00-00:62:00"
    assert len(out.tables["nodes"]) == 5


def test_duplicate_node_id_rejects_the_second(tmp_path):
    g = base_graph()
    dup = copy.deepcopy(g["steps"][0]["nodes"][0])
    dup["label"] = "again"
    g["steps"][0]["nodes"].append(dup)
    out, rejects = run(tmp_path, g)
    r = only_reject(rejects, "node")
    assert "duplicate node id 'n1' in step seg2a" in r["reason"]
    assert '"again"' in r["raw"]
    assert [n["label"] for n in out.tables["nodes"] if n["node_id"] == "seg2a/n1"] == ["ask"]


def test_edge_to_unknown_node_is_rejected(tmp_path):
    g = base_graph()
    g["steps"][0]["edges"].append({"from": "n3", "to": "n99", "type": "sequential"})
    out, rejects = run(tmp_path, g)
    r = only_reject(rejects, "edge")
    assert "'n99'" in r["reason"] and "known ids: n1, n2, n3" in r["reason"]
    assert len(out.tables["edges"]) == 3


def test_duplicate_step_key_and_missing_key(tmp_path):
    g = base_graph()
    g["steps"].append(copy.deepcopy(g["steps"][0]))
    g["steps"].append({"badge": "Step-9", "nodes": []})
    out, rejects = run(tmp_path, g)
    reasons = sorted(r["reason"] for r in rejects if r["record_kind"] == "step")
    assert any("duplicate step key 'seg2a'" in x for x in reasons)
    assert any("has no 'key'" in x for x in reasons)
    assert len(out.tables["steps"]) == 2


def test_unknown_actor_type_is_rejected(tmp_path):
    g = base_graph()
    g["steps"][0]["nodes"][0]["actor_type"] = "robot"
    _, rejects = run(tmp_path, g)
    assert "actor_type 'robot'" in only_reject(rejects, "node")["reason"]


def test_brand_in_actor_type_is_read_as_ai(tmp_path):
    g = base_graph()
    g["steps"][0]["nodes"][1]["actor_type"] = "claude"  # the swap the paper's prompt warns of
    out, rejects = run(tmp_path, g)
    assert rejects == []
    assert next(n for n in out.tables["nodes"] if n["node_id"] == "seg2a/n2")["actor_type"] == "ai"


def test_non_json_file_is_rejected_and_siblings_land(tmp_path):
    folder = tmp_path / "corpus"
    write_graph(folder, base_graph(), "good.json")
    (folder / "bad.json").write_text('{"session_id": "x", "steps": [')
    (folder / "notes.txt").write_text("not a graph")
    out = parse_kolab(folder)
    kinds = sorted(
        (r["record_kind"], r["source_file"].rsplit("/", 1)[-1]) for r in out.tables["rejects"]
    )
    assert kinds == [("file", "bad.json"), ("file", "notes.txt")]
    bad = next(r for r in out.tables["rejects"] if r["source_file"].endswith("bad.json"))
    assert "not valid JSON" in bad["reason"] and bad["raw"].startswith('{"session_id"')
    assert len(out.tables["sessions"]) == 1


def test_extra_fields_land_in_attrs(tmp_path):
    g = base_graph()
    g["recorded_with"] = "OBS"
    g["steps"][0]["nodes"][0]["mood"] = "calm"
    g["steps"][0]["edges"][0]["weight"] = 2
    out, _ = run(tmp_path, g)
    assert out.tables["sessions"][0]["attrs"] == '{"recorded_with":"OBS"}'
    assert out.tables["nodes"][0]["attrs"] == '{"mood":"calm"}'
    assert out.tables["edges"][0]["attrs"] == '{"weight":2}'


def test_side_files_of_the_hand_session(tmp_path):
    out = parse_kolab(HAND)
    assert out.tables.get("rejects", []) == []
    kinds = sorted(e["kind"] for e in out.tables["events"])
    assert kinds == ["message", "message", "message", "tool_call", "tool_result"]
    call = next(e for e in out.tables["events"] if e["kind"] == "tool_call")
    result = next(e for e in out.tables["events"] if e["kind"] == "tool_result")
    assert call["request_id"] == result["request_id"] == "tc1"
    ratings = {
        (a["target_id"], a["label"]): a["value"]
        for a in out.tables["annotations"]
        if a["kind"] == "rating"
    }
    assert ratings[("Step-1", "collaboration")] == 4.0
    assert ratings[("Step-1", "collab_item:smooth")] == 2.0
    assert ratings[("seg2a", "output_quality")] == 2.0
    assert out.tables["sessions"][0]["domain"] == "Legal"


def test_bad_side_file_records_are_rejected_and_the_rest_lands(tmp_path):
    import shutil

    folder = tmp_path / "s"
    shutil.copytree(HAND, folder)
    with (folder / "chat.jsonl").open("a") as fh:
        fh.write("{not json\n")
        fh.write('{"t": 5, "role": "narrator", "text": "?"}\n')
    (folder / "ratings.json").write_text(
        '{"steps": [{"step": "Step-7", "collaboration": 3}, {"step": "Step-1", '
        '"collaboration": 9}, {"step": "seg2a", "collaboration": 5}]}'
    )
    (folder / "stray.bin").write_bytes(b"\x00\x01")
    out = parse_kolab(folder)
    reasons = [r["reason"] for r in out.tables["rejects"]]
    assert any("line 4 is not valid JSON" in x for x in reasons)
    assert any("role 'narrator'" in x for x in reasons)
    assert any("step 'Step-7' names no step key or badge" in x for x in reasons)
    assert any("collaboration must be a number from 1 to 5, got 9" in x for x in reasons)
    assert any("unrecognised file 'stray.bin'" in x for x in reasons)
    assert len(out.tables["events"]) == 5
    assert [a["value"] for a in out.tables["annotations"] if a["label"] == "collaboration"] == [5.0]
