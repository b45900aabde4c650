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


@pytest.mark.parametrize("statement", [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM '/etc/passwd'",
    "COPY (SELECT 1) TO '/tmp/graphlake-escape.csv'",
    "ATTACH '/tmp/graphlake-escape.db'",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
])
def test_duckdb_itself_refuses_what_the_guard_might_miss(hand_lake, statement):
    """execute() skips the sqlglot guard: DuckDB's sandbox alone must refuse."""
    with Connection(hand_lake) as con:
        with pytest.raises(SqlError):
            con.execute(statement)
        assert con.execute("SELECT count(*) AS n FROM nodes").table.num_rows == 1


def test_cte_named_like_a_file_cannot_read_it(hand_lake, tmp_path):
    secret = tmp_path / "x.csv"
    secret.write_text("a\n1\n")
    sql = (f'SELECT f.* FROM "{secret}" f WHERE EXISTS (WITH "{secret}" AS (SELECT 1) '
           "SELECT 1)")
    with Connection(hand_lake) as con, pytest.raises(SqlError):
        con.sql(sql)


def test_graph_name_is_a_literal_not_sql(hand_lake):
    with graphlake.connect(hand_lake) as gl:
        assert gl.sql("SELECT count(*) AS n FROM GRAPH_TABLE (kolab MATCH "
                      "(p:human)-[:next]->(a:ai)) g").column("n")[0].as_py() > 0
        hostile = gl.sql("""SELECT count(*) AS n FROM GRAPH_TABLE ("x' OR '1'='1" MATCH """
                         "(p:human)-[:next]->(a:ai)) g")
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
