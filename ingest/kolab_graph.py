"""Kolab workflow graph JSON, record by record (Kolab paper, appendix A.5).

:class:`GraphParser` applies every rule: identity (node ids restart in every step segment, so
``node_id`` is ``<segment key>/<local id>``), ``user_response`` resolution (local id plus time
range, in the responding segment first and then in the others; nothing or several is a
reject, never a guess), and one reject with an actionable reason for each record it cannot
take, while the rest of the file lands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from graphlake.ingest.base import Emitter, RecordError, attrs_json, iso_time, to_json
from graphlake.ingest.timefmt import TimeFormatError, format_clock, parse_clock, parse_range
from graphlake.schema.emit import attrs_limit_reason, attrs_over

SESSION_KNOWN = frozenset({"session_id", "participant_id", "title", "goal", "steps"})
STEP_KNOWN = frozenset(
    {
        "key",
        "badge",
        "step_name",
        "step_action",
        "time_range",
        "start_seconds",
        "end_seconds",
        "nodes",
        "edges",
    }
)
NODE_KNOWN = frozenset(
    {
        "id",
        "actor",
        "label",
        "detail",
        "time",
        "actor_type",
        "softwares",
        "source_steps",
        "user_response",
    }
)
EDGE_KNOWN = frozenset({"from", "to", "type"})
LABELS = ("adopt", "modify", "reject")
HUMAN_TYPES = {"user", "human"}
AI_TYPES = {"ai", "agent", "assistant"}
#: Brands the paper says annotators sometimes put in actor_type by mistake (A.5 prompt).
AI_BRANDS = {"claude", "grok", "chatgpt", "gemini", "gpt", "copilot", "perplexity", "llama"}
EPS = 1e-6


@dataclass
class Node:
    node_id: str
    local_id: str
    step_id: str
    actor_type: str
    occurrences: list[tuple[int, float, float]] = field(default_factory=list)
    row: dict = field(default_factory=dict)  # the nodes row, emitted once degrees are known
    succ: set[str] = field(default_factory=set)
    pred: set[str] = field(default_factory=set)


@dataclass
class Segment:
    key: str
    ordinal: int
    badge: str | None
    t_start: float | None
    t_end: float | None
    nodes: dict[str, Node] = field(default_factory=dict)


@dataclass
class ParsedGraph:
    """What side-file parsing needs to know about the graph it belongs to."""

    session_id: str
    human_id: str
    segments: list[Segment]
    ai_actors: set[str]

    def segment_at(self, t: float | None) -> str | None:
        if t is None:
            return None
        for seg in self.segments:
            if seg.t_start is not None and seg.t_end is not None and seg.t_start <= t < seg.t_end:
                return seg.key
        return None


def _text(v) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else to_json(v)


def _seconds(v) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return parse_clock(v)
    return None


def _actor_type(raw_type, actor) -> str | None:
    t = str(raw_type).strip().lower() if raw_type is not None else ""
    if t in HUMAN_TYPES:
        return "human"
    if t in AI_TYPES or t in AI_BRANDS:
        return "ai"
    if not t and isinstance(actor, str):
        a = actor.strip().lower()
        if a in HUMAN_TYPES:
            return "human"
        if a in AI_BRANDS:
            return "ai"
    return None


class GraphParser:
    """Parses one Kolab graph JSON object into rows; one instance per graph."""

    def __init__(self, out: Emitter, source_file: str):
        self.out = out
        self.src = source_file

    def reject(self, table, kind, ref, reason, raw, session_id=None):
        self.out.reject(
            source_file=self.src,
            target_table=table,
            record_kind=kind,
            record_ref=ref,
            reason=reason,
            raw=raw,
            session_id=session_id,
        )

    # -- session ---------------------------------------------------------------------------
    def parse(self, obj, fallback_session_id: str, meta: dict | None = None) -> ParsedGraph | None:
        if not isinstance(obj, dict):
            self.reject(
                "sessions",
                "session",
                "$",
                f"top level is {type(obj).__name__}, not a JSON object; a Kolab graph "
                "file holds one object with session_id, title, goal and steps",
                obj,
            )
            return None
        steps = obj.get("steps")
        sid = obj.get("session_id")
        if not isinstance(sid, str) or not sid.strip():
            sid = fallback_session_id
        if not isinstance(steps, list):
            self.reject(
                "sessions",
                "session",
                "$.steps",
                f"session {sid}: 'steps' is missing or not a list; a Kolab graph needs "
                "steps[] with key, nodes[] and edges[]",
                obj,
                sid,
            )
            return None
        human_id = obj.get("participant_id")
        human_id = str(human_id) if human_id not in (None, "") else "user"
        self.sid = sid
        graph = ParsedGraph(sid, human_id, [], set())
        pending_responses = []
        step_edges = []
        for i, step in enumerate(steps):
            seg = self._segment(step, i, graph)
            if seg is None:
                continue
            graph.segments.append(seg)
            nodes = step.get("nodes") or []
            if not isinstance(nodes, list):
                self.reject(
                    "nodes",
                    "step",
                    f"steps[{i}].nodes",
                    f"step {seg.key}'s 'nodes' is "
                    f"{type(nodes).__name__}, not a list of node objects; the step "
                    "landed without nodes",
                    nodes,
                    self.sid,
                )
                nodes = []
            for j, node in enumerate(nodes):
                n = self._node(node, seg, f"steps[{i}].nodes[{j}]", graph)
                if n is not None and node.get("user_response") is not None:
                    pending_responses.append((n, node["user_response"], f"steps[{i}].nodes[{j}]"))
            step_edges.append((seg, step.get("edges"), f"steps[{i}].edges"))
        nodes_by_id = {n.node_id: n for seg in graph.segments for n in seg.nodes.values()}
        for seg, edges, ref in step_edges:
            self._edges(edges, seg, ref, nodes_by_id)
        if obj.get("edges") is not None:  # graph-level edges name nodes as '<key>/<id>'
            self._edges(obj["edges"], None, "edges", nodes_by_id)
        for n in nodes_by_id.values():
            n.row["out_degree"], n.row["in_degree"] = len(n.succ), len(n.pred)
            self.out.row("nodes", n.row)
        for node, responses, ref in pending_responses:
            self._responses(node, responses, f"{ref}.user_response", graph)
        self._session_rows(obj, graph, meta or {})
        return graph

    def _session_rows(self, obj, graph: ParsedGraph, meta: dict) -> None:
        ends = [s.t_end for s in graph.segments if s.t_end is not None]
        ends += [o[2] for s in graph.segments for n in s.nodes.values() for o in n.occurrences]
        extra = {k: v for k, v in obj.items() if k not in SESSION_KNOWN}
        self.out.row(
            "sessions",
            {
                "session_id": graph.session_id,
                "title": _text(obj.get("title")),
                "goal": _text(obj.get("goal")),
                "participants": [graph.human_id, *sorted(graph.ai_actors)],
                "duration_s": max(ends) if ends else None,
                "source_file": self.src,
                **self.session_fields(extra, meta),
            },
        )
        self.out.row(
            "participants",
            {
                "session_id": graph.session_id,
                "participant_id": graph.human_id,
                "kind": "human",
                "role": "user",
                "name": "user",
                "persona": self.persona(meta),
            },
        )
        for brand in sorted(graph.ai_actors):
            self.out.row(
                "participants",
                {
                    "session_id": graph.session_id,
                    "participant_id": brand,
                    "kind": "ai",
                    "role": "assistant",
                    "name": brand,
                },
            )

    def session_fields(self, extra: dict, meta: dict) -> dict:
        """The session row's columns that come from ``meta.json`` and from top-level fields
        without a column (``extra``), shared with the streamed path."""
        meta_extra = {
            k: v
            for k, v in meta.items()
            if k not in {"domain", "condition", "split", "started_at", "participant"}
        }
        if meta_extra:
            extra = {**extra, "meta": meta_extra}
        return {
            "condition": _text(meta.get("condition")),
            "domain": _text(meta.get("domain")),
            "split": _text(meta.get("split")),
            "started_at": self._started_at(meta.get("started_at")),
            "attrs": to_json(extra) if extra else None,
        }

    @staticmethod
    def persona(meta: dict) -> str | None:
        persona = meta.get("participant")
        return to_json(persona) if persona is not None else None

    def _started_at(self, value) -> datetime | None:
        if value in (None, ""):
            return None
        try:
            return iso_time(str(value))
        except RecordError:
            self.reject(
                "sessions",
                "meta",
                "meta.json$.started_at",
                f"session {self.sid}: "
                f"started_at {value!r} is not an ISO 8601 time such as "
                "'2026-03-02T14:00:00+00:00'; the session landed without it",
                value,
                self.sid,
            )
            return None

    # -- steps -----------------------------------------------------------------------------
    def _segment(self, step, i: int, graph: ParsedGraph) -> Segment | None:
        ref = f"steps[{i}]"
        if not isinstance(step, dict):
            self.reject(
                "steps",
                "step",
                ref,
                f"step #{i} is {type(step).__name__}, not an "
                "object with key, step_name, nodes and edges",
                step,
                self.sid,
            )
            return None
        key = step.get("key")
        if not isinstance(key, str) or not key.strip():
            self.reject(
                "steps",
                "step",
                ref,
                f"step #{i} has no 'key'; give every step segment "
                "a unique key such as 'seg1a' (its nodes and edges were not ingested)",
                step,
                self.sid,
            )
            return None
        if any(s.key == key for s in graph.segments):
            self.reject(
                "steps",
                "step",
                ref,
                f"duplicate step key {key!r}: keys must be unique "
                "within a session (a repeated step is a new segment, e.g. 'seg2b')",
                step,
                self.sid,
            )
            return None
        for name in ("nodes", "edges"):
            if step.get(name) is not None and not isinstance(step[name], list):
                self.reject(
                    "steps",
                    "step",
                    f"{ref}.{name}",
                    f"step {key}: '{name}' must be a list",
                    step[name],
                    self.sid,
                )
                step = {**step, name: None}
        t_start = t_end = None
        rng = step.get("time_range")
        try:
            t_start = _seconds(step.get("start_seconds"))
            t_end = _seconds(step.get("end_seconds"))
            if (t_start is None or t_end is None) and isinstance(rng, str) and rng.strip():
                a, b = parse_range(rng)
                t_start = a if t_start is None else t_start
                t_end = b if t_end is None else t_end
        except TimeFormatError as exc:
            self.reject(
                "steps",
                "step_time",
                ref,
                f"step {key}: start/end could not be read ({exc}); the step landed without times",
                {k: step.get(k) for k in ("start_seconds", "end_seconds", "time_range")},
                self.sid,
            )
        seg = Segment(key, len(graph.segments), _text(step.get("badge")), t_start, t_end)
        self.out.row(
            "steps",
            {
                "session_id": self.sid,
                "step_id": key,
                "ordinal": seg.ordinal,
                "badge": seg.badge,
                "name": _text(step.get("step_name")),
                "action": _text(step.get("step_action")),
                "time_range": _text(rng),
                "t_start": t_start,
                "t_end": t_end,
                "attrs": attrs_json(step, STEP_KNOWN),
            },
        )
        return seg

    # -- nodes -----------------------------------------------------------------------------
    def _node(self, node, seg: Segment, ref: str, graph: ParsedGraph) -> Node | None:
        if not isinstance(node, dict):
            self.reject(
                "nodes",
                "node",
                ref,
                f"step {seg.key}: node entry is "
                f"{type(node).__name__}, not an object with id, actor, label and time",
                node,
                self.sid,
            )
            return None
        local = node.get("id")
        if isinstance(local, int) and not isinstance(local, bool):
            local = str(local)
        if not isinstance(local, str) or not local.strip():
            self.reject(
                "nodes",
                "node",
                ref,
                f"step {seg.key}: node has no 'id'; give it an id "
                "unique within the step, such as 'n7'",
                node,
                self.sid,
            )
            return None
        if local in seg.nodes:
            self.reject(
                "nodes",
                "node",
                ref,
                f"duplicate node id {local!r} in step {seg.key}: "
                "node ids must be unique within a step segment; rename one (e.g. "
                f"'{local}b') and update the edges that mean it",
                node,
                self.sid,
            )
            return None
        actor = node.get("actor")
        atype = _actor_type(node.get("actor_type"), actor)
        if atype is None:
            self.reject(
                "nodes",
                "node",
                ref,
                f"node {local} in step {seg.key}: actor_type "
                f"{node.get('actor_type')!r} is neither 'user' nor 'ai'; set actor_type "
                "to 'user' or 'ai' (the AI brand goes in 'actor')",
                node,
                self.sid,
            )
            return None
        try:  # written before the node is registered: one that cannot be is a reject alone
            attrs = attrs_json(node, NODE_KNOWN)
            texts = {
                k: _text(node.get(k))
                for k in ("actor", "label", "detail", "softwares", "source_steps")
            }
            size = attrs_over(attrs, self.out.max_attrs)
            if size:  # rejected here, its occurrences must not land without it
                raise RecordError(attrs_limit_reason(size, self.out.max_attrs))
        except RecordError as exc:
            self.reject(
                "nodes", "node", ref, f"node {local} in step {seg.key}: {exc}", node, self.sid
            )
            return None
        n = Node(f"{seg.key}/{local}", local, seg.key, atype)
        times = node.get("time")
        if isinstance(times, str):
            times = [times]
        elif times is None:
            times = []
        elif not isinstance(times, list):
            self.reject(
                "node_occurrences",
                "node_time",
                f"{ref}.time",
                f"node {n.node_id}: 'time' must be a list of 'HH:MM:SS-HH:MM:SS' texts",
                times,
                self.sid,
            )
            times = []
        for k, text in enumerate(times):
            try:
                a, b = parse_range(text)
            except TimeFormatError as exc:
                self.reject(
                    "node_occurrences",
                    "node_time",
                    f"{ref}.time[{k}]",
                    f"node {n.node_id}: time #{k} {exc}; the node landed without this interval",
                    text,
                    self.sid,
                )
                continue
            n.occurrences.append((k, a, b))
        seg.nodes[local] = n
        if atype == "ai":
            brand = str(actor).strip().lower() if isinstance(actor, str) and actor.strip() else "ai"
            graph.ai_actors.add(brand)
        for k, a, b in n.occurrences:
            self.out.row(
                "node_occurrences",
                {
                    "session_id": self.sid,
                    "node_id": n.node_id,
                    "seq": k,
                    "t_start": a,
                    "t_end": b,
                    "step_id": seg.key,
                    "actor_type": atype,
                },
            )
        occ = n.occurrences
        n.row = {
            "session_id": self.sid,
            "node_id": n.node_id,
            "local_id": local,
            "step_id": seg.key,
            "actor_type": atype,
            "actor": texts["actor"],
            "label": texts["label"],
            "detail": texts["detail"],
            "software": texts["softwares"],
            "source_steps": texts["source_steps"],
            "t_start": min(o[1] for o in occ) if occ else None,
            "t_end": max(o[2] for o in occ) if occ else None,
            "n_occurrences": len(occ),
            "attrs": attrs,
        }
        return n

    # -- edges -----------------------------------------------------------------------------
    def _edges(self, edges, seg: Segment | None, ref: str, nodes_by_id: dict[str, Node]) -> None:
        if edges is None:
            return
        if not isinstance(edges, list):
            self.reject(
                "edges", "edge", ref, "'edges' must be a list of {from, to, type}", edges, self.sid
            )
            return
        seen = set()
        where = f"step {seg.key}" if seg else "graph-level edges"
        for k, e in enumerate(edges):
            eref = f"{ref}[{k}]"
            if not isinstance(e, dict):
                self.reject(
                    "edges",
                    "edge",
                    eref,
                    f"{where}: edge is {type(e).__name__}, not an object with from, to and type",
                    e,
                    self.sid,
                )
                continue
            ends = []
            for end in ("from", "to"):
                local = e.get(end)
                if isinstance(local, int) and not isinstance(local, bool):
                    local = str(local)
                if not isinstance(local, str) or not local:
                    ends.append((end, local, None))
                    continue
                qualified = local if "/" in local or seg is None else f"{seg.key}/{local}"
                ends.append((end, local, qualified if qualified in nodes_by_id else None))
            bad = [(end, local) for end, local, q in ends if q is None]
            if bad:
                end, local = bad[0]
                known = sorted(seg.nodes) if seg else sorted(nodes_by_id)
                scope = f"step {seg.key}" if seg else "the graph (use '<key>/<id>')"
                self.reject(
                    "edges",
                    "edge",
                    eref,
                    f"{where}: edge '{end}' {local!r} names no "
                    f"node of {scope}; known ids: {', '.join(known[:20]) or 'none'}. "
                    "Fix the id or add the node",
                    e,
                    self.sid,
                )
                continue
            kind = _text(e.get("type"))
            src, dst = ends[0][2], ends[1][2]
            edge_id = f"{src}->{dst}:{kind or ''}"
            if edge_id in seen:
                self.reject(
                    "edges",
                    "edge",
                    eref,
                    f"{where}: duplicate edge {src} -> {dst} ({kind}); remove the repeat",
                    e,
                    self.sid,
                )
                continue
            seen.add(edge_id)
            nodes_by_id[src].succ.add(dst)
            nodes_by_id[dst].pred.add(src)
            self.out.row(
                "edges",
                {
                    "session_id": self.sid,
                    "edge_id": edge_id,
                    "src": src,
                    "dst": dst,
                    "kind": kind,
                    "level": "action",
                    "step_id": seg.key if seg else None,
                    "attrs": attrs_json(e, EDGE_KNOWN),
                },
            )

    # -- user_response -> adoption annotations ---------------------------------------------
    def _responses(self, node: Node, responses, ref: str, graph: ParsedGraph) -> None:
        if not isinstance(responses, list):
            self.reject(
                "annotations",
                "user_response",
                ref,
                f"node {node.node_id}: user_response must be a list of 6-item lists",
                responses,
                self.sid,
            )
            return
        for k, tup in enumerate(responses):
            rref = f"{ref}[{k}]"
            try:
                row = self._response(node, tup, k, graph)
            except _Unresolved as exc:
                self.reject(
                    "annotations",
                    "user_response",
                    rref,
                    f"node {node.node_id} user_response #{k}: {exc}",
                    tup,
                    self.sid,
                )
                continue
            self.out.row("annotations", row)

    def _response(self, node: Node, tup, k: int, graph: ParsedGraph) -> dict:
        if not isinstance(tup, list | tuple) or len(tup) != 6:
            raise _Unresolved(
                "expected [source_node_id, claude_node_id, label, source_node_time,"
                " claude_node_time, user_response_time]"
            )
        src_id, ai_id, label, src_time, ai_time, resp_time = tup
        lab = str(label).strip().lower() if isinstance(label, str) else None
        if lab not in LABELS:
            raise _Unresolved(f"label {label!r} is not one of adopt, modify, reject")
        seg = next(s for s in graph.segments if s.key == node.step_id)
        ai_node, ai_seq = self._resolve(ai_id, ai_time, seg, graph, "claude_node_id")
        if ai_node.actor_type != "ai":
            raise _Unresolved(
                f"claude_node_id {ai_id!r} resolved to {ai_node.node_id}, a "
                "human node; it must name the AI node whose output was acted on"
            )
        src_node = src_seq = None
        if src_id not in (None, ""):
            src_node, src_seq = self._resolve(src_id, src_time, seg, graph, "source_node_id")
            if src_node.actor_type != "human":
                raise _Unresolved(
                    f"source_node_id {src_id!r} resolved to {src_node.node_id}, an "
                    "AI node; it must name the human node that prompted the AI"
                )
        resp_seq = self._own_occurrence(node, resp_time)
        return {
            "session_id": self.sid,
            "annotation_id": f"{node.node_id}#ur{k}",
            "kind": "adoption",
            "target_kind": "node",
            "target_id": node.node_id,
            "step_id": node.step_id,
            "source_node": src_node.node_id if src_node else None,
            "ai_node": ai_node.node_id,
            "response_node": node.node_id,
            "source_seq": src_seq,
            "ai_seq": ai_seq,
            "response_seq": resp_seq,
            "label": lab,
            "annotator": "annotators",
            "attrs": to_json(
                {
                    "source_node_time": src_time,
                    "claude_node_time": ai_time,
                    "user_response_time": resp_time,
                    **({"label_raw": label} if label != lab else {}),
                }
            ),
        }

    def _own_occurrence(self, node: Node, text) -> int | None:
        if text in (None, ""):
            return node.occurrences[0][0] if len(node.occurrences) == 1 else None
        try:
            a, b = parse_range(text)
        except TimeFormatError as exc:
            raise _Unresolved(f"user_response_time {exc}") from None
        for seq, s, e in node.occurrences:
            if s - EPS <= a and b <= e + EPS:
                return seq
        raise _Unresolved(
            f"user_response_time {text!r} lies in no time interval of "
            f"{node.node_id} ({_times(node)}); correct the time"
        )

    def _resolve(self, local, text, seg: Segment, graph: ParsedGraph, what: str):
        if isinstance(local, int) and not isinstance(local, bool):
            local = str(local)
        if not isinstance(local, str) or not local:
            raise _Unresolved(f"{what} {local!r} is not a node id")
        others = [s for s in graph.segments if s is not seg]
        if text in (None, ""):
            if local in seg.nodes:
                n = seg.nodes[local]
                return n, (n.occurrences[0][0] if len(n.occurrences) == 1 else None)
            hits = [s.nodes[local] for s in others if local in s.nodes]
            if len(hits) == 1:
                n = hits[0]
                return n, (n.occurrences[0][0] if len(n.occurrences) == 1 else None)
            raise _Unresolved(
                f"{what} {local!r} has no time and is "
                f"{'in no segment' if not hits else 'in several segments'}; "
                "add its time range so the occurrence can be found"
            )
        try:
            a, b = parse_range(text)
        except TimeFormatError as exc:
            raise _Unresolved(f"{what} time {exc}") from None
        for group in ([seg], others):
            hits = [
                (s.nodes[local], seq)
                for s in group
                if local in s.nodes
                for seq, st, en in s.nodes[local].occurrences
                if st - EPS <= a and b <= en + EPS
            ]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                where = ", ".join(f"{n.node_id}#{q}" for n, q in hits)
                raise _Unresolved(
                    f"{what} {local!r} at {text} matches several occurrences "
                    f"({where}); make the time range specific to one"
                )
        found = [n for s in graph.segments if local in s.nodes for n in [s.nodes[local]]]
        detail = "; ".join(f"{n.node_id} at {_times(n)}" for n in found) or "no segment has it"
        raise _Unresolved(
            f"{what} {local!r} at {text} resolves to no node occurrence "
            f"({detail}); fix the id or the time range"
        )


class _Unresolved(ValueError):
    """A user_response reference that cannot be resolved; its message becomes the reason."""


def _times(n: Node) -> str:
    spans = (f"{format_clock(a)}-{format_clock(b)}" for _, a, b in n.occurrences)
    return ", ".join(spans) or "no times"
