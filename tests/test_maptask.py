"""Map Task (GMMT) ingestor on the real sample dialogue q1ec1, plus rejects and robustness."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES, parse_with
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql

DATA = SAMPLES / "gmmt"


def parse(path):
    return parse_with("maptask", path)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    lake = tmp_path_factory.mktemp("maptask") / "lake"
    ingest_path("maptask", DATA, lake)
    return lake


def q(lake, sql):
    return run_sql(sql, lake, max_rows=None).table.to_pylist()


def test_reference_expressions_are_timed_events_and_nodes(lake):
    src = json.loads((DATA / "q1ec1.reference_expressions.json").read_text())
    res = src["landmark_reference_expressions"]
    rows = q(lake, "SELECT actor, count(*) AS n FROM events GROUP BY 1 ORDER BY 1")
    speakers = {s: sum(r["speaker"] == s for r in res) for s in ("follower", "giver")}
    assert rows == [{"actor": s, "n": n} for s, n in speakers.items()]
    assert q(lake, "SELECT count(*) AS n FROM nodes") == [{"n": len(res)}]
    first = q(lake, "SELECT t, t_end, text FROM events WHERE event_id = 'q1ec1.ref.0'")
    assert first == [{"t": 2.9644, "t_end": 3.9394, "text": "a caravan park"}]
    assert q(lake, "SELECT count(*) AS n FROM rejects") == [{"n": 0}]


def test_grounding_status_and_both_interpretations(lake):
    rows = {
        r["label"]: r["n"]
        for r in q(
            lake, "SELECT label, count(*) AS n FROM annotations WHERE kind = 'grounding' GROUP BY 1"
        )
    }
    assert rows == {"aligned": 18, "pending": 7, "misunderstood": 3}  # as data/README.md says
    interp = q(
        lake,
        "SELECT label FROM annotations WHERE kind = 'interpretation' AND "
        "target_id = 'q1ec1.ref.0' ORDER BY annotation_id",
    )
    assert interp == [{"label": "m12_caravan_park@f"}, {"label": "m12_caravan_park@g"}]


def test_landmark_configuration_per_side(lake):
    rows = q(
        lake,
        "SELECT landmark_id, on_giver_map, on_follower_map FROM landmarks "
        "WHERE landmark_id IN ('m12_old_mill', 'm12_picket_fence') ORDER BY 1",
    )
    assert rows == [
        {"landmark_id": "m12_old_mill", "on_giver_map": True, "on_follower_map": False},
        {"landmark_id": "m12_picket_fence", "on_giver_map": False, "on_follower_map": True},
    ]


def test_bad_records_are_rejected(tmp_path):
    shutil.copytree(DATA, tmp_path / "d")
    d = tmp_path / "d"
    res = json.loads((d / "q1ec1.reference_expressions.json").read_text())
    res["landmark_reference_expressions"][0]["speaker"] = "narrator"
    (d / "q1ec1.reference_expressions.json").write_text(json.dumps(res))
    (d / "q2.annotated.json").write_text("{}")
    (d / "notes.txt").write_text("x")
    out = parse(d)
    reasons = [r["reason"] for r in out.tables["rejects"]]
    assert any("speaker 'narrator' is neither giver nor follower" in r for r in reasons)
    assert any("ref_id_unif 'q1ec1.ref.0' is in no reference expression" in r for r in reasons)
    assert any("annotations without their" in r for r in reasons)
    assert any("not a Map Task file graphlake reads" in r for r in reasons)
    assert len(out.tables["events"]) == 27


json_values = st.recursive(
    st.none()
    | st.integers(-3, 50)
    | st.floats(0, 50)
    | st.text(max_size=4)
    | st.sampled_from(["giver", "follower"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "ref_id_unif",
                    "speaker",
                    "start_time",
                    "end_time",
                    "dialogue_id",
                    "landmark_reference_expressions",
                    "reference expression",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(json_values)
def test_never_raises_and_every_expression_is_accounted_for(tmp_path_factory, doc):
    d = tmp_path_factory.mktemp("m")
    (d / "x.reference_expressions.json").write_text(json.dumps(doc))
    out = parse(d)
    res = doc.get("landmark_reference_expressions") if isinstance(doc, dict) else None
    if isinstance(res, list):
        kinds = [r["record_kind"] for r in out.tables.get("rejects", [])]
        assert len(out.tables.get("events", [])) + kinds.count("reference_expression") == len(res)


RELEASE = Path(__file__).parent / "fixtures" / "maptask_release"


def test_hcrc_release_layers_become_words_moves_and_dialogue_acts():
    """The release's timed units and moves (NXT XML, one folder per layer) land in the same
    session as the dialogue's GMMT expressions; counts are checked against a plain parse."""
    import xml.etree.ElementTree as ET

    out = parse_with("maptask", RELEASE)
    assert sorted(s["session_id"] for s in out.tables["sessions"]) == ["q8y", "q9x"]
    events = [e for e in out.tables["events"] if e["session_id"] == "q9x"]
    units = moves = 0
    for f in sorted((RELEASE / "Data").rglob("q9x.*.xml")):
        tags = [el.tag.rsplit("}", 1)[-1] for el in ET.parse(f).getroot().iter()]
        units += sum(t in ("tu", "sil", "noi") for t in tags)
        moves += tags.count("move")
    bad = [r for r in out.tables["rejects"] if r["session_id"] == "q9x"]
    assert len(bad) == 1 and "q9xf.7" in bad[0]["reason"]  # a unit with no start time
    assert sum(e["kind"] in ("word", "silence", "noise") for e in events) == units - 1
    assert sum(e["kind"] == "move" for e in events) == moves
    assert sum(e["kind"] == "message" for e in events) == 2  # GMMT's expressions, same session
    move = next(e for e in events if e["event_id"] == "q9xg.move.2")
    assert (move["t"], move["t_end"], move["text"]) == (1.4, 2.95, "go past the caravan park")
    # a move without times takes its words' span
    ack = next(e for e in events if e["event_id"] == "q9xg.move.3")
    assert (ack["t"], ack["t_end"]) == (5.0, 5.2)
    acts = {
        a["target_id"]: a["label"]
        for a in out.tables["annotations"]
        if a["kind"] == "dialogue_act" and a["session_id"] == "q9x"
    }
    assert acts == {
        "q9xg.move.1": "ready",
        "q9xg.move.2": "instruct",
        "q9xg.move.3": "acknowledge",
        "q9xf.move.1": "explain",
    }
    grounding = [a for a in out.tables["annotations"] if a["kind"] == "grounding"]
    assert {a["label"] for a in grounding if a["session_id"] == "q9x"} == {
        "misunderstood",
        "pending",
    }


