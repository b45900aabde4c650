"""kill -9 at random moments of ingest, refresh, compact and vacuum (one run each): the lake
opens at the old or the new version, readers never fail, repair plus a rerun gives exactly the
uninterrupted result. ``python -m benchmarks.faults`` runs the same harness 60 times."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.faults import OPERATIONS, inject, prepare  # noqa: E402

pytestmark = [pytest.mark.faults, pytest.mark.subprocess]


def test_a_kill_at_a_random_moment_of_each_operation_loses_nothing(tmp_path):
    scenarios = prepare(tmp_path, sessions=6, seed=5)
    # the scenarios are real: each operation changes what a reader sees, or (vacuum) must not
    assert scenarios["ingest"].before != scenarios["ingest"].after
    assert scenarios["refresh"].before["nodes"] == scenarios["refresh"].after["nodes"]
    assert scenarios["vacuum"].before == scenarios["vacuum"].after
    rng = random.Random(2)
    for i, name in enumerate(OPERATIONS):
        outcome = inject(scenarios[name], tmp_path, rng, i)
        assert outcome.opens, outcome
        assert outcome.state in ("before", "after"), outcome
        assert outcome.rerun_ok and not outcome.staging_left, outcome
        assert not outcome.read_failures, outcome
