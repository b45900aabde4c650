"""Golden tables for every ingestor besides Kolab (which has its own hand-built golden session):
each corpus below is ingested into a real lake and every table is compared row for row.

The inputs are in-repo fixtures or small corpora written by graphlake's seeded generators, so
the goldens do not depend on ../shared/data. Regenerate after an intended change with
``GRAPHLAKE_REGEN_GOLDEN=1 pytest tests/test_golden_corpora.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import FIXTURES, portable_run_id
from graphlake.demo.public_gen import (
    write_coauthor_corpus,
    write_maptask_corpus,
    write_marble_corpus,
)
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
from graphlake.schema import TABLES


def _tau2(tmp: Path) -> Path:
    sim = {
        "id": "sim-1",
        "task_id": "t1",
        "trial": 0,
        "seed": 1,
        "duration": 3.0,
        "start_time": "2025-01-01T00:00:00",
        "termination_reason": "user_stop",
        "agent_cost": 0.1,
        "user_cost": 0.05,
        "reward_info": {
            "reward": 1.0,
            "reward_breakdown": {"DB": 1.0},
            "action_checks": [{"action": {"name": "refund"}, "action_reward": 1.0}],
        },
        "messages": [
            {
                "role": "user",
                "content": "hi",
                "timestamp": "2025-01-01T00:00:01",
                "turn_idx": 0,
                "usage": {"prompt_tokens": 3, "completion_tokens": 1},
            },
            {
                "role": "assistant",
                "content": "",
                "timestamp": "2025-01-01T00:00:02",
                "turn_idx": 1,
                "tool_calls": [
                    {"id": "c1", "name": "refund", "arguments": {"o": 1}, "requestor": "assistant"}
                ],
            },
            {
                "role": "tool",
                "id": "c1",
                "requestor": "assistant",
                "content": "ok",
                "error": False,
                "timestamp": "2025-01-01T00:00:03",
                "turn_idx": 2,
            },
        ],
    }
    doc = {
        "timestamp": "2025-01-01T00:00:00",
        "info": {
            "agent_info": {"llm": "agent"},
            "user_info": {"llm": "user"},
            "environment_info": {"domain_name": "mock"},
        },
        "tasks": [
            {
                "id": "t1",
                "description": {"purpose": "Refund"},
                "user_scenario": {"instructions": "Ask for a refund."},
            }
        ],
        "simulations": [sim],
    }
    (tmp / "tau2").mkdir()
    (tmp / "tau2" / "results.json").write_text(json.dumps(doc))
    return tmp / "tau2"


CORPORA = {
    "tau2": _tau2,
    # two monolithic runs, and a full-duplex run in tau2's folder layout
    "tau2_runs": lambda tmp: FIXTURES / "tau2_runs",
    "coauthor": lambda tmp: write_coauthor_corpus(tmp, sessions=1, episodes=4, seed=3),
    # reopen, re-select and writer-sourced inserts of the chosen text
    "coauthor_reopen": lambda tmp: FIXTURES / "coauthor",
    "maptask": lambda tmp: write_maptask_corpus(tmp, dialogues=1, refs=6, seed=3),
    # the HCRC release's NXT layers (timed units, moves), one dialogue with GMMT beside it
    "maptask_release": lambda tmp: FIXTURES / "maptask_release",
    "marble": lambda tmp: write_marble_corpus(tmp, tasks=2, seed=3),
    # MARBLE's engine result log: a star and a chain run, and a broken line
    "marble_results": lambda tmp: FIXTURES / "marble",
    "hasbench": lambda tmp: FIXTURES / "hasbench",
    "almanac": lambda tmp: FIXTURES / "almanac",
}


def _normalise(rows: list[dict], roots: list[str]) -> list[dict]:
    out = []
    for r in rows:
        r = dict(r)
        for k in ("source_file", "uri", "source"):
            if r.get(k):
                for root in roots:
                    r[k] = r[k].replace(root, "<input>")
        for k, v in r.items():
            if hasattr(v, "isoformat"):
                r[k] = v.isoformat()
        if "reject_id" in r:  # a hash of the source path: differs between checkouts
            r["reject_id"] = "<hash of file, record and reason>"
        if "run_id" in r:  # likewise
            r["run_id"] = portable_run_id(r["run_id"])
        out.append(r)
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_every_table_matches_its_golden(tmp_path, corpus):
    src = CORPORA[corpus](tmp_path)
    lake = tmp_path / "lake"
    ingest_path(corpus.split("_")[0], src, lake)
    golden = FIXTURES / "golden" / corpus
    roots = sorted({str(Path(src).resolve()), str(src)}, key=len, reverse=True)
    for table, spec in TABLES.items():
        rows = run_sql(
            f"SELECT * FROM {table} ORDER BY {', '.join(spec.key)}", lake, max_rows=None
        ).table.to_pylist()
        rows = _normalise(rows, roots)
        path = golden / f"{table}.json"
        if os.environ.get("GRAPHLAKE_REGEN_GOLDEN"):
            golden.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(rows, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        assert rows == json.loads(path.read_text()), f"{corpus}.{table} differs from golden"
