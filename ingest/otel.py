"""OpenTelemetry traces: the files the SDKs, the collector and Jaeger write, read into spans.

Four shapes of the same data are read, sniffed per file (:func:`sniff_otel`):

* **OTLP JSON**: one ``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``) per file;
* **OTLP JSON Lines**: one request a line, as the collector's ``file`` exporter writes them;
* **the console exporter's stream**: the Python SDK's ``ConsoleSpanExporter`` prints each span
  as a pretty-printed object (``span.to_json()``), one after another, with no separator; a
  Phoenix span dump is the same objects in a list, with ``span_kind`` and ``status_code``
  fields, attributes that may be nested, and children nested in ``child_spans``;
* **Jaeger JSON**: the query API's export (``{"data": [{"traceID", "spans", "processes"}]}``,
  typed tags, microseconds).

Each becomes the same :class:`~graphlake.ingest.spans.Span`; :mod:`graphlake.ingest.spans`
maps spans onto the canonical tables (GenAI conventions, messages, tools, usage). Ids are
normalised to lowercase hex (OTLP JSON writes them as hex, protobuf's own JSON mapping as
base64, some exporters as decimal integers or with a ``0x`` prefix); times to nanoseconds since
the epoch (OTLP: nanoseconds as text or number; console: ISO 8601; some exporters
``[seconds, nanoseconds]`` pairs; Jaeger: microseconds).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from graphlake.ingest.spans import Span, SpanError

#: What a file of each shape starts with, as :func:`sniff_otel` tells them apart.
SHAPES = ("otlp", "otlp-lines", "console", "jaeger")


def sniff_otel(head: bytes) -> str | None:
    """The shape of an OpenTelemetry file from its first bytes, or None."""
    text = head.lstrip()
    if text.startswith(b"[") and b'"context"' in text and b'"trace_id"' in text:
        return "console"  # a list of printed spans (a Phoenix span dump)
    if not text.startswith(b"{"):
        return None
    first_line = text.split(b"\n", 1)[0]
    if b'"resourceSpans"' in first_line and _is_json(first_line):
        return "otlp-lines"
    if b'"resourceSpans"' in text:
        return "otlp"
    if b'"data"' in text and b'"traceID"' in text:
        return "jaeger"
    if b'"context"' in text and b'"trace_id"' in text:
        return "console"
    return None


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


# ---- ids and times ----------------------------------------------------------------------


def norm_id(value: Any, nbytes: int, what: str) -> str | None:
    """An OTel id as lowercase hex of ``nbytes`` bytes; None for an empty or all-zero id
    (what OTLP writes for "no parent")."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise SpanError(f"{what} is {value!r}, not an id")
    if isinstance(value, int):
        if value < 0 or value >= 1 << (8 * nbytes):
            raise SpanError(f"{what} {value} does not fit {nbytes} bytes")
        hexed = f"{value:0{2 * nbytes}x}"
    elif isinstance(value, str):
        text = value[2:] if value[:2].lower() == "0x" else value
        if len(text) == 2 * nbytes and all(c in "0123456789abcdefABCDEF" for c in text):
            hexed = text.lower()
        elif text.isdigit() and len(text) <= 39:  # a decimal integer written as text
            return norm_id(int(text), nbytes, what)
        else:
            try:
                raw = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raw = b""
            if len(raw) != nbytes:
                raise SpanError(
                    f"{what} {value!r} is neither {2 * nbytes} hex digits, base64 of "
                    f"{nbytes} bytes, nor a decimal integer"
                )
            hexed = raw.hex()
    else:
        raise SpanError(f"{what} is {type(value).__name__}, not an id")
    return None if set(hexed) == {"0"} else hexed


