"""The GRAPH_TABLE pattern language: answers against plain Python/networkx matchers on random
graphs (hypothesis), golden compiled SQL, and errors that point at the problem."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from conftest import FIXTURES, examples, graph_lake, nx_graph
from graphlake.errors import SqlError
from graphlake.query import run_sql
from graphlake.query.pattern import PatternError, compile_patterns

GOLDEN = FIXTURES / "patterns"
SPLIT = "-- compiles to:\n"

typed_graphs = st.integers(2, 7).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n, unique=True
        ),
        st.lists(st.sampled_from(["human", "ai"]), min_size=n, max_size=n),
    )
)

_SETTINGS = settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def rows(lake, sql):
    return run_sql(sql, lake, max_rows=None).table.to_pylist()


# ------------------------------------------------------------------ reference matchers


def match_chain(g, types, labels, outgoing):
    """Every assignment of nodes to a chain pattern (labels[i] None = any; outgoing[j] says
    the direction of edge j), by brute force."""
    found = []

    def extend(chain):
        i = len(chain)
        if i == len(labels):
            found.append(tuple(chain))
            return
        prev = chain[-1]
        nbrs = g.successors(prev) if outgoing[i - 1] else g.predecessors(prev)
        for v in nbrs:
            if labels[i] is None or types[v] == labels[i]:
                extend(chain + [v])

    for v in g.nodes:
        if labels[0] is None or types[v] == labels[0]:
            extend([v])
    return Counter(found)


def walks(g, start, lo, hi, mode):
    """Paths from ``start`` of lo..hi hops under a path mode, as node tuples."""
    out = []

    def go(path, used_edges):
        if len(path) - 1 >= lo:
            out.append(tuple(path))
        if len(path) - 1 == hi:
            return
        for v in g.successors(path[-1]):
            e = (path[-1], v)
            if mode == "ACYCLIC" and v in path:
                continue
            if mode == "TRAIL" and e in used_edges:
                continue
            go(path + [v], used_edges | {e})

    go([start], frozenset())
    return out


# ------------------------------------------------------------------ answers


@_SETTINGS
@given(typed_graphs, st.integers(1, 3), st.data())
def test_fixed_length_patterns_match_brute_force(tmp_path_factory, case, length, data):
    n, edges, kinds = case
    lake = graph_lake(tmp_path_factory.mktemp("p"), n, edges, kinds)
    g = nx_graph(n, edges)
    types = {f"v{i}": kinds[i] for i in range(n)}
    labels = data.draw(
        st.lists(st.sampled_from([None, "human", "ai"]), min_size=length + 1, max_size=length + 1)
    )
    outgoing = data.draw(st.lists(st.booleans(), min_size=length, max_size=length))
    parts = []
    for i, label in enumerate(labels):
        parts.append(f"(x{i}{':' + label if label else ''})")
        if i < length:
            parts.append("-[:next]->" if outgoing[i] else "<-[:next]-")
    cols = ", ".join(f"x{i}" for i in range(length + 1))
    got = Counter(
        tuple(r[f"x{i}"] for i in range(length + 1))
        for r in rows(lake, f"SELECT {cols} FROM GRAPH_TABLE (g MATCH {''.join(parts)}) t")
    )
    assert got == match_chain(g, types, labels, outgoing)


@_SETTINGS
@given(typed_graphs, st.integers(0, 2), st.one_of(st.integers(0, 3), st.integers(8, 10)))
def test_reachability_quantifier_matches_networkx(tmp_path_factory, case, lo, extra):
    """Small bounds compile to one join per hop, large ones to a recursive CTE: both."""
    n, edges, kinds = case
    hi = lo + extra
    lake = graph_lake(tmp_path_factory.mktemp("r"), n, edges, kinds)
    g = nx_graph(n, edges)
    got = {
        (r["a"], r["b"]): r["e_hops"]
        for r in rows(
            lake, f"SELECT * FROM GRAPH_TABLE (MATCH (a:human)-[e:next]->{{{lo},{hi}}}(b)) t"
        )
    }
    expected = {}
    for a in g.nodes:
        if kinds[int(a[1:])] != "human":
            continue
        for w in walks(g, a, lo, hi, "WALK"):
            key = (a, w[-1])
            expected[key] = min(expected.get(key, hi + 1), len(w) - 1)
    assert got == expected
    # the fewest hops is never below the true shortest path length
    for (a, b), hops in got.items():
        assert hops >= nx.shortest_path_length(g, a, b)


@_SETTINGS
@given(
    typed_graphs,
    st.sampled_from(["WALK", "TRAIL", "ACYCLIC"]),
    st.integers(0, 1),
    st.integers(1, 3),
)
def test_path_modes_enumerate_like_python(tmp_path_factory, case, mode, lo, hi):
    n, edges, kinds = case
    lake = graph_lake(tmp_path_factory.mktemp("w"), n, edges, kinds)
    g = nx_graph(n, edges)
    got = Counter(
        tuple(r["e_path"])
        for r in rows(
            lake, f"SELECT * FROM GRAPH_TABLE (MATCH {mode} (a)-[e:next]->{{{lo},{hi}}}(b)) t"
        )
    )
    expected = Counter(w for a in g.nodes for w in walks(g, a, lo, hi, mode))
    assert got == expected


@_SETTINGS
@given(typed_graphs, st.integers(0, 1), st.integers(1, 4))
def test_shortest_paths_match_networkx(tmp_path_factory, case, lo, hi):
    n, edges, kinds = case
    lake = graph_lake(tmp_path_factory.mktemp("s"), n, edges, kinds)
    g = nx_graph(n, edges)
    expected_all = {}
    for a in g.nodes:
        for b, d in nx.single_source_shortest_path_length(g, a, cutoff=hi).items():
            if d >= lo:
                expected_all[(a, b)] = {tuple(p) for p in nx.all_shortest_paths(g, a, b)}
    any_rows = rows(
        lake, f"SELECT * FROM GRAPH_TABLE (MATCH ANY SHORTEST (a)-[e:next]->{{{lo},{hi}}}(b)) t"
    )
    # lo = 1 asks for a path of at least one hop: a node reaches itself only around a cycle,
    # which an acyclic shortest path never is.
    assert {(r["a"], r["b"]) for r in any_rows} == set(expected_all)
    for r in any_rows:
        assert tuple(r["e_path"]) in expected_all[(r["a"], r["b"])]
    all_rows = rows(
        lake, f"SELECT * FROM GRAPH_TABLE (MATCH ALL SHORTEST (a)-[e:next]->{{{lo},{hi}}}(b)) t"
    )
    got_all: dict = {}
    for r in all_rows:
        got_all.setdefault((r["a"], r["b"]), set()).add(tuple(r["e_path"]))
    assert got_all == expected_all


@_SETTINGS
@given(typed_graphs)
def test_repeated_variable_closes_cycles(tmp_path_factory, case):
    n, edges, kinds = case
    lake = graph_lake(tmp_path_factory.mktemp("c"), n, edges, kinds)
    g = nx_graph(n, edges)
    got = {
        r["a"]
        for r in rows(
            lake, "SELECT DISTINCT a FROM GRAPH_TABLE (MATCH (a)-[:next]->{0,3}(b)-[:next]->(a)) t"
        )
    }
    on_short_cycle = {v for c in nx.simple_cycles(g, length_bound=4) for v in c}
    assert got == on_short_cycle


def test_responds_edges_follow_adoption_annotations(demo_lake):
    """The issue's example pattern, against the same question asked of adoptions by hand."""
    via_pattern = rows(
        demo_lake,
        """
        SELECT p, a, h FROM GRAPH_TABLE (kolab
          MATCH (p:human)-[:next]->(a:ai)<-[r:responds {label: 'modify'}]-(h:human)) t
        ORDER BY ALL""",
    )
    by_hand = rows(
        demo_lake,
        """
        SELECT e.src AS p, d.ai_node AS a, d.response_node AS h
        FROM adoptions d
        JOIN nodes an ON an.corpus = d.corpus AND an.session_id = d.session_id
             AND an.node_id = d.ai_node AND an.actor_type = 'ai'
        JOIN nodes hn ON hn.corpus = d.corpus AND hn.session_id = d.session_id
             AND hn.node_id = d.response_node AND hn.actor_type = 'human'
        JOIN edges e ON e.corpus = d.corpus AND e.session_id = d.session_id
             AND e.dst = d.ai_node AND e.level = 'action'
        JOIN nodes pn ON pn.corpus = d.corpus AND pn.session_id = d.session_id
             AND pn.node_id = e.src AND pn.actor_type = 'human'
        WHERE d.corpus = 'kolab' AND d.label = 'modify'
        ORDER BY ALL""",
    )
    assert via_pattern and via_pattern == by_hand


