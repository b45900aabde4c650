"""Agent traces written by the real OpenTelemetry SDK, in every file shape graphlake reads.

An agent answers a user's question with one tool call, as the GenAI semantic conventions
describe it: ``invoke_agent`` (root) -> ``chat`` (the user's message in, a tool call out) ->
``execute_tool`` -> ``chat`` (the history and the tool's result in, the answer out). A second
trace has the older conventions (messages as span events, ``gen_ai.system``) and a tool that
fails with an exception. The SDK records the spans; they are then written as OTLP JSON
(protobuf's JSON mapping: base64 ids, as ``MessageToJson`` writes a request), as OTLP JSON
Lines with hex ids (the collector's file exporter), through the SDK's own
``ConsoleSpanExporter``, and as a Jaeger query-API export (its documented JSON model: no
Jaeger runs here). Needs ``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-common``
(the dev extra).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Literal

_QUESTION = "Which floor plan did the architect open in Revit first?"
_ANSWER = "The ground floor plan, at 00:04:10."


def _record_spans(seed: int = 0):
    """Run the two traces through a real TracerProvider; the finished spans and console text."""
    import io

    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    memory, console = InMemorySpanExporter(), io.StringIO()
    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": "floorplan-agent", "service.instance.id": f"demo-{seed}"}
        )
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
    tracer = provider.get_tracer("graphlake.demo.agent", "1.0")
    t0 = 1_760_000_000_000_000_000 + seed * 10**12
    ms = 1_000_000

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
    agent = tracer.start_span(
        "invoke_agent floorplan",
        start_time=t0,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "floorplan",
            "gen_ai.conversation.id": "conv-1",
            "gen_ai.provider.name": "openai",
        },
    )
    from opentelemetry import trace as api

    ctx = api.set_span_in_context(agent)
    chat1 = tracer.start_span(
        "chat gpt-4o",
        context=ctx,
        start_time=t0 + 5 * ms,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.request.temperature": 0.2,
            "gen_ai.usage.input_tokens": 42,
            "gen_ai.usage.output_tokens": 17,
            "gen_ai.input.messages": json.dumps([user]),
            "gen_ai.output.messages": json.dumps([call]),
        },
    )
    chat1.end(end_time=t0 + 900 * ms)
    tool = tracer.start_span(
        "execute_tool search_frames",
        context=ctx,
        start_time=t0 + 910 * ms,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search_frames",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": json.dumps({"query": "Revit floor plan"}),
            "gen_ai.tool.call.result": json.dumps(result),
        },
    )
    tool.end(end_time=t0 + 1_300 * ms)
    tool_msg = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": result}],
    }
    chat2 = tracer.start_span(
        "chat gpt-4o",
        context=ctx,
        start_time=t0 + 1_310 * ms,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 88,
            "gen_ai.usage.output_tokens": 12,
            "gen_ai.input.messages": json.dumps([user, call, tool_msg]),
            "gen_ai.output.messages": json.dumps([answer]),
        },
    )
    chat2.end(end_time=t0 + 2_000 * ms)
    agent.end(end_time=t0 + 2_050 * ms)

    # the older conventions: gen_ai.system, messages as span events, a failing tool
    t1 = t0 + 60_000 * ms
    old = tracer.start_span(
        "chat claude-3-5-sonnet",
        start_time=t1,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "anthropic",
            "gen_ai.request.model": "claude-3-5-sonnet",
            "gen_ai.usage.input_tokens": 20,
            "gen_ai.usage.output_tokens": 9,
        },
    )
    old.add_event("gen_ai.system.message", {"content": "You are a drafting assistant."}, t1 + ms)
    old.add_event("gen_ai.user.message", {"content": "Export the plan as PDF."}, t1 + 2 * ms)
    old.add_event(
        "gen_ai.choice",
        {"index": 0, "finish_reason": "tool_calls", "message": "calling export_pdf"},
        t1 + 400 * ms,
    )
    fail = tracer.start_span(
        "execute_tool export_pdf",
        context=api.set_span_in_context(old),
        start_time=t1 + 410 * ms,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "export_pdf"},
    )
    fail.record_exception(PermissionError("the plotter queue is locked"), timestamp=t1 + 500 * ms)
    fail.set_status(Status(StatusCode.ERROR, "export failed"))
    fail.end(end_time=t1 + 510 * ms)
    old.end(end_time=t1 + 600 * ms)
    provider.shutdown()
    return memory.get_finished_spans(), console.getvalue()


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
    """The same two traces in every shape: ``{"otlp", "otlp-lines", "console", "jaeger"}``."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans, console = _record_spans(seed)
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
    """A retrieval-augmented agent traced with OpenInference's conventions (the attribute
    names from ``openinference-semantic-conventions``), recorded by the OpenTelemetry SDK
    and written as OTLP JSON Lines with hex ids, as Phoenix's collector receives it."""
    from google.protobuf.json_format import MessageToJson
    from openinference.semconv.trace import DocumentAttributes as D
    from openinference.semconv.trace import MessageAttributes as M
    from openinference.semconv.trace import OpenInferenceSpanKindValues as K
    from openinference.semconv.trace import SpanAttributes as A
    from opentelemetry import trace as api
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("openinference.instrumentation.demo", "0.1")
    t0 = 1_770_000_000_000_000_000 + seed * 10**12
    ms = 1_000_000
    question = "When did the architect switch from Revit to AutoCAD?"
    agent = tracer.start_span(
        "rag_agent",
        start_time=t0,
        attributes={
            A.OPENINFERENCE_SPAN_KIND: K.AGENT.value,
            A.AGENT_NAME: "rag_agent",
            A.INPUT_VALUE: question,
            A.OUTPUT_VALUE: "At 00:12:40.",
            "session.id": "chat-7",
        },
    )
    ctx = api.set_span_in_context(agent)

    def child(name: str, start_ms: int, end_ms: int, attributes: dict) -> None:
        span = tracer.start_span(
            name, context=ctx, start_time=t0 + start_ms * ms, attributes=attributes
        )
        span.end(end_time=t0 + end_ms * ms)

    docs = [("frame-250", "Revit - Ground Floor", 0.82), ("frame-760", "AutoCAD 2024 - Plan", 0.77)]
    child(
        "retrieve frames",
        2,
        80,
        {
            A.OPENINFERENCE_SPAN_KIND: K.RETRIEVER.value,
            A.INPUT_VALUE: question,
            **{
                f"{A.RETRIEVAL_DOCUMENTS}.{i}.{key}": value
                for i, (doc_id, text, score) in enumerate(docs)
                for key, value in (
                    (D.DOCUMENT_ID, doc_id),
                    (D.DOCUMENT_CONTENT, text),
                    (D.DOCUMENT_SCORE, score),
                )
            },
        },
    )
    child(
        "ChatCompletion",
        90,
        700,
        {
            A.OPENINFERENCE_SPAN_KIND: K.LLM.value,
            A.LLM_MODEL_NAME: "gpt-4o-mini",
            f"{A.LLM_INPUT_MESSAGES}.0.{M.MESSAGE_ROLE}": "system",
            f"{A.LLM_INPUT_MESSAGES}.0.{M.MESSAGE_CONTENT}": "Answer from the frames.",
            f"{A.LLM_INPUT_MESSAGES}.1.{M.MESSAGE_ROLE}": "user",
            f"{A.LLM_INPUT_MESSAGES}.1.{M.MESSAGE_CONTENT}": question,
            f"{A.LLM_OUTPUT_MESSAGES}.0.{M.MESSAGE_ROLE}": "assistant",
            f"{A.LLM_OUTPUT_MESSAGES}.0.{M.MESSAGE_CONTENT}": "At 00:12:40.",
            A.LLM_TOKEN_COUNT_PROMPT: 120,
            A.LLM_TOKEN_COUNT_COMPLETION: 8,
            A.LLM_TOKEN_COUNT_TOTAL: 128,
            A.LLM_INVOCATION_PARAMETERS: json.dumps({"temperature": 0}),
        },
    )
    child(
        "clock_to_seconds",
        710,
        715,
        {
            A.OPENINFERENCE_SPAN_KIND: K.TOOL.value,
            A.TOOL_NAME: "clock_to_seconds",
            A.TOOL_PARAMETERS: json.dumps({"clock": "00:12:40"}),
            A.OUTPUT_VALUE: "760",
        },
    )
    agent.end(end_time=t0 + 720 * ms)
    provider.shutdown()
    request = _hex_ids(json.loads(MessageToJson(encode_spans(memory.get_finished_spans()))))
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
