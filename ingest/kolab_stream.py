"""Streaming read of a Kolab graph too large to hold whole.

A graph file is one JSON object, and its rules need the whole session (a ``user_response``
may name a node of any step; degrees are known at the end), so the record parser holds every
node: about 25 times the file's size. Past ``$GRAPHLAKE_MAX_FILE_BYTES`` this module reads the
file instead as a stream of parse events (ijson): a step's nodes and edges one at a time,
flattened into the same tables the vectorised path builds (:mod:`~graphlake.ingest.kolab_fast`)
and appended in batches to a DuckDB database in a temporary folder, with a memory limit and
room to spill. The fast path's SQL then checks, resolves and writes the canonical rows out of
core, and they reach the emitter in batches: memory stays bounded whatever the file's size.

It takes only graphs the fast path would take. A file with anything the record parser would
have to judge (a field without a column, an unusual type, a missing id, an unresolved
reference) is one reject saying what was found and how to have the file read whole instead.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import ijson
import pyarrow as pa
from ijson.common import ObjectBuilder

from graphlake.ingest.kolab_fast import (
    _ANOMALIES,
    _RESOLVE,
    FACTS_SQL,
    _outputs,
    build,
    occurrences,
    responses,
)
from graphlake.ingest.kolab_graph import NODE_KNOWN, STEP_KNOWN, ParsedGraph, Segment

#: Nodes flattened in Python before they are appended to the database (bounds the buffers).
BATCH_NODES = 20_000
#: Memory the DuckDB that resolves a streamed graph may use; past it, it spills to disk.
STREAM_MEMORY = "256MiB"
#: Rows per batch handed to the emitter.
OUT_BATCH = 100_000

_HEAD_TEXT = ("session_id", "participant_id", "title", "goal")
_STEP_TEXT = ("key", "badge", "step_name", "step_action", "time_range")
_STEP_NUM = ("start_seconds", "end_seconds")
_NODE_TEXT = ("id", "actor", "label", "detail", "actor_type", "softwares", "source_steps")
_EDGE_TEXT = ("from", "to", "type")
_SCALAR = {"string", "number", "boolean", "null"}

_S, _I, _F = pa.string(), pa.int64(), pa.float64()
_SCHEMAS = {
    "st_p": pa.schema(
        [("_idx", pa.int32()), ("ordinal", _I)]
        + [(k, _S) for k in _STEP_TEXT]
        + [(k, _F) for k in _STEP_NUM]
        + [("no_nodes", pa.bool_()), ("no_edges", pa.bool_())]
    ),
    "nd_p": pa.schema(
        [("_idx", pa.int32()), ("ordinal", _I), ("nrow", _I), ("nidx", _I)]
        + [(k, _S) for k in _NODE_TEXT]
        + [("n_times", pa.int32())]
    ),
    "oc_p": pa.schema(
        [("_idx", pa.int32()), ("ordinal", _I), ("nrow", _I), ("id", _S), ("seq", _I), ("tx", _S)]
    ),
    "ed_p": pa.schema(
        [("_idx", pa.int32()), ("ordinal", _I), ("src", _S), ("dst", _S), ("kind", _S)]
    ),
    "ur_p": pa.schema(
        [("_idx", pa.int32()), ("ordinal", _I), ("nrow", _I), ("urow", _I), ("id", _S)]
        + [("k", _I), ("t", pa.list_(_S))]
    ),
}

# the time texts of occurrences and responses are parsed as each batch is appended
_PARSED = {"oc_p": occurrences, "ur_p": responses}

# the flattened parts, given their step's key (a step's key may come after its nodes); a
# step's row (srow) is its ordinal, as the file is the only one
_ASSEMBLE = """
CREATE TEMP TABLE st AS SELECT * EXCLUDE (ordinal), ordinal AS srow, ordinal FROM st_p;
CREATE TEMP TABLE nd AS SELECT n._idx, n.ordinal AS srow, n.nrow, s.key,
    n.* EXCLUDE (_idx, ordinal, nrow)
  FROM nd_p n JOIN st_p s USING (ordinal);
CREATE TEMP TABLE oc AS SELECT o._idx, o.ordinal AS srow, o.nrow, s.key, o.id, o.seq, o.tx,
    n.actor_type, o.a, o.b
  FROM oc_p o JOIN st_p s USING (ordinal) JOIN nd_p n USING (nrow);
CREATE TEMP TABLE ed AS SELECT e._idx, e.ordinal AS srow, s.key, e.src, e.dst, e.kind
  FROM ed_p e JOIN st_p s USING (ordinal);
CREATE TEMP TABLE ur AS SELECT u._idx, u.ordinal AS srow, s.key, u.* EXCLUDE (_idx, ordinal)
  FROM ur_p u JOIN st_p s USING (ordinal);
