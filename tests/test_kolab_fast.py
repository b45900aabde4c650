"""The vectorised Kolab reader must agree with the record-by-record parser.

The fast path only takes files it can convert without judging anything; the rest go back to
GraphParser. So for any corpus, parsing with ``parse_many`` (fast path + fallback) and with
``parse`` per file (parser only) must give exactly the same rows and rejects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphlake import ingest
from graphlake.demo.kolab_gen import KolabGenerator
from graphlake.ingest.base import CollectingEmitter
from graphlake.ingest.kolab_fast import read_batch
from graphlake.schema import TABLES


def both_paths(folder: Path, corpus: str = "kolab") -> tuple[dict, dict]:
    """The rows of ``folder`` through ``parse_many`` (the vectorised reader and what it hands
    back) and through ``parse`` per unit (the record parser alone)."""
    ing = ingest.get(corpus)
    units = ing.units(folder)
    fast = CollectingEmitter(corpus)
    ing.parse_many(units, 0, fast)
    slow = CollectingEmitter(corpus)
    for i, unit in enumerate(units):
        slow.unit = i
        ing.parse(unit, slow)
    return fast.tables, slow.tables


def canon(tables: dict) -> dict:
    def key(row):
        return json.dumps(row, sort_keys=True, default=str)

    return {t: sorted((dict(r) for r in rows), key=key) for t, rows in tables.items() if rows}


def strip_unit(tables):
    """Rows as full canonical records (the parser leaves absent columns out)."""
    return {
        t: [{c: r.get(c) for c in TABLES[t].columns} for r in rows] for t, rows in tables.items()
    }


def assert_same(folder: Path, corpus: str = "kolab") -> None:
    """Both paths give the same rows and rejects, table by table (a failure names it)."""
    fast, slow = both_paths(folder, corpus)
    fast, slow = canon(strip_unit(fast)), canon(strip_unit(slow))
    assert fast.keys() == slow.keys()
    for table in slow:
        assert fast[table] == slow[table], table


@pytest.mark.parametrize("shape", [{}, {"steps": (2, 5), "interactions": (1, 3)}])
def test_generated_sessions_take_the_fast_path_and_agree(tmp_path, shape):
    gen = KolabGenerator(5, **shape)
    paths = []
    for i in range(40):
        g = gen.session(i).graph
        p = tmp_path / f"{i:03d}.json"
        p.write_text(json.dumps(g, indent=2 if i % 2 else None))  # pretty and compact
        paths.append(p)
    batch = read_batch(paths)
    assert batch.fallback == []
    assert batch.tables["sessions"].num_rows == 40
    assert_same(tmp_path)


def test_unusual_files_fall_back(tmp_path):
    base = KolabGenerator(3).session(0).graph
    bad_time = json.loads(json.dumps(base))
    bad_time["steps"][0]["nodes"][0]["time"][0] = "0:00:01-0:00:02"
    variants = {
        "extra_field": {**base, "notes": "kept in attrs"},
        "int_id": json.loads(json.dumps(base).replace('"id": "n1"', '"id": 1', 1)),
        "bad_time": bad_time,
        "no_session_id": {k: v for k, v in base.items() if k != "session_id"},
    }
    paths = []
    for name, g in variants.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(g))
        paths.append(p)
    (tmp_path / "not_json.json").write_text("{nope")
    (tmp_path / "array.json").write_text("[1, 2]")
    paths += [tmp_path / "not_json.json", tmp_path / "array.json"]
    batch = read_batch(paths)
    assert batch.fallback == list(range(len(paths)))
    assert_same(tmp_path)


# -- hypothesis: valid graphs by construction, then one perturbation -------------------
CLOCKS = [
    "00:00:00-00:00:10",
    "00:00:10-00:00:30",
    "00:00:05-00:00:08",
    "00:01:00-00:01:10",
    "00:02:00-00:03:00",
    "00:00:10-00:00:20",
]
PERTURB = [
    None,
    None,
    None,
    "extra_field",
    "dup_id",
    "bad_time",
    "edge_unknown",
    "bad_ref",
    "human_type",
    "resp_outside",
    "bad_label",
    "short_tuple",
    "qualified_edge",
]


@st.composite
def graph(draw):
    keys = draw(st.permutations(["seg1a", "seg2a", "seg1b"]))[: draw(st.integers(1, 3))]
    steps, nodes = [], []
    for key in keys:
        step_nodes = []
        for k in range(draw(st.integers(1, 4))):
            n = {
                "id": f"n{k + 1}",
                "actor": draw(st.sampled_from(["user", "claude", "Grok "])),
                "actor_type": draw(st.sampled_from(["user", "ai"])),
                "label": "x",
                "time": draw(
                    st.lists(st.sampled_from(CLOCKS), min_size=1, max_size=2, unique=True)
                ),
            }
            step_nodes.append(n)
            nodes.append((key, n))
        ids = [n["id"] for n in step_nodes]
        pairs = draw(
            st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=3, unique=True)
        )
        steps.append(
            {
                "key": key,
                "start_seconds": 0,
                "end_seconds": 200,
                "nodes": step_nodes,
                "edges": [{"from": a, "to": b, "type": "sequential"} for a, b in pairs],
            }
        )
    ais = [n for _, n in nodes if n["actor_type"] == "ai"]
    humans = [n for _, n in nodes if n["actor_type"] == "user"]
    for resp in humans:
        if ais and draw(st.booleans()):
            ai = draw(st.sampled_from(ais))
            src = draw(st.sampled_from([None, *humans]))
            resp["user_response"] = [
                [
                    src["id"] if src else "",
                    ai["id"],
                    draw(st.sampled_from(["adopt", "modify", "reject"])),
                    draw(st.sampled_from(src["time"])) if src else "",
                    draw(st.sampled_from(ai["time"])),
                    draw(st.sampled_from(resp["time"])),
                ]
            ]
    g = {
        "session_id": draw(st.sampled_from(["s1", "s2"])),
        "participant_id": "P1",
        "title": "t",
        "steps": steps,
    }
    p = draw(st.sampled_from(PERTURB))
    first = steps[0]["nodes"][0]
    with_resp = [n for _, n in nodes if n.get("user_response")]
    if p == "extra_field":
        first["mood"] = "calm"
    elif p == "dup_id":
        steps[0]["nodes"].append(dict(first))
    elif p == "bad_time":
        first["time"].append("00:61:00-00:62:00")
    elif p == "edge_unknown":
        steps[0]["edges"].append({"from": first["id"], "to": "n9", "type": "loop"})
    elif p == "qualified_edge":
        steps[0]["edges"].append(
            {"from": f"{steps[0]['key']}/{first['id']}", "to": first["id"], "type": "loop"}
        )
    elif p == "human_type":
        first["actor_type"] = "human"
    elif with_resp and p == "bad_ref":
        with_resp[0]["user_response"][0][1] = "n7"
    elif with_resp and p == "resp_outside":
        with_resp[0]["user_response"][0][5] = "00:09:00-00:09:10"
    elif with_resp and p == "bad_label":
        with_resp[0]["user_response"][0][2] = "Adopt"
    elif with_resp and p == "short_tuple":
        with_resp[0]["user_response"][0] = with_resp[0]["user_response"][0][:3]
    return g


@pytest.mark.fuzz
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(graph(), min_size=1, max_size=4))
def test_fast_and_record_paths_agree_on_perturbed_graphs(tmp_path_factory, graphs):
    folder = tmp_path_factory.mktemp("g")
    for i, g in enumerate(graphs):
        (folder / f"{i}.json").write_text(json.dumps(g))
    assert_same(folder)
