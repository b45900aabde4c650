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
