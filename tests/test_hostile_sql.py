"""A corpus of hostile statements, each run on every public SQL path against a real lake.

Every statement tries to read, write or reconfigure something outside the lake: the issue-12
scope walk-arounds (a CTE named like a file, out of scope where the file is read), DuckDB's
file, network, extension, settings and catalog functions, writes, and statements built to
exhaust the guard (deep nesting, huge OR chains). Two layers are checked:

* the public path (:func:`run_sql`, the Python API, HTTP ``/sql``) refuses each one with a
  :class:`SqlError` (or a time-out), and the secret file's contents never appear;
* DuckDB's sandbox on its own (the guard bypassed with ``Connection.execute``) refuses every
  statement that reaches the file system, so what the guard might miss still cannot read out.
"""

from __future__ import annotations

import time

import pytest

from conftest import HAND
from graphlake.errors import QueryTimeoutError, SqlError
from graphlake.pipeline import ingest_path
from graphlake.query.connection import Connection

SECRET = "TOPSECRET-7f3a"

#: {csv}, {parquet}, {json}, {dir} are files outside the lake holding SECRET.
SCOPE_WALKS = [
    'SELECT f.* FROM "{csv}" f WHERE EXISTS (WITH "{csv}" AS (SELECT 1) SELECT 1)',
    'SELECT f.* FROM "{parquet}" f WHERE EXISTS (WITH "{parquet}" AS (SELECT 1) SELECT 1)',
    'SELECT f.* FROM "{json}" f WHERE EXISTS (WITH "{json}" AS (SELECT 1) SELECT 1)',
    'SELECT f.* FROM "{dir}/*.csv" f WHERE EXISTS (WITH "{dir}/*.csv" AS (SELECT 1) SELECT 1)',
    'SELECT * FROM (WITH "{csv}" AS (SELECT 1 x) SELECT * FROM "{csv}") t, "{csv}"',
    'WITH a AS (SELECT * FROM "{csv}"), "{csv}" AS (SELECT 1) SELECT * FROM a',
    'SELECT (WITH "{csv}" AS (SELECT 1) SELECT 1) AS one, * FROM "{csv}"',
    'SELECT * FROM "{csv}" UNION ALL (WITH "{csv}" AS (SELECT \'x\') SELECT * FROM "{csv}")',
]

FILE_READS = [
    "SELECT * FROM '{csv}'",
    'SELECT * FROM "{csv}"',
    "SELECT * FROM read_csv('{csv}')",
    "SELECT * FROM read_csv_auto('{csv}')",
    "SELECT * FROM read_parquet('{parquet}')",
    "SELECT * FROM parquet_scan('{parquet}')",
    "SELECT * FROM read_json('{json}')",
    "SELECT * FROM read_json_auto('{json}')",
    "SELECT * FROM read_ndjson_objects('{json}')",
    "SELECT * FROM read_text('{csv}')",
    "SELECT * FROM read_blob('{csv}')",
    "SELECT * FROM glob('{dir}/*')",
    "SELECT * FROM sniff_csv('{csv}')",
    "SELECT * FROM parquet_metadata('{parquet}')",
    "SELECT * FROM parquet_schema('{parquet}')",
    "SELECT * FROM query_table('{csv}')",
    "SELECT * FROM query('SELECT * FROM ''{csv}''')",
    "SELECT * FROM '{dir}/*.csv'",
    "SELECT * FROM '{dir}/**/*.parquet'",
    "SELECT content FROM read_text(['{csv}'])",
    "SELECT * FROM nodes, read_csv('{csv}')",
    "SELECT (SELECT count(*) FROM read_csv('{csv}')) AS n",
    "SELECT * FROM nodes WHERE node_id IN (SELECT * FROM read_csv('{csv}'))",
    "SELECT * FROM sqlite_scan('{csv}', 't')",
    "SELECT * FROM delta_scan('{dir}')",
    "SELECT getenv('HOME')",
]

NETWORK = [
    "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
    "SELECT * FROM 'https://127.0.0.1:9/x.parquet'",
    "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
    "ATTACH 'postgres:dbname=x' AS pg",
    "SELECT * FROM postgres_scan('host=127.0.0.1', 'public', 't')",
    "SELECT * FROM mysql_scan('x', 'y', 'z')",
]

