"""Langfuse trace exports, read into spans.

A Langfuse export is a trace with its observations: ``{"trace": {...}, "observations": [...]}``
(the UI's download), or the public API's trace object with ``observations`` (and ``scores``)
inside it; a file may hold one, a list of them, or one per line. Each becomes the spans
:mod:`graphlake.ingest.spans` maps onto the lake, through the GenAI conventions:

* the trace is a root span (id = the trace id): its ``input`` is the user's message (a human
  turn), its ``output`` the answer; ``userId``, ``sessionId`` (as ``gen_ai.conversation.id``),
  tags, metadata and the rest stay in its attributes;
* an observation is a span under its ``parentObservationId`` (else under the root):
  ``GENERATION`` is a model call (``chat``, the model from ``model``, ``input`` / ``output`` as
  messages, ``usageDetails`` as token counts, ``costDetails`` as costs), ``EMBEDDING`` an
  embedding call, ``AGENT`` an agent, ``TOOL`` a tool call (``input`` the arguments, ``output``
  the result); ``SPAN``, ``EVENT``, ``CHAIN``, ``RETRIEVER``, ``EVALUATOR`` and ``GUARDRAIL``
  are the application's own steps; ``level: ERROR`` is an error status;
* every score is an annotation of kind ``score`` on its observation or on the session.
"""

from __future__ import annotations

import json
from typing import Any

from graphlake.ingest.conventions import answers_tools
from graphlake.ingest.otel import time_ns
from graphlake.ingest.spans import Span, SpanError

_OPS = {
    "GENERATION": "chat",
    "EMBEDDING": "embeddings",
    "AGENT": "invoke_agent",
    "TOOL": "execute_tool",
}
#: Observation fields read into the span itself; the others are kept as ``langfuse.<field>``.
_OBS_READ = frozenset(
    {"id", "traceId", "type", "name", "startTime", "endTime", "parentObservationId", "level",
     "statusMessage", "model", "input", "output", "usageDetails", "costDetails", "usage"}
)  # fmt: skip
_TRACE_READ = frozenset(
    {"id", "name", "timestamp", "input", "output", "observations", "scores", "sessionId"}
)


def sniff_langfuse(head: bytes) -> bool:
    text = head.lstrip()[:4096]
    return (
        text[:1] in (b"{", b"[")
        and b'"observations"' in head
        and (b'"traceId"' in head or b'"trace"' in head)
    )


def exports(doc: Any, ref: str = "") -> tuple[list[tuple[dict, list, list]], list[SpanError]]:
    """(trace, observations, scores) of each export in a parsed file: one export
    (``{trace, observations}`` or a trace holding its observations), a list of them, or
    ``{traces: [...], observations: [...]}`` with each observation and score finding its trace
    by ``traceId``; and the rejects of that last shape's observations that find none (``ref``
    prefixes their place in the file)."""
    if isinstance(doc, dict) and isinstance(doc.get("traces"), list) and "trace" not in doc:
        return _by_trace_id(doc, ref)
    items = doc if isinstance(doc, list) else [doc]
    out: list[tuple[dict, list, list]] = []
    for item in items:
        if not isinstance(item, dict):
            raise SpanError("not a Langfuse export: expected objects with a trace")
        inner = item.get("trace")
        trace: dict = inner if isinstance(inner, dict) else item
        observations = item.get("observations", trace.get("observations")) or []
        scores = item.get("scores", trace.get("scores")) or []
        if not isinstance(scores, list):
            scores = []
        if not trace.get("id") or not isinstance(observations, list):
            raise SpanError("not a Langfuse export: no trace id or no observations list")
        out.append((trace, observations, scores))
    return out, []


