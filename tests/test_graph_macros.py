"""Graph primitives in SQL (descendants, ancestors, neighborhood, window_nodes) against a plain
networkx implementation on random graphs, in a real lake."""

from __future__ import annotations

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import graph_lake, nx_graph
from graphlake.query import run_sql

graphs = st.integers(2, 9).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n,
             unique=True),
    st.integers(0, n - 1), st.one_of(st.none(), st.integers(0, 4))))


def sql_hops(lake, macro, start, k):
    k_sql = "NULL" if k is None else str(k)
    rows = run_sql(f"SELECT node_id, hops FROM {macro}('g', 's', 'v{start}', {k_sql})",
                   lake).table.to_pylist()
    return {r["node_id"]: r["hops"] for r in rows}


def nx_hops(g, start, k):
    d = nx.single_source_shortest_path_length(g, f"v{start}", cutoff=k)
    d.pop(f"v{start}")
    return d


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
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
    rows = run_sql("SELECT node_id FROM window_nodes('g', 's', 2.2, 3.1) ORDER BY 1",
                   lake).table.column("node_id").to_pylist()
    # occurrences [i, i + 1.5]: v1 [1, 2.5], v2 [2, 3.5], v3 [3, 4.5] overlap [2.2, 3.1]
    assert rows == ["v1", "v2", "v3"]
