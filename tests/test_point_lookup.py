"""Lookups by a held table's whole key answered from its index are the answers DuckDB gives:
same columns, types and rows, for every session of the demo lake; every other shape of
statement, and parameters DuckDB must judge, still go to DuckDB."""

from __future__ import annotations

import pytest

from graphlake.errors import GraphlakeError
from graphlake.query.connection import Connection
from graphlake.query.point_lookup import plan_of

HELD = 64 << 20  # every table of the demo lake


@pytest.fixture(scope="module")
def both(demo_lake):
    with Connection(demo_lake, hold_bytes=HELD) as held, Connection(demo_lake) as plain:
        assert "sessions" in held._pin.cat.held and not plain._pin.cat.held
        yield held, plain


def test_every_session_by_key_equals_duckdb(both):
    held, plain = both
    keys = plain.rows("SELECT corpus, session_id FROM sessions ORDER BY ALL")
    assert len(keys) > 50
    statements = [
        ("SELECT * FROM sessions WHERE corpus = $c AND session_id = $s", lambda k: k),
        (
            "SELECT title, started_at, attrs FROM sessions WHERE session_id = $s AND corpus = $c",
            lambda k: k,
        ),
        ("SELECT * FROM sessions WHERE $c = corpus AND sessions.session_id = $s", lambda k: k),
    ]
    for k in keys:
        params = {"c": k["corpus"], "s": k["session_id"]}
        for sql, bind in statements:
            a, b = held.sql(sql, bind(params)), plain.sql(sql, bind(params))
            assert a.table.schema == b.table.schema and a.table.equals(b.table), sql
            assert a.table.num_rows == 1
    assert "sessions" in held._pin.indexes._built  # answered from the index, not by DuckDB
    literal = f"SELECT * FROM sessions WHERE corpus = '{keys[0]['corpus']}' AND session_id = $s"
    a = held.sql(literal, {"s": keys[0]["session_id"]})
    assert a.table.equals(plain.sql(literal, {"s": keys[0]["session_id"]}).table)
    none = held.sql(literal, {"s": "no such session"})
    assert none.table.num_rows == 0
    assert none.table.schema == plain.sql(literal, {"s": "no such session"}).table.schema


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM sessions WHERE corpus = 'kolab' AND session_id = $s LIMIT 1",
        "SELECT * FROM sessions WHERE corpus = 'kolab' AND session_id = $s AND title IS NULL",
        "SELECT * FROM sessions WHERE session_id = $s",
        "SELECT * FROM sessions s WHERE s.corpus = 'kolab' AND s.session_id = $s",
        "SELECT title AS t FROM sessions WHERE corpus = 'kolab' AND session_id = $s",
        "SELECT count(*) FROM sessions WHERE corpus = 'kolab' AND session_id = $s",
        "SELECT * FROM sessions WHERE corpus = 'kolab' OR session_id = $s",
        "SELECT * FROM sessions WHERE corpus = 'kolab' AND session_id = $s ORDER BY title",
        "WITH sessions AS (SELECT * FROM nodes) SELECT * FROM sessions "
        "WHERE corpus = 'kolab' AND session_id = $s",
        "SELECT * FROM no_such_table WHERE corpus = 'kolab' AND session_id = $s",
    ],
)
def test_other_shapes_are_not_lookups(sql):
    assert plan_of(sql, frozenset({"sessions", "nodes"})) is None


def test_parameters_duckdb_must_judge_go_to_duckdb(both):
    held, plain = both
    sid = plain.rows("SELECT session_id FROM sessions WHERE corpus = 'kolab' LIMIT 1")[0]
    sql = "SELECT * FROM sessions WHERE corpus = 'kolab' AND session_id = $s"
    plan = plan_of(sql, frozenset({"sessions"}))
    assert plan is not None and plan.key({"s": sid["session_id"]}) == ("kolab", sid["session_id"])
    for params in ({}, {"s": 7}, {"s": sid["session_id"], "extra": 1}, None):
        assert plan.key(params) is None
        a, b = (_answer(con, sql, params) for con in (held, plain))  # both raise, or alike
        assert a == b if isinstance(a, type) else a.equals(b)


def _answer(con, sql, params):
    """The statement's table, or the type of the error it raised."""
    try:
        return con.sql(sql, params).table
    except GraphlakeError as exc:
        return type(exc)


def test_over_http_a_lookup_answers_as_duckdb_does(demo_server):
    """/sql answers a key lookup from the index (the server holds its small tables) with the
    body the DuckDB path makes of the same statement, byte for byte."""
    import httpx

    from graphlake.server.routers.sql import _encode

    sql = "SELECT * FROM sessions WHERE corpus = 'kolab' AND session_id = $s"
    with Connection(demo_server.app.state.graphlake.settings.lake) as plain:
        ids = [
            r["session_id"]
            for r in plain.rows("SELECT session_id FROM sessions WHERE corpus = 'kolab'")
        ]
        with httpx.Client(base_url=demo_server.url, timeout=60) as c:
            for sid in ids[:20] + ["no such session"]:
                body = c.post("/sql", json={"sql": sql, "params": {"s": sid}}).content
                want = _encode(plain.sql(sql, {"s": sid}, max_rows=50), "json").body
                assert body == want
    con = demo_server.app.state.graphlake.current.con
    assert "sessions" in con._pin.indexes._built