def test_pattern_joins_with_ordinary_sql(demo_lake):
    out = rows(
        demo_lake,
        """
        WITH modified AS (
          SELECT * FROM GRAPH_TABLE (kolab MATCH (a:ai)<-[r:responds {label: 'modify'}]-(h)
                                     COLUMNS (a.session_id AS session_id, a.node_id AS ai))
        )
        SELECT s.domain, count(*) AS n FROM modified m
        JOIN sessions s ON s.corpus = 'kolab' AND s.session_id = m.session_id
        GROUP BY 1 ORDER BY 1""",
    )
    assert (
        out
        and sum(r["n"] for r in out)
        == rows(
            demo_lake,
            "SELECT count(*) AS n FROM adoptions WHERE corpus = 'kolab' AND label = 'modify'",
        )[0]["n"]
    )


def test_names_and_values_reach_sql_only_as_identifiers_and_literals(demo_lake):
    """The compiler builds sqlglot trees: a variable named like a keyword is quoted, not a
    syntax error, and a property value holding SQL is compared as text, never run."""
    by_keyword = rows(
        demo_lake,
        "SELECT count(*) AS n FROM GRAPH_TABLE (kolab MATCH (select:human)-[:next]->(from:ai))",
    )
    plain = rows(
        demo_lake,
        "SELECT count(*) AS n FROM GRAPH_TABLE (kolab MATCH (p:human)-[:next]->(a:ai))",
    )
    assert by_keyword == plain and plain[0]["n"] > 0
    hostile = "x' OR TRUE OR label = 'y"
    compiled = compile_patterns(
        "SELECT * FROM GRAPH_TABLE (kolab MATCH (a:ai)<-[r:responds {label: '"
        + hostile.replace("'", "''")
        + "'}]-(h))"
    )
    tree = sqlglot.parse_one(compiled, read="duckdb")
    assert hostile in [lit.this for lit in tree.find_all(exp.Literal)]
    assert next(tree.find_all(exp.Or), None) is None
    assert rows(demo_lake, compiled) == []


