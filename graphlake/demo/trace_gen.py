"""Agent traces in every file shape graphlake reads, written by the real libraries.

Each trace is data first (:class:`SpanSpec`): an agent answers a user's question with one
tool call, as the GenAI semantic conventions describe it: ``invoke_agent`` (root) -> ``chat``
(the user's message in, a tool call out) -> ``execute_tool`` -> ``chat`` (the history and the
tool's result in, the answer out). A second trace has the older conventions (messages as span
events, ``gen_ai.system``) and a tool that fails with an exception; a third family is a
retrieval-augmented agent under OpenInference's conventions. Where ``opentelemetry-sdk`` is
installed (the dev extra), a real TracerProvider records the spans and they are written as
OTLP JSON (protobuf's JSON mapping: base64 ids, as ``MessageToJson`` writes a request), as
OTLP JSON Lines with hex ids (the collector's file exporter), through the SDK's own
``ConsoleSpanExporter``, and as a Jaeger query-API export (its documented JSON model: no
Jaeger runs here). Without the SDK, :func:`write_otlp_json` writes the same spans as OTLP
JSON directly (the OTLP/JSON encoding: hex ids, enum integers), so the demo of a default
install still has them.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from graphlake.errors import importable

_QUESTION = "Which floor plan did the architect open in Revit first?"
_ANSWER = "The ground floor plan, at 00:04:10."
_MS = 1_000_000  # nanoseconds


@dataclass(frozen=True)
class SpanSpec:
    """One span of a trace, times in milliseconds from the trace's start. A ``parent`` is
    the ``key`` of a span listed before it; ``error`` is (exception type, message, at ms,
    status description): the exception recorded as the SDK records one, the status ERROR."""

    key: str
    name: str
    start_ms: float
    end_ms: float
    attributes: dict
    parent: str | None = None
    events: tuple[tuple[str, dict, float], ...] = ()
    error: tuple[str, str, float, str] | None = None


@dataclass(frozen=True)
class TraceSet:
    """Traces of one service: the resource, the instrumentation scope and, per trace, its
    start (ns since the epoch) and spans."""

    resource: dict
    scope: tuple[str, str]
    traces: list[tuple[int, list[SpanSpec]]] = field(default_factory=list)
    seed: int = 0


def genai_traces(seed: int = 0) -> TraceSet:
    """The floor-plan agent under the GenAI conventions, new (v1.37+) and old (v1.36)."""
    t0 = 1_760_000_000_000_000_000 + seed * 10**12
    user = {"role": "user", "parts": [{"type": "text", "content": _QUESTION}]}
    call = {
        "role": "assistant",
        "parts": [
            {
                "type": "tool_call",
                "id": "call_1",
                "name": "search_frames",
                "arguments": {"query": "Revit floor plan"},
            }
        ],
    }
    result = {"hits": [{"t": 250.0, "text": "Revit - Ground Floor"}]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": _ANSWER}]}
    tool_msg = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": result}],
    }
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"}
    new = [
        SpanSpec(
            "agent",
            "invoke_agent floorplan",
            0,
            2_050,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "floorplan",
                "gen_ai.conversation.id": "conv-1",
                "gen_ai.provider.name": "openai",
            },
        ),
        SpanSpec(
            "chat1",
            "chat gpt-4o",
            5,
            900,
            {
                **chat,
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.request.temperature": 0.2,
                "gen_ai.usage.input_tokens": 42,
                "gen_ai.usage.output_tokens": 17,
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.output.messages": json.dumps([call]),
            },
            parent="agent",
        ),
        SpanSpec(
            "tool",
            "execute_tool search_frames",
            910,
            1_300,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search_frames",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": json.dumps({"query": "Revit floor plan"}),
                "gen_ai.tool.call.result": json.dumps(result),
            },
            parent="agent",
        ),
        SpanSpec(
            "chat2",
            "chat gpt-4o",
            1_310,
            2_000,
            {
                **chat,
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 88,
                "gen_ai.usage.output_tokens": 12,
                "gen_ai.input.messages": json.dumps([user, call, tool_msg]),
                "gen_ai.output.messages": json.dumps([answer]),
            },
            parent="agent",
        ),
    ]
    # the older conventions: gen_ai.system, messages as span events, a failing tool
    old = [
        SpanSpec(
            "old",
            "chat claude-3-5-sonnet",
            0,
            600,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "anthropic",
                "gen_ai.request.model": "claude-3-5-sonnet",
                "gen_ai.usage.input_tokens": 20,
                "gen_ai.usage.output_tokens": 9,
            },
            events=(
                ("gen_ai.system.message", {"content": "You are a drafting assistant."}, 1),
                ("gen_ai.user.message", {"content": "Export the plan as PDF."}, 2),
                (
                    "gen_ai.choice",
                    {"index": 0, "finish_reason": "tool_calls", "message": "calling export_pdf"},
                    400,
                ),
            ),
        ),
        SpanSpec(
            "fail",
            "execute_tool export_pdf",
            410,
            510,
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "export_pdf"},
            parent="old",
            error=("PermissionError", "the plotter queue is locked", 500, "export failed"),
        ),
    ]
    return TraceSet(
        {"service.name": "floorplan-agent", "service.instance.id": f"demo-{seed}"},
        ("graphlake.demo.agent", "1.0"),
        [(t0, new), (t0 + 60_000 * _MS, old)],
        seed,
    )


def openinference_traces(seed: int = 0) -> TraceSet:
    """A retrieval-augmented agent under OpenInference's attribute names (checked against
    ``openinference-semantic-conventions`` in tests/test_traces_otel.py)."""
    t0 = 1_770_000_000_000_000_000 + seed * 10**12
    question = "When did the architect switch from Revit to AutoCAD?"
    docs = [("frame-250", "Revit - Ground Floor", 0.82), ("frame-760", "AutoCAD 2024 - Plan", 0.77)]
    msgs = [("input", 0, "system", "Answer from the frames."), ("input", 1, "user", question)]
    msgs.append(("output", 0, "assistant", "At 00:12:40."))
    spans = [
        SpanSpec(
            "agent",
            "rag_agent",
            0,
            720,
            {
                "openinference.span.kind": "AGENT",
                "agent.name": "rag_agent",
                "input.value": question,
                "output.value": "At 00:12:40.",
                "session.id": "chat-7",
            },
        ),
        SpanSpec(
            "retrieve",
            "retrieve frames",
            2,
            80,
            {
                "openinference.span.kind": "RETRIEVER",
                "input.value": question,
                **{
                    f"retrieval.documents.{i}.document.{key}": value
                    for i, (doc_id, text, score) in enumerate(docs)
                    for key, value in (("id", doc_id), ("content", text), ("score", score))
                },
            },
            parent="agent",
        ),
        SpanSpec(
            "llm",
            "ChatCompletion",
            90,
            700,
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                **{
                    f"llm.{side}_messages.{i}.message.{key}": value
                    for side, i, role, content in msgs
                    for key, value in (("role", role), ("content", content))
                },
                "llm.token_count.prompt": 120,
                "llm.token_count.completion": 8,
                "llm.token_count.total": 128,
                "llm.invocation_parameters": json.dumps({"temperature": 0}),
            },
            parent="agent",
        ),
        SpanSpec(
            "tool",
            "clock_to_seconds",
            710,
            715,
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "clock_to_seconds",
                "tool.parameters": json.dumps({"clock": "00:12:40"}),
                "output.value": "760",
            },
            parent="agent",
        ),
    ]
    return TraceSet(
        {"service.name": "rag-agent", "service.instance.id": f"demo-{seed}"},
        ("openinference.instrumentation.demo", "0.1"),
        [(t0, spans)],
        seed,
    )


def have_otel_sdk() -> bool:
    """Whether the OpenTelemetry SDK and its OTLP encoder are installed (the dev extra)."""
    return importable(
        "opentelemetry.exporter.otlp.proto.common.trace_encoder", "opentelemetry.sdk.trace"
    )


def _record_spans(traces: TraceSet):
    """Run the traces through a real TracerProvider; the finished spans and console text."""
    import io

    from opentelemetry import trace as api
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.trace import Status, StatusCode

    class SeededIds(IdGenerator):
        """Ids drawn from the traces' seed: the same demo writes the same trace ids, so
        running it again adds no sessions (the SDK's default draws new ones every run)."""

        def __init__(self, seed: str):
            self._rng = random.Random(seed)

        def generate_span_id(self) -> int:
            return self._rng.getrandbits(64) or 1

        def generate_trace_id(self) -> int:
            return self._rng.getrandbits(128) or 1

    memory, console = InMemorySpanExporter(), io.StringIO()
    provider = TracerProvider(
        resource=Resource.create(traces.resource),
        id_generator=SeededIds(f"{traces.seed}/{traces.scope[0]}"),
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
    tracer = provider.get_tracer(*traces.scope)
    for t0, specs in traces.traces:
        live: dict[str, Any] = {}
        for s in specs:  # a parent is listed (and started) before its children
            ctx = api.set_span_in_context(live[s.parent]) if s.parent else None
            span = tracer.start_span(
                s.name, context=ctx, start_time=t0 + int(s.start_ms * _MS), attributes=s.attributes
            )
            for name, attrs, at in s.events:
                span.add_event(name, attrs, t0 + int(at * _MS))
            if s.error:
                kind, message, at, status = s.error
                exc = getattr(builtins, kind)(message)
                span.record_exception(exc, timestamp=t0 + int(at * _MS))
                span.set_status(Status(StatusCode.ERROR, status))
            live[s.key] = span
        for s in sorted(specs, key=lambda s: s.parent is None):  # children end first
            live[s.key].end(end_time=t0 + int(s.end_ms * _MS))
    provider.shutdown()
    return memory.get_finished_spans(), console.getvalue()


def _any_value(v) -> dict:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}  # int64 is a string in OTLP/JSON
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def _kv(attrs: dict) -> list[dict]:
    return [{"key": k, "value": _any_value(v)} for k, v in attrs.items()]


def otlp_request(traces: TraceSet) -> dict:
    """The traces as one OTLP/JSON export request, written without the SDK: hex ids derived
    from the seed and the scope, times as nanosecond strings, enums as integers."""

    def hexid(*parts, n: int) -> str:
        key = "/".join(map(str, (traces.seed, traces.scope[0], *parts)))
        return hashlib.sha256(key.encode()).hexdigest()[:n]

    spans = []
    for i, (t0, specs) in enumerate(traces.traces):
        trace_id = hexid("trace", i, n=32)
        for s in specs:
            events = [
                {"timeUnixNano": str(t0 + int(at * _MS)), "name": name, "attributes": _kv(a)}
                for name, a, at in s.events
            ]
            status: dict = {}
            if s.error:
                kind, message, at, description = s.error
                events.append(
                    {
                        "timeUnixNano": str(t0 + int(at * _MS)),
                        "name": "exception",
                        "attributes": _kv(
                            {
                                "exception.type": kind,
                                "exception.message": message,
                                # as traceback prints an exception that was never raised
                                "exception.stacktrace": f"{kind}: {message}\n",
                                "exception.escaped": "False",
                            }
                        ),
                    }
                )
                status = {"code": 2, "message": description}
            spans.append(
                {
                    "traceId": trace_id,
                    "spanId": hexid("span", i, s.key, n=16),
                    **({"parentSpanId": hexid("span", i, s.parent, n=16)} if s.parent else {}),
                    "name": s.name,
                    "kind": 1,
                    "startTimeUnixNano": str(t0 + int(s.start_ms * _MS)),
                    "endTimeUnixNano": str(t0 + int(s.end_ms * _MS)),
                    "attributes": _kv(s.attributes),
                    "events": events,
                    "status": status,
                }
            )
    name, version = traces.scope
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _kv(traces.resource)},
                "scopeSpans": [{"scope": {"name": name, "version": version}, "spans": spans}],
            }
        ]
    }


