"""Golden tables: the hand-checked session, ingested into a real lake, row for row.

Regenerate after an intended change with
``GRAPHLAKE_REGEN_GOLDEN=1 pytest tests/test_kolab_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import FIXTURES, HAND, portable_run_id
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
from graphlake.schema import TABLES

GOLDEN = FIXTURES / "golden" / "kolab_hand"


@pytest.fixture(scope="module")
def hand_lake(tmp_path_factory):
    lake = tmp_path_factory.mktemp("golden") / "lake"
    ingest_path("kolab", HAND, lake)
    return lake


def _normalise(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        r = dict(r)
        for k in ("source_file", "uri", "source"):
            if r.get(k):
                r[k] = r[k][r[k].index("fixtures/") :]
        if "run_id" in r:
            r["run_id"] = portable_run_id(r["run_id"])
        if r.get("started_at") is not None:
            r["started_at"] = r["started_at"].isoformat()
        out.append(r)
    return out


@pytest.mark.parametrize("table", [*TABLES, "adoptions"])
def test_table_matches_golden(hand_lake, table):
    key = ", ".join(TABLES[table].key) if table in TABLES else "annotation_id"
    rows = _normalise(
        run_sql(f"SELECT * FROM {table} ORDER BY {key}", hand_lake, max_rows=None).table.to_pylist()
    )
    path = GOLDEN / f"{table}.json"
    if os.environ.get("GRAPHLAKE_REGEN_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    assert rows == json.loads(path.read_text())