"""


class NotStreamable(Exception):
    """The graph holds something only the record parser may judge; the message says what."""


@dataclass
class StreamedGraph:
    """The head of the session (everything but its steps) and what side files need."""

    head: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # top-level fields without a column
    graph: ParsedGraph | None = None


def _text(value, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise NotStreamable(f"{where} is {type(value).__name__}, not text")


def _texts(value, where: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise NotStreamable(f"{where} is {type(value).__name__}, not a list of text")
    for i, v in enumerate(value):
        _text(v, f"{where}[{i}]")
    return value


class _Parts:
    """Flattened rows of the graph, appended to the database a batch at a time."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self.buf: dict[str, list[dict]] = {name: [] for name in _SCHEMAS}
        self.nodes = self.responses = 0  # rows so far: the next node's nrow, response's urow
        for name, schema in _SCHEMAS.items():
            con.register("_empty", self._parsed(name, schema.empty_table()))
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM _empty")
            con.unregister("_empty")

    def add(self, name: str, row: dict) -> None:
        self.buf[name].append(row)

    @staticmethod
    def _parsed(name: str, table: pa.Table) -> pa.Table:
        parse = _PARSED.get(name)
        return parse(table) if parse else table

    def flush(self) -> None:
        for name, rows in self.buf.items():
            if rows:
                batch = pa.Table.from_pylist(rows, schema=_SCHEMAS[name])
                self.con.register("_batch", self._parsed(name, batch))
                self.con.execute(f"INSERT INTO {name} SELECT * FROM _batch")
                self.con.unregister("_batch")
                rows.clear()


def _build(first_event: str, events) -> object:
    """The value that starts with ``first_event``, built from the events that follow it."""
    builder = ObjectBuilder()
    builder.event(first_event, None)
    depth = 1
    for _, event, value in events:
        builder.event(event, value)
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
            if depth == 0:
                break
    return builder.value


def _node(node, ordinal: int, nidx: int, parts: _Parts) -> None:
    where = f"steps[{ordinal}].nodes[{nidx}]"
    if not isinstance(node, dict):
        raise NotStreamable(f"{where} is {type(node).__name__}, not a node object")
    unknown = sorted(set(node) - NODE_KNOWN)
    if unknown:
        raise NotStreamable(f"{where} has fields without a column ({', '.join(unknown)})")
    row: dict = {k: _text(node.get(k), f"{where}.{k}") for k in _NODE_TEXT}
    times = _texts(node.get("time"), f"{where}.time")
    nrow = parts.nodes
    parts.nodes += 1
    row.update(
        _idx=0, ordinal=ordinal, nrow=nrow, nidx=nidx, n_times=None if times is None else len(times)
    )
    parts.add("nd_p", row)
    for seq, tx in enumerate(times or ()):
        parts.add(
            "oc_p",
            {"_idx": 0, "ordinal": ordinal, "nrow": nrow, "id": row["id"], "seq": seq, "tx": tx},
        )
    responses = node.get("user_response")
    if responses is None:
        return
    if not isinstance(responses, list):
        raise NotStreamable(f"{where}.user_response is not a list of 6-item lists")
    for k, t in enumerate(responses):
        t = _texts(t, f"{where}.user_response[{k}]")
        parts.add(
            "ur_p",
            {"_idx": 0, "ordinal": ordinal, "nrow": nrow, "urow": parts.responses, "id": row["id"]}
            | {"k": k, "t": t},
        )
        parts.responses += 1


def _edge(edge, ordinal: int, j: int, parts: _Parts) -> None:
    where = f"steps[{ordinal}].edges[{j}]"
    if not isinstance(edge, dict) or set(edge) - set(_EDGE_TEXT):
        raise NotStreamable(f"{where} is not an object of from, to and type")
    src, dst, kind = (_text(edge.get(k), f"{where}.{k}") for k in _EDGE_TEXT)
    parts.add("ed_p", {"_idx": 0, "ordinal": ordinal, "src": src, "dst": dst, "kind": kind})


