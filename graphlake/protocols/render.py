"""Contexts as the papers print them: a workflow graph as text lines, chat as tagged turns.

Graph (Kolab A.6): nodes numbered ``n0, n1, ...`` in the order they started inside the
context, one line each, ``[n0](actor) label: details``; then one line per edge between two
nodes of the context, ``n0 -> n1``. Kolab's own node ids restart in every step segment, so a
context that spans segments renumbers them; ``node_ids`` maps each ``nK`` back to the lake's
``node_id``. Chat: ``<human> text </human>`` and ``<ai> text </ai>`` turns in time order.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The fields of a node in a context or a graph answer, in this order.
NODE_FIELDS = ("node_id", "step_id", "actor_type", "actor", "label", "detail", "t_start")


def clock(seconds: float | None) -> str:
    """Seconds from the session start as ``HH:MM:SS`` (the Kolab time format)."""
    if seconds is None:
        return ""
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


@dataclass(frozen=True)
class RenderedGraph:
    nodes: str  # the [nK](actor) label: details lines
    edges: str  # the nK -> nM lines
    node_ids: list[str]  # node_ids[K] is the lake node_id of nK

    @property
    def text(self) -> str:
        return f"{self.nodes}\n{self.edges}" if self.edges else self.nodes


def order_nodes(nodes: list[dict]) -> list[dict]:
    """Nodes in the order they started (their earliest start in the context), ties by id."""
    return sorted(
        nodes, key=lambda n: (n["t_start"] if n["t_start"] is not None else 0.0, n["node_id"])
    )


def render_graph(nodes: list[dict], edges: list[dict]) -> RenderedGraph:
    """``nodes``: dicts with node_id, actor, label, detail, t_start; ``edges``: src, dst."""
    ordered = order_nodes(nodes)
    rank = {n["node_id"]: i for i, n in enumerate(ordered)}
    lines = []
    for i, n in enumerate(ordered):
        line = f"[n{i}]({n.get('actor') or n.get('actor_type') or ''}) {n.get('label') or ''}"
        if n.get("detail"):
            line += f": {n['detail']}"
        lines.append(line)
    pairs = sorted(
        {(rank[e["src"]], rank[e["dst"]]) for e in edges if e["src"] in rank and e["dst"] in rank}
    )
    edge_lines = [f"n{a} -> n{b}" for a, b in pairs]
    return RenderedGraph("\n".join(lines), "\n".join(edge_lines), [n["node_id"] for n in ordered])


def render_chat(messages: list[dict]) -> str:
    """``messages``: dicts with actor_type (human / ai / system) and text, in time order."""
    out = []
    for m in messages:
        tag = "human" if m.get("actor_type") == "human" else "ai"
        out.append(f"<{tag}> {m.get('text') or ''} </{tag}>")
    return "\n".join(out)


def _dot_id(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(nodes: list[dict], edges: list[dict], name: str = "session") -> str:
    """Graphviz DOT: human actions as boxes, AI actions as ellipses, edges with their kind."""
    lines = [f"digraph {_dot_id(name)} {{", "  rankdir=LR;"]
    ids = {n["node_id"] for n in nodes}
    for n in order_nodes(nodes):
        shape = "ellipse" if n.get("actor_type") == "ai" else "box"
        label = f"{n.get('actor') or ''}: {n.get('label') or ''}"
        lines.append(f"  {_dot_id(n['node_id'])} [label={_dot_id(label)}, shape={shape}];")
    for e in edges:
        if e["src"] in ids and e["dst"] in ids:
            lines.append(
                f"  {_dot_id(e['src'])} -> {_dot_id(e['dst'])}"
                f" [label={_dot_id(e.get('kind') or '')}];"
            )
    lines.append("}")
    return "\n".join(lines)
