"""Coding-agent trajectories: SWE-agent ``.traj`` files and OpenHands event lists.

**SWE-agent** saves one ``<instance>.traj`` JSON per task instance: ``trajectory`` (the steps:
``thought``, ``action``, ``observation``, ``response``, ``execution_time``, ``state``),
``history`` (the messages sent to the model, each with ``role`` and ``message_type``) and
``info`` (``exit_status``, ``submission``, ``model_stats``: ``tokens_sent``,
``tokens_received``, ``instance_cost``, ``api_calls``). A file is a session named by its stem:

* the instance's prompt (the first ``user`` message that is neither an observation nor a
  demonstration: SWE-agent shows the model a worked example of another issue first,
  ``is_demo``) is the human turn: the issue a person wrote;
* each step is an ai node (the agent's ``action``, its ``thought`` as detail) and a tool node
  for its ``observation`` (the environment), timed by cumulative ``execution_time``; ``next``
  edges join them in order; thought, action and observation are ``message``, ``tool_call`` and
  ``tool_result`` events;
* ``model_stats`` are usage annotations; ``exit_status`` and ``submission`` an ``outcome``
  annotation; ``info``, ``environment`` and ``replay_config`` stay in the session's attrs.

**OpenHands** writes a conversation's events as a JSON list (``id``, ``timestamp``,
``source`` user / agent / environment, ``action`` or ``observation``, ``message``, ``args``,
``content``, ``extras``, ``cause``, ``tool_call_metadata``, ``llm_metrics``). A file is a
session named by its stem:

* every event is a node: a user's (messages, confirmations) human, the agent's ai, the
  environment's a tool node (``tool:<observation>``); ``next`` edges in order and a ``causes``
  edge from an action to the observation that answers it (``cause``);
* a ``message`` action is a message event; the agent's other actions (``run``, ``read``,
  ``write``, ``edit``, ``browse``, ...) are tool calls (``payload`` = ``args``); observations are
  tool results (``request_id`` = the id of their cause); ``error`` observations are errors;
* the last ``llm_metrics`` (they accumulate) are the session's usage and cost annotations; a
  list written without them (a replay trajectory) has the usage of the model responses its
  actions carry (``tool_call_metadata.model_response.usage``), each response counted once.

Both formats are documented by their projects; neither runs here, so the tests write files
after those documents (``tests/test_traces_coding.py``). Mapping: ``docs/traces.md``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphlake.ingest.base import SHAPE_ERRORS, Emitter, shape_reason, to_json
from graphlake.ingest.spans import SpanError, edge, emit_session_graph


def sniff_sweagent(head: bytes) -> bool:
    text = head.lstrip()
    return (
        text.startswith(b"{")
        and b'"trajectory"' in head
        and (b'"history"' in head or b'"info"' in head)
    )


def sniff_openhands(head: bytes) -> bool:
    text = head.lstrip()
    return (
        text.startswith(b"[")
        and b'"source"' in head
        and (b'"action"' in head or b'"observation"' in head)
        and b'"id"' in head
    )


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str)) or None
    return None


def emit_sweagent(doc: Any, path: Path, out: Emitter) -> None:
    if not isinstance(doc, dict) or not isinstance(doc.get("trajectory"), list):
        raise SpanError("not a SWE-agent trajectory: no 'trajectory' list")
    sid = path.stem
    info = doc.get("info") or {}
    history = doc.get("history") or []
    participants = {"agent": ("ai", "agent"), "environment": ("system", "tool")}
    nodes: list[dict] = []
    edges: list[dict] = []
    events: list[dict] = []
    prev = None
    prompt = next(
        (
            m
            for m in history
            if isinstance(m, dict)
            and m.get("role") == "user"
            and m.get("message_type") not in ("observation", "demonstration")
            and not m.get("is_demo")  # a worked example of another issue, shown first
        ),
        None,
    )
    goal = _text(prompt.get("content")) if prompt else None
    if prompt is not None:
        participants["user"] = ("human", "user")
        nodes.append(_node("prompt", "human", "user", "issue", goal, 0.0, 0.0))
        events.append(
            _event("prompt:msg", 0.0, "user", "human", "message", "prompt", goal, to_json(prompt))
        )
        prev = "prompt"
    clock = 0.0

    def reject_step(i: int, reason: str, step) -> None:
        out.reject(
            source_file=str(path),
            target_table="nodes",
            record_kind="step",
            record_ref=f"trajectory[{i}]",
            reason=f"{reason}; the trajectory's other steps landed",
            raw=step,
            session_id=sid,
        )

    for i, step in enumerate(doc["trajectory"]):
        if not isinstance(step, dict):  # one odd step is one reject; the others land
            reject_step(i, f"trajectory[{i}] is not a step object (SWE-agent writes "
                        "{thought, action, observation, ...})", step)  # fmt: skip
            continue
        marks = (len(nodes), len(edges), len(events), prev, clock)
        try:
            prev, clock = _sweagent_step(i, step, prev, clock, nodes, edges, events)
        except SHAPE_ERRORS as exc:  # one odd step is one reject; the others land
            del nodes[marks[0] :], edges[marks[1] :], events[marks[2] :]
            prev, clock = marks[3:]
            reject_step(i, f"trajectory[{i}]: {shape_reason(exc)}", step)
    annotations = _usages(
        sid,
        info.get("model_stats") or {},
        {
            "tokens_sent": "input_tokens",
            "tokens_received": "output_tokens",
            "instance_cost": "cost_total",
            "api_calls": "api_calls",
        },
    )
    if info.get("exit_status") is not None or info.get("submission") is not None:
        annotations.append(
            {
                "annotation_id": "outcome",
                "kind": "outcome",
                "target_kind": "session",
                "target_id": sid,
                "label": info.get("exit_status"),
                "text": info.get("submission"),
                "annotator": "source",
            }
        )
    emit_session_graph(out, sid, nodes, edges, events, annotations, participants)
    kept = {k: v for k, v in doc.items() if k not in ("trajectory", "history")}
    kept["history"] = history  # the prompts as the model saw them, whole
    out.row(
        "sessions",
        {
            "session_id": sid,
            "title": f"SWE-agent: {sid}",
            "goal": goal,
            "participants": sorted(participants),
            "duration_s": clock,
            "source_file": str(path),
            "scenario_id": sid,
            "attrs": to_json(kept),
        },
    )


def _sweagent_step(i, step, prev, clock, nodes, edges, events):
    """One trajectory step's action and observation nodes, edges and events; returns the new
    (prev, clock)."""
    took = step.get("execution_time")
    took = float(took) if isinstance(took, (int, float)) and not isinstance(took, bool) else 0.0
    action, observation = step.get("action"), step.get("observation")
    action_text = action if isinstance(action, str) else None if action is None else to_json(action)
    lines = (action_text or "").strip().splitlines()
    first_line = lines[0] if lines else f"step {i}"
    a_id, o_id = f"step{i}/action", f"step{i}/observation"
    thought = step.get("thought")
    thought = thought if isinstance(thought, str) or thought is None else to_json(thought)
    nodes.append(_node(a_id, "ai", "agent", first_line[:200], thought, clock, clock))
    kept = {k: v for k, v in step.items() if k not in ("action", "observation", "thought")}
    nodes[-1]["attrs"] = to_json(kept) if kept else None
    shown = (
        observation if isinstance(observation, str) or observation is None else to_json(observation)
    )
    nodes.append(_node(o_id, "tool", "environment", "observation", shown, clock, clock + took))
    if prev is not None:
        edges.append(edge(prev, a_id, "next"))
    edges.append(edge(a_id, o_id, "next"))
    prev = o_id
    if thought:
        events.append(
            _event(f"{a_id}:thought", clock, "agent", "ai", "message", "thought", thought, None)
        )
    events.append(
        _event(
            f"{a_id}:call",
            clock,
            "agent",
            "ai",
            "tool_call",
            None,
            first_line,
            to_json(action),
            request_id=a_id,
        )
    )
    events.append(
        _event(
            f"{o_id}:result",
            clock + took,
            "environment",
            "tool",
            "tool_result",
            None,
            "observation",
            to_json(observation),
            request_id=a_id,
        )
    )
    clock += took
    return prev, clock


def _node(node_id, actor_type, actor, label, detail, t0, t1) -> dict:
    return {
        "node_id": node_id,
        "local_id": node_id,
        "actor_type": actor_type,
        "actor": actor,
        "label": label,
        "detail": detail if isinstance(detail, str) else to_json(detail) if detail else None,
        "t_start": t0,
        "t_end": t1,
    }


def _event(event_id, t, actor, actor_type, kind, channel, text, payload, request_id=None):
    return {
        "event_id": event_id,
        "t": t,
        "actor": actor,
        "actor_type": actor_type,
        "kind": kind,
        "channel": channel,
        "text": text,
        "payload": payload,
        "request_id": request_id,
    }


def _usages(sid: str, counts: dict, labels: dict[str, str]) -> list[dict]:
    """Session ``usage`` annotations of the numbers in ``counts`` named in ``labels``."""
    return [
        {
            "annotation_id": f"usage:{label}",
            "kind": "usage",
            "target_kind": "session",
            "target_id": sid,
            "label": label,
            "value": float(v),
            "annotator": "source",
        }
        for key, label in labels.items()
        if isinstance(v := counts.get(key), (int, float)) and not isinstance(v, bool)
    ]


def _seconds(ts: Any) -> float | None:
    if not isinstance(ts, str):
        return None
    try:
        t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def emit_openhands(doc: Any, path: Path, out: Emitter, reject) -> None:
    if not isinstance(doc, list):
        raise SpanError("not an OpenHands event list: the file is not a JSON list")
    sid = path.stem
    times = [s for e in doc if isinstance(e, dict) and (s := _seconds(e.get("timestamp")))]
    t0 = min(times) if times else None
    participants: dict[str, tuple[str, str]] = {}
    nodes: list[dict] = []
    edges: list[dict] = []
    events: list[dict] = []
    ids: set[str] = set()
    prev = None
    goal = None
    metrics = None
    responses: dict[str, dict] = {}
    for k, e in enumerate(doc):
        if not isinstance(e, dict) or "id" not in e or not ("action" in e or "observation" in e):
            reject(f"[{k}]", "an event needs an id and an action or an observation", e)
            continue
        node_id = str(e["id"])
        if node_id in ids:
            reject(f"[{k}]", f"event id {node_id} appears twice; the first is kept", e)
            continue
        ids.add(node_id)
        marks = (len(nodes), len(edges), len(events), prev, goal, metrics)
        try:
            prev, goal, metrics = _openhands_event(
                e, node_id, t0, prev, goal, metrics, ids, participants, nodes, edges, events
            )
        except SHAPE_ERRORS as exc:  # one odd event is one reject; the others land
            del nodes[marks[0] :], edges[marks[1] :], events[marks[2] :]
            prev, goal, metrics = marks[3:]
            reject(f"[{k}]", shape_reason(exc), e)
            continue
        _note_response(e, responses)
    if metrics is None and responses:  # no llm_metrics: the model responses' own usage
        metrics = {"accumulated_token_usage": _summed_usage(responses.values())}
    return _openhands_session(sid, path, out, nodes, edges, events, participants, goal, metrics, t0)


def _note_response(e: dict, responses: dict[str, dict]) -> None:
    """The model response an action came from (``tool_call_metadata.model_response``), once
    per response: one response that makes several actions rides on each of them."""
    meta = e.get("tool_call_metadata")
    response = meta.get("model_response") if isinstance(meta, dict) else None
    if isinstance(response, dict) and isinstance(response.get("usage"), dict):
        responses.setdefault(str(response.get("id") or len(responses)), response["usage"])


def _summed_usage(usages) -> dict:
    """OpenAI usage objects summed as OpenHands' own metrics count them (prompt, completion
    and cached prompt tokens), for event lists written without ``llm_metrics``."""
    total: dict[str, int] = {}  # (a count no response gives stays out)
    for u in usages:
        details = u.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        for key, v in (
            ("prompt_tokens", u.get("prompt_tokens")),
            ("completion_tokens", u.get("completion_tokens")),
            ("cache_read_tokens", cached),
        ):
            if isinstance(v, int) and not isinstance(v, bool):
                total[key] = total.get(key, 0) + v
    return total


def _openhands_event(e, node_id, t0, prev, goal, metrics, ids, participants, nodes, edges, events):
    """One OpenHands event's node, edges and event; returns the new (prev, goal, metrics)."""
    s = _seconds(e.get("timestamp"))
    t = None if s is None or t0 is None else round(s - t0, 6)
    source = e.get("source")
    is_action = "action" in e
    kind_name = str(e.get("action") if is_action else e.get("observation"))
    if source == "user":
        actor_type, actor = "human", "user"
        participants["user"] = ("human", "user")
    elif source == "agent":
        actor_type, actor = "ai", "agent"
        participants["agent"] = ("ai", "agent")
    else:
        actor_type, actor = (
            ("tool", f"tool:{kind_name}") if not is_action else ("system", "environment")
        )
        participants[actor] = ("system", "tool" if not is_action else "environment")
    text = e.get("message") if is_action else e.get("content")
    text = _text(text) if not isinstance(text, str) else text
    kept = {k2: v for k2, v in e.items() if k2 not in ("id", "timestamp", "source", "message")}
    nodes.append(
        {
            **_node(node_id, actor_type, actor, kind_name, text, t, t),
            "attrs": to_json(kept) if kept else None,
        }
    )
    if prev is not None:
        edges.append(edge(prev, node_id, "next"))
    prev = node_id
    cause = e.get("cause")
    if not is_action and cause is not None and str(cause) in ids:
        edges.append(edge(str(cause), node_id, "causes"))
    if is_action and kind_name == "message":
        if source == "user" and goal is None:
            goal = text
        row = _event(
            f"{node_id}:msg",
            t,
            actor,
            actor_type,
            "message",
            source,
            text,
            to_json(e.get("args")),
        )
    elif is_action:
        row = _event(
            f"{node_id}:call",
            t,
            actor,
            actor_type,
            "tool_call",
            source,
            kind_name,
            to_json(e.get("args")),
            request_id=node_id,
        )
    else:
        row = _event(
            f"{node_id}:result",
            t,
            actor,
            actor_type,
            "error" if kind_name == "error" else "tool_result",
            source,
            kind_name,
            to_json({"content": e.get("content"), "extras": e.get("extras")}),
            request_id=str(cause) if cause is not None else None,
        )
    events.append(row)
    if isinstance(e.get("llm_metrics"), dict):
        metrics = e["llm_metrics"]
    return prev, goal, metrics


def _openhands_session(sid, path, out, nodes, edges, events, participants, goal, metrics, t0):
    """The session of an OpenHands event list, with its usage from the last metrics."""
    annotations = []
    if metrics:  # they accumulate: the last are the session's
        counts = {
            **(metrics.get("accumulated_token_usage") or {}),
            "cost": metrics.get("accumulated_cost"),
        }
        annotations = _usages(
            sid,
            counts,
            {
                "prompt_tokens": "input_tokens",
                "completion_tokens": "output_tokens",
                "cache_read_tokens": "cache_read_tokens",
                "cost": "cost_total",
            },
        )
    emit_session_graph(out, sid, nodes, edges, events, annotations, participants)
    ends = [n["t_end"] for n in nodes if n["t_end"] is not None]
    out.row(
        "sessions",
        {
            "session_id": sid,
            "title": f"OpenHands: {sid}",
            "goal": goal,
            "participants": sorted(participants),
            "started_at": datetime.fromtimestamp(t0, UTC) if t0 is not None else None,
            "duration_s": max(ends) if ends else None,
            "source_file": str(path),
        },
    )
