"""tau2-bench's own metrics (pass^k, avg_reward) reproduced per results file.

The expected values are computed here straight from the fixture files with tau2-bench's
definitions (src/tau2/metrics/agent_metrics.py): infrastructure errors left out, success is a
reward within 1e-6 of 1, pass^k = C(successes, k) / C(trials, k) averaged over tasks, k up to
the smaller of num_trials and the fewest trials of any task, avg_reward the mean reward. The
fixtures hold two runs of one model (a plain and a retrying agent) that must not be pooled.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import FIXTURES, cli
from graphlake.pipeline import ingest_path

RUNS = FIXTURES / "tau2_runs"


def tau2_definition(path: Path) -> tuple[dict[int, float], float]:
    """pass^k for every k, and avg_reward, of one results file, as tau2-bench defines them."""
    doc = json.loads(path.read_text())
    sims = [s for s in doc["simulations"] if s.get("termination_reason") !=
            "infrastructure_error"]
    trials: dict[str, list[bool]] = defaultdict(list)
    for s in sims:
        trials[s["task_id"]].append(1 - 1e-6 <= s["reward_info"]["reward"] <= 1 + 1e-6)
    max_k = min(doc["info"]["num_trials"], min(len(v) for v in trials.values()))
    pass_hat = {k: sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in trials.values())
                / len(trials) for k in range(1, max_k + 1)}
    return pass_hat, sum(s["reward_info"]["reward"] for s in sims) / len(sims)


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    lake = tmp_path_factory.mktemp("tau2runs") / "lake"
    ingest_path("tau2", RUNS, lake)
    return lake


def test_pass_hat_k_and_avg_reward_equal_tau2s_own_definition(lake):
    rows = json.loads(cli("query", "run", "tau2_metrics", "--format", "json",
                          lake=lake).stdout)
    files = sorted(RUNS.glob("*.json"))
    assert {r["results_file"] for r in rows} == {str(f) for f in files}  # runs not pooled
    for f in files:
        pass_hat, avg_reward = tau2_definition(f)
        got = {r["k"]: r for r in rows if r["results_file"] == str(f)}
        assert sorted(got) == sorted(pass_hat), f.name
        for k, value in pass_hat.items():
            assert got[k]["pass_hat_k"] == pytest.approx(value, abs=1e-12), (f.name, k)
            assert got[k]["avg_reward"] == pytest.approx(avg_reward, abs=1e-12)
    # hand-checked: the plain agent loses one trial of t4 to an infrastructure error
    plain = {r["k"]: r for r in rows if r["results_file"].endswith("3trials.json")}
    assert plain[1]["pass_hat_k"] == pytest.approx(0.625)
    assert plain[2]["pass_hat_k"] == pytest.approx(1 / 3)
    assert plain[1]["n_simulations"] == 11 and plain[1]["infra_errors"] == 1
    # typed answers: counts are integers, rates floats
    for r in rows:
        assert isinstance(r["k"], int) and isinstance(r["n_tasks"], int)
        assert isinstance(r["n_simulations"], int) and isinstance(r["infra_errors"], int)
        assert isinstance(r["pass_hat_k"], float) and isinstance(r["avg_reward"], float)
