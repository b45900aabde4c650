"""OCEL 2.0 export: the demo corpus loads in pm4py (test-only dependency)."""

from __future__ import annotations

import pytest

from conftest import require_installed
from graphlake.demo.corpus import write_demo_corpus
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
from graphlake.query.ocel import export_ocel, ocel_document

require_installed("pm4py", reason="the OCEL tests read the export with pm4py (dev extra)")


@pytest.fixture(scope="module")
def pm4py():
    import pm4py

    return pm4py


def test_demo_corpus_ocel_loads_in_pm4py(pm4py, tmp_path):
    lake = tmp_path / "lake"
    ingest_path("kolab", write_demo_corpus(tmp_path / "corpus", sessions=10, recording=False), lake)
    counts = export_ocel(lake, tmp_path / "demo.jsonocel", corpus="kolab")
    ocel = pm4py.read_ocel2_json(str(tmp_path / "demo.jsonocel"))
    n_occ = run_sql("SELECT count(*) AS n FROM node_occurrences", lake).table["n"][0].as_py()
    n_ev = (
        run_sql(
            "SELECT count(*) AS n FROM events WHERE t IS NOT NULL OR timestamp IS NOT NULL", lake
        )
        .table["n"][0]
        .as_py()
    )
    assert len(ocel.events) == counts["events"] == n_occ + n_ev
    assert len(ocel.objects) == counts["objects"]
    types = set(ocel.objects["ocel:type"])
    assert types == {"session", "participant", "node"}
    activities = set(ocel.events["ocel:activity"])
    assert {"human action", "ai action", "message", "tool_call"} <= activities
    # every event is related to its session object
    sessions = ocel.relations[ocel.relations["ocel:qualifier"] == "session"]
    assert sessions["ocel:eid"].nunique() == len(ocel.events)


def test_demo_corpus_ocel_sqlite_loads_in_pm4py(pm4py, demo_lake, tmp_path):
    """The SQLite layout holds the same log as the JSON one, as pm4py reads them."""
    counts = export_ocel(demo_lake, tmp_path / "demo.sqlite")
    export_ocel(demo_lake, tmp_path / "demo.jsonocel")
    from_sqlite = pm4py.read_ocel2_sqlite(str(tmp_path / "demo.sqlite"))
    from_json = pm4py.read_ocel2_json(str(tmp_path / "demo.jsonocel"))
    assert len(from_sqlite.events) == len(from_json.events) == counts["events"] > 0
    # pm4py drops objects that no event refers to (a participant that never acted)
    doc = ocel_document(demo_lake)
    written = {o["id"] for o in doc["objects"]}
    assert len(written) == counts["objects"]
    referenced = {r["objectId"] for e in doc["events"] for r in e["relationships"]}
    for log in (from_sqlite, from_json):
        assert written & referenced <= set(log.objects["ocel:oid"]) <= written
    assert set(from_sqlite.objects["ocel:oid"]) == set(from_json.objects["ocel:oid"])
    assert len(from_sqlite.relations) == len(from_json.relations)
    assert set(from_sqlite.events["ocel:activity"]) == set(from_json.events["ocel:activity"])
    a = from_sqlite.events.sort_values("ocel:eid")["ocel:timestamp"].reset_index(drop=True)
    b = from_json.events.sort_values("ocel:eid")["ocel:timestamp"].reset_index(drop=True)
    assert (a.dt.tz_localize(None) if a.dt.tz else a).equals(
        b.dt.tz_localize(None) if b.dt.tz else b
    )
