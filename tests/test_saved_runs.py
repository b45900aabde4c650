"""Evaluation runs as lake data: a scored run saved into the lake (corpus evals) keeps its
metrics and every prediction, saving it again replaces it, and eval_runs lays the runs of
several models and conditions side by side."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from graphlake.api import connect
from graphlake.cli import app
from graphlake.protocols import Benchmarks
from graphlake.query.connection import Connection


@pytest.fixture
def lake(hand_lake, tmp_path):
    copy = tmp_path / "lake"
    shutil.copytree(hand_lake, copy)  # the fixture is shared: writes go to a copy
    return copy


def test_saved_runs_keep_metrics_and_predictions_and_compare_side_by_side(lake):
    bench = Benchmarks(Connection(lake))
    gold = {iid: r["gold"] for iid, r in bench.gold("kolab-1b").items()}
    ids = sorted(gold)
    want = {"ADOPT": "adopt", "MODIFY": "ADOPT", "REJECT": "REJECT/BYPASS"}
    preds = [{"id": i, "label": want[gold[i]]} for i in ids] + [{"id": ids[0], "label": "x"}]
    report, run_a = bench.save("kolab-1b", preds, model="model-a", condition="graph")
    assert report["macro_f1"] == pytest.approx(1.8 / 3)
    baseline = bench.baseline("kolab-1b", "majority")
    _, run_b = bench.save("kolab-1b", baseline, model="majority", condition="chat")
    # the same run saved again is the same run: replaced, not added
    _, again = bench.save("kolab-1b", preds, model="model-a", condition="graph")
    assert again == run_a

    gl = connect(lake)
    rows = gl.query("eval_runs", protocol="kolab-1b").to_pylist()
    assert sorted((r["model"], r["condition"]) for r in rows) == [
        ("majority", "chat"),
        ("model-a", "graph"),
    ]
    by_model = {r["model"]: r for r in rows}
    assert by_model["model-a"]["macro_f1"] == pytest.approx(1.8 / 3)
    assert by_model["majority"]["macro_f1"] == pytest.approx(2 / 9)
    assert by_model["model-a"]["n_scored"] == 4 and by_model["model-a"]["n_instances"] == 4
    f1 = gl.sql(
        "SELECT label, value FROM annotations WHERE session_id = ? AND label LIKE 'f1:%'",
        params=[run_a],
    ).to_pylist()
    assert {r["label"]: r["value"] for r in f1} == pytest.approx(
        {"f1:ADOPT": 0.8, "f1:MODIFY": 0.0, "f1:REJECT": 1.0}
    )
    wrong = gl.sql(
        "SELECT target_id, label, text, attrs FROM annotations WHERE session_id = ? "
        "AND kind = 'prediction' AND value = 0",
        params=[run_a],
    ).to_pylist()
    [modify] = [w for w in wrong if json.loads(w["attrs"])["gold"] == "MODIFY"]
    assert (modify["label"], modify["text"]) == ("ADOPT", "ADOPT")
    n = gl.sql(
        "SELECT count(*) AS n FROM annotations WHERE session_id = ? AND kind = 'prediction'",
        params=[run_a],
    ).to_pylist()[0]["n"]
    assert n == 4  # the first answer of an id counts, as in the score


def test_bench_score_save_from_the_cli(lake):
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "bench",
            "score",
            "kolab-1b",
            "--baseline",
            "majority",
            "--save",
            "--condition",
            "graph",
            "--lake",
            str(lake),
        ],  # fmt: skip
    )
    assert res.exit_code == 0, res.output
    saved = json.loads(res.output)["saved_run"]
    [row] = connect(lake).query("eval_runs").to_pylist()
    assert row["run_id"] == saved and row["model"] == "baseline:majority"
    assert row["condition"] == "graph"


def test_subset_scores_only_what_was_predicted(lake):
    """A run over part of a protocol (inspect --limit) is scored on that part: the other
    instances are not missing, and n_instances counts those scored."""
    bench = Benchmarks(Connection(lake))
    gold = bench.gold("kolab-1b")
    first = sorted(gold)[:2]
    preds = [{"id": i, "label": gold[i]["gold"]} for i in first]
    whole = bench.score("kolab-1b", preds)
    assert len(whole["missing"]) == len(gold) - 2
    part = bench.score("kolab-1b", preds, subset=True)
    assert part["missing"] == [] and part["n_instances"] == 2 and part["accuracy"] == 1.0
    assert part["n_protocol_instances"] == len(gold) and part["subset"] is True


def test_http_save_needs_a_service_that_allows_writes(lake):
    """POST /benchmarks/{id}/score?save=true keeps the run only where the service was
    started with --allow-writes; a read-only service answers 403 and writes nothing."""
    import httpx

    from conftest import LiveServer
    from graphlake.lake import Lake
    from graphlake.server.settings import Settings

    before = Lake(lake).snapshot().lake_version
    url = "/benchmarks/kolab-1b/score?baseline=majority&save=true&model=m1&condition=graph"
    with LiveServer(Settings(lake=lake)) as srv:
        resp = httpx.post(srv.url + url, timeout=60)
        assert resp.status_code == 403, resp.text
        assert "--allow-writes" in resp.json()["error"]["message"]
    assert Lake(lake).snapshot().lake_version == before
    with LiveServer(Settings(lake=lake, allow_writes=True)) as srv:
        bad = httpx.post(srv.url + url.replace("graph", "nothing"), timeout=60)
        assert bad.status_code == 400 and "no condition" in bad.json()["error"]["message"]
        resp = httpx.post(srv.url + url, timeout=60)
        assert resp.status_code == 200, resp.text
        saved = resp.json()["saved_run"]
        assert httpx.post(srv.url + "/refresh", timeout=60).status_code == 200
        rows = httpx.post(srv.url + "/queries/eval_runs", json={"params": {}}, timeout=60).json()
    [row] = connect(lake).query("eval_runs").to_pylist()
    assert (row["run_id"], row["model"], row["condition"]) == (saved, "m1", "graph")
    assert rows["rows"] and saved in str(rows["rows"])


def test_runs_compare_class_by_class_and_list_their_wrong_answers_first(lake):
    """eval_run_classes lays each run's per-class F1 and recall side by side as its score
    report gave them, with the gold counts; eval_predictions lists a run's predictions
    wrong, then invalid, then right, each with its gold."""
    bench = Benchmarks(Connection(lake))
    gold = {iid: r["gold"] for iid, r in bench.gold("kolab-1b").items()}
    ids = sorted(gold)
    flip = {"ADOPT": "REJECT", "MODIFY": "ADOPT", "REJECT": "ADOPT"}
    preds = [{"id": ids[0], "label": flip[gold[ids[0]]]}, {"id": ids[1], "label": "no idea"}]
    preds += [{"id": i, "label": gold[i]} for i in ids[2:]]
    report, run = bench.save("kolab-1b", preds, model="model-a", condition="graph")
    base, _ = bench.save(
        "kolab-1b", bench.baseline("kolab-1b", "majority"), model="majority", condition="chat"
    )

    gl = connect(lake)
    rows = gl.query("eval_run_classes", protocol="kolab-1b").to_pylist()
    by = {(r["model"], r["class"]): r for r in rows}
    assert {c for _, c in by} == set(report["per_class_f1"])
    for cls, f1 in report["per_class_f1"].items():
        assert by["model-a", cls]["f1"] == pytest.approx(f1)
        assert by["model-a", cls]["recall"] == pytest.approx(report["per_class_recall"][cls])
        assert by["majority", cls]["f1"] == pytest.approx(base["per_class_f1"][cls])
        assert by["model-a", cls]["n_gold"] == sum(g == cls for g in gold.values())
    assert sum(r["n_wrong"] for r in rows if r["model"] == "model-a") == 2
    assert {r["condition"] for r in rows} == {"graph", "chat"}

    listed = gl.query("eval_predictions", run=run).to_pylist()
    assert [p["outcome"] for p in listed] == ["wrong", "invalid"] + ["right"] * (len(ids) - 2)
    assert [p["instance_id"] for p in listed[:2]] == ids[:2]
    assert listed[0]["gold"] == gold[ids[0]] and listed[0]["predicted"] == flip[gold[ids[0]]]
    assert listed[1]["answer"] == "no idea" and listed[1]["predicted"] is None
    assert {(p["protocol"], p["condition"], p["model"]) for p in listed} == {
        ("kolab-1b", "graph", "model-a")
    }
    wrong = gl.query("eval_predictions", run=run, wrong_only=True).to_pylist()
    assert [p["instance_id"] for p in wrong] == ids[:2]
    [one] = gl.query("eval_predictions", run=run, instance=ids[3]).to_pylist()
    assert (one["instance_id"], one["outcome"]) == (ids[3], "right")
