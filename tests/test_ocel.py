"""OCEL 2.0 export: the demo corpus loads in pm4py (test-only dependency)."""

from __future__ import annotations

import pytest

from graphlake.demo.corpus import write_demo_corpus
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
from graphlake.query.ocel import export_ocel

pm4py = pytest.importorskip("pm4py")


def test_demo_corpus_ocel_loads_in_pm4py(tmp_path):
    lake = tmp_path / "lake"
    ingest_path("kolab", write_demo_corpus(tmp_path / "corpus", sessions=10), lake)
    counts = export_ocel(lake, tmp_path / "demo.jsonocel", corpus="kolab")
    ocel = pm4py.read_ocel2_json(str(tmp_path / "demo.jsonocel"))
    n_occ = run_sql("SELECT count(*) AS n FROM node_occurrences", lake).table["n"][0].as_py()
    n_ev = run_sql("SELECT count(*) AS n FROM events WHERE t IS NOT NULL OR timestamp IS NOT "
                   "NULL", lake).table["n"][0].as_py()
    assert len(ocel.events) == counts["events"] == n_occ + n_ev
    assert len(ocel.objects) == counts["objects"]
    types = set(ocel.objects["ocel:type"])
    assert types == {"session", "participant", "node"}
    activities = set(ocel.events["ocel:activity"])
    assert {"human action", "ai action", "message", "tool_call"} <= activities
    # every event is related to its session object
    sessions = ocel.relations[ocel.relations["ocel:qualifier"] == "session"]
    assert sessions["ocel:eid"].nunique() == len(ocel.events)
