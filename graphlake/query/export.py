"""A session's workflow graph out of the lake: networkx, GraphML (for Gephi, yEd, Cytoscape)
and DOT (Graphviz), so per-session algorithms and viewers get exactly the lake's data.

networkx is optional: install it with ``pip install "graphlake[graph]"``.
"""

from __future__ import annotations

from graphlake.errors import GraphlakeError, attempt_import
from graphlake.query.connection import Connection, as_lake

NODE_COLUMNS = (
    "actor_type",
    "actor",
    "label",
    "step_id",
    "t_start",
    "t_end",
    "n_occurrences",
    "out_degree",
    "in_degree",
)


def _session_rows(lake, corpus: str, session_id: str, version: int | None):
    """(nodes, edges) of one session's action graph as row dicts, edges in edge_id order.
    ``lake`` is a lake (opened here, once) or an open :class:`Connection` (used as it is)."""
    if not isinstance(lake, Connection):
        with Connection(as_lake(lake), version) as con:
            return _session_rows(con, corpus, session_id, version)
    p = {"c": corpus, "s": session_id}
    nodes = lake.rows(
        f"SELECT node_id, {', '.join(NODE_COLUMNS)} FROM nodes "
        "WHERE corpus = $c AND session_id = $s",
        p,
    )
    if not nodes:
        raise GraphlakeError(
            f"no nodes for {corpus} session {session_id!r}; list sessions with "
            f'graphlake sql "SELECT session_id FROM sessions WHERE corpus = '
            f"'{corpus}'\""
        )
    edges = lake.rows(
        "SELECT src, dst, kind, edge_id FROM edges WHERE corpus = $c "
        "AND session_id = $s AND level = 'action' ORDER BY edge_id",
        p,
    )
    return nodes, edges


def session_graph(lake, corpus: str, session_id: str, *, version: int | None = None):
    """The session's action-level graph as a ``networkx.MultiDiGraph`` (node and edge
    attributes from the lake; None values left out, as GraphML has no null)."""
    nx = attempt_import("networkx", "graph")
    nodes, edges = _session_rows(lake, corpus, session_id, version)
    g = nx.MultiDiGraph(corpus=corpus, session_id=session_id)
    for n in nodes:
        g.add_node(n.pop("node_id"), **{k: v for k, v in n.items() if v is not None})
    for e in edges:
        g.add_edge(
            e["src"],
            e["dst"],
            key=e["edge_id"],
            **({"kind": e["kind"]} if e["kind"] is not None else {}),
        )
    return g


def session_graph_rx(lake, corpus: str, session_id: str, *, version: int | None = None):
    """The session's action graph as a ``rustworkx.PyDiGraph`` (parallel edges kept): node
    payloads are the node rows (with node_id), edge payloads (edge_id, kind), and
    ``graph.attrs`` holds corpus, session_id and ``index`` (node_id -> node index)."""
    rx = attempt_import("rustworkx", "graph")
    nodes, edges = _session_rows(lake, corpus, session_id, version)
    g = rx.PyDiGraph(multigraph=True)
    ids = [n["node_id"] for n in nodes]
    index = dict(zip(ids, g.add_nodes_from(nodes), strict=True))
    g.add_edges_from(
        [
            (index[e["src"]], index[e["dst"]], {"edge_id": e["edge_id"], "kind": e["kind"]})
            for e in edges
            if e["src"] in index and e["dst"] in index
        ]
    )
    g.attrs = {"corpus": corpus, "session_id": session_id, "index": index}
    return g


def to_dot(graph) -> str:
    """Graphviz DOT text: humans as boxes, AI as ellipses, edges labelled by kind."""

    def esc(v) -> str:
        return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"digraph {esc(graph.graph.get('session_id', 'session'))} {{", "  rankdir=LR;"]
    for node, attrs in graph.nodes(data=True):
        shape = "box" if attrs.get("actor_type") == "human" else "ellipse"
        label = esc(f"{node}: {attrs.get('label', '')}")
        lines.append(f"  {esc(node)} [shape={shape}, label={label}];")
    for src, dst, attrs in graph.edges(data=True):
        lines.append(f"  {esc(src)} -> {esc(dst)} [label={esc(attrs.get('kind', ''))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
