"""The canonical lake schema: the single source of truth for every table's columns.

Each table is declared once as a :class:`TableSpec` (Arrow schema, primary key, one line of
documentation per column). Ingestors build rows against these schemas, the lake writes them,
the query layer exposes them as views, and ``schemas/*.schema.json`` is generated from them.

Conventions (DESIGN section 2): every table carries ``corpus`` and ``session_id``; times are
float seconds from the session start (``t_start``/``t_end``, or ``t`` for instants); anything a
source carries that has no column lands in ``attrs`` as a JSON object string, so nothing is lost.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

#: Bumped whenever a column is added, renamed or retyped; stored in the lake at creation.
SCHEMA_VERSION = 2  # 2: runs table, sessions.run_id

STR = pa.string()
F64 = pa.float64()
I32 = pa.int32()
I64 = pa.int64()
BOOL = pa.bool_()
TS = pa.timestamp("us", tz="UTC")


def _f(name: str, typ: pa.DataType, doc: str, nullable: bool = True) -> pa.Field:
    return pa.field(name, typ, nullable=nullable, metadata={"doc": doc})


_CORPUS = _f("corpus", STR, "Ingestor that produced the row (kolab, almanac, ...).", False)
_SESSION = _f("session_id", STR, "Session identifier, as the source names it.", False)
_ATTRS = _f("attrs", STR, "JSON object with every source field that has no column of its own.")


@dataclass(frozen=True)
class TableSpec:
    """One lake table: its Arrow schema, its primary key and what a row stands for."""

    name: str
    row: str
    schema: pa.Schema
    key: tuple[str, ...]

    @property
    def columns(self) -> list[str]:
        return self.schema.names


def _table(name: str, row: str, key: tuple[str, ...], *fields: pa.Field) -> TableSpec:
    cols = [_CORPUS, _SESSION, *fields]
    if name != "rejects":
        cols.append(_ATTRS)
    schema = pa.schema(cols, metadata={"graphlake.table": name, "doc": row})
    return TableSpec(name, row, schema, key)


SESSIONS = _table(
    "sessions",
    "recorded workflow, dyadic session or agent episode",
    ("corpus", "session_id"),
    _f("title", STR, "Human-readable title of the session."),
    _f("goal", STR, "What the participants set out to do."),
    _f("condition", STR, "Experimental condition (e.g. C_visible, agency level A3)."),
    _f("domain", STR, "Professional sector or task domain."),
    _f("split", STR, "Dataset split (train/test) where the corpus defines one."),
    _f("participants", pa.list_(STR), "participant_id of everyone in the session."),
    _f("started_at", TS, "Absolute start time, when the source records one."),
    _f("duration_s", F64, "Session length in seconds."),
    _f("source_file", STR, "Path of the file the session was read from."),
    _f("scenario_id", STR, "The task or scenario the session enacts (see scenarios)."),
    _f(
        "run_id",
        STR,
        "The run the session belongs to (see runs): a tau2 results file or "
        "folder, a HAS-Bench trace file's run settings, else the ingest source.",
    ),
)

RUNS = _table(
    "runs",
    "run: one execution of a benchmark or one ingested source, that sessions belong to",
    ("corpus", "session_id", "run_id"),
    _f(
        "run_id",
        STR,
        "Content-derived id (tau2: tau2's own run identity, sha256 of the results "
        "timestamp and sorted simulation ids; others: a hash of the source and settings); "
        "session_id is '' for these rows.",
        False,
    ),
    _f("name", STR, "Readable name: the results file or folder, trace file or source folder."),
    _f("source", STR, "Path of the results file, folder or ingest source the run was read from."),
    _f("started_at", TS, "When the run was made, where the source records it."),
    _f("agent", STR, "Agent implementation (tau2 agent_info.implementation)."),
    _f("agent_model", STR, "Model behind the agent."),
    _f("user_simulator", STR, "User simulator implementation, for simulated-user benchmarks."),
    _f("user_model", STR, "Model behind the user simulator."),
    _f("policy", STR, "The domain policy the agent was given, verbatim, where recorded."),
    _f(
        "settings",
        STR,
        "JSON of the run's other settings (trials, step limits, seed, agency "
        "level, channels, ...).",
    ),
)

PARTICIPANTS = _table(
    "participants",
    "person or agent in a session",
    ("corpus", "session_id", "participant_id"),
    _f("participant_id", STR, "Identifier unique within the session.", False),
    _f("kind", STR, "human, ai or system."),
    _f("role", STR, "Role in the session (user, assistant, guide, follower, ...)."),
    _f("name", STR, "Name or brand (claude, grok, guide, agent_0, ...)."),
    _f("persona", STR, "JSON object describing the persona, where the corpus has one."),
)

STEPS = _table(
    "steps",
    "workflow step segment (a step visited twice is two segments)",
    ("corpus", "session_id", "step_id"),
    _f("step_id", STR, "Segment key, unique within the session (Kolab: 'key', e.g. seg1a).", False),
    _f("ordinal", I32, "0-based position of the segment in the session."),
    _f("badge", STR, "Step identifier from the workflow document (Step-1, Custom-1, ...)."),
    _f("name", STR, "Step name."),
    _f("action", STR, "What the step sets out to do."),
    _f("time_range", STR, "The source's time range text, verbatim."),
    _f("t_start", F64, "Segment start, seconds from session start."),
    _f("t_end", F64, "Segment end, seconds from session start."),
)

NODES = _table(
    "nodes",
    "action node of the workflow graph",
    ("corpus", "session_id", "node_id"),
    _f("node_id", STR, "Unique in the session: '<step_id>/<local_id>' for Kolab.", False),
    _f("local_id", STR, "The source's own node id (restarts in every Kolab segment)."),
    _f("step_id", STR, "Segment the node belongs to."),
    _f("actor_type", STR, "human or ai."),
    _f("actor", STR, "Specific actor: user, or the AI brand (claude, grok, chatgpt, ...)."),
    _f("label", STR, "Short behavioural label."),
    _f("detail", STR, "Longer description of the activity."),
    _f("software", STR, "Software used, as the source writes it."),
    _f("source_steps", STR, "Workflow step(s) the source says support the node."),
    _f("t_start", F64, "Start of the node's first occurrence (seconds)."),
    _f("t_end", F64, "End of the node's last occurrence (seconds)."),
    _f("n_occurrences", I32, "How many time intervals the node has (loops repeat nodes)."),
    _f("out_degree", I32, "Distinct successors over action-level edges (> 1: a branch node)."),
    _f("in_degree", I32, "Distinct predecessors over action-level edges (> 1: a merge node)."),
)

NODE_OCCURRENCES = _table(
    "node_occurrences",
    "one time interval of a node",
    ("corpus", "session_id", "node_id", "seq"),
    _f("node_id", STR, "The node (see nodes.node_id).", False),
    _f("seq", I32, "0-based index of the interval in the node's time list.", False),
    _f("t_start", F64, "Interval start (seconds)."),
    _f("t_end", F64, "Interval end (seconds)."),
    _f("step_id", STR, "The node's segment (copied from nodes so timelines need no join)."),
    _f("actor_type", STR, "The node's actor type, human or ai (copied from nodes, likewise)."),
)

EDGES = _table(
    "edges",
    "directed edge between nodes or participants",
    ("corpus", "session_id", "edge_id"),
    _f("edge_id", STR, "Deterministic id: '<src>-><dst>:<kind>'.", False),
    _f("src", STR, "Source node_id (or participant_id when level = participant)."),
    _f("dst", STR, "Target node_id (or participant_id)."),
    _f("kind", STR, "sequential, loop, handoff, supervises, ..."),
    _f("level", STR, "action (between nodes) or participant."),
    _f("step_id", STR, "Segment the edge was declared in, when it has one."),
)

EVENTS = _table(
    "events",
    "timestamped atomic event",
    ("corpus", "session_id", "event_id"),
    _f("event_id", STR, "Deterministic id unique within the session.", False),
    _f("seq", I64, "Order of the event in its source."),
    _f("t", F64, "Time (seconds from session start)."),
    _f("t_end", F64, "End time for events with a duration."),
    _f("timestamp", TS, "Absolute time, when the source records one."),
    _f("actor", STR, "participant_id of who acted."),
    _f("actor_type", STR, "human, ai or system."),
    _f("kind", STR, "message, tool_call, tool_result, draw, clarification, feedback, ..."),
    _f("channel", STR, "Interaction channel (chat, clarification, feedback, control, ...)."),
    _f("initiator", STR, "agent or human, for channel events."),
    _f("request_id", STR, "Links a request to its answer or a tool call to its result."),
    _f("status", STR, "Lifecycle state (pending, answered, expired) where one applies."),
    _f("node_id", STR, "Workflow node the event belongs to, when known."),
    _f("step_id", STR, "Segment the event falls in, when known."),
    _f("text", STR, "Message text or tool name."),
    _f("payload", STR, "JSON of structured content (tool arguments, results)."),
)

ANNOTATIONS = _table(
    "annotations",
    "label attached by people",
    ("corpus", "session_id", "annotation_id"),
    _f("annotation_id", STR, "Deterministic id unique within the session.", False),
    _f("kind", STR, "adoption, rating, survey, mental_model, outcome, ..."),
    _f("target_kind", STR, "What the label is about: node, step, session, event."),
    _f("target_id", STR, "Id of that target."),
    _f("step_id", STR, "Segment of the target, when it has one."),
    _f("source_node", STR, "Adoption: the human node that prompted the AI (may be null)."),
    _f("ai_node", STR, "Adoption: the AI node whose output was acted on."),
    _f("response_node", STR, "Adoption: the human node that adopted, modified or rejected it."),
    _f("source_seq", I32, "Adoption: occurrence of source_node the reference resolved to."),
    _f("ai_seq", I32, "Adoption: occurrence of ai_node the reference resolved to."),
    _f("response_seq", I32, "Adoption: occurrence of response_node the reference resolved to."),
    _f("label", STR, "The label (adopt/modify/reject, an item name, ...)."),
    _f("value", F64, "Numeric value (ratings 1-5, scores)."),
    _f("text", STR, "Free text (reasons, rationale, answers)."),
    _f("annotator", STR, "Who labelled it (participant, annotators, judge)."),
)

MEDIA = _table(
    "media",
    "video or image file",
    ("corpus", "session_id", "media_id"),
    _f("media_id", STR, "sha256 of the file's bytes (content addressed).", False),
    _f("uri", STR, "Where the file is (absolute path or URL)."),
    _f("kind", STR, "screen_recording, video, image."),
    _f("duration_s", F64, "Length in seconds (probed when the vision extra is installed)."),
    _f("fps", F64, "Frames per second."),
    _f("width", I32, "Width in pixels."),
    _f("height", I32, "Height in pixels."),
    _f("size_bytes", I64, "File size."),
    _f("sha256", STR, "Hex sha256 of the file's bytes."),
)

FRAMES = _table(
    "frames",
    "sampled frame of a recording, read by OCR (its vectors live in LanceDB)",
    ("corpus", "session_id", "frame_id"),
    _f("frame_id", STR, "'<first 16 hex of media_id>-<milliseconds>': unique in the lake.", False),
    _f("media_id", STR, "The recording (see media.media_id)."),
    _f("t", F64, "When the frame is shown (seconds from session start = recording start)."),
    _f(
        "t_end",
        F64,
        "When the next kept frame starts, or the recording ends: the screen "
        "looked like this frame over [t, t_end).",
    ),
    _f("kind", STR, "Why it was kept: grid (a sampling target) or change (a settled change)."),
    _f("text", STR, "What OCR read on the screen, one line per text line."),
    _f("ocr_score", F64, "Mean OCR confidence of the lines (0-1); null when no text."),
    _f("phash", I64, "64-bit difference hash of the picture (Hamming distance = similarity)."),
    _f("thumbnail", STR, "Where the service serves its JPEG thumbnail."),
)

DOCUMENTS = _table(
    "documents",
    "text document attached to a session (workflow plan, transcript)",
    ("corpus", "session_id", "doc_id"),
    _f("doc_id", STR, "Deterministic id unique within the session.", False),
    _f("kind", STR, "workflow_document, transcript, ..."),
    _f("uri", STR, "Source path."),
    _f("text", STR, "Full text."),
)

SCENARIOS = _table(
    "scenarios",
    "task or scenario definition that sessions enact (agent benchmarks)",
    ("corpus", "session_id", "scenario_id"),
    _f(
        "scenario_id",
        STR,
        "Task id as the source names it (session_id is '' for these rows).",
        False,
    ),
    _f("title", STR, "Short description or purpose."),
    _f("domain", STR, "Task domain (airline, telecom, coding, ...)."),
    _f("goal", STR, "What the (simulated) user wants: reason for call, task text."),
    _f("known_info", STR, "What the user knows and may tell."),
    _f("unknown_info", STR, "What the user does not know."),
    _f("instructions", STR, "Further instructions to the user simulator or agents."),
    _f("persona", STR, "User persona, where given."),
    _f("coordination_mode", STR, "How agents coordinate (star, chain, graph, ...)."),
    _f("evaluation_criteria", STR, "JSON of how success is judged (actions, assertions, ...)."),
    _f("source_file", STR, "File the scenario was read from."),
)

LANDMARKS = _table(
    "landmarks",
    "landmark of a task map, as each side's map shows it (Map Task, Almanac)",
    ("corpus", "session_id", "map_id", "landmark_id"),
    _f("map_id", STR, "Map the landmark belongs to (m12, ...).", False),
    _f("landmark_id", STR, "Landmark id as the source names it.", False),
    _f("name", STR, "Landmark name."),
    _f("on_giver_map", BOOL, "Whether the guide's / giver's map shows it."),
    _f("on_follower_map", BOOL, "Whether the follower's map shows it."),
    _f("source_file", STR, "File the landmark was read from."),
)

CANVAS_CELLS = _table(
    "canvas_cells",
    "grid cell that a drawing action added to or removed from the canvas",
    ("corpus", "session_id", "event_id", "row", "col"),
    _f("event_id", STR, "The action that changed the cell (see events).", False),
    _f("seq", I64, "The action's order; the grid after action k sums delta over seq <= k."),
    _f("row", I32, "Grid row.", False),
    _f("col", I32, "Grid column.", False),
    _f("delta", I32, "+1 the cell became inked, -1 it was cleared."),
)

REJECTS = _table(
    "rejects",
    "record that could not be ingested",
    ("corpus", "reject_id"),
    _f("reject_id", STR, "Deterministic id: hash of file, record reference and reason.", False),
    _f("source_file", STR, "File the record came from."),
    _f("target_table", STR, "Table the record was meant for."),
    _f("record_kind", STR, "file, session, step, node, node_time, edge, user_response, ..."),
    _f("record_ref", STR, "Where in the file: a JSON path such as steps[2].nodes[4]."),
    _f("reason", STR, "What is wrong and how to fix it."),
    _f("raw", STR, "The record exactly as read (JSON text, truncated past 1 MiB)."),
)

TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        SESSIONS,
        RUNS,
        PARTICIPANTS,
        STEPS,
        NODES,
        NODE_OCCURRENCES,
        EDGES,
        EVENTS,
        ANNOTATIONS,
        MEDIA,
        FRAMES,
        DOCUMENTS,
        SCENARIOS,
        LANDMARKS,
        CANVAS_CELLS,
        REJECTS,
    )
}


def spec(name: str) -> TableSpec:
    """The spec of a lake table, or a KeyError that lists the tables."""
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; tables are {', '.join(TABLES)}") from None