def _by_trace_id(doc: dict, ref: str) -> tuple[list[tuple[dict, list, list]], list[SpanError]]:
    """``{traces, observations, scores}``: the observations and scores of each trace, found by
    ``traceId`` (one without it belongs to the file's only trace); an observation that finds
    no trace is a reject saying why."""
    traces = doc["traces"]
    if not traces or not all(isinstance(t, dict) and t.get("id") for t in traces):
        raise SpanError("not a Langfuse export: 'traces' holds a trace without an id")
    observations = doc.get("observations") or []
    if not isinstance(observations, list):
        raise SpanError("not a Langfuse export: 'observations' is not a list")
    only = str(traces[0]["id"]) if len(traces) == 1 else None
    mine: dict[str, list] = {str(t["id"]): [] for t in traces}
    scores: dict[str, list] = {str(t["id"]): [] for t in traces}

    def trace_of(item: dict) -> str | None:
        tid = item.get("traceId")
        return only if tid is None else str(tid)

    rejects: list[SpanError] = []
    for k, o in enumerate(observations):
        if not isinstance(o, dict):
            reason = f"observation {k} is not an object"
        elif (tid := trace_of(o)) in mine:
            mine[tid].append(o)
            continue
        else:
            reason = (
                f"observation {k}: its traceId ({o.get('traceId')!r}) names no trace of this "
                "file; give it the id of one of 'traces'"
            )
        rejects.append(SpanError(reason, ref=f"{ref}observations[{k}]", raw=o))
    held = doc.get("scores")
    for sc in held if isinstance(held, list) else []:
        if isinstance(sc, dict) and (tid := trace_of(sc)) in scores:
            scores[tid].append(sc)
    out = [
        (
            t,
            [*_objects(t, "observations"), *mine[str(t["id"])]],
            [*_objects(t, "scores"), *scores[str(t["id"])]],
        )
        for t in traces
    ]
    return out, rejects


def _objects(trace: dict, key: str) -> list[dict]:
    """The objects a trace of a ``traces`` list holds under ``key`` itself (the API's list of
    traces gives ids there instead, which are not observations)."""
    held = trace.get(key)
    return [o for o in held if isinstance(o, dict)] if isinstance(held, list) else []


#: how deep :func:`deep_parse` follows text holding JSON holding text (Langfuse's own has no
#: bound; a hostile file must not recurse without end)
_DEEP_PARSE_DEPTH = 32


def deep_parse(value: Any, depth: int = 0) -> Any:
    """``value`` as Langfuse's UI shows it (``deepParseJson``, packages/shared/src/utils/json.ts):
    text that parses as JSON is replaced by what it holds, again and again (the Python SDK of
    2024 sent a trace's input and output JSON-encoded twice), except a number, which stays the
    text it was; lists and objects are decoded member by member."""
    if depth >= _DEEP_PARSE_DEPTH:
        return value
    value = _unwrapped(value)
    if isinstance(value, list):
        return [deep_parse(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: deep_parse(v, depth + 1) for k, v in value.items()}
    return value


def _unwrapped(value: Any) -> Any:
    """``value`` with the JSON text around it decoded, layer after layer (:func:`deep_parse`
    at its top); what it holds is left as it is, so a message whose content is JSON text
    keeps that text (it is what was said)."""
    for _ in range(_DEEP_PARSE_DEPTH):
        if not isinstance(value, str):
            return value
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, int | float) and not isinstance(parsed, bool):
            return value
        value = parsed
    return value


def _shown(key: str, value: Any) -> Any:
    """A field kept in the attributes: ``metadata`` decoded as Langfuse's UI decodes it (the
    API often returns it as JSON text), every other field as it is."""
    return deep_parse(value) if key == "metadata" else value


def _is_message(value: Any) -> bool:
    """A chat message (``{role, content}``), or a GenAI ``gen_ai.choice`` event as the OTel
    SDKs write a model's answer (``{index, message: {role, content}, ...}``: pydantic-ai's
    generations in Langfuse); the spans reader reads the text of either, and keeps it whole."""
    return isinstance(value, dict) and ("role" in value or isinstance(value.get("message"), dict))


#: OpenAI Responses API items without a role of their own (the OpenAI Agents SDK's model
#: input and output, as OpenInference records them), and the role each speaks in
_RESPONSE_ITEM_ROLES = {
    "message": "assistant",
    "reasoning": "assistant",
    "function_call": "assistant",
    "function_call_output": "tool",
    "computer_call": "assistant",
    "computer_call_output": "tool",
    "web_search_call": "assistant",
    "file_search_call": "assistant",
}


def _response_item(item: Any) -> dict | None:
    """One Responses API item as a message (every field kept): a message as it is, a call
    spoken by the assistant, a call's output spoken by the tool (its ``output`` the text);
    None when ``item`` is neither."""
    if not isinstance(item, dict):
        return None
    if "role" in item:
        return item
    role = _RESPONSE_ITEM_ROLES.get(str(item.get("type")))
    if role is None:
        return None
    out = {"role": role, **item}
    if role == "tool" and "content" not in item:
        out["content"] = item.get("output")
    return out


