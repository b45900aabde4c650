"""Agent traces onto the canonical schema: what every trace format's spans become.

A trace is a session (``session_id`` = the trace id), a span is a node with one occurrence,
and its actor comes from the GenAI semantic conventions (``gen_ai.operation.name``):

=========================================  ===========  ==========================================
span                                       actor_type   actor (participant_id)
=========================================  ===========  ==========================================
``chat``, ``text_completion``,             ai           the model (``gen_ai.response.model``, else
``generate_content``, ``embeddings``                    ``gen_ai.request.model``)
``invoke_agent``, ``create_agent``         ai           the agent (``gen_ai.agent.name``)
``execute_tool``                           tool         ``tool:<gen_ai.tool.name>``
anything else                              system       the service (``service.name``)
=========================================  ===========  ==========================================

* a parent is an edge ``parent -> child`` of kind ``parent``; a span link one of kind ``link``;
* every message (``gen_ai.input.messages`` / ``gen_ai.output.messages``, the older flattened
  ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``, or ``gen_ai.*.message`` / ``gen_ai.choice``
  span events) is a ``message`` event with its role's actor; a user message the trace has not
  shown before is also a **human node** (``<span>/user<k>``, edge ``prompts`` to the span), so
  the collaboration metrics see the human's turns;
* a tool span's call and result are ``tool_call`` / ``tool_result`` events (``request_id`` =
  the call id); an error status or an ``exception`` event is an ``error`` event;
* every ``gen_ai.usage.*`` number is a ``usage`` annotation on the span;
* every attribute and field without a column stays in the node's ``attrs``; the resource's
  attributes in the session's.

Rejects: a span that cannot be read; a second, different span with an id already seen (the
first is kept; a span printed once at its start and again at its end keeps the finished one);
a parent that is not in the trace, or parent ids in a cycle (the span lands as a root, the
link to its parent is the reject). Mapping in full: ``docs/traces.md``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from graphlake.ingest.base import Emitter, run_row, stable_id, to_json
from graphlake.ingest.conventions import (
    AGENT_OPS,
    MESSAGE_EVENTS,
    MODEL_OPS,
    TOOL_OPS,
    Meaning,
    answers_tools,
    meaning,
    message_text,
)

_ROLE_ACTOR = {"user": "human", "human": "human", "assistant": "ai", "model": "ai", "ai": "ai"}


class SpanError(Exception):
    """A span (or a whole record) that cannot be read; ``ref`` and ``raw`` go to its reject."""

    def __init__(self, message: str, ref: str | None = None, raw: Any = None):
        super().__init__(message)
        self.ref, self.raw = ref, raw


@dataclass
class Span:
    """One span, whatever format it was read from (ids lowercase hex, times epoch ns)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str | None
    start_ns: int | None
    end_ns: int | None
    status: str | None
    status_message: str | None
    attributes: dict
    events: list[dict]
    links: list[dict]
    resource: dict
    scope: dict
    extra: dict = field(default_factory=dict)  # the record's fields without a column
    ref: str = ""  # where it is in its file, for rejects
    raw: Any = None


def read(span: Span) -> Meaning:
    """The span's :class:`~graphlake.ingest.conventions.Meaning` (GenAI or OpenInference)."""
    return meaning(span.attributes, span.events, span.name, span.extra.get("span_kind"))


def actor_of(span: Span, m: Meaning) -> tuple[str, str, str, str]:
    """(actor_type, participant_id, participant kind, role) of the span's doer."""
    if m.operation in TOOL_OPS:
        return "tool", f"tool:{m.tool or span.name}", "system", "tool"
    if m.operation in AGENT_OPS:
        return "ai", m.agent or m.model or "agent", "ai", "agent"
    if m.operation in MODEL_OPS:
        a = span.attributes
        provider = a.get("gen_ai.provider.name") or a.get("gen_ai.system")
        return "ai", m.model or str(provider or "model"), "ai", "model"
    service = span.resource.get("service.name")
    return "system", str(service or "system"), "system", "service"


