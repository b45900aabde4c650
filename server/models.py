"""Request and response models: the HTTP contract, as pydantic models (and so OpenAPI)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next page; null on the last page."
    )


class ErrorDetail(BaseModel):
    status: int
    code: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorDetail


class Health(BaseModel):
    status: str
    lake_version: int
    lake: str
    worker: int  # the process that answered (serve --workers N runs N)


class Corpus(BaseModel):
    corpus: str
    sessions: int
    events: int
    nodes: int


class Session(BaseModel):
    corpus: str
    session_id: str
    title: str | None = None
    goal: str | None = None
    condition: str | None = None
    domain: str | None = None
    split: str | None = None
    participants: list[str] | None = None
    duration_s: float | None = None
    scenario_id: str | None = None


class GraphNode(BaseModel):
    node_id: str
    step_id: str | None = None
    actor_type: str | None = None
    actor: str | None = None
    label: str | None = None
    detail: str | None = None
    t_start: float | None = None


class GraphEdge(BaseModel):
    src: str
    dst: str
    kind: str | None = None


class Graph(BaseModel):
    corpus: str
    session_id: str
    selection: dict[str, Any]
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    text: str = Field(
        description="The Kolab A.6 rendering: [nK](actor) label: details lines, "
        "then nK -> nM edges."
    )
    node_ids: list[str] = Field(description="node_ids[K] is the lake node_id of nK.")


class Event(BaseModel):
    model_config = ConfigDict(extra="allow")
    event_id: str
    seq: int | None = None
    t: float | None = None
    actor: str | None = None
    actor_type: str | None = None
    kind: str | None = None
    channel: str | None = None
    text: str | None = None


class ChatTurn(BaseModel):
    event_id: str
    t: float | None = None
    actor_type: str | None = None
    text: str | None = None


class Chat(BaseModel):
    turns: list[ChatTurn]
    text: str = Field(description="<human> ... </human> / <ai> ... </ai> turns, one per line.")


class Media(BaseModel):
    corpus: str
    session_id: str
    media_id: str
    kind: str | None = None
    duration_s: float | None = None
    fps: float | None = None
    width: int | None = None
    height: int | None = None
    size_bytes: int | None = None
    sha256: str | None = None


class Frame(BaseModel):
    t: float
    url: str


class SqlRequest(BaseModel):
    sql: str = Field(
        description="One read-only statement (DuckDB dialect; graph patterns and "
        "primitives allowed).",
        max_length=100_000,
    )
    params: dict[str, Any] | None = Field(
        default=None, description="Values for $name placeholders."
    )


class SqlResponse(BaseModel):
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    lake_version: int


class QueryParam(BaseModel):
    name: str
    type: str
    required: bool
    default: Any = None
    doc: str = ""


class NamedQueryInfo(BaseModel):
    name: str
    title: str
    description: str
    params: list[QueryParam]
    chart: dict[str, Any] | None = Field(
        default=None, description="A Vega-Lite spec (no data) that plots the query's rows."
    )


class NamedQueryRequest(BaseModel):
    params: dict[str, Any] | None = None


class ProtocolParam(BaseModel):
    name: str
    type: str
    default: Any = None
    help: str = ""
    choices: list[Any] = []


class Benchmark(BaseModel):
    id: str
    description: str
    task: str
    unit: str
    window: str
    cutoff: str
    labels: list[str]
    conditions: list[str]
    video_conditions: list[str] = Field(
        default_factory=list,
        description="The conditions that show the recording: they list only the instances "
        "whose session has one.",
    )
    source: str
    spec_hash: str
    params: list[ProtocolParam]


class Instance(BaseModel):
    id: str
    protocol: str
    condition: str
    spec_hash: str
    corpus: str
    session_id: str
    lake_version: int
    params: dict[str, Any]
    prompt: str
    inputs: dict[str, Any]


class Prediction(BaseModel):
    id: str
    label: str | int | float | None = None
    cells: list[list[int]] | None = Field(
        default=None, description="Almanac draw predictions: the [row, col] cells."
    )


class ScoreRequest(BaseModel):
    predictions: list[Prediction] = []
    params: dict[str, Any] | None = None


class Score(BaseModel):
    model_config = ConfigDict(extra="allow")
    protocol: str
    spec_hash: str
    lake_version: int
    n_instances: int
    n: int
    unknown: list[str]
    missing: list[str]
    invalid: list[str]
    duplicate: list[str]


class ChatBefore(ChatTurn):
    actor: str | None = None


class SearchHit(BaseModel):
    session_id: str
    corpus: str
    t: float | None = Field(description="Seconds from session start.")
    score: float = Field(description="Reciprocal-rank-fusion score (higher is better).")
    matched: list[str] = Field(
        description="Rankings that found it: fts, text_vector, image_vector, phash."
    )
    why: str = Field(
        default="",
        description="What found it, in words: 'found by the words (2 of 2 shown) and the "
        "meaning of the text'.",
    )
    text: str | None = Field(description="OCR text of the frame, or the label / chat text.")
    step_id: str | None
    nodes: list[str] = Field(description="Labels of the node occurrences running at t.")
    node_ids: list[str]
    chat_before: ChatBefore | None = Field(description="The last chat turn at or before t.")


class FrameHit(SearchHit):
    media_id: str
    frame_id: str
    thumbnail: str = Field(description="URL of the frame's JPEG thumbnail.")


class TextHit(SearchHit):
    source: str = Field(description="node (label and detail) or chat.")
    ref_id: str = Field(description="node_id or event_id.")
    actor_type: str | None
    sessions: list[str] = Field(
        default_factory=list,
        description="The other sessions the same text occurs in (each text is one hit; at "
        "most 100 listed).",
    )
    n_sessions: int = Field(default=1, description="Sessions the text occurs in, this one too.")


class SessionOverview(BaseModel):
    corpus: str
    session_id: str
    title: str | None = None
    domain: str | None = None
    condition: str | None = None
    duration_s: float | None = None
    n_nodes: int | None = None
    n_ai_nodes: int | None = None
    n_responses: int | None = None
    burstiness: float | None = None
    topology_w: float | None = None
    retention_adopt: float | None = None
    retention_modify: float | None = None
    collaboration_rating: float | None = None
    output_quality_rating: float | None = None
    success: bool | None = Field(default=None, description="Agent traces: the run passed.")
    score: float | None = None
    termination: str | None = None
    has_recording: bool = Field(
        default=False, description="The session has a screen recording (a media row)."
    )


class SessionOverviewPage(Page[SessionOverview]):
    total: int = Field(description="Sessions matching the filters, over all pages.")
    offset: int = Field(description="Position of this page's first item.")


class Timeline(BaseModel):
    """A session for the workbench timeline; occurrences and events as parallel arrays."""

    corpus: str
    session_id: str
    info: dict[str, Any]
    duration_s: float
    lanes: list[dict[str, Any]] = Field(
        description="Swimlanes top to bottom: id, label, actor_type, index."
    )
    steps: list[dict[str, Any]] = Field(description="Step bands with their ratings.")
    occurrences: dict[str, list[Any]] = Field(
        description="One bar per node occurrence "
        "(loops are several): parallel arrays, lane is "
        "an index into lanes."
    )
    events: dict[str, list[Any]] = Field(
        description="Events no node stands for (chat, "
        "clarifications, tool calls), as parallel arrays."
    )
    edges: list[GraphEdge]
    adoptions: list[dict[str, Any]] = Field(
        description="Adopt/modify/reject triples: source_node, ai_node, response_node, label."
    )
    media: list[dict[str, Any]]
    outcome: dict[str, Any] | None = Field(description="Agent traces: run_outcomes' row.")
