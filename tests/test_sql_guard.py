"""sqlglot guard: reads only, known names with "did you mean", no file access, transpiling."""

from __future__ import annotations

import pytest

from conftest import HAND
from graphlake.errors import SqlError
from graphlake.pipeline import ingest_path
from graphlake.query import check, run_sql, transpile

COLUMNS = {
    "nodes": ["corpus", "session_id", "node_id", "label", "actor_type"],
    "adoptions": ["corpus", "session_id", "label", "ai_node"],
}


def test_an_ambiguous_column_is_named_as_ambiguous_with_its_tables():
    """Two joined tables with the column: not "unknown column 'kind'. Did you mean 'kind'?"."""
    columns = {
        "frames": ["corpus", "session_id", "media_id", "kind", "t"],
        "media": ["corpus", "session_id", "media_id", "kind", "uri"],
    }
    with pytest.raises(SqlError) as info:
        check("SELECT kind FROM frames JOIN media USING (session_id)", columns)
    msg = str(info.value)
    assert "column 'kind' (line 1, column 11) is ambiguous: both frames and media have it" in msg
    assert "frames.kind or media.kind" in msg and "unknown" not in msg
    check("SELECT frames.kind FROM frames JOIN media USING (session_id)", columns)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT label, count(*) FROM adoptions GROUP BY 1",
        "WITH x AS (SELECT label FROM nodes) SELECT label FROM x",
        "SELECT n.label FROM nodes n JOIN adoptions a USING (session_id)",
        "SELECT label FROM nodes UNION ALL SELECT label FROM adoptions",
        "SELECT session_id, count(*) FILTER (WHERE label = 'adopt') AS k FROM adoptions "
        "GROUP BY ALL ORDER BY k",
    ],
)
def test_reads_pass(sql):
    check(sql, COLUMNS)


@pytest.mark.parametrize(
    "sql,kind",
    [
        ("DELETE FROM nodes", "DELETE"),
        ("DROP TABLE nodes", "DROP"),
        ("INSERT INTO nodes VALUES (1)", "INSERT"),
        ("CREATE TABLE t AS SELECT 1", "CREATE"),
        ("UPDATE nodes SET label = 'x'", "UPDATE"),
    ],
)
def test_writes_are_refused(sql, kind):
    with pytest.raises(SqlError, match=f"only read statements are allowed here.*got {kind}"):
        check(sql, COLUMNS)


def test_unknown_table_gets_did_you_mean():
    with pytest.raises(SqlError, match="unknown table 'node'. Did you mean 'nodes'"):
        check("SELECT * FROM node", COLUMNS)


def test_unknown_column_gets_did_you_mean_with_position():
    with pytest.raises(SqlError) as info:
        check("SELECT lable, count(*) FROM adoptions GROUP BY 1", COLUMNS)
    msg = str(info.value)
    assert "unknown column 'lable' (line 1, column 12). Did you mean 'label'?" in msg
    assert info.value.line == 1 and info.value.col == 12


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_parquet('x.parquet')",
        "SELECT getenv('HOME')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM glob('*')",
    ],
)
def test_reading_outside_the_lake_is_refused(sql):
    with pytest.raises(SqlError):
        check(sql, COLUMNS)


def test_several_statements_are_refused():
    with pytest.raises(SqlError, match="exactly one statement, got 2"):
        check("SELECT 1; SELECT 2", COLUMNS)


def test_unclosed_quote_is_a_syntax_error():
    with pytest.raises(SqlError, match="unclosed quote"):
        check("SELECT 'abc", {})


def test_syntax_error_has_position():
    with pytest.raises(SqlError, match=r"SQL syntax error.*line 1"):
        check("SELECT FROM WHERE (", COLUMNS)


def test_transpile_to_spark():
    out = transpile("SELECT list_value(1, 2) AS l, epoch_ms(0) AS e FROM nodes", "spark")
    assert "ARRAY(1, 2)" in out
    with pytest.raises(SqlError, match="Dialects include spark"):
        transpile("SELECT 1", "no-such-dialect")


def test_row_cap_and_timeout(lake):
    from graphlake.errors import QueryTimeoutError

    ingest_path("kolab", HAND, lake)
    res = run_sql("SELECT * FROM node_occurrences", lake, max_rows=3)
    assert res.table.num_rows == 3 and res.truncated
    res = run_sql("SELECT * FROM node_occurrences", lake, max_rows=None)
    assert res.table.num_rows == 8 and not res.truncated
    slow = "SELECT count(*) FROM range(100000000) a, range(100000) b WHERE a.range % 7 = b.range"
    with pytest.raises(QueryTimeoutError, match="past its 0.5 s limit"):
        run_sql(slow.replace("range(", "range("), lake, timeout_s=0.5)


def test_a_misspelled_graph_function_gets_a_did_you_mean(tmp_path):
    from graphlake.lake import Lake
    from graphlake.query import run_sql

    Lake(tmp_path / "lake").init()
    with pytest.raises(
        SqlError,
        match=r"table function 'descendant' is not allowed here\. "
        r"Did you mean 'descendants'\? The graph functions "
        r"are ancestors, cycles, descendants",
    ):
        run_sql("SELECT * FROM descendant('kolab', 's', 'n1', 3)", tmp_path / "lake")


@pytest.mark.parametrize(
    "sql,message",
    [
        (
            "SELECT " + "(" * 40 + "1" + ")" * 40 + " FROM nodes",
            r"nests parentheses/CASE more than 32 deep \(line 1, column 40\)",
        ),
        (
            "SELECT " + "CASE WHEN label = 'a' THEN " * 40 + "1" + " END" * 40 + " FROM nodes",
            "nests parentheses/CASE more than 32 deep",
        ),
        (
            "SELECT * FROM nodes WHERE " + " OR ".join(f"label = '{i}'" for i in range(400)),
            "syntax tree is 40[0-9] levels deep; the limit is 256.*x IN",
        ),
        ("SELECT '" + "x" * 100_001 + "'", "statement is 100,010 characters; the limit is 100,000"),
    ],
)
def test_size_and_nesting_limits_have_clear_errors(sql, message):
    with pytest.raises(SqlError, match=message):
        check(sql, COLUMNS)


def test_statements_within_the_limits_still_pass():
    check("SELECT " + "(" * 30 + "1" + ")" * 30 + " FROM nodes", COLUMNS)
    check("SELECT * FROM nodes WHERE " + " OR ".join(f"label = '{i}'" for i in range(200)), COLUMNS)


@pytest.mark.parametrize(
    "sql,message",
    [
        (
            "SELECT * FROM descendants('kolab', 's')",
            r"descendants\(\) takes 4 arguments, got 2: descendants\(corpus, session_id, node_id, "
            r"max_hops\) \(nodes reachable from node_id",
        ),
        (
            "SELECT * FROM step_nodes('kolab', 's', 'seg1', 2)",
            r"step_nodes\(\) takes 3 arguments, got 4: step_nodes\(corpus, session_id, step_id\)",
        ),
        ("SELECT allen(1, 2, 3) FROM nodes", r"allen\(\) takes 4 arguments, got 3"),
    ],
)
def test_a_graph_function_with_the_wrong_arguments_gets_its_signature(sql, message):
    with pytest.raises(SqlError, match=message):
        check(sql, COLUMNS)