def dedupe(spans: list[Span], reject) -> list[Span]:
    """One span per (trace, span id): a record without an end time gives way to the finished
    one; a second finished record with other content is a reject (the first is kept)."""
    kept: dict[tuple[str, str], Span] = {}
    for s in spans:
        key = (s.trace_id, s.span_id)
        first = kept.get(key)
        if first is None or (first.end_ns is None and s.end_ns is not None):
            kept[key] = s
        elif s.end_ns is None or _same(first, s):
            continue  # the start record of a finished span, or the same record twice
        else:
            reject(
                s,
                f"span id {s.span_id} appears twice in trace {s.trace_id} with different "
                f"content; the first ({first.ref}) is kept",
            )
    return list(kept.values())


def _same(a: Span, b: Span) -> bool:
    return (a.name, a.start_ns, a.end_ns, a.attributes) == (
        b.name,
        b.start_ns,
        b.end_ns,
        b.attributes,
    )


def _roots(spans: list[Span], reject) -> dict[str, str | None]:
    """Each span's parent within its trace; a parent not in the trace, or one on a cycle of
    parent ids, is a reject and the span becomes a root."""
    ids = {s.span_id for s in spans}
    parent = {s.span_id: s.parent_id for s in spans}
    by_id = {s.span_id: s for s in spans}
    for s in spans:
        if s.parent_id is not None and s.parent_id not in ids:
            reject(
                s,
                f"span {s.span_id} names parent {s.parent_id}, which is not in trace "
                f"{s.trace_id} (not exported, or in another file); it is kept as a root",
                "edges",
            )
            parent[s.span_id] = None
    # cycles: one walk up from each span not yet placed, marking what it passes; a walk
    # that meets its own path has found a cycle, one that meets a placed span stops there,
    # so every span is walked over once (linear, where a walk per span was quadratic)
    state: dict[str, int] = {}  # 1: on the current walk, 2: placed
    for s in spans:
        path: list[str] = []
        cur: str | None = s.span_id
        while cur is not None and state.get(cur) is None:
            state[cur] = 1
            path.append(cur)
            cur = parent.get(cur)
        if cur is not None and state.get(cur) == 1:  # came back to this walk: a cycle
            cycle = path[path.index(cur) :]
            shown = ", ".join(cycle[:5]) + (
                f" and {len(cycle) - 5:,} more" if len(cycle) > 5 else ""
            )
            reject(
                by_id[cycle[0]],
                f"the parent ids of {len(cycle):,} spans in trace {s.trace_id} form a cycle "
                f"({shown}); each of them is kept as a root",
                "edges",
            )
            for sid in cycle:
                parent[sid] = None
        for sid in path:
            state[sid] = 2
    return parent


def emit_traces(
    spans: list[Span], out: Emitter, source_file: str, reject, framework: str | None = None
) -> None:
    """The canonical rows of ``spans`` (any number of traces). ``reject(span, reason,
    table)`` records a span or a link of it that cannot land."""
    spans = dedupe(spans, reject)
    traces: dict[str, list[Span]] = {}
    for s in spans:
        traces.setdefault(s.trace_id, []).append(s)
    runs: dict[str, dict] = {}
    for trace_id, group in traces.items():
        group.sort(key=lambda s: (s.start_ns is None, s.start_ns or 0, s.span_id))
        _emit_trace(trace_id, group, out, source_file, reject, runs, framework)
    for run in runs.values():
        out.row("runs", run)


def _emit_trace(trace_id, group, out, source_file, reject, runs, framework) -> None:
    rows = _TraceRows(trace_id, group, reject)
    run_id = rows.run(source_file, runs, framework)
    for s in group:
        m = read(s)
        actor_type, actor = rows.span(s, m)
        rows.messages(s, m, actor)
        if actor_type == "tool":
            rows.tool(s, m, actor)
        rows.documents(s, m, actor)
        rows.span_events(s, m, actor, actor_type)
        rows.usage(s, m)
    rows.emit(out, source_file, run_id)


