"""OpenTelemetry traces written by the real SDK land in the lake, in every file shape, the same.

The spans come from ``opentelemetry-sdk`` (``graphlake.demo.trace_gen``): OTLP JSON as
protobuf's JSON mapping writes it (base64 ids), OTLP JSON Lines with hex ids (the collector's
file exporter), the SDK's ``ConsoleSpanExporter`` stream, and a Jaeger JSON export.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from graphlake.api import connect  # noqa: E402
from graphlake.demo.trace_gen import write_otel_traces  # noqa: E402
from graphlake.ingest.otel import norm_id, time_ns  # noqa: E402
from graphlake.ingest.spans import SpanError  # noqa: E402
from graphlake.pipeline import ingest_path  # noqa: E402

SHAPES = ("otlp", "otlp-lines", "console", "jaeger")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    return write_otel_traces(tmp_path_factory.mktemp("otel"))


def _rows(lake: Path, sql: str) -> list[dict]:
    return connect(lake).sql(sql).to_pylist()


# what must agree across shapes: every column but attrs (the formats keep different extras)
_NODES = (
    "SELECT session_id, node_id, actor_type, actor, label, detail, t_start, t_end, "
    "out_degree, in_degree FROM nodes ORDER BY session_id, node_id"
)
_EDGES = "SELECT session_id, src, dst, kind FROM edges ORDER BY ALL"
_EVENTS = (
    "SELECT session_id, seq, t, actor, actor_type, kind, channel, request_id, node_id, text, "
    "payload FROM events ORDER BY session_id, seq"
)
_ANNOTATIONS = "SELECT session_id, target_id, label, value FROM annotations ORDER BY ALL"
_SESSIONS = (
    "SELECT session_id, title, goal, domain, participants, duration_s FROM sessions ORDER BY 1"
)


def test_every_shape_lands_the_same_rows(traces, tmp_path):
    """The same spans written four ways give the same sessions, nodes, edges, events and
    usage; the first (OTLP JSON) is checked against what the SDK recorded."""
    lakes = {}
    for shape in SHAPES:
        lakes[shape] = tmp_path / shape
        stats, _ = ingest_path("otel", traces[shape], lakes[shape])
        assert not stats.rejected, (shape, stats.rejected)
    want = {q: _rows(lakes["otlp"], q) for q in (_NODES, _EDGES, _EVENTS, _ANNOTATIONS, _SESSIONS)}
    for shape in SHAPES[1:]:
        for q, rows in want.items():
            assert _rows(lakes[shape], q) == rows, (shape, q)

    nodes = {(n["label"], n["actor_type"], n["actor"]) for n in want[_NODES]}
    assert ("invoke_agent floorplan", "ai", "floorplan") in nodes
    assert ("chat gpt-4o", "ai", "gpt-4o-2024-08-06") in nodes  # the response model
    assert ("execute_tool search_frames", "tool", "tool:search_frames") in nodes
    assert ("execute_tool export_pdf", "tool", "tool:export_pdf") in nodes
    spans = [n for n in want[_NODES] if n["actor_type"] != "human"]
    assert len(spans) == 6  # every span the SDK recorded
    # the user's question is a human node once, although both chat calls carry it
    humans = [n for n in want[_NODES] if n["actor_type"] == "human"]
    assert sorted(n["detail"] for n in humans) == [
        "Export the plan as PDF.",
        "Which floor plan did the architect open in Revit first?",
    ]
    kinds = {(e["kind"], e["text"]) for e in want[_EVENTS]}
    assert ("tool_call", "search_frames") in kinds and ("tool_result", "search_frames") in kinds
    assert ("error", "the plotter queue is locked") in kinds  # the exception event
    assert ("error", "export failed") in kinds  # the span's error status
    assert ("message", "The ground floor plan, at 00:04:10.") in kinds
    calls = [e for e in want[_EVENTS] if e["kind"] in ("tool_call", "tool_result")]
    assert {e["request_id"] for e in calls if e["text"] == "search_frames"} == {"call_1"}
    usage = {(a["label"], a["value"]) for a in want[_ANNOTATIONS]}
    assert {("input_tokens", 42.0), ("output_tokens", 17.0), ("input_tokens", 88.0)} <= usage
    assert sum(a["value"] for a in want[_ANNOTATIONS] if a["label"] == "input_tokens") == 150
    parents = [e for e in want[_EDGES] if e["kind"] == "parent"]
    assert len(parents) == 4  # three children of the agent, the failing tool under its chat
    agent = next(s for s in want[_SESSIONS] if s["title"] == "invoke_agent floorplan")
    assert agent["duration_s"] == pytest.approx(2.05)
    assert "user" in agent["participants"] and "floorplan" in agent["participants"]


def test_fields_without_a_column_stay_in_attrs(traces, tmp_path):
    ingest_path("otel", traces["otlp"], tmp_path / "lake")
    rows = _rows(tmp_path / "lake", "SELECT label, attrs FROM nodes WHERE label = 'chat gpt-4o'")
    attrs = [json.loads(r["attrs"]) for r in rows]
    assert any(a.get("gen_ai.request.temperature") == 0.2 for a in attrs)
    assert all(a.get("gen_ai.provider.name") == "openai" for a in attrs)
    [session] = _rows(
        tmp_path / "lake", "SELECT attrs FROM sessions WHERE title = 'invoke_agent floorplan'"
    )
    kept = json.loads(session["attrs"])
    assert kept["resource"]["service.name"] == "floorplan-agent"
    assert kept["conversation_id"] == "conv-1"


def test_a_folder_is_sniffed_per_file_and_reingesting_adds_nothing(traces, tmp_path):
    folder = traces["otlp"].parent
    lake = tmp_path / "lake"
    stats, snap = ingest_path("traces", folder, lake)
    # the four files hold the same two traces: each lands once, from the first file read, and
    # the three copies of each are rejects that name the file kept
    assert snap is not None and stats.added["nodes"] == 8
    assert len(_rows(lake, "SELECT session_id FROM sessions")) == 2
    rejects = _rows(lake, "SELECT target_table, reason FROM rejects")
    assert len(rejects) == 6 and all(r["target_table"] == "sessions" for r in rejects)
    again, snap2 = ingest_path("traces", folder, lake)
    assert snap2 is None and not again.added


def _request(spans: list[dict]) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]
                },
                "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}],
            }
        ]
    }


def _span(span_id: str, parent: str = "", name: str = "work", **extra) -> dict:
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        **extra,
    }


def test_broken_links_are_rejects_and_the_spans_still_land(tmp_path):
    """A parent that is not in the trace, parent ids in a cycle and a second, different span
    with an id already seen: each a reject with its reason; every span is a node."""
    spans = [
        _span("eee91f3d3d3f1d01"),
        _span("eee91f3d3d3f1d02", parent="eee91f3d3d3f1d99"),  # parent not exported
        _span("eee91f3d3d3f1d03", parent="eee91f3d3d3f1d04"),  # 03 <-> 04: a cycle
        _span("eee91f3d3d3f1d04", parent="eee91f3d3d3f1d03"),
        _span("eee91f3d3d3f1d05", parent="eee91f3d3d3f1d01"),
        _span("eee91f3d3d3f1d05", parent="eee91f3d3d3f1d01", name="other"),  # duplicate id
        {"traceId": "zz", "spanId": "eee91f3d3d3f1d06"},  # unreadable id
    ]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(_request(spans)))
    stats, _ = ingest_path("otel", path, tmp_path / "lake")
    assert stats.accepted["nodes"] == 5
    reasons = [
        r["reason"] for r in _rows(tmp_path / "lake", "SELECT reason FROM rejects ORDER BY reason")
    ]
    assert any("names parent eee91f3d3d3f1d99, which is not in trace" in r for r in reasons)
    [cycle] = [r for r in reasons if "form a cycle" in r]  # one reject for the cycle
    assert "eee91f3d3d3f1d03, eee91f3d3d3f1d04" in cycle and "2 spans" in cycle
    assert any("appears twice" in r and "the first" in r for r in reasons)
    assert any("traceId 'zz' is neither 32 hex digits" in r for r in reasons)
    edges = _rows(tmp_path / "lake", "SELECT src, dst FROM edges")
    assert edges == [{"src": "eee91f3d3d3f1d01", "dst": "eee91f3d3d3f1d05"}]


def test_a_cut_stream_keeps_the_spans_before_the_cut_and_an_lfs_pointer_is_named(traces, tmp_path):
    text = traces["console"].read_text()
    cut = tmp_path / "cut.console.txt"
    cut.write_text(text[: text.rindex('"name"')])  # the last span (a root) printed half
    stats, _ = ingest_path("otel", cut, tmp_path / "lake")
    assert stats.accepted["nodes"] == 5 + 1  # the spans before the cut, and the user's turn
    rejects = _rows(tmp_path / "lake", "SELECT target_table, reason FROM rejects ORDER BY 1")
    assert [r["target_table"] for r in rejects] == ["edges", "nodes"]
    assert "not valid JSON" in rejects[1]["reason"] and "before it are kept" in rejects[1]["reason"]
    assert "which is not in trace" in rejects[0]["reason"]  # the cut span's child

    lines = traces["otlp-lines"].read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n" + lines[1][:50] + "\n")  # a truncated second line
    stats, _ = ingest_path("otel", bad, tmp_path / "lake2")
    assert stats.accepted["nodes"] > 0 and stats.rejected["nodes"] == 1

    pointer = tmp_path / "pointer.json"
    pointer.write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 12\n"
    )
    stats, _ = ingest_path("otel", pointer, tmp_path / "lake3")
    [reject] = _rows(tmp_path / "lake3", "SELECT reason FROM rejects")
    assert "Git LFS pointer" in reject["reason"] and "git lfs pull" in reject["reason"]


@pytest.mark.parametrize(
    "value,nbytes,want",
    [
        ("5B8EFFF798038103D269B633813FC60C", 16, "5b8efff798038103d269b633813fc60c"),
        ("0x5b8efff798038103", 8, "5b8efff798038103"),
        ("W47/95gDgQPSabYzgT/GDA==", 16, "5b8efff798038103d269b633813fc60c"),  # base64
        (6597491943016726787, 8, "5b8efff798038103"),  # a decimal integer
        ("6597491943016726787", 8, "5b8efff798038103"),
        ("0000000000000000", 8, None),  # OTLP's "no parent"
        ("", 8, None),
    ],
)
def test_ids_in_every_encoding_become_hex(value, nbytes, want):
    assert norm_id(value, nbytes, "id") == want


def test_times_in_every_encoding_become_nanoseconds():
    ns = 1_700_000_000_123_456_000
    assert time_ns("1700000000123456000", "t") == ns
    assert time_ns(ns, "t") == ns
    assert time_ns("2023-11-14T22:13:20.123456Z", "t") == ns
    assert time_ns([1_700_000_000, 123_456_000], "t") == ns
    with pytest.raises(SpanError, match="no time zone"):
        time_ns("2023-11-14T22:13:20", "t")


def test_openinference_spans_map_to_models_tools_retrievals_and_usage(tmp_path):
    """OpenInference's conventions (attribute names from openinference-semantic-conventions,
    spans recorded by the OpenTelemetry SDK): the span kind gives the actor, the flattened
    messages become events and the user's turn a human node, retrieved documents become
    retrieval events, token counts usage annotations."""
    pytest.importorskip("openinference.semconv")
    from graphlake.demo.trace_gen import write_openinference_trace

    path = write_openinference_trace(tmp_path / "src")
    stats, _ = ingest_path("traces", path, tmp_path / "lake")
    assert not stats.rejected
    nodes = _rows(tmp_path / "lake", "SELECT label, actor_type, actor, detail, attrs FROM nodes")
    by_label = {n["label"]: n for n in nodes}
    assert (by_label["rag_agent"]["actor_type"], by_label["rag_agent"]["actor"]) == (
        "ai",
        "rag_agent",
    )
    assert by_label["ChatCompletion"]["actor"] == "gpt-4o-mini"
    assert by_label["clock_to_seconds"]["actor"] == "tool:clock_to_seconds"
    assert by_label["retrieve frames"]["detail"] == "retrieval"
    assert by_label["user message"]["detail"].startswith("When did the architect")
    kept = json.loads(by_label["ChatCompletion"]["attrs"])
    assert kept["llm.invocation_parameters"] == '{"temperature": 0}'
    assert not any(k.startswith("llm.input_messages") for k in kept)  # read into events
    events = _rows(tmp_path / "lake", "SELECT kind, text, request_id, payload FROM events")
    docs = [e for e in events if e["kind"] == "retrieval"]
    assert [(d["request_id"], d["text"]) for d in docs] == [
        ("frame-250", "Revit - Ground Floor"),
        ("frame-760", "AutoCAD 2024 - Plan"),
    ]
    [result] = [e for e in events if e["kind"] == "tool_result"]
    assert result["payload"] == "760"  # output.value, already JSON
    usage = {
        a["label"]: a["value"]
        for a in _rows(tmp_path / "lake", "SELECT label, value FROM annotations")
    }
    assert usage == {"input_tokens": 120.0, "output_tokens": 8.0, "total_tokens": 128.0}


def test_a_phoenix_dump_with_nested_attributes_and_child_spans(tmp_path):
    """A span dump as Phoenix writes one: a JSON list, the kind as a top-level field, the
    attributes nested, children nested in ``child_spans`` (their parent implied)."""
    dump = [
        {
            "name": "agent",
            "context": {"trace_id": "aa" * 16, "span_id": "01" * 8},
            "span_kind": "AGENT",
            "parent_id": None,
            "start_time": "2026-01-01T10:00:00+00:00",
            "end_time": "2026-01-01T10:00:03+00:00",
            "status_code": "OK",
            "attributes": {"input": {"value": "hi"}},
            "events": [],
            "child_spans": [
                {
                    "name": "llm",
                    "context": {"trace_id": "aa" * 16, "span_id": "02" * 8},
                    "span_kind": "LLM",
                    "start_time": "2026-01-01T10:00:01+00:00",
                    "end_time": "2026-01-01T10:00:02+00:00",
                    "status_code": "ERROR",
                    "status_message": "rate limited",
                    "attributes": {
                        "llm": {
                            "model_name": "claude-sonnet",
                            "input_messages": [{"message": {"role": "user", "content": "hi"}}],
                            "token_count": {"prompt": 3},
                        }
                    },
                    "events": [],
                }
            ],
        }
    ]
    path = tmp_path / "phoenix.json"
    path.write_text(json.dumps(dump, indent=2))
    stats, _ = ingest_path("traces", path, tmp_path / "lake")
    assert not stats.rejected
    nodes = _rows(tmp_path / "lake", "SELECT label, actor_type, actor FROM nodes ORDER BY label")
    assert [(n["label"], n["actor"]) for n in nodes] == [
        ("agent", "agent"),
        ("llm", "claude-sonnet"),
        ("user message", "user"),
    ]
    edges = _rows(tmp_path / "lake", "SELECT src, dst, kind FROM edges WHERE kind = 'parent'")
    assert edges == [{"src": "01" * 8, "dst": "02" * 8, "kind": "parent"}]
    errors = _rows(tmp_path / "lake", "SELECT text FROM events WHERE kind = 'error'")
    assert errors == [{"text": "rate limited"}]
    [usage] = _rows(tmp_path / "lake", "SELECT label, value FROM annotations")
    assert (usage["label"], usage["value"]) == ("input_tokens", 3.0)


@pytest.mark.parametrize("family", ["genai", "openinference"])
def test_the_demos_otlp_without_the_sdk_reads_as_the_sdks(family, tmp_path):
    """A default install has no OpenTelemetry SDK; the demo then encodes the same spans as
    OTLP JSON itself. They give the rows the SDK's recording gives (ids aside: the SDK draws
    them at random)."""
    from graphlake.demo.trace_gen import (
        _sdk_request,
        genai_traces,
        openinference_traces,
        otlp_request,
    )

    spec = {"genai": genai_traces, "openinference": openinference_traces}[family]()
    shape = {
        "nodes": "SELECT actor_type, actor, label, detail, t_start, t_end, out_degree, "
        "in_degree FROM nodes",
        "edges": "SELECT kind, count(*) AS n FROM edges GROUP BY kind",
        "events": "SELECT kind, actor, t, text, payload, status FROM events",
        "annotations": "SELECT kind, label, value, text FROM annotations",
        "participants": "SELECT participant_id, name, kind, role FROM participants",
    }

    def rows(request: dict, name: str) -> dict:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(request))
        stats, _ = ingest_path("otel", path, tmp_path / name)
        assert not stats.rejected
        con = connect(tmp_path / name)
        return {t: sorted(map(json.dumps, con.sql(q).to_pylist())) for t, q in shape.items()}

    direct = rows(otlp_request(spec), "direct")
    assert direct == rows(_sdk_request(spec), "sdk")
    assert direct["nodes"] and direct["events"]


def test_the_openinference_trace_uses_the_conventions_own_names():
    """The demo's OpenInference spans are written without the conventions package (a
    default install lacks it): every name they use is the package's own."""
    semconv = pytest.importorskip("openinference.semconv.trace")
    from graphlake.demo.trace_gen import openinference_traces

    A, M, D = semconv.SpanAttributes, semconv.MessageAttributes, semconv.DocumentAttributes
    [(_, spans)] = openinference_traces().traces
    used = {k for s in spans for k in s.attributes}
    expected = {
        A.OPENINFERENCE_SPAN_KIND, A.AGENT_NAME, A.INPUT_VALUE, A.OUTPUT_VALUE,
        A.LLM_MODEL_NAME, A.LLM_TOKEN_COUNT_PROMPT, A.LLM_TOKEN_COUNT_COMPLETION,
        A.LLM_TOKEN_COUNT_TOTAL, A.LLM_INVOCATION_PARAMETERS, A.TOOL_NAME, A.TOOL_PARAMETERS,
        f"{A.RETRIEVAL_DOCUMENTS}.0.{D.DOCUMENT_ID}",
        f"{A.RETRIEVAL_DOCUMENTS}.1.{D.DOCUMENT_CONTENT}",
        f"{A.RETRIEVAL_DOCUMENTS}.1.{D.DOCUMENT_SCORE}",
        f"{A.LLM_INPUT_MESSAGES}.1.{M.MESSAGE_ROLE}",
        f"{A.LLM_OUTPUT_MESSAGES}.0.{M.MESSAGE_CONTENT}",
    }  # fmt: skip
    assert expected <= used, expected - used
    kinds = {s.attributes[A.OPENINFERENCE_SPAN_KIND] for s in spans}
    assert kinds == {k.value for k in semconv.OpenInferenceSpanKindValues} & kinds