def _response_messages(value: Any) -> list[dict] | None:
    """A model call's input or output in the OpenAI Responses API's shape: a list of items,
    or a ``response`` object whose ``output`` is (the response's other fields ride on its
    first message); None when ``value`` is not one."""
    items = value
    rest = None
    if isinstance(value, dict) and value.get("object") == "response":
        items, rest = value.get("output"), {k: v for k, v in value.items() if k != "output"}
    if not isinstance(items, list) or not items:
        return None
    found = [_response_item(i) for i in items]
    if not all(found):
        return None
    out = [m for m in found if m is not None]
    if rest is not None:
        out[0] = {**out[0], "response": rest}
    return out


#: LangChain's serialised message types (langchain_core.messages ``_message_from_dict``, a
#: chunk as its message) and the chat role each speaks in (``convert_to_openai_messages``);
#: ``chat`` messages carry their own role
_LANGCHAIN_ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
    "FunctionMessageChunk": "function",
}


def _langchain_message(value: Any) -> dict | None:
    """A LangChain message as Langfuse's LangChain integration records it (the message's
    fields with its ``type``: ``{content, type: "human", additional_kwargs, ...}``, or
    ``messages_to_dict``'s ``{type, data}``) as a chat message of its role, every field kept;
    None when ``value`` is not one."""
    if not isinstance(value, dict) or "role" in value:
        return None
    kind = value.get("type")
    data = value.get("data")
    fields = data if isinstance(data, dict) and set(value) == {"type", "data"} else value
    if not isinstance(kind, str) or "content" not in fields:
        return None
    role = (
        fields.get("role") if kind in ("chat", "ChatMessageChunk") else _LANGCHAIN_ROLES.get(kind)
    )
    if not isinstance(role, str) or not role:
        return None
    return {"role": role, **fields, "type": kind}


def _chat_messages(value: Any) -> list[dict] | None:
    """``value`` as chat messages when it is a list of them (``{role, content}``, GenAI
    choices, LangChain messages) or one; None otherwise."""
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    out = []
    for m in items:
        if _is_message(m):
            out.append(m)
        elif (lc := _langchain_message(m)) is not None:
            out.append(lc)
        else:
            return None
    return out


def _gemini_content(value: Any) -> dict | None:
    """A Gemini ``Content`` (``{parts, role}``: google-genai's types, as Google ADK records a
    model call) as a message of its role (``model`` is the model's); a content of function
    responses only is spoken by the tool, not by the user Gemini files it under."""
    if not isinstance(value, dict) or not isinstance(value.get("parts"), list):
        return None
    role = "tool" if answers_tools(value) else value.get("role") or "user"
    return {**value, "role": role}


def _gemini_messages(value: Any) -> list[dict] | None:
    """A Gemini request (``{contents, config: {system_instruction}}``: google-genai's
    ``generate_content`` arguments, contents as text, texts or Contents; an ADK
    ``LlmRequest``), response (``{candidates: [{content, finish_reason}], ...}``; an ADK
    ``LlmResponse`` or event ``{content, ...}``), or ADK run input (``{new_message, ...}``) as
    messages; the object's other fields ride on its first message (``request`` /
    ``response``, each candidate's own as ``candidate``). None when ``value`` is none of
    these."""
    if not isinstance(value, dict):
        return None
    contents = value.get("contents")
    shorthand = isinstance(contents, str | dict) or (
        isinstance(contents, list) and contents and all(isinstance(c, str) for c in contents)
    )
    if shorthand:  # the SDK's shorthands: text, texts, or one Content (google-genai's t_contents)
        if isinstance(contents, dict):
            contents = [contents]
        else:
            texts = [contents] if isinstance(contents, str) else list(contents or [])
            contents = [{"role": "user", "parts": [{"text": t} for t in texts]}]
    if isinstance(contents, list) and contents:
        found = [_gemini_content(c) for c in contents]
        if not all(found):
            return None
        out = [m for m in found if m is not None]
        config = value.get("config")
        config = config if isinstance(config, dict) else {}
        system = config.get("system_instruction", value.get("system_instruction"))
        if isinstance(system, str) and system:
            out.insert(0, {"role": "system", "content": system})
        elif (instruction := _gemini_content(system)) is not None:
            out.insert(0, {**instruction, "role": "system"})
        rest = value if shorthand else {k: v for k, v in value.items() if k != "contents"}
        out[0] = {**out[0], "request": rest}  # a shorthand is kept as it was written
        return out
    candidates = value.get("candidates")
    if isinstance(candidates, list) and candidates:  # a GenerateContentResponse
        found = [
            _gemini_content(c.get("content")) if isinstance(c, dict) else None for c in candidates
        ]
        if all(found):
            rest = {k: v for k, v in value.items() if k != "candidates"}
            return [
                {**m, "candidate": {k: v for k, v in c.items() if k != "content"}}
                | ({"response": rest} if k == 0 else {})
                for k, (m, c) in enumerate(zip(found, candidates, strict=True))
                if m is not None
            ]
    for key, side in (("content", "response"), ("new_message", "request")):
        inner = _gemini_content(value.get(key))
        if inner is not None:
            return [{**inner, side: {k: v for k, v in value.items() if k != key}}]
    return None