def write_otlp_json(path: Path, traces: TraceSet) -> tuple[Path, str]:
    """Write ``traces`` as OTLP JSON at ``path``: recorded by the SDK where it is installed,
    else encoded directly. Returns the path and which writer wrote it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if have_otel_sdk():
        request, writer = _sdk_request(traces), "the OpenTelemetry SDK"
    else:
        request, writer = otlp_request(traces), "graphlake (the OpenTelemetry SDK is absent)"
    path.write_text(json.dumps(request, indent=1))
    return path, writer


def _sdk_request(traces: TraceSet) -> dict:
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans, _ = _record_spans(traces)
    return json.loads(MessageToJson(encode_spans(spans)))


def _hex_ids(obj):
    """Protobuf's JSON mapping writes ids as base64; OTLP JSON (and the collector) as hex."""
    if isinstance(obj, dict):
        return {
            k: (
                base64.b64decode(v).hex()
                if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str) and v
                else _hex_ids(v)
            )
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_hex_ids(v) for v in obj]
    return obj


def _jaeger(request: dict) -> dict:
    """The spans of an OTLP request (hex ids) in Jaeger's query-API JSON model."""

    def tags(attrs):
        out = []
        for kv in attrs:
            v = kv["value"]
            key, val = next(iter(v.items()))
            typ = {"stringValue": "string", "intValue": "int64", "doubleValue": "float64",
                   "boolValue": "bool"}.get(key, "string")  # fmt: skip
            out.append({"key": kv["key"], "type": typ,
                        "value": int(val) if typ == "int64" else val})  # fmt: skip
        return out

    traces: dict[str, dict] = {}
    for rs in request["resourceSpans"]:
        process = {
            "serviceName": next(
                kv["value"]["stringValue"]
                for kv in rs["resource"]["attributes"]
                if kv["key"] == "service.name"
            ),
            "tags": tags(
                [kv for kv in rs["resource"]["attributes"] if kv["key"] != "service.name"]
            ),
        }
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                trace = traces.setdefault(
                    sp["traceId"],
                    {"traceID": sp["traceId"], "spans": [], "processes": {"p1": process}},
                )
                start = int(sp["startTimeUnixNano"]) // 1000
                span_tags = tags(sp.get("attributes", []))
                span_tags.append({"key": "span.kind", "type": "string", "value": "internal"})
                if (sp.get("status") or {}).get("code") == "STATUS_CODE_ERROR":
                    span_tags.append(
                        {"key": "otel.status_code", "type": "string", "value": "ERROR"}
                    )
                    span_tags.append({"key": "otel.status_description", "type": "string",
                                      "value": sp["status"].get("message", "")})  # fmt: skip
                trace["spans"].append(
                    {
                        "traceID": sp["traceId"],
                        "spanID": sp["spanId"],
                        "operationName": sp["name"],
                        "references": (
                            [
                                {
                                    "refType": "CHILD_OF",
                                    "traceID": sp["traceId"],
                                    "spanID": sp["parentSpanId"],
                                }
                            ]  # fmt: skip
                            if sp.get("parentSpanId")
                            else []
                        ),
                        "startTime": start,
                        "duration": int(sp["endTimeUnixNano"]) // 1000 - start,
                        "tags": span_tags,
                        "logs": [
                            {
                                "timestamp": int(e["timeUnixNano"]) // 1000,
                                "fields": [{"key": "event", "type": "string", "value": e["name"]}]
                                + tags(e.get("attributes", [])),
                            }
                            for e in sp.get("events", [])
                        ],
                        "processID": "p1",
                        "warnings": None,
                    }
                )
    return {"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0, "errors": None}


def write_otel_traces(folder: Path, seed: int = 0) -> dict[str, Path]:
    """The GenAI traces in every shape: ``{"otlp", "otlp-lines", "console", "jaeger"}``
    (needs the SDK: the console shape is the SDK's own exporter)."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans, console = _record_spans(genai_traces(seed))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    request = json.loads(MessageToJson(encode_spans(spans)))
    hexed = _hex_ids(request)
    paths = {
        "otlp": folder / "agent.otlp.json",
        "otlp-lines": folder / "agent.otlp.jsonl",
        "console": folder / "agent.console.txt",
        "jaeger": folder / "agent.jaeger.json",
    }
    paths["otlp"].write_text(json.dumps(request, indent=2))
    # the collector's file exporter: one request a line (here one per trace)
    lines = []
    for rs in hexed["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            by_trace: dict[str, list] = {}
            for sp in ss["spans"]:
                by_trace.setdefault(sp["traceId"], []).append(sp)
            for group in by_trace.values():
                lines.append({"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": group}]}]})
    paths["otlp-lines"].write_text("".join(json.dumps(x) + "\n" for x in lines))
    paths["console"].write_text(console)
    paths["jaeger"].write_text(json.dumps(_jaeger(hexed), indent=1))
    return paths


def write_openinference_trace(folder: Path, seed: int = 0) -> Path:
    """The OpenInference agent recorded by the SDK, written as OTLP JSON Lines with hex ids,
    as Phoenix's collector receives it."""
    request = _hex_ids(_sdk_request(openinference_traces(seed)))
    path = Path(folder) / "rag.openinference.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(request) + "\n")
    return path


def write_inspect_log(folder: Path, log_format: Literal["eval", "json"] = "eval") -> Path:
    """An inspect_ai evaluation run by inspect itself against its ``mockllm`` model: two
    samples, each a tool call (``add``) and an answer, scored with ``match`` (one right, one
    wrong). The mock's outputs carry their token usage: without it, mockllm counts tokens
    with tiktoken, which downloads its encoding. ``log_format`` is ``eval`` or ``json``."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate, system_message, use_tools
    from inspect_ai.tool import tool

    @tool
    def add():
        async def execute(x: int, y: int):
            """Add two numbers.

            Args:
                x: First number.
                y: Second number.
            """
            return x + y

        return execute

    outputs = []
    for _ in range(2):
        call = ModelOutput.for_tool_call("mockllm/model", "add", {"x": 1, "y": 1})
        call.usage = ModelUsage(input_tokens=30, output_tokens=5, total_tokens=35)
        answer = ModelOutput.from_content("mockllm/model", "2")
        answer.usage = ModelUsage(input_tokens=45, output_tokens=1, total_tokens=46)
        outputs += [call, answer]
    task = Task(
        dataset=[
            Sample(id="s1", input="What is 1+1?", target="2"),
            Sample(id="s2", input="What is 1+2?", target="3"),
        ],
        solver=[system_message("Be brief."), use_tools(add()), generate()],
        scorer=match(),
        name="arithmetic",
    )
    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(folder),
        log_format=log_format,
        display="none",
        max_samples=1,  # the mock's outputs are taken in order
    )
    if log.status != "success":
        raise RuntimeError(f"the inspect run failed: {log.error}")
    return Path(log.location)


def have_inspect() -> bool:
    """Whether inspect_ai is installed (the dev extra)."""
    return importable("inspect_ai")


def inspect_log_by_hand(folder: Path) -> Path:
    """The evaluation :func:`write_inspect_log` runs, as the ``.json`` log inspect writes of
    it (``EvalLog``: eval, plan, results, samples with messages, model and tool events,
    scores and usage), for an install without inspect_ai. Ids and times are fixed."""
    t0 = 1_775_000_000.0
    samples, usage = [], {"input_tokens": 75, "output_tokens": 6, "total_tokens": 81}
    for k, (sid, question, target) in enumerate((("s1", "1+1", "2"), ("s2", "1+2", "3"))):
        at = t0 + 10 * k

        def ts(dt: float, at: float = at) -> str:
            return datetime.fromtimestamp(at + dt, UTC).isoformat()

        call_id = f"call_add_{sid}"
        call = {"id": call_id, "function": "add", "type": "function", "arguments": {"x": 1, "y": 1}}
        messages = [
            {"id": f"{sid}-m0", "content": "Be brief.", "role": "system"},
            {"id": f"{sid}-m1", "content": f"What is {question}?", "role": "user",
             "source": "input"},
            {"id": f"{sid}-m2", "content": "tool call for tool add", "role": "assistant",
             "source": "generate", "model": "mockllm/model", "tool_calls": [call]},
            {"id": f"{sid}-m3", "content": "2", "role": "tool", "tool_call_id": call_id,
             "function": "add"},
            {"id": f"{sid}-m4", "content": "2", "role": "assistant", "source": "generate",
             "model": "mockllm/model"},
        ]  # fmt: skip

        def model_event(k: int, at_s: float, stop: str, ts=ts, messages=messages) -> dict:
            return {
                "event": "model",
                "model": "mockllm/model",
                "input": messages[:k],
                "tools": [],
                "tool_choice": "auto",
                "config": {},
                "output": {
                    "model": "mockllm/model",
                    "choices": [{"message": messages[k], "stop_reason": stop}],
                },
                "timestamp": ts(at_s),
                "completed": ts(at_s + 0.01),
            }

        samples.append(
            {
                "id": sid,
                "epoch": 1,
                "input": f"What is {question}?",
                "target": target,
                "messages": messages,
                "scores": {
                    "match": {
                        "value": "C" if target == "2" else "I",
                        "answer": "2",
                        "explanation": "2",
                    }
                },
                "events": [
                    model_event(2, 0.01, "tool_calls"),
                    {
                        "event": "tool",
                        "type": "function",
                        "id": call_id,
                        "function": "add",
                        "arguments": call["arguments"],
                        "result": 2,
                        "timestamp": ts(0.03),
                        "completed": ts(0.04),
                    },
                    model_event(4, 0.05, "stop"),
                ],  # fmt: skip
                "model_usage": {"mockllm/model": usage},
                "started_at": ts(0),
                "completed_at": ts(0.07),
                "total_time": 0.07,
            }
        )
    log = {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": "demoEval0000000000000001",
            "run_id": "demoRun00000000000000001",
            "created": datetime.fromtimestamp(t0, UTC).isoformat(),
            "task": "arithmetic",
            "task_id": "demoTask0000000000000001",
            "model": "mockllm/model",
            "dataset": {"samples": 2, "sample_ids": ["s1", "s2"]},
            "config": {},
        },
        "plan": {
            "name": "plan",
            "steps": [{"solver": n} for n in ("system_message", "use_tools", "generate")],
        },
        "results": {
            "total_samples": 2,
            "completed_samples": 2,
            "scores": [
                {
                    "name": "match",
                    "scorer": "match",
                    "metrics": {"accuracy": {"name": "accuracy", "value": 0.5}},
                }
            ],
        },  # fmt: skip
        "samples": samples,
    }
    path = Path(folder) / "arithmetic.inspect.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(log, indent=1))
    return path