STATE_AND_SETTINGS = [
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "RESET allowed_directories",
    "PRAGMA enable_profiling",
    "PRAGMA show_tables",
    "INSTALL httpfs",
    "LOAD httpfs",
    "ATTACH '{dir}/other.duckdb' AS other",
    "DETACH memory",
    "COPY nodes TO '{dir}/out.csv'",
    "COPY (SELECT 1) TO '{dir}/out.parquet' (FORMAT parquet)",
    "EXPORT DATABASE '{dir}/export'",
    "IMPORT DATABASE '{dir}'",
    "CREATE TABLE t AS SELECT * FROM '{csv}'",
    "CREATE VIEW v AS SELECT * FROM read_csv('{csv}')",
    "CREATE MACRO m() AS TABLE SELECT * FROM read_csv('{csv}')",
    "CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')",
    "INSERT INTO nodes SELECT * FROM nodes",
    "DELETE FROM nodes",
    "DROP VIEW nodes",
    "CALL pragma_version()",
    "CHECKPOINT",
    "VACUUM",
    "USE memory",
    "SELECT 1; COPY nodes TO '{dir}/x.csv'",
    "SELECT * FROM duckdb_settings()",
    "SELECT * FROM duckdb_secrets()",
    "SELECT * FROM duckdb_extensions()",
    "SELECT * FROM pragma_table_info('nodes')",
    "SELECT * FROM which_secret('s3://x', 's3')",
]

EXHAUSTION = [
    "SELECT " + "(" * 60 + "1" + ")" * 60 + " FROM nodes",
    "SELECT " + "CASE WHEN label = 'a' THEN " * 100 + "1" + " END" * 100 + " FROM nodes",
    "SELECT * FROM nodes WHERE " + " OR ".join(f"label = 'x{i}'" for i in range(5000)),
    "SELECT 1 FROM nodes WHERE label IN (" + ", ".join(f"'{i}'" for i in range(30_000)) + ")",
    "SELECT " + "[" * 200 + "]" * 200,
]

CORPUS = (
    [("scope", s) for s in SCOPE_WALKS]
    + [("file", s) for s in FILE_READS]
    + [("network", s) for s in NETWORK]
    + [("state", s) for s in STATE_AND_SETTINGS]
    + [("exhaustion", s) for s in EXHAUSTION]
)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A real lake, and beside it (outside it) files that hold the secret."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = tmp_path_factory.mktemp("hostile")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text(f"value\n{SECRET}\n")
    (outside / "secret.json").write_text(f'{{"value": "{SECRET}"}}\n')
    pq.write_table(pa.table({"value": [SECRET]}), outside / "secret.parquet")
    lake = base / "lake"
    ingest_path("kolab", HAND, lake)
    fill = {
        "csv": outside / "secret.csv",
        "parquet": outside / "secret.parquet",
        "json": outside / "secret.json",
        "dir": outside,
    }
    return lake, {k: str(v) for k, v in fill.items()}, outside


def _statement(template: str, fill: dict) -> str:
    return template.format(**fill)


@pytest.mark.parametrize(
    "kind,template", CORPUS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CORPUS)]
)
def test_every_hostile_statement_is_refused_on_the_public_path(world, kind, template):
    lake, fill, outside = world
    before = sorted(p.name for p in outside.iterdir())
    sql = _statement(template, fill)
    with Connection(lake) as con:
        start = time.monotonic()
        with pytest.raises((SqlError, QueryTimeoutError)) as info:
            res = con.sql(sql, timeout_s=5)
            assert SECRET not in str(res.table.to_pylist())  # reached only if not refused
        took = time.monotonic() - start
    assert SECRET not in str(info.value)
    assert "Traceback" not in str(info.value)
    assert took < 6, f"refusing took {took:.1f} s"
    assert sorted(p.name for p in outside.iterdir()) == before, "a file was written"