def _messages(value: Any, default_role: str) -> list[dict]:
    """Langfuse ``input`` / ``output`` as GenAI messages: a list of ``{role, content}``, one
    message object, or plain content, after decoding the JSON text around them as Langfuse's
    UI does (:func:`_unwrapped`)."""
    value = _unwrapped(value)
    if value is None:
        return []
    if (chat := _chat_messages(value)) is not None:
        return chat
    if (responses := _response_messages(value)) is not None:
        return responses
    if (gemini := _gemini_messages(value)) is not None:
        return gemini
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return _messages(value["messages"], default_role)
    content = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return [{"role": default_role, "content": content}]


def trace_spans(trace: dict, observations: list, ref: str) -> list[Span | SpanError]:
    """The root span of the trace and one span per observation."""
    tid = str(trace["id"])
    out: list[Span | SpanError] = []
    starts, ends = [_ns(trace.get("timestamp"))], []
    for o in observations:
        if isinstance(o, dict):  # an unreadable time is that observation's reject, below
            starts.append(_ns(o.get("startTime")))
            ends.append(_ns(o.get("endTime")) or _ns(o.get("startTime")))
    known = [t for t in starts if t is not None]
    if not known:
        return [SpanError(f"trace {tid} has no readable time", ref=ref or "$", raw=trace)]
    start = min(known)
    end_candidates = [t for t in ends if t is not None]
    root_attrs: dict = {
        "gen_ai.input.messages": json.dumps(_messages(trace.get("input"), "user")),
        "gen_ai.output.messages": json.dumps(_messages(trace.get("output"), "assistant")),
    }
    if trace.get("sessionId"):
        root_attrs["gen_ai.conversation.id"] = trace["sessionId"]
    root_attrs.update(
        {f"langfuse.{k}": _shown(k, v) for k, v in trace.items() if k not in _TRACE_READ}
    )
    out.append(
        Span(
            trace_id=tid,
            span_id=tid,
            parent_id=None,
            name=str(trace.get("name") or "trace"),
            kind=None,
            start_ns=start,
            end_ns=max(end_candidates, default=start),
            status=None,
            status_message=None,
            attributes=root_attrs,
            events=[],
            links=[],
            resource={"service.name": str(trace.get("name") or "langfuse")},
            scope={"name": "langfuse"},
            ref=ref,
            raw={k: v for k, v in trace.items() if k != "observations"},
        )
    )
    for k, o in enumerate(observations):
        where = f"{ref}observations[{k}]"
        try:
            out.append(_observation(o, tid, trace, where))
        except (AttributeError, KeyError, TypeError, ValueError, SpanError) as exc:
            out.append(SpanError(str(exc), ref=where, raw=o))
    return out


def _ns(value: Any) -> int | None:
    try:
        return time_ns(value, "time")
    except SpanError:
        return None


