"""Tables held in memory (the server's catalog) answer exactly as the views over the lake's
Parquet files."""

from __future__ import annotations

import pyarrow as pa
import pytest

from graphlake.errors import SqlError
from graphlake.query.connection import Connection

STATEMENTS = [
    "SELECT * FROM sessions ORDER BY corpus, session_id",
    "SELECT * FROM participants ORDER BY ALL",
    "SELECT corpus, count(*) AS n, sum(duration_s) AS d FROM sessions GROUP BY 1 ORDER BY 1",
    "SELECT * FROM session_metrics ORDER BY corpus, session_id",
    "SELECT * FROM adoptions ORDER BY ALL",
    "SELECT s.session_id, count(*) AS n FROM sessions s JOIN nodes n USING (corpus, session_id) "
    "GROUP BY 1 ORDER BY 1",
]


@pytest.fixture(scope="module")
def both(demo_lake):
    with Connection(demo_lake) as files, Connection(demo_lake, hold_bytes=1 << 30) as held:
        yield files, held


@pytest.mark.parametrize("sql", STATEMENTS)
def test_held_tables_answer_as_the_files(both, sql):
    files, held = both
    a = files.sql(sql, max_rows=None).table
    b = held.sql(sql, max_rows=None).table
    assert a.num_rows > 0 and a.schema == b.schema
    for name in a.column_names:
        x, y = a.column(name).to_pylist(), b.column(name).to_pylist()
        if pa.types.is_floating(a.schema.field(name).type):  # sums in another order
            assert [u is None for u in x] == [v is None for v in y], name
            pairs = [(u, v) for u, v in zip(x, y, strict=True) if u is not None]
            assert [u for u, _ in pairs] == pytest.approx([v for _, v in pairs], rel=1e-12)
        else:
            assert x == y, name


def test_only_small_tables_are_held(both, demo_lake):
    from graphlake.lake import Lake
    from graphlake.query.catalog import hold_in_memory, open_catalog

    lake = Lake(demo_lake)
    cat = open_catalog(lake)
    try:
        held = hold_in_memory(cat, lake, 1 << 30)
        assert {"sessions", "nodes"} <= set(held)
        assert "frames" not in held or lake.files("frames", cat.snapshot)
    finally:
        cat.close()
    cat = open_catalog(lake)
    try:
        assert hold_in_memory(cat, lake, 1) == []  # every table is larger than a byte
    finally:
        cat.close()
    files, held_con = both
    plan = "EXPLAIN SELECT * FROM sessions"
    assert "_held_sessions" in str(held_con.execute(plan).table.to_pylist())
    assert "_held_sessions" not in str(files.execute(plan).table.to_pylist())
    with pytest.raises(SqlError, match="unknown table"):  # the copy is not a lake view
        held_con.sql("SELECT * FROM _held_sessions")
