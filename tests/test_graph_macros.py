"""Graph primitives in SQL (descendants, ancestors, neighborhood, window_nodes) against a plain
networkx implementation on random graphs, in a real lake."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, graph_lake, nx_graph
from graphlake.query import run_sql

graphs = st.integers(2, 9).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n, unique=True
        ),
        st.integers(0, n - 1),
        st.one_of(st.none(), st.integers(0, 4)),
    )
)


def sql_hops(lake, macro, start, k):
    k_sql = "NULL" if k is None else str(k)
    rows = run_sql(
        f"SELECT node_id, hops FROM {macro}('g', 's', 'v{start}', {k_sql})", lake
    ).table.to_pylist()
    return {r["node_id"]: r["hops"] for r in rows}


def nx_hops(g, start, k):
    d = nx.single_source_shortest_path_length(g, f"v{start}", cutoff=k)
    d.pop(f"v{start}")
    return d


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(graphs)
def test_reachability_matches_networkx(tmp_path_factory, case):
    n, edges, start, k = case
    lake = graph_lake(tmp_path_factory.mktemp("g"), n, edges)
    g = nx_graph(n, edges)
    assert sql_hops(lake, "descendants", start, k) == nx_hops(g, start, k)
    assert sql_hops(lake, "ancestors", start, k) == nx_hops(g.reverse(), start, k)
    assert sql_hops(lake, "neighborhood", start, k) == nx_hops(g.to_undirected(), start, k)


def test_window_nodes_overlap(tmp_path):
    lake = graph_lake(tmp_path, 5, [])
    rows = (
        run_sql("SELECT node_id FROM window_nodes('g', 's', 2.2, 3.1) ORDER BY 1", lake)
        .table.column("node_id")
        .to_pylist()
    )
    # occurrences [i, i + 1.5]: v1 [1, 2.5], v2 [2, 3.5], v3 [3, 4.5] overlap [2.2, 3.1]
    assert rows == ["v1", "v2", "v3"]


def canonical_cycle(cycle):
    i = cycle.index(min(cycle))
    return tuple(cycle[i:] + cycle[:i])


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(graphs)
def test_cycles_match_networkx(tmp_path_factory, case):
    n, edges, _start, k = case
    bound = 1 + (k or 0)
    lake = graph_lake(tmp_path_factory.mktemp("cy"), n, edges)
    got = [
        tuple(r["cycle"])
        for r in run_sql(
            f"SELECT cycle, length FROM cycles('g', 's', {bound})", lake
        ).table.to_pylist()
    ]
    assert len(got) == len(set(got))  # each cycle once
    expected = {
        canonical_cycle(c) for c in nx.simple_cycles(nx_graph(n, edges), length_bound=bound)
    }
    assert set(got) == expected


@pytest.mark.fuzz
@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(graphs)
def test_inlined_macros_give_the_same_answers(tmp_path_factory, case):
    """expand_macros (the Spark path) is the same relation as DuckDB's registered macros."""
    import sqlglot

    from graphlake.schema.graph_macros import expand_macros

    n, edges, start, k = case
    lake = graph_lake(tmp_path_factory.mktemp("ex"), n, edges)
    k_sql = "NULL" if k is None else str(k)
    for sql in (
        f"SELECT * FROM descendants('g', 's', 'v{start}', {k_sql}) ORDER BY ALL",
        f"SELECT * FROM neighborhood('g', 's', 'v{start}', {k_sql}) ORDER BY ALL",
        "SELECT * FROM cycles('g', 's', 4) ORDER BY ALL",
        "SELECT * FROM window_nodes('g', 's', 1.2, 2.6) ORDER BY ALL",
    ):
        inlined = expand_macros(sqlglot.parse_one(sql, read="duckdb")).sql("duckdb")
        assert "descendants(" not in inlined and "cycles(" not in inlined
        assert run_sql(inlined, lake).table == run_sql(sql, lake).table


ALLEN_CASES = [  # (a, b, relation of a to b): all 13
    ((0, 1), (2, 3), "before"),
    ((2, 3), (0, 1), "after"),
    ((0, 2), (2, 3), "meets"),
    ((2, 3), (0, 2), "met_by"),
    ((0, 2), (1, 3), "overlaps"),
    ((1, 3), (0, 2), "overlapped_by"),
    ((0, 1), (0, 3), "starts"),
    ((0, 3), (0, 1), "started_by"),
    ((1, 2), (0, 3), "during"),
    ((0, 3), (1, 2), "contains"),
    ((2, 3), (0, 3), "finishes"),
    ((0, 3), (2, 3), "finished_by"),
    ((1, 2), (1, 2), "equals"),
]


def test_allen_relations(tmp_path):
    import sqlglot

    from graphlake.schema.graph_macros import expand_macros

    lake = graph_lake(tmp_path, 1, [])
    for (a0, a1), (b0, b1), rel in ALLEN_CASES:
        sql = f"SELECT allen({a0}, {a1}, {b0}, {b1}) AS r"
        assert run_sql(sql, lake).table.column("r")[0].as_py() == rel, (a0, a1, b0, b1)
        inlined = expand_macros(sqlglot.parse_one(sql, read="duckdb")).sql("duckdb")
        assert run_sql(inlined, lake).table.column("r")[0].as_py() == rel


def test_while_the_agent_worked(tmp_path):
    """'What happened while the agent worked': occurrences during or overlapping an AI one."""
    kinds = ["human", "ai", "human", "human", "ai"]
    lake = graph_lake(tmp_path, 5, [(0, 1), (1, 2)], kinds)
    rows = run_sql(
        """
        SELECT h.node_id, allen(h.t_start, h.t_end, a.t_start, a.t_end) AS rel
        FROM node_occurrences a JOIN node_occurrences h
          ON h.corpus = a.corpus AND h.session_id = a.session_id
         AND h.t_start < a.t_end AND a.t_start < h.t_end
        WHERE a.node_id = 'v1' AND h.actor_type = 'human' ORDER BY 1""",
        lake,
    ).table.to_pylist()
    # v1 is [1, 2.5]: v0 [0, 1.5] overlaps it, v2 [2, 3.5] is overlapped_by it
    assert rows == [{"node_id": "v0", "rel": "overlaps"}, {"node_id": "v2", "rel": "overlapped_by"}]


def test_step_nodes(demo_lake):
    got = (
        run_sql(
            "SELECT node_id FROM step_nodes('kolab', 'kolab-7-000000', 'seg1a') ORDER BY 1",
            demo_lake,
        )
        .table.column("node_id")
        .to_pylist()
    )
    want = (
        run_sql(
            "SELECT node_id FROM nodes WHERE corpus = 'kolab' AND session_id = "
            "'kolab-7-000000' AND step_id = 'seg1a' ORDER BY 1",
            demo_lake,
        )
        .table.column("node_id")
        .to_pylist()
    )
    assert got and got == want