def _observation(o: dict, tid: str, trace: dict, where: str) -> Span:
    if not o.get("id"):
        raise SpanError("the observation has no id")
    kind = str(o.get("type") or "SPAN").upper()
    a: dict = {}
    op = _OPS.get(kind)
    if op:
        a["gen_ai.operation.name"] = op
    if kind in ("GENERATION", "EMBEDDING") and o.get("model"):
        a["gen_ai.request.model"] = o["model"]
    if kind == "AGENT":
        a["gen_ai.agent.name"] = o.get("name") or "agent"
    if kind == "TOOL":
        a["gen_ai.tool.name"] = o.get("name") or "tool"
        if o.get("input") is not None:
            a["gen_ai.tool.call.arguments"] = json.dumps(deep_parse(o["input"]), sort_keys=True)
        if o.get("output") is not None:
            a["gen_ai.tool.call.result"] = json.dumps(deep_parse(o["output"]), sort_keys=True)
    elif kind in ("GENERATION", "EMBEDDING"):
        a["gen_ai.input.messages"] = json.dumps(_messages(o.get("input"), "user"))
        a["gen_ai.output.messages"] = json.dumps(_messages(o.get("output"), "assistant"))
    else:  # the application's own step: what went in and out is kept as it is
        for key in ("input", "output"):
            if o.get(key) is not None:
                a[f"langfuse.{key}"] = deep_parse(o[key])
    usage = o.get("usageDetails") or o.get("usage") or _flat(o, "Usage") or {}
    for key, value in usage.items() if isinstance(usage, dict) else []:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            a[f"gen_ai.usage.{_TOKENS.get(key, key)}"] = value
    costs = o.get("costDetails") or _flat(o, "Cost") or _flat(o, "Cost", "calculated") or {}
    for key, value in costs.items() if isinstance(costs, dict) else []:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            a[f"gen_ai.usage.cost_{key}"] = value
    kept = {k: v for k, v in o.items() if k not in _OBS_READ and v is not None}
    a.update({f"langfuse.{k}": _shown(k, v) for k, v in kept.items()})
    start = time_ns(o.get("startTime"), "startTime")
    level = o.get("level")
    return Span(
        trace_id=tid,
        span_id=str(o["id"]),
        parent_id=str(o.get("parentObservationId") or tid),
        name=str(o.get("name") or kind.lower()),
        kind=kind,
        start_ns=start,
        end_ns=time_ns(o.get("endTime"), "endTime") or start,
        status="ERROR" if level == "ERROR" else None,
        status_message=o.get("statusMessage"),
        attributes=a,
        events=[],
        links=[],
        resource={"service.name": str(trace.get("name") or "langfuse")},
        scope={"name": "langfuse"},
        extra={"level": level} if level not in (None, "DEFAULT", "ERROR") else {},
        ref=where,
        raw=o,
    )


def _flat(o: dict, what: str, prefix: str = "") -> dict:
    """The API's flat usage or cost fields (``inputUsage``, ``outputUsage``, ``totalUsage``;
    ``inputCost`` ... or ``calculatedInputCost`` ...) as ``usageDetails`` / ``costDetails``
    would hold them, for an observation that has no details object (Langfuse fills both).
    Zeros are left out: the API gives every observation these fields, a span's all zero;
    they stay in the node's attrs either way."""
    out = {}
    for key in ("input", "output", "total"):
        name = f"{prefix}{key.title()}{what}" if prefix else f"{key}{what}"
        value = o.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value:
            out[key] = value
    return out


_TOKENS = {"input": "input_tokens", "output": "output_tokens", "total": "total_tokens"}


def score_rows(trace: dict, scores: list) -> list[dict]:
    """Langfuse scores as ``score`` annotations (on their observation, else the session)."""
    rows = []
    for k, s in enumerate(scores):
        if not isinstance(s, dict):
            continue
        value = s.get("value")
        on_observation = bool(s.get("observationId"))
        rows.append(
            {
                "session_id": str(trace["id"]),
                "annotation_id": f"score:{s.get('id') or k}",
                "kind": "score",
                "target_kind": "node" if on_observation else "session",
                "target_id": str(s["observationId"]) if on_observation else str(trace["id"]),
                "label": s.get("name"),
                "value": float(value)
                if isinstance(value, (int, float)) and not isinstance(value, bool)
                else None,
                "text": s.get("stringValue") or s.get("comment"),
                "annotator": s.get("source") or "langfuse",
                "attrs": json.dumps(
                    {
                        k2: v
                        for k2, v in s.items()
                        if k2
                        not in (
                            "id",
                            "name",
                            "value",
                            "stringValue",
                            "observationId",
                            "traceId",
                            "source",
                        )
                    },
                    sort_keys=True,
                ),
            }
        )
    return rows
