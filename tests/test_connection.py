"""The pinned, sandboxed connection behind the CLI, the Python API and the server."""

from __future__ import annotations

import pytest

import graphlake
from conftest import HAND
from graphlake.errors import SqlError
from graphlake.pipeline import ingest_path
from graphlake.query.connection import Connection


def test_pinned_until_refresh(tmp_path, hand_lake):
    import shutil

    lake = tmp_path / "lake"
    shutil.copytree(hand_lake, lake)
    with graphlake.connect(lake) as gl:
        v = gl.version
        before = gl.sql("SELECT count(*) AS n FROM sessions").column("n")[0].as_py()
        # another session lands while the connection is open: it keeps reading its snapshot
        other = tmp_path / "other" / "hand-2"
        shutil.copytree(HAND, other)
        graph = (other / "graph.json").read_text().replace('"hand-1"', '"hand-2"')
        (other / "graph.json").write_text(graph)
        ingest_path("kolab", other.parent, lake)
        assert gl.sql("SELECT count(*) AS n FROM sessions").column("n")[0].as_py() == before
        assert gl.version == v
        assert gl.refresh() is True
        assert gl.version > v
        assert gl.sql("SELECT count(*) AS n FROM sessions").column("n")[0].as_py() == before + 1
        assert gl.refresh() is False


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM '/etc/passwd'",
        "COPY (SELECT 1) TO '/tmp/graphlake-escape.csv'",
        "ATTACH '/tmp/graphlake-escape.db'",
        "SET enable_external_access = true",
        "SET lock_configuration = false",
    ],
)
def test_duckdb_itself_refuses_what_the_guard_might_miss(hand_lake, statement):
    """execute() skips the sqlglot guard: DuckDB's sandbox alone must refuse."""
    with Connection(hand_lake) as con:
        with pytest.raises(SqlError):
            con.execute(statement)
        assert con.execute("SELECT count(*) AS n FROM nodes").table.num_rows == 1


def test_cte_named_like_a_file_cannot_read_it(hand_lake, tmp_path):
    secret = tmp_path / "x.csv"
    secret.write_text("a\n1\n")
    sql = f'SELECT f.* FROM "{secret}" f WHERE EXISTS (WITH "{secret}" AS (SELECT 1) SELECT 1)'
    with Connection(hand_lake) as con, pytest.raises(SqlError):
        con.sql(sql)


def test_graph_name_is_a_literal_not_sql(hand_lake):
    with graphlake.connect(hand_lake) as gl:
        assert (
            gl.sql(
                "SELECT count(*) AS n FROM GRAPH_TABLE (kolab MATCH (p:human)-[:next]->(a:ai)) g"
            )
            .column("n")[0]
            .as_py()
            > 0
        )
        hostile = gl.sql(
            """SELECT count(*) AS n FROM GRAPH_TABLE ("x' OR '1'='1" MATCH """
            "(p:human)-[:next]->(a:ai)) g"
        )
        assert hostile.column("n")[0].as_py() == 0


def test_api_limits(hand_lake):
    with graphlake.connect(hand_lake, max_rows=2) as gl:
        assert gl.sql("SELECT * FROM nodes").num_rows == 2
        assert gl.sql("SELECT * FROM nodes", max_rows=3).num_rows == 3


def test_closed_connection_says_so(hand_lake):
    con = Connection(hand_lake)
    con.close()
    with pytest.raises(graphlake.errors.GraphlakeError, match="closed"):
        con.sql("SELECT 1")