def time_ns(value: Any, what: str) -> int | None:
    """A time as integer nanoseconds since the epoch: OTLP nanoseconds (text or number), an
    ISO 8601 text, or a ``[seconds, nanoseconds]`` pair; None stays None (0 too: OTLP's
    "not set")."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise SpanError(f"{what} is {value!r}, not a time")
    if isinstance(value, int):
        return value or None
    if isinstance(value, float):
        return int(value) or None
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value[0] * 1_000_000_000 + value[1]
    if isinstance(value, str):
        if value.isdigit():
            return int(value) or None
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise SpanError(f"{what} {value!r} is not a time OTel writes") from None
        if ts.tzinfo is None:
            raise SpanError(f"{what} {value!r} has no time zone")
        return int(ts.timestamp()) * 1_000_000_000 + ts.microsecond * 1000
    raise SpanError(f"{what} is {type(value).__name__}, not a time")


# ---- OTLP JSON --------------------------------------------------------------------------


def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` object as a plain value."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in v:
        return key_values((v["kvlistValue"] or {}).get("values") or [])
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def key_values(items: Any) -> dict:
    """OTLP ``[{"key", "value": AnyValue}]`` as a dict."""
    if not isinstance(items, list):
        raise SpanError("attributes are not a list of key/value objects")
    return {kv["key"]: any_value(kv.get("value")) for kv in items}


_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
_KINDS = {0: None, 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
OTLP_SPAN_FIELDS = frozenset(
    {
        "traceId",
        "spanId",
        "parentSpanId",
        "name",
        "kind",
        "startTimeUnixNano",
        "endTimeUnixNano",
        "attributes",
        "events",
        "links",
        "status",
    }
)


def _kind(value: Any) -> str | None:
    if isinstance(value, int):
        return _KINDS.get(value)
    if isinstance(value, str):  # "SPAN_KIND_CLIENT", "SpanKind.CLIENT", any-agent's "client"
        return value.removeprefix("SPAN_KIND_").removeprefix("SpanKind.").upper() or None
    return None


def _status_code(value: Any) -> str | None:
    if isinstance(value, int):
        return _STATUS.get(value)
    if isinstance(value, str):
        return value.removeprefix("STATUS_CODE_").removeprefix("StatusCode.").upper() or None
    return None


def otlp_spans(request: Any, ref: str) -> Iterator[Span | SpanError]:
    """The spans of one OTLP ``ExportTraceServiceRequest``; a span that cannot be read comes
    as a :class:`SpanError` carrying its record reference and raw object."""
    if not isinstance(request, dict) or not isinstance(request.get("resourceSpans"), list):
        yield SpanError("not an OTLP request: no 'resourceSpans' list", ref=ref, raw=request)
        return
    for r, rs in enumerate(request["resourceSpans"]):
        try:
            resource = key_values(((rs.get("resource") or {}).get("attributes")) or [])
            scope_spans = rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []
        except (AttributeError, KeyError, TypeError, SpanError) as exc:
            yield SpanError(f"resourceSpans[{r}] cannot be read ({exc})", ref=ref, raw=rs)
            continue
        for s, ss in enumerate(scope_spans):
            scope = ss.get("scope") or ss.get("instrumentationLibrary") or {}
            for k, sp in enumerate(ss.get("spans") or []):
                where = f"{ref}resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"
                try:
                    yield _otlp_span(sp, resource, scope, where)
                except (AttributeError, KeyError, TypeError, ValueError, SpanError) as exc:
                    yield SpanError(str(exc), ref=where, raw=sp)


def _otlp_span(sp: dict, resource: dict, scope: dict, where: str) -> Span:
    status = sp.get("status") or {}
    return Span(
        trace_id=_required(norm_id(sp.get("traceId"), 16, "traceId"), "traceId"),
        span_id=_required(norm_id(sp.get("spanId"), 8, "spanId"), "spanId"),
        parent_id=norm_id(sp.get("parentSpanId"), 8, "parentSpanId"),
        name=sp.get("name") or "",
        kind=_kind(sp.get("kind")),
        start_ns=time_ns(sp.get("startTimeUnixNano"), "startTimeUnixNano"),
        end_ns=time_ns(sp.get("endTimeUnixNano"), "endTimeUnixNano"),
        status=_status_code(status.get("code")),
        status_message=status.get("message") or None,
        attributes=key_values(sp.get("attributes") or []),
        events=[
            {
                "name": e.get("name") or "",
                "time_ns": time_ns(e.get("timeUnixNano"), "event timeUnixNano"),
                "attributes": key_values(e.get("attributes") or []),
            }
            for e in sp.get("events") or []
        ],
        links=[
            {
                "trace_id": norm_id(lk.get("traceId"), 16, "link traceId"),
                "span_id": norm_id(lk.get("spanId"), 8, "link spanId"),
                "attributes": key_values(lk.get("attributes") or []),
            }
            for lk in sp.get("links") or []
        ],
        resource=resource,
        scope={k: v for k, v in scope.items() if k in ("name", "version") and v},
        extra={k: v for k, v in sp.items() if k not in OTLP_SPAN_FIELDS},
        ref=where,
        raw=sp,
    )


def _required(value: str | None, what: str) -> str:
    if value is None:
        raise SpanError(f"the span has no {what}")
    return value


# ---- the console exporter's stream --------------------------------------------------------

CONSOLE_FIELDS = frozenset(
    {
        "name",
        "context",
        "kind",
        "parent_id",
        "parent",  # any-agent's AgentSpan: the parent's SpanContext
        "start_time",
        "end_time",
        "status",
        "attributes",
        "events",
        "links",
        "resource",
        "status_code",  # Phoenix's span dumps: the status as two fields
        "status_message",
    }
)


def concatenated(text: str) -> Iterator[tuple[int, Any]]:
    """The JSON values of a text that holds them one after another (pretty-printed, with
    only whitespace between), as (line number where each starts, value). Raises
    :class:`SpanError` at the first thing that is not JSON, naming its line."""
    decoder = json.JSONDecoder()
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return
        line = text.count("\n", 0, pos) + 1
        try:
            value, end = decoder.raw_decode(text, pos)
        except ValueError as exc:
            raise SpanError(
                f"line {line}: not valid JSON ({exc})", ref=f"line {line}", raw=text[pos:]
            ) from None
        yield line, value
        pos = end


def _is_root(parent: Any) -> bool:
    """Whether a printed span's ``parent`` says it has none: absent, or (as any-agent's real
    AgentTraces print the root) a SpanContext whose ids are null."""
    return not parent or (isinstance(parent, dict) and parent.get("span_id") is None)


def console_spans(obj: Any, ref: str) -> Iterator[Span | SpanError]:
    """The spans of one printed value: a span, a list of them (a Phoenix dump), and each
    span's nested ``child_spans`` (their parent defaults to the span holding them)."""
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            yield from console_spans(item, f"{ref}[{i}]")
        return
    if isinstance(obj, dict) and "context" not in obj and isinstance(obj.get("spans"), list):
        # any-agent's AgentTrace (``trace.model_dump()``): {"spans": [AgentSpan], "final_output"}
        final = obj.get("final_output")
        for i, item in enumerate(obj["spans"]):
            if final is not None and isinstance(item, dict) and _is_root(item.get("parent")):
                item = {**item, "any_agent.final_output": final}  # the root's output, kept
            yield from console_spans(item, f"{ref}spans[{i}]")
        return
    try:
        span = console_span(obj, ref)
    except (AttributeError, KeyError, TypeError, ValueError, SpanError) as exc:
        yield SpanError(str(exc), ref=ref, raw=obj)
        return
    children = span.extra.pop("child_spans", None) or []
    yield span
    for i, child in enumerate(children if isinstance(children, list) else []):
        if isinstance(child, dict) and child.get("parent_id") is None:
            child = {**child, "parent_id": span.span_id}
        yield from console_spans(child, f"{ref}.child_spans[{i}]")


