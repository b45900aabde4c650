"""The in-memory sessions index behind GET /sessions answers exactly as the SQL it replaces."""

from __future__ import annotations

import random

import pytest

from graphlake.query.connection import Connection
from graphlake.server.session_index import LIST_SQL, ONE_SQL, SessionIndex


@pytest.fixture(scope="module")
def con(demo_lake):
    with Connection(demo_lake) as c:
        yield c


def _sql_page(con, corpus, domain, condition, participant, after, limit):
    return con.rows(
        LIST_SQL,
        {
            "corpus": corpus,
            "domain": domain,
            "condition": condition,
            "participant": participant,
            "ac": after[0],
            "as": after[1],
            "limit": limit,
        },
    )


def test_every_filter_and_cursor_gives_the_rows_of_the_sql(con):
    index = SessionIndex(con)
    rows = con.rows("SELECT * FROM sessions ORDER BY corpus, session_id")
    corpora = sorted({r["corpus"] for r in rows})
    keys = [(r["corpus"], r["session_id"]) for r in rows]
    afters = [
        (None, None),
        keys[0],
        keys[len(keys) // 2],
        keys[-1],
        (keys[3][0], keys[3][1] + "~"),  # a key no longer in the lake (an old cursor)
        (corpora[0], ""),
        ("", "x"),  # before every corpus
        ("zzzz", "x"),  # after every corpus
        (corpora[-1] + "a", "x"),  # between corpora
        (corpora[0], None),  # a cursor naming no session: as SQL, nothing of that corpus
    ]
    rng = random.Random(7)
    checked = 0
    for _ in range(800):  # filters drawn from a real row, so that most have answers
        r = rng.choice(rows)
        corpus = rng.choice([None, r["corpus"], r["corpus"], "nope"])
        domain = rng.choice([None, None, r["domain"], "nope"])
        condition = rng.choice([None, None, r["condition"]])
        person = rng.choice([None, None, *(r["participants"] or ["nobody"])])
        after = rng.choice([(None, None), *afters])
        limit = rng.choice([1, 7, 1000])
        got = index.page(
            corpus=corpus,
            domain=domain,
            condition=condition,
            participant=person,
            after=after,
            limit=limit,
        )
        want = _sql_page(con, corpus, domain, condition, person, after, limit)
        assert got == want, (corpus, domain, condition, person, after, limit)
        checked += bool(want)
    assert (
        checked > 250
    )  # many draws have rows (the cursors past the end have none): the comparison is not of empties


def test_one_session_as_the_sql(con):
    index = SessionIndex(con)
    for r in con.rows("SELECT corpus, session_id FROM sessions"):
        assert (
            index.one(r["corpus"], r["session_id"])
            == con.rows(ONE_SQL, {"c": r["corpus"], "s": r["session_id"]})[0]
        )
    assert index.one("kolab", "nope") is None and index.one("nope", "x") is None
