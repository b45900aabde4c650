"""tau2-bench's own metrics (pass^k, avg_reward) reproduced per run.

The expected values are computed here straight from the fixture files with tau2-bench's
definitions (src/tau2/metrics/agent_metrics.py): infrastructure errors left out, success is a
reward within 1e-6 of 1, pass^k = C(successes, k) / C(trials, k) averaged over tasks, k up to
the smaller of num_trials and the fewest trials of any task, avg_reward the mean reward. The
fixtures hold two runs of one model (a plain and a retrying agent) that must not be pooled, and
a full-duplex run saved in tau2's folder layout (results.json + simulations/<id>.json).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import FIXTURES, cli
from graphlake.pipeline import ingest_path

RUNS = FIXTURES / "tau2_runs"


def load_run(path: Path) -> dict:
    """A run as tau2's Results.load reads it: a results file, or a run folder's results.json
    with its simulations/<id>.json files."""
    if path.is_file():
        return json.loads(path.read_text())
    doc = json.loads((path / "results.json").read_text())
    doc["simulations"] = [
        json.loads(f.read_text()) for f in sorted((path / "simulations").glob("*.json"))
    ]
    return doc


def tau2_run_identity(doc: dict) -> str:
    """tau2's run identity (src/tau2/data_model/run_identity.py)."""
    digest = hashlib.sha256((doc.get("timestamp") or "").encode())
    for sim_id in sorted(s["id"] for s in doc["simulations"]):
        digest.update(b"\0" + sim_id.encode())
    return digest.hexdigest()[:16]


def tau2_definition(doc: dict) -> tuple[dict[int, float], float]:
    """pass^k for every k, and avg_reward, of one run, as tau2-bench defines them."""
    sims = [s for s in doc["simulations"] if s.get("termination_reason") != "infrastructure_error"]
    trials: dict[str, list[bool]] = defaultdict(list)
    for s in sims:
        trials[s["task_id"]].append(1 - 1e-6 <= s["reward_info"]["reward"] <= 1 + 1e-6)
    max_k = min(doc["info"]["num_trials"], min(len(v) for v in trials.values()))
    pass_hat = {
        k: sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in trials.values()) / len(trials)
        for k in range(1, max_k + 1)
    }
    return pass_hat, sum(s["reward_info"]["reward"] for s in sims) / len(sims)


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    lake = tmp_path_factory.mktemp("tau2runs") / "lake"
    ingest_path("tau2", RUNS, lake)
    return lake


def test_pass_hat_k_and_avg_reward_equal_tau2s_own_definition(lake):
    rows = json.loads(cli("query", "run", "tau2_metrics", "--format", "json", lake=lake).stdout)
    runs = sorted(RUNS.iterdir())
    assert len(runs) == 3
    # one row set per run, named by tau2's own run identity: same-model runs are not pooled
    assert {r["run_id"] for r in rows} == {tau2_run_identity(load_run(p)) for p in runs}
    for path in runs:
        doc = load_run(path)
        pass_hat, avg_reward = tau2_definition(doc)
        got = {r["k"]: r for r in rows if r["run_id"] == tau2_run_identity(doc)}
        assert {r["run"] for r in got.values()} == {path.stem}
        assert {r["agent"] for r in got.values()} == {doc["info"]["agent_info"]["implementation"]}
        assert sorted(got) == sorted(pass_hat), path.name
        for k, value in pass_hat.items():
            assert got[k]["pass_hat_k"] == pytest.approx(value, abs=1e-12), (path.name, k)
            assert got[k]["avg_reward"] == pytest.approx(avg_reward, abs=1e-12)
    # hand-checked: the plain agent loses one trial of t4 to an infrastructure error
    plain = {r["k"]: r for r in rows if r["run"].endswith("3trials")}
    assert plain[1]["pass_hat_k"] == pytest.approx(0.625)
    assert plain[2]["pass_hat_k"] == pytest.approx(1 / 3)
    assert plain[1]["n_simulations"] == 11 and plain[1]["infra_errors"] == 1
    # typed answers: counts are integers, rates floats
    for r in rows:
        assert isinstance(r["k"], int) and isinstance(r["n_tasks"], int)
        assert isinstance(r["n_simulations"], int) and isinstance(r["infra_errors"], int)
        assert isinstance(r["pass_hat_k"], float) and isinstance(r["avg_reward"], float)