def _iso_ns(text: str) -> int:
    from datetime import datetime

    ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(ts.timestamp()) * 1_000_000_000 + ts.microsecond * 1000


def test_an_any_agent_trace_lands_as_the_same_spans_printed(traces, tmp_path):
    """any-agent's ``AgentTrace`` export (``{"spans": [AgentSpan], "final_output"}``, each
    span a ReadableSpan as pydantic dumps it: integer ids in ``context`` and ``parent``,
    nanosecond times, lower-case kinds and status codes) holds the SDK's spans: they land as
    the console exporter's print of the same spans does."""
    text = traces["console"].read_text()
    dec, pos, printed = json.JSONDecoder(), 0, []
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos < len(text):
            obj, pos = dec.raw_decode(text, pos)
            printed.append(obj)

    def ctx(trace_id, span_id):
        return {"trace_id": int(trace_id, 16), "span_id": int(span_id, 16), "is_remote": False}

    spans = [
        {
            "name": p["name"],
            "kind": p["kind"].removeprefix("SpanKind.").lower(),
            "parent": ctx(p["context"]["trace_id"], p["parent_id"]) if p.get("parent_id") else None,
            "start_time": _iso_ns(p["start_time"]),
            "end_time": _iso_ns(p["end_time"]),
            "status": {
                "status_code": p["status"]["status_code"].lower(),
                "description": p["status"].get("description"),
            },
            "context": ctx(p["context"]["trace_id"], p["context"]["span_id"]),
            "attributes": p["attributes"],
            "links": [],
            "events": [{**e, "timestamp": _iso_ns(e["timestamp"])} for e in p.get("events", [])],
            "resource": p["resource"],
        }
        for p in printed
    ]
    agent_trace = tmp_path / "in" / "agent_trace.json"
    agent_trace.parent.mkdir()
    agent_trace.write_text(json.dumps({"spans": spans, "final_output": "The ground floor plan."}))
    lakes = {}
    for name, path in (("console", traces["console"]), ("any_agent", agent_trace)):
        lakes[name] = tmp_path / name
        stats, _ = ingest_path("traces", path, lakes[name])
        assert not stats.rejected, (name, stats.rejected)
    for q in (_NODES, _EDGES, _EVENTS, _ANNOTATIONS, _SESSIONS):
        assert _rows(lakes["any_agent"], q) == _rows(lakes["console"], q), q
    kept = [
        json.loads(n["attrs"] or "{}") for n in _rows(lakes["any_agent"], "SELECT attrs FROM nodes")
    ]
    assert any(k.get("any_agent.final_output") == "The ground floor plan." for k in kept)


