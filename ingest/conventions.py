"""What a span means, under the two attribute conventions agent tracing uses.

* **OpenTelemetry GenAI** (``gen_ai.*``): the operation in ``gen_ai.operation.name``, models in
  ``gen_ai.request.model`` / ``gen_ai.response.model``, messages as JSON in
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (the newer conventions), flattened
  as ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` (OpenLLMetry), or as span events
  (``gen_ai.user.message``, ``gen_ai.choice``, ... : v1.36 and before), tokens in
  ``gen_ai.usage.*``.
* **OpenInference** (Arize Phoenix): the kind in ``openinference.span.kind`` (LLM, TOOL, AGENT,
  CHAIN, RETRIEVER, EMBEDDING, RERANKER, GUARDRAIL, EVALUATOR), ``llm.model_name``, flattened
  messages ``llm.input_messages.N.message.role`` / ``.content`` (or ``.contents.M.
  message_content.text``), ``llm.token_count.prompt`` / ``completion`` / ``total``,
  ``tool.name`` with ``tool.parameters``, ``input.value`` / ``output.value``, and
  ``retrieval.documents.N.document.*``.

Both become one :class:`Meaning`, so :mod:`graphlake.ingest.spans` maps either onto the
tables the same way. ``consumed`` names the attributes read into columns or rows; every other
attribute stays in the node's ``attrs``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

#: ``call_llm``: any-agent's name for a model call (its instrumentation, 2025)
MODEL_OPS = frozenset({"chat", "text_completion", "generate_content", "embeddings", "call_llm"})
AGENT_OPS = frozenset({"invoke_agent", "create_agent"})
TOOL_OPS = frozenset({"execute_tool"})
#: OpenInference span kinds as GenAI operations (None: a step of the application itself)
OPENINFERENCE_OPS = {
    "LLM": "chat",
    "EMBEDDING": "embeddings",
    "AGENT": "invoke_agent",
    "TOOL": "execute_tool",
    "RETRIEVER": "retrieval",
}
OPENINFERENCE_KINDS = frozenset(
    {*OPENINFERENCE_OPS, "CHAIN", "RERANKER", "GUARDRAIL", "EVALUATOR", "UNKNOWN"}
)
_GENAI_MAPPED = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.agent.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
    }
)
_OI_MAPPED = frozenset(
    {"openinference.span.kind", "llm.model_name", "tool.name", "tool.parameters"}
)
_OI_USAGE = {"prompt": "input_tokens", "completion": "output_tokens", "total": "total_tokens"}
MESSAGE_EVENTS = {
    "gen_ai.user.message": "user",
    "gen_ai.system.message": "system",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}


@dataclass
class Meaning:
    """A span read through its conventions."""

    convention: str  # genai or openinference
    operation: str | None = None  # chat, embeddings, invoke_agent, execute_tool, retrieval
    model: str | None = None
    agent: str | None = None
    tool: str | None = None
    tool_call_id: str | None = None
    arguments: Any = None
    result: Any = None
    has_result: bool = False
    messages: list[tuple[str, str, dict]] = field(default_factory=list)  # (in|out, role, msg)
    usage: dict[str, float] = field(default_factory=dict)
    documents: list[dict] = field(default_factory=list)  # retrieved documents
    consumed: set[str] = field(default_factory=set)


def meaning(attributes: dict, events: list[dict], name: str, kind_field: Any = None) -> Meaning:
    """The span's :class:`Meaning`; ``kind_field`` is a top-level span kind some exports
    carry instead of the ``openinference.span.kind`` attribute."""
    oi_kind = attributes.get("openinference.span.kind") or kind_field
    if isinstance(oi_kind, str) and oi_kind.upper() in OPENINFERENCE_KINDS:
        return _openinference(attributes, name, oi_kind.upper())
    return _genai(attributes, events)


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _genai(a: dict, events: list[dict]) -> Meaning:
    m = Meaning("genai", consumed=set(_GENAI_MAPPED) & a.keys())
    m.operation = (
        a.get("gen_ai.operation.name") if isinstance(a.get("gen_ai.operation.name"), str) else None
    )
    m.model = _text(a.get("gen_ai.response.model") or a.get("gen_ai.request.model"))
    m.agent = _text(a.get("gen_ai.agent.name"))
    m.tool = _text(a.get("gen_ai.tool.name"))
    m.tool_call_id = _text(a.get("gen_ai.tool.call.id"))
    m.arguments = a.get("gen_ai.tool.call.arguments")
    m.has_result = "gen_ai.tool.call.result" in a
    m.result = a.get("gen_ai.tool.call.result")
    if m.operation is None:
        m.operation = (
            "execute_tool" if m.tool else "invoke_agent" if m.agent else "chat" if m.model else None
        )
    _any_agent(a, m)
    for direction, key in (("in", "gen_ai.input.messages"), ("out", "gen_ai.output.messages")):
        for msg in _json_list(a.get(key)):
            m.messages.append((direction, str(msg.get("role") or "assistant"), msg))
    for direction, prefix in (("in", "gen_ai.prompt."), ("out", "gen_ai.completion.")):
        indexed, keys = _indexed(a, prefix)
        m.consumed |= keys
        for i in sorted(indexed):
            msg = indexed[i]
            m.messages.append((direction, str(msg.get("role") or "assistant"), msg))
    for e in events:
        role = MESSAGE_EVENTS.get(str(e.get("name")))
        if role:
            msg = dict(e.get("attributes") or {})
            direction = "out" if e["name"] == "gen_ai.choice" else "in"
            m.messages.append((direction, str(msg.get("role") or role), msg))
    for key, value in a.items():
        if key.startswith("gen_ai.usage.") and (n := _number(value)) is not None:
            m.usage[key.removeprefix("gen_ai.usage.")] = n
            m.consumed.add(key)
    return m


#: any-agent's own attributes (``any_agent/tracing``, 2025): a model call's output is
#: ``genai.output`` (its text, or its tool calls as JSON, ``genai.output.type`` saying which), a
#: tool's arguments ``gen_ai.tool.args`` (JSON text) and its result ``genai.output``; later
#: releases spell the output ``gen_ai.output``
_ANY_AGENT_OUTPUT = ("genai.output", "gen_ai.output")


def _any_agent(a: dict, m: Meaning) -> None:
    out_key = next((k for k in _ANY_AGENT_OUTPUT if k in a), None)
    if m.operation in TOOL_OPS:
        if m.arguments is None and "gen_ai.tool.args" in a:
            m.arguments = a["gen_ai.tool.args"]
            m.consumed.add("gen_ai.tool.args")
        if not m.has_result and out_key is not None:
            m.has_result, m.result = True, a[out_key]
            m.consumed |= {out_key, f"{out_key}.type"}
    elif m.operation in MODEL_OPS and out_key is not None and isinstance(a[out_key], str):
        if not any(d == "out" for d, _, _ in m.messages):
            said = _any_agent_message(a[out_key], a.get(f"{out_key}.type"))
            m.messages.append(("out", "assistant", said))
            m.consumed |= {out_key, f"{out_key}.type"}


#: keys by which a JSON object any-agent dumped as a model's output is that framework's own
#: message: OpenAI's and LlamaIndex's ``role`` (LlamaIndex's text in ``blocks``), LangChain's
#: ``ChatGeneration`` holding its ``message``
_FRAMEWORK_MESSAGE_KEYS = ("role", "message", "blocks")


def _any_agent_message(value: str, kind: Any) -> dict:
    """A model call's output as any-agent records it: text, or (``json``) what the framework
    returned, dumped. A framework's message object (a LlamaIndex ``ChatMessage``, a LangChain
    ``ChatGeneration``) is read as that message; other JSON (a list of tool calls) is the
    text it is."""
    if kind == "json":
        try:
            decoded = json.loads(value)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and any(k in decoded for k in _FRAMEWORK_MESSAGE_KEYS):
            return decoded
    return {"content": value}


def _openinference(a: dict, name: str, kind: str) -> Meaning:
    m = Meaning("openinference", operation=OPENINFERENCE_OPS.get(kind))
    m.consumed = set(_OI_MAPPED) & a.keys()
    m.model = _text(a.get("llm.model_name"))
    if kind == "AGENT":
        m.agent = _text(a.get("agent.name")) or name
    if kind == "TOOL":
        m.tool = _text(a.get("tool.name")) or name
        m.arguments = a.get("tool.parameters", a.get("input.value"))
        m.has_result = "output.value" in a
        m.result = a.get("output.value")
        m.tool_call_id = _text(a.get("tool_call.id"))
    for direction, prefix in (("in", "llm.input_messages."), ("out", "llm.output_messages.")):
        indexed, keys = _indexed(a, prefix)
        m.consumed |= keys
        for i in sorted(indexed):
            msg = {k.removeprefix("message."): v for k, v in indexed[i].items()}
            if "content" not in msg:  # multimodal: message.contents.M.message_content.text
                texts = [
                    v
                    for k, v in sorted(msg.items())
                    if k.startswith("contents.") and k.endswith("message_content.text")
                ]
                if texts:
                    msg["content"] = "\n".join(str(t) for t in texts)
            m.messages.append((direction, str(msg.get("role") or "assistant"), msg))
    for key, value in a.items():
        if key.startswith("llm.token_count.") and (n := _number(value)) is not None:
            suffix = key.removeprefix("llm.token_count.")
            m.usage[_OI_USAGE.get(suffix, suffix)] = n
            m.consumed.add(key)
    docs, keys = _indexed(a, "retrieval.documents.")
    m.consumed |= keys
    m.documents = [
        {k.removeprefix("document."): v for k, v in docs[i].items()} for i in sorted(docs)
    ]
    return m


def _text(v: Any) -> str | None:
    return str(v) if v not in (None, "") else None


def _json_list(value: Any) -> list[dict]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _indexed(a: dict, prefix: str) -> tuple[dict[int, dict], set[str]]:
    """``prefix.N.rest`` attributes grouped by N, and the keys read."""
    out: dict[int, dict] = {}
    keys: set[str] = set()
    for k, v in a.items():
        if k.startswith(prefix):
            head, _, rest = k[len(prefix) :].partition(".")
            if head.isdigit() and rest:
                out.setdefault(int(head), {})[rest] = v
                keys.add(k)
    return out, keys


#: content parts that are text: GenAI's and OpenAI Chat's ``text``, the Responses API's
#: ``input_text`` / ``output_text``
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})


def message_text(m: dict) -> str | None:
    """The text of a message: its ``content`` (text, the text parts of a list, or a value that
    is not parts, such as a tool's result, as JSON), the text parts of ``parts`` (a tool's
    ``tool_call_response`` included) or of LlamaIndex's ``blocks``, or a ``gen_ai.choice``
    event's (or LangChain ``ChatGeneration``'s) ``message``."""
    content = m.get("content")
    if isinstance(content, str):
        return content
    if content is None and "message" in m:
        inner = m["message"]
        if isinstance(inner, dict):
            return message_text(inner)
        return inner if isinstance(inner, str) else None
    if isinstance(content, dict):  # a value, not parts (a tool's result, a definition)
        return json.dumps(content, sort_keys=True, ensure_ascii=False)
    parts = (m.get("parts") or m.get("blocks")) if content is None else content
    if isinstance(parts, list):
        texts = [t for p in parts if isinstance(p, dict) for t in [_part_text(p)] if t is not None]
        if texts:
            return "\n".join(texts)
        if content is not None and not any(isinstance(p, dict) and "type" in p for p in parts):
            # a list of values, not of typed parts: what a tool returned, as JSON
            return json.dumps(content, sort_keys=True, ensure_ascii=False) if content else None
    return None


def answers_tools(m: dict) -> bool:
    """Whether a message holds nothing but what tools returned (GenAI ``tool_call_response``
    parts, Gemini ``function_response`` parts): the tools speak it, whatever role its writer
    filed it under (pydantic-ai and Gemini file tool results under ``user``)."""
    parts = m.get("parts") if m.get("content") is None else m.get("content")
    return (
        isinstance(parts, list)
        and bool(parts)
        and all(
            isinstance(p, dict)
            and (p.get("type") == "tool_call_response" or "function_response" in p)
            for p in parts
        )
    )


def _part_text(part: dict) -> str | None:
    """A content part's text: a text part's, or what a tool returned in a GenAI
    ``tool_call_response`` part (its ``response``; pydantic-ai's ``result``) or a Gemini
    ``function_response`` (its ``response``): text as it is, anything else as JSON."""
    kind = part.get("type", part.get("block_type", "text"))  # LlamaIndex's blocks
    if kind in _TEXT_PARTS and isinstance(t := part.get("content") or part.get("text"), str):
        return t
    if kind == "tool_call_response" and part.get("response", part.get("result")) is not None:
        r = part.get("response", part.get("result"))  # pydantic-ai writes ``result``
    elif isinstance(part.get("function_response"), dict):  # Gemini's Part
        r = part["function_response"].get("response")
    else:
        return None
    if r is None:
        return None
    return r if isinstance(r, str) else json.dumps(r, sort_keys=True, ensure_ascii=False)
