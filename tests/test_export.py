"""A session's graph exported to networkx, GraphML (read back) and DOT."""

from __future__ import annotations

import networkx as nx

from conftest import HAND, cli
from graphlake.pipeline import ingest_path
from graphlake.query.export import session_graph, to_dot


def test_session_graph_has_the_lake_nodes_and_edges(tmp_path):
    ingest_path("kolab", HAND, tmp_path / "lake")
    g = session_graph(tmp_path / "lake", "kolab", "hand-1")
    assert g.number_of_nodes() == 7 and g.number_of_edges() == 6
    assert g.nodes["seg1a/n2"]["actor_type"] == "ai" and g.nodes["seg1a/n2"]["out_degree"] == 2
    assert g.has_edge("seg1a/n3", "seg1a/n2")  # the loop
    # the export agrees with the lake's own degree columns
    assert all(g.out_degree(n) >= d["out_degree"] for n, d in g.nodes(data=True))


def test_graphml_round_trip_and_dot(tmp_path):
    lake = tmp_path / "lake"
    ingest_path("kolab", HAND, lake)
    out = tmp_path / "g.graphml"
    cli("export", "graph", "kolab", "hand-1", "-o", str(out), lake=lake)
    back = nx.read_graphml(out)
    assert back.number_of_nodes() == 7 and back.nodes["seg1a/n1"]["label"] == "Ask for a summary"
    dot = to_dot(session_graph(lake, "kolab", "hand-1"))
    assert dot.startswith('digraph "hand-1"') and '"seg1a/n3" -> "seg1a/n2" [label="loop"];' in dot
    missing = cli("export", "graph", "kolab", "nope", lake=lake, check=False)
    assert missing.returncode == 1 and "no nodes for kolab session 'nope'" in missing.stderr