# ------------------------------------------------------------------ compiled SQL


def _golden_cases():
    return sorted(GOLDEN.glob("*.sql"))


@pytest.mark.parametrize("path", _golden_cases(), ids=lambda p: p.stem)
def test_golden_compiled_sql(path: Path):
    """Regenerate with ``GRAPHLAKE_REGEN_GOLDEN=1 pytest tests/test_patterns.py`` and review
    the diff, as for the corpus goldens."""
    source, expected = path.read_text().split(SPLIT)
    compiled = sqlglot.transpile(
        compile_patterns(source), read="duckdb", write="duckdb", pretty=True
    )[0]
    if os.environ.get("GRAPHLAKE_REGEN_GOLDEN"):
        path.write_text(source + SPLIT + compiled + "\n")
        return
    assert compiled.strip() == expected.strip()


def test_sql_without_patterns_is_untouched():
    sql = "SELECT 'GRAPH_TABLE (' AS s -- GRAPH_TABLE (MATCH (a))\nFROM nodes"
    assert compile_patterns(sql) == sql


@pytest.mark.parametrize(
    ("sql", "message", "at"),
    [
        ("SELECT * FROM GRAPH_TABLE (MATCH (a:robot))", "unknown node label 'robot'", "robot"),
        (
            "SELECT * FROM GRAPH_TABLE (MATCH (a)-[:follows]->(b))",
            "unknown edge type 'follows'",
            "follows",
        ),
        (
            "SELECT * FROM GRAPH_TABLE (MATCH (a {lable: 'x'})-[:next]->(b))",
            "Did you mean 'label'",
            "lable",
        ),
        ("SELECT * FROM GRAPH_TABLE (MATCH (a)-[:next]->*(b))", "need an upper bound", "*(b)"),
        ("SELECT * FROM GRAPH_TABLE (MATCH (a)-[:next]->{1,}(b))", "need an upper bound", "{"),
        ("SELECT * FROM GRAPH_TABLE (MATCH (a)-[:next]->{3,1}(b))", "above upper bound", "{"),
        (
            "SELECT * FROM GRAPH_TABLE (MATCH (a)-[:next]->(b) WHERE c.label = 'x')",
            "unknown pattern variable 'c'",
            "label",
        ),
        (
            "SELECT * FROM GRAPH_TABLE (MATCH (a)-[:next]->(b) COLUMNS (b.labl))",
            "'b' has no column 'labl'. Did you mean 'label'",
            "labl",
        ),
        (
            "SELECT * FROM GRAPH_TABLE (MATCH (a)-[:next]->(b) COLUMNS (label))",
            "needs a pattern variable",
            "label",
        ),
        ("SELECT * FROM GRAPH_TABLE (MATCH (a)-[:next]-(b))", "outgoing edge reads", "(b)"),
        (
            "SELECT * FROM GRAPH_TABLE (MATCH (a)-[e:next]->(b)-[e:next]->(c))",
            "'e' is already used",
            "-[e:next]->(c)",
        ),
        (
            "SELECT * FROM GRAPH_TABLE (MATCH TRAIL (a)-[:next]->(b))",
            "needs a variable-length",
            ")",
        ),
        ("SELECT * FROM GRAPH_TABLE (MATCH (a) LIMIT 3)", "unexpected 'LIMIT'", "LIMIT"),
        (
            "SELECT *\nFROM GRAPH_TABLE (MATCH\n  (a:ai)-[:next]->(b:humans))",
            "line 3, column 22",
            "humans",
        ),
    ],
)
def test_bad_patterns_name_the_problem_and_its_position(sql, message, at):
    with pytest.raises(PatternError) as info:
        compile_patterns(sql)
    assert message in str(info.value)
    idx = sql.index(at) if at != ")" else len(sql) - 1
    assert (info.value.line, info.value.col) == (
        sql.count("\n", 0, idx) + 1,
        idx - sql.rfind("\n", 0, idx),
    )
    assert isinstance(info.value, SqlError)
