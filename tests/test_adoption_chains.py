"""The adoption_chains view, checked by hand on the hand-built Kolab session.

seg1a/n1 prompts Claude once (seg1a/n2, two occurrences); its output is modified (seg1a/n3,
20-40 s), adopted (seg1a/n4, 60-100 s) and adopted again in the next step (seg2a/n3,
160-200 s). A separate reject in seg2a has no source, so its chain is rooted at the AI node.
"""

from __future__ import annotations

from conftest import HAND
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql


def test_chains_by_hand(tmp_path):
    ingest_path("kolab", HAND, tmp_path / "lake")
    rows = run_sql("SELECT * FROM adoption_chains ORDER BY chain_root",
                   tmp_path / "lake").table.to_pylist()
    first, second = rows
    assert (first["chain_root"], first["chain_length"], first["labels"],
            first["final_label"]) == ("seg1a/n1", 3, ["modify", "adopt", "adopt"], "adopt")
    assert first["response_steps"] == ["seg1a", "seg2a"] and first["crosses_steps"]
    assert (first["t_start"], first["t_end"], first["span_s"]) == (0.0, 200.0, 200.0)
    assert (second["chain_root"], second["rooted_at_ai"], second["labels"]) == \
        ("seg2a/n2", True, ["reject"])
    assert second["span_s"] == 50.0
