"""DuckDB / Spark conformance: every named query, every golden pattern and every graph macro
gives the same rows on both engines over the same lake files, or the linter says why not.

Spark runs in local mode (PySpark, Java 17). These tests skip where either is missing."""

from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES
from graphlake.errors import SqlError
from graphlake.query import named, run_sql
from graphlake.query.portable import comparable_rows, lint, to_spark

pyspark = pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java 17 on PATH", allow_module_level=True)

from graphlake.query.spark import run_sql_spark  # noqa: E402

pytestmark = pytest.mark.spark

#: Values for named queries' required parameters.
EXAMPLE_PARAMS = {"has_rescue": {"from_condition": "A1", "to_condition": "A3"}}
#: Queries whose rows come from data the demo lake lacks, and the fixture lake that has it.
QUERY_LAKES = {
    "tau2_metrics": "tau2_runs_lake",
    "eval_runs": "evals_lake",
    "eval_run_classes": "evals_lake",
    "eval_predictions": "evals_lake",
}
#: Queries the linter reports as not portable, with the construct it must name.
NOT_PORTABLE: dict[str, str] = {}


def both(sql, lake, params=None):
    duck = run_sql(sql, lake, params=params, max_rows=None).table
    spark = run_sql_spark(sql, lake, params=params, max_rows=None).table
    assert duck.schema.names == spark.schema.names
    return comparable_rows(duck), comparable_rows(spark)


@pytest.fixture(scope="module")
def tau2_runs_lake(tmp_path_factory):
    """Two tau2 results files, several trials per task (tests/fixtures/tau2_runs)."""
    from graphlake.pipeline import ingest_path

    lake = tmp_path_factory.mktemp("tau2runs") / "lake"
    ingest_path("tau2", FIXTURES / "tau2_runs", lake)
    return lake


@pytest.fixture(scope="module")
def evals_lake(hand_lake, tmp_path_factory):
    """The hand-checked lake with two saved evaluation runs (bench score --save)."""
    import shutil

    from graphlake.protocols import Benchmarks
    from graphlake.query.connection import Connection

    lake = tmp_path_factory.mktemp("evals") / "lake"
    shutil.copytree(hand_lake, lake)
    bench = Benchmarks(Connection(lake))
    bench.save("kolab-1b", bench.baseline("kolab-1b", "majority"), model="m", condition="chat")
    bench.save("kolab-2a", bench.baseline("kolab-2a", "mode"), model="m", condition="chat")
    return lake


def example_params(name: str, lake) -> dict:
    """EXAMPLE_PARAMS, and for eval_predictions a run of the lake (its id hashes its
    predictions: read off the lake, not written down)."""
    if name == "eval_predictions":
        sql = "SELECT min(session_id) AS run FROM sessions WHERE corpus = 'evals'"
        return {"run": run_sql(sql, lake).table.to_pylist()[0]["run"]}
    return EXAMPLE_PARAMS.get(name, {})


@pytest.mark.parametrize("name", sorted(named.load_all()))
def test_named_query_same_on_duckdb_and_spark(request, demo_lake, name):
    q = named.get(name)
    lake = request.getfixturevalue(QUERY_LAKES[name]) if name in QUERY_LAKES else demo_lake
    params = q.bind(example_params(name, lake))
    blocking = [f for f in lint(q.sql) if not f.rewritten]
    if name in NOT_PORTABLE:
        assert blocking and all(f.construct == NOT_PORTABLE[name] for f in blocking)
        with pytest.raises(SqlError, match="not portable to Spark"):
            to_spark(q.sql, params)
        return
    assert not blocking, [str(f) for f in blocking]
    duck, spark = both(q.sql, lake, params)
    assert duck, f"{name} returned no rows on its lake: the comparison would be empty"
    assert duck == spark


@pytest.mark.parametrize(
    "path", sorted((FIXTURES / "patterns").glob("*.sql")), ids=lambda p: p.stem
)
def test_compiled_patterns_same_on_duckdb_and_spark(demo_lake, path):
    source = path.read_text().split("-- compiles to:\n")[0]
    duck, spark = both(source, demo_lake)
    assert duck == spark


def test_macros_and_path_modes_same_on_spark(demo_lake):
    session = "kolab-7-000003"
    for sql in (
        f"SELECT * FROM descendants('kolab', '{session}', 'seg1a/n1', 3)",
        f"SELECT * FROM ancestors('kolab', '{session}', 'seg3a/n2', NULL)",
        f"SELECT * FROM neighborhood('kolab', '{session}', 'seg2a/n2', 2)",
        f"SELECT * FROM window_nodes('kolab', '{session}', 100, 400)",
        f"SELECT * FROM step_nodes('kolab', '{session}', 'seg2a')",
        f"SELECT * FROM cycles('kolab', '{session}', 4)",
        "SELECT a.node_id, allen(a.t_start, a.t_end, b.t_start, b.t_end) AS rel "
        "FROM node_occurrences a JOIN node_occurrences b ON a.session_id = b.session_id "
        f"AND a.corpus = b.corpus WHERE a.session_id = '{session}' AND b.seq = 0 "
        "AND b.node_id = 'seg1a/n2'",
        "SELECT * FROM GRAPH_TABLE (kolab MATCH WALK (a:ai)-[w:next]->{1,3}(b:human)) g",
        "SELECT * FROM GRAPH_TABLE (kolab MATCH ALL SHORTEST (a:human)-[w:next]->{1,4}(b:ai)) g",
        "SELECT * FROM adoptions",
        "SELECT * FROM adoption_chains",
        "SELECT * FROM co_occurrences",
    ):
        duck, spark = both(sql, demo_lake)
        assert duck, sql
        assert duck == spark, sql


