"""`graphlake demo` end to end, and the generator's determinism."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from conftest import cli
from graphlake.demo.corpus import write_demo_corpus
from graphlake.query import run_sql


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.suffix != ".mp4":  # the encoder may stamp its version in videos
            h.update(p.relative_to(folder).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def test_same_seed_same_corpus(tmp_path):
    # the recording is left out: the encoder may stamp its version in it (digest skips it)
    a = write_demo_corpus(tmp_path / "a", sessions=12, seed=3, recording=False)
    b = write_demo_corpus(tmp_path / "b", sessions=12, seed=3, recording=False)
    c = write_demo_corpus(tmp_path / "c", sessions=12, seed=4, recording=False)
    assert digest(a) == digest(b) != digest(c)


def _check_demo_lake(lake: Path, out: str) -> None:
    assert "burstiness vs solo_lead_in: Spearman rho" in out
    assert "topology_w vs collaboration_rating: Spearman rho" in out
    assert "AI retention by sector" in out and "Every corpus in one lake" in out
    rows = run_sql(
        "SELECT count(*) AS n FROM sessions WHERE corpus = 'kolab'", lake
    ).table.to_pylist()
    assert rows == [{"n": 12}]
    # the planted errors are rejects with reasons, not lost
    rej = (
        run_sql("SELECT record_kind FROM rejects WHERE corpus = 'kolab' ORDER BY 1", lake)
        .table.column("record_kind")
        .to_pylist()
    )
    assert rej == ["edge", "file", "node", "node_time", "user_response"]
    # outputs acted on in a later step resolve there: docs/usage.md's first query shows some
    cross = run_sql(
        "SELECT count(*) AS n, count(DISTINCT session_id) AS s FROM adoptions"
        " WHERE corpus = 'kolab' AND cross_step AND ai_step <> response_step",
        lake,
    ).table.to_pylist()[0]
    assert cross["n"] >= 5 and cross["s"] >= 3, cross


def test_demo_without_frames_runs_and_prints_the_headline_analyses(tmp_path):
    """The quick start: everything but the recording, which needs the vision extra."""
    lake = tmp_path / "lake"
    out = cli(
        "demo", "--sessions", "12", "--out", str(tmp_path / "corpus"), "--no-frames", lake=lake
    ).stdout
    _check_demo_lake(lake, out)
    assert "frames: skipped (--no-frames)" in out or "install the vision extra" in out
    assert "summary of sources" not in out.split("next:", 1)[0]


@pytest.mark.frames
@pytest.mark.subprocess
def test_demo_as_the_readme_runs_it(readme_demo):
    """`graphlake demo` as a new user runs it, in its own process: with the vision extra the
    demo recording is sampled, read and embedded, and searched with its workflow. (The run is
    shared with the browser tests: tests/readme_demo.py.)"""
    lake, out = readme_demo.lake, readme_demo.output
    _check_demo_lake(lake, out)
    assert 'graphlake search frames "summary of sources"' in out
    assert "Summarize sources" in out.split("summary of sources", 1)[1]
    n = run_sql("SELECT count(*) AS n FROM frames", lake).table.to_pylist()
    assert n[0]["n"] > 20


@pytest.mark.frames
def test_a_text_shared_by_many_sessions_is_one_hit_naming_them(readme_demo):
    """Text search returned "Summarize sources" once per session (the same line 16 times);
    each distinct text is one hit now, listing the other sessions it occurs in, and every
    hit says in words what found it."""
    from graphlake.query.connection import Connection
    from graphlake.search import search_text

    lake = readme_demo.lake
    with Connection(lake) as con:
        hits = search_text(lake, con, "Summarize sources", k=10)
        holding = con.rows(
            "SELECT count(DISTINCT session_id) AS n FROM nodes WHERE label = 'Summarize sources'"
        )[0]["n"]
    texts = [h["text"].strip() for h in hits]
    assert len(texts) == len(set(texts)) == 10
    top = hits[0]
    assert top["text"] == "Summarize sources" and holding > 1
    assert top["n_sessions"] == holding == len(top["sessions"]) + 1
    assert top["session_id"] not in top["sessions"]
    assert all(h["why"].startswith("found by ") for h in hits)
    assert "the words (2 of 2 shown)" in top["why"]


@pytest.mark.parametrize("libraries", ["installed", "absent"])
def test_the_demo_traces_land_one_of_each_family(libraries, tmp_path, monkeypatch):
    """The demo writes one trace of each family: with the real libraries where they are
    installed (the dev extra), else directly (a default install); either way every family
    lands, and a second demo run adds nothing."""
    from graphlake.demo import trace_gen, traces
    from graphlake.pipeline import ingest_path

    if libraries == "absent":
        monkeypatch.setattr(trace_gen, "have_otel_sdk", lambda: False)
        monkeypatch.setattr(traces, "have_inspect", lambda: False)
    lake = tmp_path / "lake"
    root, written = traces.write_demo_traces(tmp_path / "corpus")
    assert [w[0] for w in written] == [
        "OpenTelemetry GenAI", "OpenInference", "inspect_ai", "Langfuse", "SWE-agent",
        "OpenHands",
    ]  # fmt: skip
    if libraries == "absent":
        assert all(w[2].startswith("graphlake") for w in written)
    ingest_path("traces", root, lake)
    per_file = run_sql(
        "SELECT source_file, count(*) AS n FROM sessions GROUP BY 1", lake
    ).table.to_pylist()
    sessions = {Path(r["source_file"]).parent.name: r["n"] for r in per_file}
    assert sessions == {
        "otel": 2, "openinference": 1, "inspect": 2, "langfuse": 1, "swe-agent": 1,
        "openhands": 1,
    }  # fmt: skip
    human = run_sql(
        "SELECT count(DISTINCT session_id) AS n FROM nodes WHERE actor_type = 'human'", lake
    ).table.to_pylist()
    assert human[0]["n"] >= 6  # the user's turns are human actions in every family
    traces.write_demo_traces(tmp_path / "corpus")  # the demo run again
    stats, _ = ingest_path("traces", root, lake)
    assert not stats.added.get("sessions") and not stats.replaced_sessions


@pytest.mark.frames
def test_the_demo_traces_have_metrics_and_are_found_by_search(readme_demo):
    """The agent traces the demo ingests are sessions like any other: collab_metrics has a
    row for each with its human and AI actions counted, and text search finds what the
    user asked in one of them."""
    from graphlake.query.connection import Connection
    from graphlake.search import SearchFilters, search_text

    lake = readme_demo.lake
    metrics = run_sql(
        "SELECT session_id, n_nodes, n_ai_nodes FROM session_metrics WHERE corpus = 'traces'",
        lake,
    ).table.to_pylist()
    traces = run_sql(
        "SELECT session_id FROM sessions WHERE corpus = 'traces' AND session_id IN "
        "(SELECT session_id FROM nodes WHERE corpus = 'traces')",
        lake,
    ).table.to_pylist()
    assert len(metrics) >= len(traces) >= 8
    assert {m["session_id"] for m in metrics} >= {t["session_id"] for t in traces}
    assert sum(m["n_ai_nodes"] > 0 for m in metrics) >= 6 and all(m["n_nodes"] for m in metrics)
    with Connection(lake) as con:
        hits = search_text(
            lake, con, "architect open Revit", filters=SearchFilters(corpus="traces"), k=3
        )
    assert hits and "architect open in Revit" in hits[0]["text"]
    assert hits[0]["corpus"] == "traces"