def _json_or_text(text: str):
    """What any-agent's JSON text holds; text that is not JSON (a Python repr of arguments,
    as its LangChain instrumentation writes them) is the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _output(a: dict) -> tuple[str | None, str | None]:
    """(output, its type) of an any-agent span: ``genai.output``, later ``gen_ai.output``."""
    key = "genai.output" if "genai.output" in a else "gen_ai.output"
    return a.get(key), a.get(f"{key}.type")  # None: a call that wrote no output


def _model_said(a: dict) -> list[str]:
    """A model call's messages, parsed independently: its input messages (GenAI JSON text)
    and its output as it is, unless that is JSON of the framework's own message: LlamaIndex's
    ``ChatMessage`` (its text blocks) or LangChain's ``ChatGeneration`` (its content)."""
    said = [m["content"] for m in json.loads(a.get("gen_ai.input.messages", "[]"))]
    out, kind = _output(a)
    if out is None:  # no message to land
        return said
    decoded = json.loads(out) if kind == "json" else None
    if not isinstance(decoded, dict):
        return [*said, out]
    if "blocks" in decoded:
        return [*said, "\n".join(b["text"] for b in decoded["blocks"] if b["block_type"] == "text")]
    return [*said, decoded["message"]["content"]]


@pytest.mark.parametrize(
    "framework",
    ["TINYAGENT", "LLAMA_INDEX", "LANGCHAIN", "SMOLAGENTS", "OPENAI", "GOOGLE", "AGNO"],
)
def test_a_real_any_agent_trace_reads_as_any_agent_writes_it(tmp_path, framework):
    """Real AgentTraces from any-agent's own test runs (tests/fixtures/samples/any_agent), one
    per agent framework, two releases: its instrumentation names a model call ``call_llm`` and
    writes ``genai.output`` (later ``gen_ai.output``: the model's text, its tool calls as JSON,
    or the framework's own message object as JSON; a tool's result), ``gen_ai.tool.args``
    (JSON, or a Python repr) and, later, ``gen_ai.input.messages``. Each span is a node of the
    right actor, each call's output a message (LlamaIndex's and LangChain's message objects
    landed as raw JSON: now their text), each tool's arguments and result its call and
    result, each usage number an annotation, the final output on the root (it was lost: the
    root's parent is a context of null ids, not absent), against the json module's parse."""
    path = Path(__file__).parent / "fixtures" / "samples" / "any_agent" / f"{framework}_trace.json"
    trace = json.loads(path.read_text())
    spans = trace["spans"]
    lake = tmp_path / "lake"
    stats, _ = ingest_path("traces", path, lake)
    # a parent the trace does not hold (Google ADK's own spans, not exported) is a reject of
    # that edge; the span stays, as a root
    held = {s["context"]["span_id"] for s in spans}
    dangling = sorted(
        f"{s['parent']['span_id']:016x}"
        for s in spans
        if s["parent"]["span_id"] is not None and s["parent"]["span_id"] not in held
    )
    assert dict(stats.rejected) == ({"edges": len(dangling)} if dangling else {})
    reasons = [r["reason"] for r in _rows(lake, "SELECT reason FROM rejects")]
    assert sorted(r.split(" names parent ")[1].split(",")[0] for r in reasons) == dangling
    nodes = {n["node_id"]: n for n in _rows(lake, "SELECT * FROM nodes")}
    [root] = [s for s in spans if s["parent"]["span_id"] is None]  # a context of null ids
    kept = json.loads(nodes[f"{root['context']['span_id']:016x}"]["attrs"])
    assert kept["any_agent.final_output"] == trace["final_output"]  # was lost: not "no parent"
    humans = [n["detail"] for n in nodes.values() if n["actor_type"] == "human"]
    assert humans == [
        m["content"]
        for s in spans
        for m in json.loads(s["attributes"].get("gen_ai.input.messages", "[]"))
        if m["role"] == "user"
    ]  # each person's turn a node of its own, the spans' nodes besides
    assert len(nodes) == len(spans) + len(humans)
    for span in spans:
        a = span["attributes"]
        node = nodes[f"{span['context']['span_id']:016x}"]  # 64-bit ids as hex
        op = a["gen_ai.operation.name"]
        want = {
            "call_llm": (a.get("gen_ai.response.model") or a.get("gen_ai.request.model"), "ai"),
            "execute_tool": (f"tool:{a.get('gen_ai.tool.name')}", "tool"),
            "invoke_agent": (a.get("gen_ai.agent.name"), "ai"),
        }[op]
        assert (node["actor"], node["actor_type"]) == want, span["name"]
    events = _rows(lake, "SELECT * FROM events ORDER BY seq, event_id")
    said = sorted(e["text"] for e in events if e["kind"] == "message")
    calls = [
        s["attributes"] for s in spans if s["attributes"]["gen_ai.operation.name"] == "call_llm"
    ]
    assert said == sorted(t for a in calls for t in _model_said(a))
    assert not any(t.startswith("{") for t in said)
    tools = [s for s in spans if s["attributes"]["gen_ai.operation.name"] == "execute_tool"]
    by_tool = {e["text"]: e for e in events if e["kind"] == "tool_call"}
    got = {e["text"]: e for e in events if e["kind"] == "tool_result"}
    assert (
        len(by_tool)
        == len(tools)
        == len(got) + sum(_output(s["attributes"])[0] is None for s in tools)
    )
    for s in tools:
        name, a = s["attributes"]["gen_ai.tool.name"], s["attributes"]
        args = by_tool[name]["payload"]  # none written (the OpenAI Agents SDK's): none kept
        assert (json.loads(args) if args else None) == (
            _json_or_text(a["gen_ai.tool.args"]) if "gen_ai.tool.args" in a else None
        )
        # a result of type json that is not JSON ("no_output") is the text it is
        out = _output(a)[0]
        if out is None:  # a tool that returned nothing written: no result event
            assert name not in got
            continue
        assert json.loads(got[name]["payload"]) == _json_or_text(out)
    usage = sorted(
        (a["label"], a["value"]) for a in _rows(lake, "SELECT label, value FROM annotations")
    )
    assert usage == sorted(
        (k.removeprefix("gen_ai.usage."), v)
        for s in spans
        for k, v in s["attributes"].items()
        if k.startswith("gen_ai.usage.")
    )
    left = {k for n in nodes.values() for k in json.loads(n["attrs"] or "{}")}
    read = {"genai.output", "gen_ai.output", "gen_ai.tool.args", "gen_ai.input.messages"}
    assert not left & read  # read, not left (a lone output type, with no output, stays)