class _TraceRows:
    """The canonical rows of one trace, gathered span by span, then emitted."""

    def __init__(self, trace_id: str, group: list[Span], reject):
        self.trace_id, self.group = trace_id, group
        self.parent = _roots(group, reject)
        starts = [s.start_ns for s in group if s.start_ns is not None]
        self.base = min(starts) if starts else None
        self.ends = [s.end_ns for s in group if s.end_ns is not None]
        self.root = next((s for s in group if self.parent[s.span_id] is None), group[0])
        self.service = str(self.root.resource.get("service.name") or "unknown_service")
        self.participants: dict[str, tuple[str, str]] = {}
        self.nodes: list[dict] = []
        self.edges: list[dict] = []
        self.events: list[dict] = []
        self.annotations: list[dict] = []
        self.seen_user: set[str] = set()  # user messages already shown (histories repeat)
        self.goal: str | None = None

    def t(self, ns: int | None) -> float | None:
        """Seconds from the trace's first span."""
        return None if ns is None or self.base is None else (ns - self.base) / 1e9

    def run(self, source_file: str, runs: dict[str, dict], framework: str | None) -> str:
        """The run of the trace's service in this file (one ``runs`` row for all its traces)."""
        run_id = f"{self.service}:{stable_id('traces', source_file, self.service)[:12]}"
        if run_id not in runs:
            models = Counter(
                str(m)
                for s in self.group
                for m in [
                    s.attributes.get("gen_ai.response.model")
                    or s.attributes.get("gen_ai.request.model")
                ]
                if m
            )
            runs[run_id] = run_row(
                run_id,
                self.service,
                source_file,
                agent=framework or self.root.scope.get("name"),
                agent_model=models.most_common(1)[0][0] if models else None,
                settings={k: v for k, v in self.root.resource.items() if k.startswith("telemetry.")}
                or None,
            )
        return run_id

    def span(self, s: Span, m: Meaning) -> tuple[str, str]:
        """The span's node, its parent and link edges; returns (actor_type, actor)."""
        actor_type, actor, pkind, prole = actor_of(s, m)
        self.participants.setdefault(actor, (pkind, prole))
        up = self.parent[s.span_id]
        kept = {k: v for k, v in s.attributes.items() if k not in m.consumed}
        kept.update(
            {
                k: v
                for k, v in (
                    ("span_kind", s.kind),
                    ("status", s.status),
                    ("status_message", s.status_message),
                    ("scope", s.scope or None),
                    ("links", s.links or None),
                    ("parent_span_id", s.parent_id if up is None and s.parent_id else None),
                )
                if v
            }
        )
        kept.update(s.extra)
        self.nodes.append(
            {
                "node_id": s.span_id,
                "local_id": s.span_id,
                "actor_type": actor_type,
                "actor": actor,
                "label": s.name,
                "detail": m.operation,
                "software": self.service,
                "t_start": self.t(s.start_ns),
                "t_end": self.t(s.end_ns),
                "attrs": to_json(kept) if kept else None,
            }
        )
        if up is not None:
            self.edges.append(edge(up, s.span_id, "parent"))
        for lk in s.links:
            if lk.get("trace_id") == self.trace_id and lk.get("span_id"):
                self.edges.append(edge(lk["span_id"], s.span_id, "link"))
        return actor_type, actor

    def messages(self, s: Span, meant: Meaning, actor: str) -> None:
        """A message event per message; a human node for a user message seen first here."""
        for k, (direction, role, m) in enumerate(meant.messages):
            text = message_text(m)
            if answers_tools(m):  # tool results filed under "user" are not a person's turn
                role = "tool"
            kind = _ROLE_ACTOR.get(role, "tool" if role == "tool" else "system")
            if kind == "ai":  # the span's own model or agent speaks (its history included)
                who = actor
            elif kind == "human":
                who = "user"
            else:
                who = role if role in ("tool", "system") else "system"
                self.participants.setdefault(who, ("system", who))
            node_id = s.span_id
            if kind == "human":
                node_id = self._human_turn(s, k, role, m, text) or node_id
            self.events.append(
                {
                    "event_id": f"{s.span_id}:msg:{k}",
                    "t": self.t(s.start_ns if direction == "in" else (s.end_ns or s.start_ns)),
                    "actor": who,
                    "actor_type": kind,
                    "kind": "message",
                    "channel": "input" if direction == "in" else "output",
                    "node_id": node_id,
                    "text": text,
                    "payload": to_json(m),
                }
            )

    def _human_turn(self, s: Span, k: int, role: str, m: dict, text: str | None) -> str | None:
        """The human node of a user message the trace shows for the first time (else None)."""
        self.participants.setdefault("user", ("human", "user"))
        fingerprint = to_json([role, m.get("content"), m.get("parts")])
        if fingerprint in self.seen_user:
            return None
        self.seen_user.add(fingerprint)
        node_id = f"{s.span_id}/user{k}"
        self.goal = self.goal or text
        self.nodes.append(
            {
                "node_id": node_id,
                "local_id": f"user{k}",
                "actor_type": "human",
                "actor": "user",
                "label": "user message",
                "detail": text,
                "software": self.service,
                "t_start": self.t(s.start_ns),
                "t_end": self.t(s.start_ns),
            }
        )
        self.edges.append(edge(node_id, s.span_id, "prompts"))
        return node_id

    def tool(self, s: Span, m: Meaning, actor: str) -> None:
        """A tool span's call, and its result where recorded."""
        common = {
            "actor": actor,
            "actor_type": "tool",
            "request_id": m.tool_call_id,
            "node_id": s.span_id,
            "text": m.tool or s.name,
        }
        self.events.append(
            {
                "event_id": f"{s.span_id}:tool_call",
                "t": self.t(s.start_ns),
                "kind": "tool_call",
                "payload": _payload(m.arguments),
                **common,
            }
        )
        if m.has_result:
            self.events.append(
                {
                    "event_id": f"{s.span_id}:tool_result",
                    "t": self.t(s.end_ns),
                    "kind": "tool_result",
                    "payload": _payload(m.result),
                    **common,
                }
            )

    def documents(self, s: Span, m: Meaning, actor: str) -> None:
        """A retriever's documents, one ``retrieval`` event each."""
        for k, doc in enumerate(m.documents):
            self.events.append(
                {
                    "event_id": f"{s.span_id}:doc:{k}",
                    "t": self.t(s.end_ns or s.start_ns),
                    "actor": actor,
                    "actor_type": "system",
                    "kind": "retrieval",
                    "request_id": _text_or_none(doc.get("id")),
                    "node_id": s.span_id,
                    "text": _text_or_none(doc.get("content")),
                    "payload": to_json(doc),
                }
            )

    def span_events(self, s: Span, m: Meaning, actor: str, actor_type: str) -> None:
        """The span's own events (exceptions as errors) and an error status."""
        for k, e in enumerate(s.events):
            if e.get("name") in MESSAGE_EVENTS and m.convention == "genai":
                continue  # read by messages()
            ea = e.get("attributes") or {}
            is_error = e.get("name") == "exception"
            self.events.append(
                {
                    "event_id": f"{s.span_id}:event:{k}",
                    "t": self.t(e.get("time_ns")),
                    "actor": actor,
                    "actor_type": actor_type,
                    "kind": "error" if is_error else (e.get("name") or "event"),
                    "node_id": s.span_id,
                    "text": ea.get("exception.message") if is_error else e.get("name"),
                    "payload": to_json(ea) if ea else None,
                }
            )
        if s.status == "ERROR":
            self.events.append(
                {
                    "event_id": f"{s.span_id}:status",
                    "t": self.t(s.end_ns),
                    "actor": actor,
                    "actor_type": actor_type,
                    "kind": "error",
                    "status": "error",
                    "node_id": s.span_id,
                    "text": s.status_message,
                }
            )

    def usage(self, s: Span, m: Meaning) -> None:
        for label, value in m.usage.items():
            self.annotations.append(
                {
                    "annotation_id": f"{s.span_id}#usage:{label}",
                    "kind": "usage",
                    "target_kind": "node",
                    "target_id": s.span_id,
                    "label": label,
                    "value": value,
                    "annotator": "source",
                }
            )

    def emit(self, out: Emitter, source_file: str, run_id: str) -> None:
        sid = self.trace_id
        emit_session_graph(
            out, sid, self.nodes, self.edges, self.events, self.annotations, self.participants
        )
        kept = {
            "resource": self.root.resource or None,
            "conversation_id": self.root.attributes.get("gen_ai.conversation.id"),
            "spans": len(self.group),
        }
        base = self.base
        out.row(
            "sessions",
            {
                "session_id": sid,
                "title": self.root.name,
                "goal": self.goal,
                "domain": self.service,
                "participants": sorted(self.participants),
                "started_at": datetime.fromtimestamp(base / 1e9, UTC) if base is not None else None,
                "duration_s": (max(self.ends) - base) / 1e9
                if self.ends and base is not None
                else None,
                "source_file": source_file,
                "run_id": run_id,
                "attrs": to_json({k: v for k, v in kept.items() if v is not None}),
            },
        )


