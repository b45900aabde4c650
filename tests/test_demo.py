"""`graphlake demo` end to end, and the generator's determinism."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

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
    a = write_demo_corpus(tmp_path / "a", sessions=12, seed=3)
    b = write_demo_corpus(tmp_path / "b", sessions=12, seed=3)
    c = write_demo_corpus(tmp_path / "c", sessions=12, seed=4)
    assert digest(a) == digest(b) != digest(c)


def test_demo_runs_and_prints_the_headline_analyses(tmp_path):
    out = cli("demo", "--sessions", "12", "--out", str(tmp_path / "corpus"),
              lake=tmp_path / "lake").stdout
    assert "burstiness vs solo_lead_in: Spearman rho" in out
    assert "topology_w vs collaboration_rating: Spearman rho" in out
    assert "AI retention by sector" in out and "Every corpus in one lake" in out
    rows = run_sql("SELECT count(*) AS n FROM sessions WHERE corpus = 'kolab'",
                   tmp_path / "lake").table.to_pylist()
    assert rows == [{"n": 12}]
    # the planted errors are rejects with reasons, not lost
    rej = run_sql("SELECT record_kind FROM rejects WHERE corpus = 'kolab' ORDER BY 1",
                  tmp_path / "lake").table.column("record_kind").to_pylist()
    assert rej == ["edge", "file", "node", "node_time", "user_response"]
    # the demo recording was sampled, read and embedded, and searched with its workflow
    if importlib.util.find_spec("lancedb") and importlib.util.find_spec("rapidocr_onnxruntime"):
        assert 'graphlake search frames "summary of sources"' in out
        assert "Summarize sources" in out.split("summary of sources", 1)[1]
        n = run_sql("SELECT count(*) AS n FROM frames", tmp_path / "lake").table.to_pylist()
        assert n[0]["n"] > 20