_REFRESH_UNDER_LOAD = r"""
import sys, threading
from graphlake.lake import Lake, LakeRun
from graphlake.query.connection import Connection

lake = Lake(sys.argv[1])
rounds = int(sys.argv[2])


def commit(k):
    run = LakeRun(lake, "g", f"round {k}")
    em = run.emitter()
    em.row("nodes", {"session_id": f"s{k}", "node_id": "v0", "actor_type": "human"})
    run.commit([em.close()])


commit(0)
con = Connection(lake)
stop, errors, done = threading.Event(), [], [0]


def reader():
    while not stop.is_set():
        try:
            n = con.sql("SELECT count(*) AS n FROM nodes, range(200)").table.column(0)[0]
            assert n.as_py() % 200 == 0
            done[0] += 1
        except Exception as exc:  # any error under a refresh is the defect
            errors.append(repr(exc))
            stop.set()


threads = [threading.Thread(target=reader) for _ in range(4)]
for t in threads:
    t.start()
for k in range(1, rounds + 1):
    commit(k)
    assert con.refresh() is True
    seen = done[0]  # at least one statement runs on every new catalog before the next swap
    while done[0] == seen and not stop.is_set():
        threading.Event().wait(0.01)
stop.set()
for t in threads:
    t.join()
con.close()
print(f"refreshes={rounds} statements={done[0]} errors={len(errors)}")
print("\n".join(errors[:3]), file=sys.stderr)
sys.exit(1 if errors else 0)
"""


@pytest.mark.subprocess
def test_refresh_and_close_under_concurrent_queries(tmp_path):
    """20 refreshes while four threads query the same connection: no statement fails, the
    replaced catalogs close after their last statement, and the interpreter exits cleanly
    (closing a DuckDB connection under a running cursor aborted it at exit)."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _REFRESH_UNDER_LOAD, str(tmp_path / "lake"), "20"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "refreshes=20" in proc.stdout and "errors=0" in proc.stdout


def _land_another_session(tmp_path, lake):
    import shutil

    other = tmp_path / "other" / "hand-2"
    shutil.copytree(HAND, other)
    graph = (other / "graph.json").read_text().replace('"hand-1"', '"hand-2"')
    (other / "graph.json").write_text(graph)
    ingest_path("kolab", other.parent, lake)


def test_a_lazy_connection_pins_its_version_and_opens_at_the_first_statement(tmp_path, hand_lake):
    """``lazy=True`` (graphlake bench) pins the version when made and makes the catalog
    only when a statement needs it: at the pinned version, though a newer one landed in
    between; refresh, close and the closed error work as on an eager connection."""
    import shutil

    lake = tmp_path / "lake"
    shutil.copytree(hand_lake, lake)
    eager = Connection(lake)
    before = eager.sql("SELECT count(*) AS n FROM sessions").table.column("n")[0].as_py()
    con = Connection(lake, lazy=True)
    v = con.version
    assert v == eager.version and con.snapshot.lake_version == v
    assert con._pin is None  # nothing opened to say which version it is
    _land_another_session(tmp_path, lake)
    assert con.sql("SELECT count(*) AS n FROM sessions").table.column("n")[0].as_py() == before
    assert con._pin is not None and con.version == v
    assert con.refresh() is True and con.version > v
    assert con.sql("SELECT count(*) AS n FROM sessions").table.column("n")[0].as_py() == before + 1

    never = Connection(lake, lazy=True)  # a newer version landed before it opened: refresh
    assert never.refresh() is False and never._pin is None  # finds nothing newer to open
    never.close()
    with pytest.raises(Exception, match="closed"):
        never.sql("SELECT 1")
    eager.close()
    con.close()


def test_bench_list_opens_no_catalog_when_its_indexes_are_cached(tmp_path, hand_lake, monkeypatch):
    """`graphlake bench list` counts instances from the indexes cached for the lake
    version: a second listing makes no DuckDB catalog, and counts what the first did."""
    import shutil

    from typer.testing import CliRunner

    from graphlake.cli import app
    from graphlake.query import connection

    lake = tmp_path / "lake"
    shutil.copytree(hand_lake, lake)
    runner = CliRunner()
    args = ["bench", "list", "--lake", str(lake), "--format", "json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    opened = []
    real = connection.open_catalog
    monkeypatch.setattr(
        connection, "open_catalog", lambda *a, **k: opened.append(a) or real(*a, **k)
    )
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert second.output == first.output and '"instances"' in second.output
    assert opened == []