def _read(fh, parts: _Parts) -> StreamedGraph:
    """Walk the parse events of one graph object, flattening as it goes."""
    out = StreamedGraph()
    events = ijson.parse(fh, use_float=True)
    first = next(events, (None, None, None))
    if first[1] != "start_map":
        raise NotStreamable("the top level is not a JSON object")
    step: dict = {}
    ordinal, nidx, eidx, pending = -1, 0, 0, 0
    saw_steps = False
    for prefix, event, value in events:
        if prefix == "":
            if event == "end_map":
                break
            continue  # a map_key: its value's events follow under its own prefix
        head = prefix.partition(".")[0]
        if head != "steps":  # a top-level field: its whole value is built here
            out_value = value if event in _SCALAR else _build(event, events)
            if head in _HEAD_TEXT:
                out.head[head] = _text(out_value, head)
            else:
                out.extra[head] = out_value
            continue
        saw_steps = True
        if prefix == "steps":
            if event not in ("start_array", "end_array"):
                raise NotStreamable("'steps' is not a list of step objects")
        elif prefix == "steps.item":
            if event == "start_map":
                ordinal, nidx, eidx = ordinal + 1, 0, 0
                step = {"_idx": 0, "ordinal": ordinal, "no_nodes": True, "no_edges": True}
            elif event == "end_map":
                parts.add("st_p", step)
            elif event == "map_key":
                if value not in STEP_KNOWN:
                    raise NotStreamable(f"steps[{ordinal}] has a field without a column ({value})")
            else:
                raise NotStreamable(f"steps[{ordinal + 1}] is not a step object")
        elif prefix in ("steps.item.nodes", "steps.item.edges"):
            if event == "start_array":
                step["no_nodes" if prefix.endswith("nodes") else "no_edges"] = False
            elif event not in ("end_array", "null"):
                raise NotStreamable(f"steps[{ordinal}].{prefix[11:]} is not a list")
        elif prefix == "steps.item.nodes.item":
            _node(value if event in _SCALAR else _build(event, events), ordinal, nidx, parts)
            nidx += 1
            pending += 1
            if pending >= BATCH_NODES:
                parts.flush()
                pending = 0
        elif prefix == "steps.item.edges.item":
            _edge(value if event in _SCALAR else _build(event, events), ordinal, eidx, parts)
            eidx += 1
        else:  # a step's own field
            name = prefix[len("steps.item.") :]
            if event not in _SCALAR:
                raise NotStreamable(f"steps[{ordinal}].{name} is not a single value")
            if name in _STEP_NUM:
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, (int, float))
                ):
                    raise NotStreamable(f"steps[{ordinal}].{name} is not a number")
                step[name] = None if value is None else float(value)
            else:
                step[name] = _text(value, f"steps[{ordinal}].{name}")
    if not saw_steps:
        raise NotStreamable("'steps' is missing")
    parts.flush()
    return out


def _why_bad(con: duckdb.DuckDBPyConnection) -> str | None:
    """What the first anomaly found is (None when the graph is clean)."""
    [(n, why)] = con.execute("SELECT count(*), min(why) FROM bad").fetchall()
    return (why or "a record only the full parser can judge") if n else None


def stream_graph(
    path: Path, corpus: str, fallback_sid: str
) -> Iterator[tuple[str, pa.Table] | StreamedGraph]:
    """Canonical tables of the graph at ``path`` in batches (``(table, rows)``, rows with
    ``_idx`` 0), then its :class:`StreamedGraph`. Raises :class:`NotStreamable` before any
    row is yielded when the graph needs the record parser."""
    from graphlake.config import temp_limit

    with tempfile.TemporaryDirectory(prefix="graphlake-kolab-stream-") as tmp:
        con = duckdb.connect(
            str(Path(tmp) / "graph.duckdb"),
            config={
                "threads": 1,
                "memory_limit": STREAM_MEMORY,
                "temp_directory": str(Path(tmp) / "spill"),
                "max_temp_directory_size": temp_limit(),
                "preserve_insertion_order": False,
            },
        )
        try:
            parts = _Parts(con)
            with open(path, "rb") as fh:
                try:
                    streamed = _read(fh, parts)
                except ijson.JSONError as exc:
                    raise NotStreamable(f"not valid JSON ({exc})") from None
            head = streamed.head
            if not (head.get("session_id") or "").strip():
                head["session_id"] = fallback_sid
            con.register(
                "_raw",
                pa.table(
                    {
                        **{k: pa.array([head.get(k)], _S) for k in _HEAD_TEXT},
                        "_idx": pa.array([0], pa.int32()),
                        "no_steps": [False],
                    }
                ),
            )
            con.execute("CREATE TEMP TABLE raw AS SELECT * FROM _raw")
            con.register(
                "_files", pa.table({"_idx": pa.array([0], pa.int32()), "path": [str(path)]})
            )
            con.execute("CREATE TEMP TABLE files AS SELECT * FROM _files")
            con.execute(_ASSEMBLE)
            con.execute(_ANOMALIES)
            con.execute(_RESOLVE)
            why = _why_bad(con)
            if why:
                raise NotStreamable(why)
            for name, sql in _outputs(corpus).items():
                for batch in con.sql(sql).to_arrow_reader(OUT_BATCH):
                    if batch.num_rows:
                        yield name, pa.Table.from_batches([batch])
            for name, sql in FACTS_SQL.items():
                for batch in con.sql(sql).to_arrow_reader(OUT_BATCH):
                    if batch.num_rows:
                        yield name, build(name, pa.Table.from_batches([batch]), corpus)
            streamed.graph = ParsedGraph(
                head["session_id"],
                head.get("participant_id") or "user",
                [
                    Segment(key, ordinal, badge, t0, t1)
                    for key, ordinal, badge, t0, t1 in con.execute(
                        "SELECT key, ordinal, badge, start_seconds, end_seconds FROM st "
                        "ORDER BY ordinal"
                    ).fetchall()
                ],
                {
                    r[0]
                    for r in con.execute(
                        "SELECT DISTINCT CASE WHEN trim(coalesce(actor, '')) = '' THEN 'ai' "
                        "ELSE lower(trim(actor)) END FROM nd WHERE actor_type = 'ai'"
                    ).fetchall()
                },
            )
            yield streamed
        finally:
            con.close()