@pytest.mark.parametrize("template", SCOPE_WALKS + FILE_READS[:20])
def test_the_sandbox_alone_refuses_every_file_read(world, template):
    """With the guard bypassed, DuckDB's own sandbox still reads nothing outside the lake."""
    lake, fill, _ = world
    with Connection(lake) as con:
        with pytest.raises(SqlError) as info:
            con.execute(_statement(template, fill), timeout_s=5)
    msg = str(info.value)
    assert SECRET not in msg
    assert any(
        w in msg
        for w in ("Permission Error", "disabled", "not allowed", "does not exist", "Catalog Error")
    ), msg


def test_the_secret_is_readable_without_the_sandbox(world):
    """The control: the paths are right, so the refusals above are the sandbox's doing."""
    lake, fill, _ = world
    with Connection(lake, sandboxed=False) as con:
        for template in (FILE_READS[2], SCOPE_WALKS[0], SCOPE_WALKS[1]):
            assert SECRET in str(con.execute(_statement(template, fill)).table.to_pylist())


@pytest.mark.parametrize("template", SCOPE_WALKS)
def test_the_guard_resolves_cte_names_by_scope(world, template):
    """The guard itself refuses the walk-arounds (before DuckDB), naming the out-of-scope
    reference."""
    from graphlake.query.guard import check

    _, fill, _ = world
    with pytest.raises(
        SqlError,
        match="unknown table .*A CTE of that name exists, but not where this reference stands",
    ):
        check(_statement(template, fill), {"nodes": ["node_id", "label"]})


@pytest.mark.parametrize(
    "sql",
    [
        "SET enable_external_access = true",
        "SET lock_configuration = false",
        "RESET allowed_directories",
    ],
)
def test_the_sandbox_cannot_be_switched_off_even_without_the_guard(world, sql):
    lake, fill, _ = world
    with Connection(lake) as con:
        with pytest.raises(SqlError, match="locked|Cannot change"):
            con.execute(sql)
        with pytest.raises(SqlError, match="Permission|disabled"):
            con.execute(f"SELECT * FROM read_csv('{fill['csv']}')")


def test_the_lake_itself_stays_readable_through_the_sandbox(world):
    lake, _, _ = world
    with Connection(lake) as con:
        assert con.sql("SELECT count(*) AS n FROM node_occurrences").table.to_pylist() == [{"n": 8}]
        ok = con.sql('WITH "x.csv" AS (SELECT 1 AS v) SELECT v FROM "x.csv"')
        assert ok.table.to_pylist() == [{"v": 1}]


def test_the_guard_counts_against_the_time_limit(world):
    """A statement whose checks alone would outlast the limit is stopped by it."""
    lake, _, _ = world
    # 250 levels deep (under the depth limit) and wide: qualifying it takes a while
    sql = "SELECT * FROM nodes WHERE " + " OR ".join(
        f"(label = 'x{i}' AND node_id LIKE '%{i}%')" for i in range(120)
    )
    with Connection(lake) as con:
        with pytest.raises(QueryTimeoutError, match="time limit|past its"):
            con.sql(sql, timeout_s=0.001)
        assert con.sql(sql, timeout_s=30).table.num_rows == 0


def test_the_python_api_has_the_cli_limits(world):
    import warnings

    import graphlake
    from graphlake.config import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S
    from graphlake.errors import ResultTruncatedWarning

    lake, _, _ = world
    with graphlake.connect(lake) as gl:
        assert (gl.max_rows, gl.timeout_s) == (DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S)
        with pytest.warns(ResultTruncatedWarning, match="cut at 3 rows"):
            assert gl.sql("SELECT * FROM node_occurrences", max_rows=3).num_rows == 3
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert gl.sql("SELECT * FROM node_occurrences", max_rows=0).num_rows == 8
        slow = (
            "SELECT count(*) FROM range(100000000) a, range(100000) b WHERE a.range % 7 = b.range"
        )
        with pytest.raises(QueryTimeoutError):
            gl.sql(slow, timeout_s=0.3)
    with graphlake.connect(lake, max_rows=2) as gl, pytest.warns(ResultTruncatedWarning):
        assert gl.sql("SELECT * FROM node_occurrences").num_rows == 2