def emit_session_graph(
    out: Emitter,
    sid: str,
    nodes: list[dict],
    edges: list[dict],
    events: list[dict],
    annotations: list[dict],
    participants: dict[str, tuple[str, str]],
) -> None:
    """Write one trace-like session's rows: each node with one occurrence and its degrees
    (distinct successors and predecessors over the edges), the edges, the events in time
    order (``seq``), the annotations and the participants (id -> (kind, role))."""
    out_deg: Counter[str] = Counter()
    in_deg: Counter[str] = Counter()
    for src, dst in {(e["src"], e["dst"]) for e in edges}:
        out_deg[src] += 1
        in_deg[dst] += 1
    for n in nodes:
        node = {
            **n,
            "session_id": sid,
            "n_occurrences": 1,
            "out_degree": out_deg[n["node_id"]],
            "in_degree": in_deg[n["node_id"]],
        }
        out.row("nodes", node)
        out.row(
            "node_occurrences",
            {
                "session_id": sid,
                "node_id": n["node_id"],
                "seq": 0,
                "t_start": n["t_start"],
                "t_end": n["t_end"],
                "actor_type": n["actor_type"],
            },
        )
    for e in edges:
        out.row("edges", {"session_id": sid, **e})
    for seq, e in enumerate(sorted(events, key=lambda e: (e["t"] is None, e["t"] or 0.0))):
        out.row("events", {"session_id": sid, "seq": seq, **e})
    for an in annotations:
        out.row("annotations", {"session_id": sid, **an})
    for pid, (kind, role) in participants.items():
        out.row(
            "participants",
            {"session_id": sid, "participant_id": pid, "kind": kind, "role": role, "name": pid},
        )


def edge(src: str, dst: str, kind: str) -> dict:
    """An action-level edge row (without its session)."""
    return {
        "edge_id": f"{src}->{dst}:{kind}",
        "src": src,
        "dst": dst,
        "kind": kind,
        "level": "action",
    }


def _payload(value: Any) -> str | None:
    """A tool call's arguments or result as JSON text (a JSON string stays as it is)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return to_json(value)
        return value
    return to_json(value)


def _text_or_none(v: Any) -> str | None:
    return None if v is None else str(v)