def test_ordered_list_aggregation_is_rewritten_not_dropped(demo_lake):
    sql = (
        "SELECT session_id, list(node_id ORDER BY t_start, node_id) AS order_seen, "
        "list(DISTINCT step_id ORDER BY step_id) AS steps FROM nodes "
        "WHERE corpus = 'kolab' GROUP BY session_id"
    )
    (finding,) = lint(sql)[:1]
    assert finding.rewritten and "collect_list" in finding.reason
    assert "TRANSFORM(ARRAY_SORT(COLLECT_LIST(STRUCT(" in to_spark(sql).upper()
    duck, spark = both(sql, demo_lake)
    assert duck == spark


def test_ordered_lists_keep_nulls_where_duckdb_does(demo_lake):
    # many events have no node: DuckDB keeps one NULL in a DISTINCT list and sorts NULL keys
    # last; Spark's collect_set drops NULL and its struct order puts NULL fields first
    sql = (
        "SELECT session_id, list(DISTINCT node_id ORDER BY node_id) AS nodes, "
        "list(kind ORDER BY node_id, event_id) AS kinds FROM events "
        "WHERE corpus = 'kolab' GROUP BY session_id"
    )
    duck, spark = both(sql, demo_lake)
    assert any(None in row[1] for row in duck)
    assert duck == spark


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        (
            "SELECT * FROM events a ASOF JOIN events b "
            "ON a.session_id = b.session_id AND a.t >= b.t",
            "ASOF JOIN",
        ),
        ("SELECT * FROM unnest([1, 2]) WITH ORDINALITY", "WITH ORDINALITY"),
        ("SELECT epoch(timestamp) FROM events", "epoch()"),
        ("SELECT strftime(timestamp, '%Y') FROM events", "strftime()"),
        ("SELECT lgamma(3.0)", "lgamma()"),
    ],
)
def test_linter_names_what_spark_would_reject_or_misread(sql, construct):
    findings = lint(sql)
    assert [f.construct for f in findings if not f.rewritten] == [construct]
    with pytest.raises(SqlError, match=construct.replace("(", r"\(").replace(")", r"\)")):
        to_spark(sql)


def test_cli_engine_spark_and_lint(demo_lake):
    import json

    from conftest import cli

    sql = (
        "SELECT session_id, count(*) AS n FROM GRAPH_TABLE (kolab MATCH (a:ai)-[:next]->"
        "(b:human)) g GROUP BY 1 ORDER BY 1"
    )
    duck = json.loads(cli("sql", sql, "-f", "json", lake=demo_lake).stdout)
    spark = json.loads(cli("sql", sql, "-f", "json", "--engine", "spark", lake=demo_lake).stdout)
    assert duck and spark == duck
    ok = cli("query", "lint")
    assert "not portable" not in ok.stdout and "kolab_findings: portable" in ok.stdout
    bad = cli("query", "lint", "--sql", "SELECT epoch(timestamp) FROM events", check=False)
    assert bad.returncode == 1 and "epoch(): Spark's unix_timestamp" in bad.stdout


def test_chains_through_refinements_and_loops_same_on_spark(tmp_path):
    """The chains' recursive CTE on Spark, against DuckDB reading the materialized table."""
    from test_adoption_chains import _lake_with

    from graphlake.lake.derived import refresh

    # a refinement chain v0 -> v2 -> v4, a loop of refinements v5 <-> v6, an AI-rooted triple
    lake = _lake_with(
        tmp_path,
        [
            (0, 1, 2, "modify"),
            (2, 3, 4, "adopt"),
            (5, 1, 6, "modify"),
            (6, 3, 5, "reject"),
            (None, 3, 4, "adopt"),
        ],
    )
    refresh(lake)
    duck, spark = both("SELECT * FROM adoption_chains", lake.root)
    assert len(duck) == 3 and duck == spark


def test_the_spark_engine_reads_the_version_it_was_opened_at(tmp_path, hand_lake):
    """connect(engine="spark") pins the newest version when opened, as the DuckDB engine
    does: a session ingested meanwhile is not seen until refresh(); an explicit version
    still travels back in time."""
    import graphlake
    from conftest import HAND
    from graphlake.pipeline import ingest_path

    lake = tmp_path / "lake"
    shutil.copytree(hand_lake, lake)
    count = "SELECT count(*) AS n FROM sessions"
    gl = graphlake.connect(lake, engine="spark")
    first = gl.version
    before = gl.sql(count).column("n")[0].as_py()
    other = tmp_path / "other" / "hand-2"
    shutil.copytree(HAND, other)
    (other / "graph.json").write_text(
        (other / "graph.json").read_text().replace('"hand-1"', '"hand-2"')
    )
    ingest_path("kolab", other.parent, lake)
    assert gl.version == first and gl.sql(count).column("n")[0].as_py() == before
    assert gl.refresh() is True and gl.version > first
    assert gl.sql(count).column("n")[0].as_py() == before + 1
    back = graphlake.connect(lake, version=first, engine="spark")
    assert back.version == first and back.sql(count).column("n")[0].as_py() == before


def test_the_spark_gateway_is_launched_with_no_python_between_fork_and_exec():
    """PySpark starts its JVM with a ``preexec_fn`` (ignore Ctrl-C): CPython then forks and
    runs Python in the child, which in a process with threads can wait for ever on a lock
    another thread held at the fork (a CI run hung an hour there, the child forked and never
    exec'd). graphlake launches it with ``start_new_session`` instead: the JVM leads a
    session of its own (away from the terminal's Ctrl-C, as the function meant), which a
    preexec_fn launch would not give it."""
    import os

    from graphlake.query.spark import spark_session

    jvm = spark_session().sparkContext._gateway.proc
    assert jvm.poll() is None
    assert os.getsid(jvm.pid) == jvm.pid != os.getsid(0)
