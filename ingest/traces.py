"""``graphlake ingest traces PATH``: agent traces from today's tooling, the format sniffed per file.

``ingest otel PATH`` forces the OpenTelemetry readers (:mod:`graphlake.ingest.otel`): OTLP
JSON, OTLP JSON Lines, the console exporter's stream and Jaeger JSON. Every file is its own
unit (a trace split over two files is two partial sessions: its spans' parents in the other
file are rejects that say so). The spans become canonical rows through
:mod:`graphlake.ingest.spans`; ``docs/traces.md`` maps each format field by field.
"""

from __future__ import annotations

from pathlib import Path

from graphlake.errors import InputLimitError
from graphlake.ingest import register
from graphlake.ingest.base import (
    Emitter,
    Ingestor,
    SourceUnit,
    data_files,
    head_bytes,
    json_lines,
    load_json,
    read_whole,
    reject_file,
)
from graphlake.ingest.otel import (
    concatenated,
    console_spans,
    jaeger_spans,
    otlp_spans,
    sniff_otel,
)
from graphlake.ingest.spans import Span, SpanError, emit_traces

_LFS = b"version https://git-lfs.github.com/spec/"
_SNIFF_BYTES = 64 << 10


def read_otel(path: Path, out: Emitter, shape: str) -> list[Span]:
    """The readable spans of one OpenTelemetry file; what cannot be read is rejected here."""
    src = str(path)
    spans: list[Span] = []

    def keep(items) -> None:
        for item in items:
            if isinstance(item, SpanError):
                out.reject(
                    source_file=src,
                    target_table="nodes",
                    record_kind="span",
                    record_ref=item.ref or "$",
                    reason=str(item),
                    raw=item.raw,
                )
            else:
                spans.append(item)

    if shape == "otlp-lines":

        def bad_line(lineno: int, reason: str, raw: bytes) -> None:
            out.reject(
                source_file=src,
                target_table="nodes",
                record_kind="otlp_request",
                record_ref=f"line {lineno}",
                reason=reason,
                raw=raw,
            )

        for lineno, request in json_lines(path, bad_line):
            keep(otlp_spans(request, f"line {lineno}: "))
        return spans
    data = read_whole(path)
    if shape == "console":
        text = data.decode("utf-8", errors="replace")
        try:
            for line, obj in concatenated(text):
                keep(console_spans(obj, f"line {line}"))
        except SpanError as exc:  # the stream stops being JSON: the rest is one reject
            keep([SpanError(f"{exc}; the spans before it are kept", ref=exc.ref, raw=exc.raw)])
        return spans
    doc = load_json(data)
    keep(otlp_spans(doc, "") if shape == "otlp" else jaeger_spans(doc, ""))
    return spans


class _TraceFiles(Ingestor):
    """Every file under PATH is a unit; its format is sniffed from its first bytes."""

    independent_units = True  # a trace file reads nothing but itself

    def units(self, path: Path) -> list[SourceUnit]:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist; give a trace file or a folder of them")
        return [SourceUnit(p, "trace") for p in data_files(path)]

    def shape(self, head: bytes) -> str | None:
        return sniff_otel(head)

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        path = unit.path
        head = head_bytes(path, _SNIFF_BYTES)
        if head.startswith(_LFS):
            reject_file(
                out,
                path,
                "sessions",
                "the file is a Git LFS pointer, not the trace: run `git lfs pull` in its "
                "repository and ingest again",
                head,
            )
            return
        shape = self.shape(head)
        if shape is None:
            reject_file(out, path, "sessions", self.unknown, head)
            return
        try:
            spans = read_otel(path, out, shape)
        except InputLimitError as exc:
            reject_file(out, path, "sessions", str(exc), head)
            return
        except ValueError as exc:
            reject_file(out, path, "sessions", f"not valid JSON ({exc})", head)
            return

        def reject(span: Span, reason: str, table: str = "nodes") -> None:
            out.reject(
                source_file=str(path),
                target_table=table,
                record_kind="span",
                record_ref=span.ref or span.span_id,
                reason=reason,
                raw=span.raw,
                session_id=span.trace_id,
            )

        emit_traces(spans, out, str(path), reject)

    unknown = (
        "not an OpenTelemetry file graphlake reads (OTLP JSON or JSON Lines, the console "
        "exporter's output, Jaeger JSON); see docs/traces.md"
    )


@register("otel")
class OtelIngestor(_TraceFiles):
    """OpenTelemetry spans (GenAI semantic conventions) as OTLP JSON / JSON Lines, the console
    exporter's stream or Jaeger JSON."""

    help = (
        "OpenTelemetry traces: OTLP JSON or JSON Lines (the collector's file exporter), the "
        "console exporter's output, or a Jaeger JSON export; GenAI spans map to models, agents "
        "and tools (docs/traces.md)."
    )


@register("traces")
class TracesIngestor(_TraceFiles):
    """Agent traces of any family graphlake reads, sniffed per file."""

    help = (
        "Agent traces from today's tooling, the format sniffed per file: OpenTelemetry (OTLP "
        "JSON / JSON Lines, console exporter, Jaeger JSON). See docs/traces.md."
    )
