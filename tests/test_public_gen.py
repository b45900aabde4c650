"""The public-format generators produce files their ingestors take whole: no rejects, and the
counts the generator wrote."""

from __future__ import annotations

from conftest import parse_with
from graphlake.demo.public_gen import (
    write_coauthor_corpus,
    write_maptask_corpus,
    write_marble_corpus,
)


def test_generated_coauthor_logs_ingest_cleanly(tmp_path):
    out = parse_with("coauthor", write_coauthor_corpus(tmp_path, sessions=3, episodes=10))
    assert "rejects" not in out.tables
    labels = [a["label"] for a in out.tables["annotations"]]
    assert len(labels) == 30 and {"adopt", "reject"} <= set(labels)
    # the replayed final text contains every kept suggestion
    assert all(d["text"] for d in out.tables["documents"])


def test_generated_maptask_dialogues_ingest_cleanly(tmp_path):
    out = parse_with("maptask", write_maptask_corpus(tmp_path, dialogues=2, refs=20))
    assert "rejects" not in out.tables
    assert len(out.tables["events"]) == 40
    assert sum(a["kind"] == "grounding" for a in out.tables["annotations"]) == 40


def test_generated_marble_tasks_ingest_cleanly(tmp_path):
    out = parse_with("marble", write_marble_corpus(tmp_path, tasks=25))
    assert "rejects" not in out.tables and len(out.tables["scenarios"]) == 25
