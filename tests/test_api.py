"""The Python API (graphlake.connect): Arrow / pandas / polars answers, patterns and
primitives, networkx and rustworkx graphs, the same answers on Spark."""

from __future__ import annotations

import networkx as nx
import pytest

import graphlake

SESSION = "kolab-7-000002"


@pytest.fixture(scope="module")
def gl(demo_lake):
    return graphlake.connect(demo_lake)


def test_sql_in_three_outputs(gl):
    sql = "SELECT label, count(*) AS n FROM adoptions GROUP BY 1 ORDER BY 1"
    arrow = gl.sql(sql)
    assert arrow.num_rows > 0
    assert gl.sql(sql, output="pandas").to_dict("records") == arrow.to_pylist()
    assert gl.sql(sql, output="polars").to_dicts() == arrow.to_pylist()
    with pytest.raises(graphlake.api.GraphlakeError, match="choose one of arrow"):
        gl.sql(sql, output="excel")


def test_match_is_graph_table(gl):
    got = gl.match(
        "(a:ai)<-[r:responds {label: 'adopt'}]-(h:human)",
        graph="kolab",
        columns="a.node_id AS a, h.node_id AS h, a.session_id AS s",
    )
    want = gl.sql(
        "SELECT ai_node AS a, response_node AS h, session_id AS s FROM adoptions "
        "WHERE corpus = 'kolab' AND label = 'adopt'"
    )
    key = ["s", "a", "h"]
    assert got.num_rows > 0
    assert got.schema.names == ["a", "h", "s"]
    assert sorted(tuple(r[k] for k in key) for r in got.to_pylist()) == sorted(
        tuple(r[k] for k in key) for r in want.to_pylist() if r["h"] is not None
    )


def test_primitives_agree_with_networkx(gl):
    g = gl.networkx("kolab", SESSION)
    simple = nx.DiGraph(g)
    start = sorted(g.nodes)[0]
    got = {r["node_id"]: r["hops"] for r in gl.descendants("kolab", SESSION, start, 3).to_pylist()}
    want = nx.single_source_shortest_path_length(simple, start, cutoff=3)
    want.pop(start)
    assert got == want
    got_up = {r["node_id"]: r["hops"] for r in gl.ancestors("kolab", SESSION, start).to_pylist()}
    want_up = nx.single_source_shortest_path_length(simple.reverse(), start)
    want_up.pop(start)
    assert got_up == want_up
    around = {r["node_id"] for r in gl.neighborhood("kolab", SESSION, start, 2).to_pylist()}
    want_around = set(
        nx.single_source_shortest_path_length(simple.to_undirected(), start, cutoff=2)
    ) - {start}
    assert around == want_around
    steps = {r["node_id"] for r in gl.step("kolab", SESSION, "seg1a").to_pylist()}
    assert steps == {n for n, d in g.nodes(data=True) if d.get("step_id") == "seg1a"}
    cyc = {tuple(r["cycle"]) for r in gl.cycles("kolab", SESSION, 5).to_pylist()}
    want_cyc = set()
    for c in nx.simple_cycles(simple, length_bound=5):
        i = c.index(min(c))
        want_cyc.add(tuple(c[i:] + c[:i]))
    assert cyc == want_cyc
    win = gl.window("kolab", SESSION, 30.0, 90.0).to_pylist()
    assert win and all(r["t_start"] <= 90.0 and r["t_end"] >= 30.0 for r in win)
    assert gl.adoption_chains("kolab").num_rows > 0
    while_ai = gl.co_occurrences(
        "kolab", SESSION, actor_type="ai", other_actor_type="human"
    ).to_pylist()
    assert while_ai and all(
        r["actor_type"] == "ai"
        and r["other_actor_type"] == "human"
        and r["other_t_start"] < r["t_end"]
        and r["t_start"] < r["other_t_end"]
        for r in while_ai
    )
    assert gl.co_occurrences("kolab", SESSION).num_rows > len(while_ai)


def test_rustworkx_graph_and_betweenness(gl):
    rg = gl.rustworkx("kolab", SESSION)
    g = gl.networkx("kolab", SESSION)
    assert rg.num_nodes() == g.number_of_nodes() and rg.num_edges() == g.number_of_edges()
    index = rg.attrs["index"]
    for src, dst, key in g.edges(keys=True):
        assert key in {p["edge_id"] for p in rg.get_all_edge_data(index[src], index[dst])}
    got = {r["node_id"]: r["betweenness"] for r in gl.betweenness("kolab", SESSION).to_pylist()}
    want = nx.betweenness_centrality(nx.DiGraph(g), normalized=True)
    assert got == pytest.approx(want)


def test_named_query_through_the_api(gl):
    rows = gl.query("collab_metrics", corpus="kolab", output="pandas")
    assert len(rows) == 12 and rows["burstiness"].notna().all()


@pytest.mark.spark
def test_spark_engine_gives_the_same_answer(demo_lake, gl):
    pytest.importorskip("pyspark")
    spark = graphlake.connect(demo_lake, engine="spark")
    sql = (
        "SELECT session_id, count(*) AS n FROM GRAPH_TABLE (kolab MATCH (a:ai)-[:next]->"
        "(b:human)) g GROUP BY 1 ORDER BY 1"
    )
    assert spark.sql(sql).to_pylist() == gl.sql(sql).to_pylist()