@pytest.mark.parametrize("given", ["folder", "one file"])
def test_an_edited_annotations_file_is_found_on_re_ingest(tmp_path, given):
    """A dialogue's ``.annotated.json`` is read beside its expressions file, not as a unit of
    its own: the manifest fingerprints it with the dialogue, so editing only the annotations
    reads the dialogue again (it used to be skipped as unchanged) and the edit lands. So too
    when the expressions file alone is given: its annotations beside it are part of it."""
    import os
    import time

    from graphlake.demo.public_gen import write_maptask_corpus

    src = write_maptask_corpus(tmp_path / "gen", dialogues=2)
    old = time.time() - 3600  # times the manifest can trust
    for f in src.rglob("*"):
        os.utime(f, (old, old))
    lake = tmp_path / "lake"
    ann = sorted(src.rglob("*.annotated.json"))[0]
    if given == "one file":
        src = ann.with_name(ann.name.replace(".annotated.json", ".reference_expressions.json"))
    ingest_path("maptask", src, lake)
    doc = json.loads(ann.read_text())
    rid = doc["landmark_reference_expressions"][0]["ref_id_unif"]
    label = doc["landmark_reference_expressions"][0]["extra"]["status"]
    assert run_sql(
        f"SELECT label FROM annotations WHERE annotation_id = '{rid}/grounding'", lake
    ).table.to_pylist() == [{"label": label}]
    doc["landmark_reference_expressions"][0]["extra"]["status"] = "edited"
    ann.write_text(json.dumps(doc))
    stats, snap = ingest_path("maptask", src, lake)
    assert snap is not None and stats.replaced_sessions == 1
    rows = run_sql(
        f"SELECT label FROM annotations WHERE annotation_id = '{rid}/grounding'", lake
    ).table.to_pylist()
    assert rows == [{"label": "edited"}]


def test_a_moves_only_dialogue_is_a_session_and_ims_elements_are_kept(tmp_path):
    """A dialogue whose moves layer comes without its timed units, its moves untimed: a
    session with every move in file order (it was 67 rejects naming a session never
    created), and the moves file's <ims> elements are events too (they were dropped)."""
    moves = tmp_path / "Data" / "moves"
    moves.mkdir(parents=True)
    (moves / "q7z.g.moves.xml").write_text(
        '<?xml version="1.0" encoding="ISO-8859-1"?>\n'
        '<nite:root nite:id="q7z.g.moves" xmlns:nite="http://nite.sourceforge.net/">\n'
        '  <move id="q7zg.move.1" label="instruct"/>\n'
        '  <move id="q7zg.move.2" label="reply_y"/>\n'
        '  <ims id="q7zg.ims.1" type="overlap" start="1.5" end="2.0"/>\n'
        "</nite:root>\n"
    )
    out = parse_with("maptask", tmp_path)
    assert not out.tables.get("rejects")
    [session] = out.tables["sessions"]
    assert session["session_id"] == "q7z"
    events = out.tables["events"]
    assert [(e["event_id"], e["kind"], e["seq"], e["t"]) for e in events] == [
        ("q7zg.move.1", "move", 0, None),
        ("q7zg.move.2", "move", 1, None),
        ("q7zg.ims.1", "ims", 1500, 1.5),  # a timed one: seq in milliseconds, as always
    ]
    assert json.loads(events[2]["attrs"])["type"] == "overlap"
    acts = [a["label"] for a in out.tables["annotations"]]
    assert acts == ["instruct", "reply_y"]  # the release's labels, underscores and all