_DEEP = """
import json, sys
from graphlake.pipeline import ingest_path
stats, _ = ingest_path("otel", sys.argv[1], sys.argv[2])
print(json.dumps({"nodes": stats.accepted.get("nodes", 0), "edges": stats.accepted.get("edges", 0),
                  "rejected": sum(stats.rejected.values())}))
"""


@pytest.mark.parametrize("shape", ["chain", "cycle"])
def test_a_deep_chain_and_a_long_cycle_of_parents_resolve_in_one_pass(tmp_path, shape):
    """100,000 spans, each the parent of the next (a chain ran past 600 s: a walk up from
    every span), or all of them one cycle (each of its rejects named every id: 3 GiB for a
    30 MB file). Under a 2 GiB ceiling (the timeout only a backstop for a hang): the chain
    lands whole with its 99,999 parent edges; the cycle is one reject naming its first ids,
    and every span lands as a root."""
    from watchdog import run_bounded

    n = 100_000
    ids = [f"{k + 1:016x}" for k in range(n)]
    parents = [None, *ids[:-1]] if shape == "chain" else [ids[-1], *ids[:-1]]
    spans = [_span(i, parent=p) for i, p in zip(ids, parents, strict=True)]
    path = tmp_path / f"{shape}.json"
    path.write_text(json.dumps(_request(spans)))
    script = tmp_path / "deep.py"
    script.write_text(_DEEP)
    run = run_bounded(script, str(path), str(tmp_path / "lake"), timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["nodes"] == n
    if shape == "chain":
        assert got["edges"] >= n - 1 and got["rejected"] == 0
    else:
        assert got["rejected"] == 1
        [reason] = [r["reason"] for r in _rows(tmp_path / "lake", "SELECT reason FROM rejects")]
        assert "100,000 spans" in reason and "and 99,995 more" in reason and len(reason) < 400


def test_a_trace_file_past_the_span_limit_is_refused_and_its_sibling_lands(tmp_path, monkeypatch):
    """A file's spans are held until its traces are written (parents resolve across the
    file): 1M spans in one file took 3 GiB. Past $GRAPHLAKE_MAX_SPANS_PER_FILE the file is
    one reject naming the limit, and the other file of the folder lands."""
    monkeypatch.setenv("GRAPHLAKE_MAX_SPANS_PER_FILE", "1000")
    folder = tmp_path / "in"
    folder.mkdir()
    lines = []
    for k in range(15):  # 1,500 spans in 15 requests, one a line
        spans = [_span(f"{k * 100 + i + 1:016x}") for i in range(100)]
        lines.append(json.dumps(_request(spans)))
    (folder / "many.otlp.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "few.otlp.json").write_text(json.dumps(_request([_span("00000000000000aa")])))
    stats, _ = ingest_path("otel", folder, tmp_path / "lake", workers=1)
    assert stats.accepted["nodes"] == 1
    [reject] = _rows(tmp_path / "lake", "SELECT source_file, reason FROM rejects")
    assert reject["source_file"].endswith("many.otlp.jsonl")
    assert "GRAPHLAKE_MAX_SPANS_PER_FILE" in reject["reason"]


def test_json_lines_whose_first_request_is_longer_than_the_sniffed_prefix(traces, tmp_path):
    """A collector writes one export request a line; a line of 1,000 spans is about 300 KB,
    past the 64 KiB the sniffer reads. It is still JSON Lines (it was read as one document
    and refused as "unexpected content after document")."""
    lines = traces["otlp-lines"].read_text().splitlines()
    first = json.loads(lines[0])
    pad = {"key": "padding", "value": {"stringValue": "x" * (100 << 10)}}
    first["resourceSpans"][0]["resource"].setdefault("attributes", []).append(pad)
    long = tmp_path / "long" / "spans.jsonl"
    long.parent.mkdir()
    long.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    stats, _ = ingest_path("otel", long.parent, tmp_path / "long_lake")
    assert not stats.rejected, stats.rejected
    plain, _ = ingest_path("otel", traces["otlp-lines"], tmp_path / "plain_lake")
    for q in (_NODES, _EDGES, _EVENTS):
        assert _rows(tmp_path / "long_lake", q) == _rows(tmp_path / "plain_lake", q)
