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
from graphlake.ingest import coding_agents, inspect_log, langfuse, register
from graphlake.ingest.base import (
    Emitter,
    Ingestor,
    SourceUnit,
    data_files,
    head_bytes,
    json_lines,
    load_json,
    read_json_repaired,
    read_whole,
    reject_encoding,
    reject_file,
    repair_utf8,
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


#: Spans one trace file may hold ($GRAPHLAKE_MAX_SPANS_PER_FILE): about 3 KB each while the
#: file is read, so the default keeps a file under 1 GiB
DEFAULT_MAX_SPANS = 300_000


def max_spans() -> int:
    from graphlake.config import int_env

    return int_env("GRAPHLAKE_MAX_SPANS_PER_FILE", DEFAULT_MAX_SPANS)


class _Read:
    """The spans of one file so far, and the annotations its format adds (scores)."""

    def __init__(self, path: Path, out: Emitter):
        self.src, self.out = str(path), out
        self.spans: list[Span] = []
        self.annotations: list[dict] = []

    def keep(self, items) -> None:
        """Keep the spans; reject what could not be read, with its reason. A file is read
        whole before its traces are emitted (parents resolve across it), so its spans are
        counted: past :func:`max_spans` the file is refused (1M spans took 3 GiB)."""
        limit = max_spans()
        for item in items:
            if isinstance(item, SpanError):
                self.out.reject(
                    source_file=self.src,
                    target_table="nodes",
                    record_kind="span",
                    record_ref=item.ref or "$",
                    reason=str(item),
                    raw=item.raw,
                )
            else:
                self.spans.append(item)
                if len(self.spans) > limit:
                    raise InputLimitError(
                        f"{Path(self.src).name} holds more than {limit:,} spans, the most one "
                        "trace file is read with ($GRAPHLAKE_MAX_SPANS_PER_FILE; each span "
                        "costs about 3 KB until its traces are written): split the file"
                    )

    def bad_line(self, lineno: int, reason: str, raw: bytes) -> None:
        self.out.reject(
            source_file=self.src,
            target_table="nodes",
            record_kind="record",
            record_ref=f"line {lineno}",
            reason=reason,
            raw=raw,
        )


def read_otel(path: Path, r: _Read, shape: str) -> None:
    """The spans of one OpenTelemetry file (:mod:`graphlake.ingest.otel`)."""
    if shape == "otlp-lines":
        for lineno, request in json_lines(path, r.bad_line):
            r.keep(otlp_spans(request, f"line {lineno}: "))
        return
    data = read_whole(path)
    if shape == "console":
        text = data.decode("utf-8", errors="replace")
        try:
            for line, obj in concatenated(text):
                r.keep(console_spans(obj, f"line {line}"))
        except SpanError as exc:  # the stream stops being JSON: the rest is one reject
            r.keep([SpanError(f"{exc}; the spans before it are kept", ref=exc.ref, raw=exc.raw)])
        return
    data, replaced, first = repair_utf8(data)
    if replaced:
        reject_encoding(r.out, path, "nodes", replaced, first, "every other span")
    doc = load_json(data)
    r.keep(otlp_spans(doc, "") if shape == "otlp" else jaeger_spans(doc, ""))


def read_langfuse(path: Path, r: _Read, shape: str) -> None:
    """The spans and scores of a Langfuse export (:mod:`graphlake.ingest.langfuse`): one
    export, a list of them, or one a line."""
    if shape == "langfuse-lines":
        docs = [(f"line {n}: ", d) for n, d in json_lines(path, r.bad_line)]
    else:
        docs = [("", read_json_repaired(path, r.out, "nodes", "every other observation"))]
    for ref, doc in docs:
        try:
            found, rejects = langfuse.exports(doc, ref)
        except SpanError as exc:
            r.keep([SpanError(str(exc), ref=ref or "$", raw=doc)])
            continue
        r.keep(rejects)
        for k, (trace, observations, scores) in enumerate(found):
            where = f"{ref}[{k}]." if isinstance(doc, list) else ref
            r.keep(langfuse.trace_spans(trace, observations, where))
            r.annotations.extend(langfuse.score_rows(trace, scores))


def sniff(head: bytes, families: tuple[str, ...]) -> tuple[str, str] | None:
    """(family, shape) of a trace file from its first bytes, among ``families``."""
    if "inspect" in families:
        if head.startswith(b"PK\x03\x04"):
            return "inspect", "eval"  # a zip: read_log says whether it is an inspect archive
        start = head.lstrip()[:2048]
        if (
            start.startswith(b"{")
            and b'"eval"' in head
            and (b'"samples"' in head or b'"plan"' in head or b'"results"' in head)
        ):
            return "inspect", "json"
    if "sweagent" in families and coding_agents.sniff_sweagent(head):
        return "sweagent", "traj"
    if "openhands" in families and coding_agents.sniff_openhands(head):
        return "openhands", "events"
    if "langfuse" in families and langfuse.sniff_langfuse(head):
        first = head.lstrip().split(b"\n", 1)[0]
        lines = first.startswith(b"{") and first.rstrip().endswith(b"}") and b"\n" in head.strip()
        return "langfuse", "langfuse-lines" if lines else "langfuse"
    if "otel" in families and (shape := sniff_otel(head)):
        return "otel", shape
    return None


def sniff_structure(path: Path, families: tuple[str, ...]) -> tuple[str, str] | None:
    """(family, shape) from the file's structure where its first bytes did not tell: a
    SWE-agent trajectory whose ``history`` and ``info`` keys come after a long
    ``trajectory``, a JSON Lines file whose first record is longer than the sniffed prefix."""
    from graphlake.ingest.structure import _first_line, shape

    sh = shape(path)
    keys = set(sh.keys)
    if (
        "sweagent" in families
        and sh.kind == "object"
        and "trajectory" in keys
        and ("history" in keys or "info" in keys)
    ):
        return "sweagent", "traj"
    if sh.kind == "lines":
        first = _first_line(path)
        found = sniff(first + b"\n" + first, families)  # the whole first record, as lines
        if found and found[0] == "langfuse":
            return "langfuse", "langfuse-lines"
        return found
    return None


def _otlp_lines_past_head(path: Path, found: tuple[str, str]) -> tuple[str, str]:
    """An OTLP file whose first line is longer than the sniffed prefix: OTLP JSON Lines when
    that line is one whole export request with more lines after it (a 1,000-span request is
    300 KB), else the one document ``found`` says."""
    from graphlake.ingest.structure import first_line_record

    first = first_line_record(path, path.stat().st_size)
    return ("otel", "otlp-lines") if first is not None and "resourceSpans" in first else found


_READERS = {"otel": read_otel, "langfuse": read_langfuse}


class _TraceFiles(Ingestor):
    """Every file under PATH is a unit; its format is sniffed from its first bytes."""

    independent_units = True  # a trace file reads nothing but itself

    def units(self, path: Path) -> list[SourceUnit]:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist; give a trace file or a folder of them")
        return [SourceUnit(p, "trace") for p in data_files(path)]

    families: tuple[str, ...] = ("otel", "langfuse", "inspect", "sweagent", "openhands")

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
        found = sniff(head, self.families) or sniff_structure(path, self.families)
        if found == ("otel", "otlp") and b"\n" not in head.strip():
            found = _otlp_lines_past_head(path, found)
        if found is None:
            reject_file(out, path, "sessions", self.unknown, head)
            return
        family, shape = found
        if family == "inspect":
            self._inspect(path, out, head)
            return
        if family in ("sweagent", "openhands"):
            self._coding_agent(family, path, out, head)
            return
        read = _Read(path, out)
        try:
            _READERS[family](path, read, shape)
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

        emit_traces(read.spans, out, str(path), reject)
        for row in read.annotations:
            out.row("annotations", row)

    @staticmethod
    def _coding_agent(family: str, path: Path, out: Emitter, head: bytes) -> None:
        """A SWE-agent trajectory or an OpenHands event list
        (:mod:`graphlake.ingest.coding_agents`): its rows, or one reject for the file."""
        try:
            doc = read_json_repaired(path, out, "nodes", "every other record")
        except InputLimitError as exc:
            reject_file(out, path, "sessions", str(exc), head)
            return
        except ValueError as exc:
            reject_file(out, path, "sessions", f"not valid JSON ({exc})", head)
            return

        def reject(ref: str, reason: str, raw) -> None:
            out.reject(
                source_file=str(path),
                target_table="nodes",
                record_kind="event",
                record_ref=ref,
                reason=reason,
                raw=raw,
                session_id=path.stem,
            )

        try:
            if family == "sweagent":
                coding_agents.emit_sweagent(doc, path, out)
            else:
                coding_agents.emit_openhands(doc, path, out, reject)
        except SpanError as exc:
            reject_file(out, path, "sessions", str(exc), head)

    @staticmethod
    def _inspect(path: Path, out: Emitter, head: bytes) -> None:
        """An inspect_ai log (:mod:`graphlake.ingest.inspect_log`): whole, or one reject."""
        try:
            log = inspect_log.read_log(path)
        except (SpanError, InputLimitError, ValueError, KeyError, OSError) as exc:
            reject_file(out, path, "sessions", f"the inspect_ai log cannot be read: {exc}", head)
            return
        except Exception as exc:  # inspect's own reader: any failure is the file's reject
            reject_file(
                out,
                path,
                "sessions",
                f"inspect_ai could not read the log ({type(exc).__name__}: {exc})",
                head,
            )
            return
        inspect_log.emit_log(log, out, str(path))

    unknown = (
        "not a trace format graphlake reads (OpenTelemetry: OTLP JSON or JSON Lines, the "
        "console exporter's output, a Phoenix span dump, Jaeger JSON; a Langfuse export; an "
        "inspect_ai log; a SWE-agent trajectory; an OpenHands event list); "
        "see docs/traces.md"
    )


@register("otel")
class OtelIngestor(_TraceFiles):
    """OpenTelemetry spans (GenAI semantic conventions) as OTLP JSON / JSON Lines, the console
    exporter's stream or Jaeger JSON."""

    families = ("otel",)
    help = (
        "OpenTelemetry traces: OTLP JSON or JSON Lines (the collector's file exporter), the "
        "console exporter's output, a Phoenix span dump, or a Jaeger JSON export; GenAI and "
        "OpenInference spans map to models, agents and tools (docs/traces.md)."
    )
    unknown = (
        "not an OpenTelemetry file graphlake reads (OTLP JSON or JSON Lines, the console "
        "exporter's output, a Phoenix span dump, Jaeger JSON); see docs/traces.md"
    )


@register("langfuse")
class LangfuseIngestor(_TraceFiles):
    """Langfuse trace exports: a trace with its observations and scores."""

    families = ("langfuse",)
    help = (
        "Langfuse trace exports ({trace, observations} or the API's trace with observations "
        "and scores; one, a list, or one a line): generations, tools and agents map to models, "
        "tools and agents, scores to annotations (docs/traces.md)."
    )
    unknown = "not a Langfuse export (a trace with an 'observations' list); see docs/traces.md"


@register("inspect")
class InspectIngestor(_TraceFiles):
    """inspect_ai evaluation logs: ``.eval`` archives and ``.json`` logs."""

    families = ("inspect",)
    help = (
        "inspect_ai evaluation logs (.eval archives, Zstandard entries included, and .json "
        "logs): each sample a session with its messages, tool calls, scores and token usage, "
        "the evaluation a run (docs/traces.md)."
    )
    unknown = "not an inspect_ai log (.eval archive or .json log); see docs/traces.md"


@register("sweagent")
class SweAgentIngestor(_TraceFiles):
    """SWE-agent trajectories (``.traj``)."""

    families = ("sweagent",)
    help = (
        "SWE-agent trajectories (.traj): the issue as the human turn, each step's action and "
        "observation, model stats as usage, the exit status and patch as the outcome "
        "(docs/traces.md)."
    )
    unknown = "not a SWE-agent trajectory (a .traj JSON with 'trajectory'); see docs/traces.md"


@register("openhands")
class OpenHandsIngestor(_TraceFiles):
    """OpenHands event lists."""

    families = ("openhands",)
    help = (
        "OpenHands conversations (a JSON list of events): user, agent and environment events, "
        "actions as tool calls, observations as results, LLM metrics as usage (docs/traces.md)."
    )
    unknown = "not an OpenHands event list (a JSON list of events); see docs/traces.md"


@register("traces")
class TracesIngestor(_TraceFiles):
    """Agent traces of any family graphlake reads, sniffed per file."""

    help = (
        "Agent traces from today's tooling, the format sniffed per file: OpenTelemetry (OTLP "
        "JSON / JSON Lines, console exporter, Phoenix dumps, Jaeger JSON), Langfuse exports, "
        "inspect_ai logs, SWE-agent trajectories and OpenHands event lists. See docs/traces.md."
    )
