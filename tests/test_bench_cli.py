"""`graphlake bench list | export | score`, offline, and the inspect_ai loader."""

from __future__ import annotations

import json

import pytest

from conftest import cli
from graphlake.protocols.samples import read_instances


def test_list_export_score(hand_lake, tmp_path):
    listed = json.loads(cli("bench", "list", "--format", "json", lake=hand_lake).stdout)
    counts = {r["id"]: r["instances"] for r in listed}
    assert counts["kolab-1b"] == 4 and counts["kolab-2a"] == 2
    out = tmp_path / "1b.jsonl"
    cli(
        "bench",
        "export",
        "kolab-1b",
        "--condition",
        "graph-chat",
        "--out",
        str(out),
        lake=hand_lake,
    )
    items = list(read_instances(out))
    assert len(items) == 4 and {i["condition"] for i in items} == {"graph-chat"}
    assert all("gold" not in json.dumps(i) for i in items)
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps({"id": i["id"], "label": "ADOPT"}) for i in items))
    scored = json.loads(cli("bench", "score", "kolab-1b", str(preds), lake=hand_lake).stdout)
    base = json.loads(
        cli("bench", "score", "kolab-1b", "--baseline", "majority", lake=hand_lake).stdout
    )
    assert scored == base and scored["macro_f1"] == pytest.approx(2 / 9)
    k2 = tmp_path / "1c.jsonl"
    cli("bench", "export", "kolab-1c", "-c", "chat", "-p", "k=2", "-o", str(k2), lake=hand_lake)
    assert [i["params"]["k"] for i in read_instances(k2)] == [2]
    bad = cli(
        "bench", "export", "kolab-1c", "-c", "smell", "-o", str(k2), lake=hand_lake, check=False
    )
    assert bad.returncode == 1 and "graph-chat" in bad.stderr


def test_inspect_ai_samples(hand_lake, tmp_path):
    pytest.importorskip("inspect_ai")
    from graphlake.protocols.samples import inspect_samples

    out = tmp_path / "2a.jsonl"
    cli("bench", "export", "kolab-2a", "-c", "graph", "-o", str(out), lake=hand_lake)
    samples = inspect_samples(out)
    items = list(read_instances(out))
    assert [s.id for s in samples] == [i["id"] for i in items]
    assert samples[0].input == items[0]["prompt"]
    assert samples[0].metadata["protocol"] == "kolab-2a"