def flat_attributes(attrs: Any, prefix: str = "") -> dict:
    """Attributes as OTel keeps them, flat (``llm.model_name``): some exports nest them
    (``{"llm": {"model_name": ...}}``, messages as lists of objects); lists of plain values
    stay lists."""
    if not isinstance(attrs, dict):
        raise SpanError("attributes are not an object")
    out: dict = {}
    for key, value in attrs.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat_attributes(value, f"{name}."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                out.update(flat_attributes(item, f"{name}.{i}."))
        else:
            out[name] = value
    return out


def console_span(obj: Any, ref: str) -> Span:
    """One span as ``ReadableSpan.to_json()`` prints it (or a Phoenix span dump, which adds
    ``span_kind`` and may nest its attributes)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("context"), dict):
        raise SpanError("not a span as the console exporter prints it (no 'context')")
    ctx = obj["context"]
    status = obj.get("status") or {}
    resource = obj.get("resource") or {}
    return Span(
        trace_id=_required(norm_id(ctx.get("trace_id"), 16, "context.trace_id"), "trace_id"),
        span_id=_required(norm_id(ctx.get("span_id"), 8, "context.span_id"), "span_id"),
        # ReadableSpan.to_json writes parent_id; any-agent's AgentSpan a parent SpanContext
        parent_id=norm_id(obj.get("parent_id"), 8, "parent_id")
        if obj.get("parent_id") is not None or not isinstance(obj.get("parent"), dict)
        else norm_id(obj["parent"].get("span_id"), 8, "parent.span_id"),
        name=obj.get("name") or "",
        kind=_kind(obj.get("kind")),
        start_ns=time_ns(obj.get("start_time"), "start_time"),
        end_ns=time_ns(obj.get("end_time"), "end_time"),
        status=_status_code(status.get("status_code") or obj.get("status_code")),
        status_message=status.get("description") or obj.get("status_message") or None,
        attributes=flat_attributes(obj.get("attributes") or {}),
        events=[
            {
                "name": e.get("name") or "",
                "time_ns": time_ns(e.get("timestamp"), "event timestamp"),
                "attributes": dict(e.get("attributes") or {}),
            }
            for e in obj.get("events") or []
        ],
        links=[
            {
                "trace_id": norm_id((lk.get("context") or {}).get("trace_id"), 16, "link"),
                "span_id": norm_id((lk.get("context") or {}).get("span_id"), 8, "link"),
                "attributes": dict(lk.get("attributes") or {}),
            }
            for lk in obj.get("links") or []
        ],
        resource=dict(resource.get("attributes") or {}),
        scope={},
        extra={
            **{k: v for k, v in obj.items() if k not in CONSOLE_FIELDS},
            **(
                {"trace_state": ctx["trace_state"]}
                if ctx.get("trace_state") not in (None, "[]")
                else {}
            ),
        },
        ref=ref,
        raw=obj,
    )


# ---- Jaeger JSON ------------------------------------------------------------------------

JAEGER_SPAN_FIELDS = frozenset(
    {
        "traceID",
        "spanID",
        "operationName",
        "references",
        "startTime",
        "duration",
        "tags",
        "logs",
        "processID",
        "warnings",
        "flags",
    }
)


def _tags(items: Any) -> dict:
    """Jaeger's typed tags (``[{"key", "type", "value"}]``) as a dict."""
    if not isinstance(items, list):
        raise SpanError("tags are not a list of key/type/value objects")
    return {t["key"]: t.get("value") for t in items}


def jaeger_spans(doc: Any, ref: str) -> Iterator[Span | SpanError]:
    """The spans of a Jaeger query-API export."""
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        yield SpanError("not a Jaeger export: no 'data' list of traces", ref=ref, raw=doc)
        return
    for t, trace in enumerate(data):
        processes = (trace.get("processes") if isinstance(trace, dict) else None) or {}
        for k, sp in enumerate((trace.get("spans") if isinstance(trace, dict) else None) or []):
            where = f"{ref}data[{t}].spans[{k}]"
            try:
                yield _jaeger_span(sp, processes, where)
            except (AttributeError, KeyError, TypeError, ValueError, SpanError) as exc:
                yield SpanError(str(exc), ref=where, raw=sp)


def _jaeger_span(sp: dict, processes: dict, where: str) -> Span:
    refs = sp.get("references") or []
    parent = next((r for r in refs if r.get("refType") == "CHILD_OF"), None)
    process = processes.get(sp.get("processID")) or {}
    resource = _tags(process.get("tags") or [])
    if process.get("serviceName"):
        resource["service.name"] = process["serviceName"]
    tags = _tags(sp.get("tags") or [])
    start_us = sp.get("startTime")
    if not isinstance(start_us, int):
        raise SpanError("startTime is not microseconds")
    duration = sp.get("duration") or 0
    kind = tags.pop("span.kind", None)
    status = "ERROR" if tags.get("error") in (True, "true") else None
    if "otel.status_code" in tags:
        status = str(tags.pop("otel.status_code"))
    return Span(
        trace_id=_required(norm_id(sp.get("traceID"), 16, "traceID"), "traceID"),
        span_id=_required(norm_id(sp.get("spanID"), 8, "spanID"), "spanID"),
        parent_id=norm_id(parent.get("spanID"), 8, "references spanID") if parent else None,
        name=sp.get("operationName") or "",
        kind=kind.upper() if isinstance(kind, str) else None,
        start_ns=start_us * 1000,
        end_ns=(start_us + int(duration)) * 1000,
        status=status,
        status_message=tags.pop("otel.status_description", None),
        attributes=tags,
        events=[
            {
                "name": str(fields.pop("event", "log")),
                "time_ns": int(log.get("timestamp")) * 1000,
                "attributes": fields,
            }
            for log in sp.get("logs") or []
            for fields in [_tags(log.get("fields") or [])]
        ],
        links=[
            {
                "trace_id": norm_id(r.get("traceID"), 16, "references traceID"),
                "span_id": norm_id(r.get("spanID"), 8, "references spanID"),
                "attributes": {"refType": r.get("refType")},
            }
            for r in refs
            if r is not parent
        ],
        resource=resource,
        scope={},
        extra={k: v for k, v in sp.items() if k not in JAEGER_SPAN_FIELDS and v},
        ref=where,
        raw=sp,
    )
