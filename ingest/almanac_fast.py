"""Vectorised reading of well-formed Almanac session files: the bulk path of ``ingest almanac``.

An Almanac session is a header line and one line per action; each action becomes an event, a
node, a node occurrence, an edge to the next action, canvas cell changes and up to six
annotations, about ten canonical rows. Built one Python dict at a time that costs ~4 us a
row. Here the header lines (one per file) are read by the record parser's own code, and all
the action lines of a batch of files are parsed at once by PyArrow against the format's exact
schema and turned into canonical rows by one DuckDB script (the canvas differences are an
anti-join of each drawing action's cells against the previous one's).

Nothing is judged here. A file with anything the record parser would have to judge (a line
that is not JSON, a field the schema does not name, an unknown action, actor or grounding
act, a negative or missing time, a canvas that is not [row, col] pairs, an ``undo`` without
its canvas, blank lines, CR line ends) goes back whole to
:class:`graphlake.ingest.almanac._Session`; ``tests/test_almanac_fast.py`` checks that both
paths give the same rows on every file the fast path accepts.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from graphlake.ingest.almanac import ACTIONS, GROUNDING_ACTS, MM, STEP, _Session
from graphlake.ingest.vectorised import (
    connection,
    emit_batch,
    read_records,
    run_sql,
    strict_json,
)

_S = pa.string()
ACTION_SCHEMA = pa.schema(
    [
        ("type", _S),
        ("t", pa.float64()),
        ("actor", _S),
        ("action", _S),
        ("text", _S),
        ("canvas", pa.list_(pa.list_(pa.int64()))),
        ("mental_model", pa.struct([(c, _S) for c in MM])),
        ("grounding_act", _S),
    ]
)
_PARSE = strict_json(ACTION_SCHEMA)


def _sql_list(values) -> str:
    return ", ".join(f"'{v}'" for v in values)


# ``act`` holds the action lines (``lineno``: a file's actions are lines 2, 3, ... in order,
# so the next action of line k is line k + 1 and ``last`` in ``hdr`` is the file's last line);
# ``roles`` maps each file's participant ids to guide / follower
_STEPS = f"""
CREATE OR REPLACE TEMP TABLE a AS
  SELECT act.*, h.sid, h.last, r.role, 'a' || act.lineno AS eid
  FROM act JOIN hdr h USING (_idx)
  LEFT JOIN roles r ON r._idx = act._idx AND r.pid = act.actor;
CREATE OR REPLACE TEMP TABLE cells AS
  SELECT _idx, lineno, c, c[1] AS r, c[2] AS col
  FROM (SELECT _idx, lineno, unnest(canvas) AS c FROM a WHERE canvas IS NOT NULL);
CREATE OR REPLACE TEMP TABLE bad AS
  SELECT DISTINCT _idx FROM a
  WHERE type IS DISTINCT FROM 'action' OR action IS NULL OR action NOT IN ({_sql_list(ACTIONS)})
     OR role IS NULL OR t IS NULL OR t < 0
     OR (grounding_act IS NOT NULL AND grounding_act NOT IN ({_sql_list(GROUNDING_ACTS)}))
     OR (action = 'message' AND canvas IS NOT NULL)
     OR (action IN ('draw', 'erase', 'undo') AND canvas IS NULL)
  UNION
  SELECT DISTINCT _idx FROM cells
  WHERE c IS NULL OR len(c) <> 2 OR r IS NULL OR col IS NULL OR r < 0 OR col < 0;
DELETE FROM a WHERE _idx IN (SELECT _idx FROM bad);
-- each drawing action's canvas against the one before it (an action without cells, a reset,
-- still takes part: its predecessor's cells are all cleared)
CREATE OR REPLACE TEMP TABLE draws AS
  SELECT _idx, lineno, sid, lead(lineno) OVER (PARTITION BY _idx ORDER BY lineno) AS next
  FROM a WHERE action <> 'message';
CREATE OR REPLACE TEMP TABLE cs AS
  SELECT DISTINCT _idx, lineno, r, col FROM cells
  WHERE _idx NOT IN (SELECT _idx FROM bad);
"""

_C = "'{corpus}' AS corpus, sid AS session_id"
_COMPONENTS = [
    f"""
SELECT {_C}, eid || '/mm/{c}' AS annotation_id, 'mental_model' AS kind,
       'event' AS target_kind, eid AS target_id, '{STEP}' AS step_id, '{c}' AS label,
       mental_model.{c} AS text, actor AS annotator, _idx
FROM a WHERE mental_model.{c} IS NOT NULL"""
    for c in MM
]
_OUTPUTS = {
    "events": f"""
SELECT {_C}, eid AS event_id, lineno AS seq, t, actor, 'human' AS actor_type,
       action AS kind, CASE WHEN action = 'message' THEN 'chat' ELSE 'canvas' END AS channel,
       role AS initiator, eid AS node_id, '{STEP}' AS step_id, text, _idx
FROM a""",
    "nodes": f"""
SELECT {_C}, eid AS node_id, eid AS local_id, '{STEP}' AS step_id, 'human' AS actor_type,
       role AS actor,
       CASE WHEN action <> 'message' THEN action
            ELSE substring('message: ' || coalesce(text, ''), 1, 200) END AS label,
       t AS t_start, t AS t_end, 1 AS n_occurrences,
       (lineno > 2)::INTEGER AS in_degree, (lineno < last)::INTEGER AS out_degree, _idx
FROM a""",
    "node_occurrences": f"""
SELECT {_C}, eid AS node_id, 0 AS seq, t AS t_start, t AS t_end, '{STEP}' AS step_id,
       'human' AS actor_type, _idx
FROM a""",
    "edges": f"""
SELECT {_C}, eid || '->a' || (lineno + 1) || ':sequential' AS edge_id, eid AS src,
       'a' || (lineno + 1) AS dst, 'sequential' AS kind, 'action' AS level,
       '{STEP}' AS step_id, _idx
FROM a WHERE lineno < last""",
    # a cell in an action's canvas and not in the previous one's was inked (+1); one in the
    # previous canvas and not in this one was cleared (-1)
    "canvas_cells": f"""
SELECT {_C}, 'a' || lineno AS event_id, lineno AS seq, r AS row, col, delta, _idx
FROM (SELECT coalesce(c._idx, p._idx) AS _idx, coalesce(c.lineno, p.next) AS lineno,
             coalesce(c.r, p.r) AS r, coalesce(c.col, p.col) AS col,
             CASE WHEN p._idx IS NULL THEN 1 ELSE -1 END AS delta
      FROM cs c
      FULL OUTER JOIN (SELECT cs.*, d.next FROM cs JOIN draws d USING (_idx, lineno)
                       WHERE d.next IS NOT NULL) p
        ON c._idx = p._idx AND c.lineno = p.next AND c.r = p.r AND c.col = p.col
      WHERE c._idx IS NULL OR p._idx IS NULL) x
JOIN draws USING (_idx, lineno)""",
    "annotations": " UNION ALL ".join(_COMPONENTS)
    + f"""
UNION ALL
SELECT {_C}, eid || '/grounding', 'grounding_act', 'event', eid, '{STEP}', grounding_act,
       NULL, NULL, _idx
FROM a WHERE grounding_act IS NOT NULL""",
    "steps": f"""
SELECT '{{corpus}}' AS corpus, h.sid AS session_id, '{STEP}' AS step_id, 0 AS ordinal,
       'map task' AS name, 0.0 AS t_start, coalesce(max(a.t), 0.0) AS t_end, h._idx
FROM hdr h LEFT JOIN a USING (_idx)
WHERE h._idx NOT IN (SELECT _idx FROM bad)
GROUP BY h._idx, h.sid""",
}


class _Recorder:
    """Stands in for the emitter while a header is read: its rows are replayed only if the
    whole file takes the fast path (else the record parser emits them itself)."""

    def __init__(self):
        self.rows: list[tuple[str, dict]] = []

    def row(self, table: str, row: dict) -> None:
        self.rows.append((table, row))


def _split(path: Path, limit: int) -> tuple[_Session, _Recorder, bytes, int] | None:
    """The file's header read by the record parser's code, and its action lines; None when
    anything about the file needs the record parser."""
    if path.stat().st_size > limit:
        return None
    data = path.read_bytes()
    if b"\r" in data:
        return None
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    if not lines or not all(line.startswith(b"{") for line in lines):
        return None  # blank lines (numbering) or a line that is not an object
    rec = _Recorder()
    session = _Session(path, rec)  # header() only calls row()
    try:
        session.header(orjson.loads(lines[0]))
    except Exception:  # noqa: BLE001 - any doubt about the header: the record parser judges
        return None
    return session, rec, b"\n".join(lines[1:]), len(lines) - 1


def read_batch(paths: list[Path], corpus: str):
    """Canonical tables (``_idx`` = position in ``paths``) for every file the fast path
    takes, the header rows to replay per taken file, and the positions it hands back."""
    from graphlake.config import max_file_bytes

    limit = max_file_bytes()
    split = [_split(p, limit) for p in paths]
    fallback = {k for k, s in enumerate(split) if s is None}
    blobs = [s[2] if s else b"" for s in split]
    counts = [s[3] if s else 0 for s in split]
    acts, unreadable = read_records(blobs, counts, _PARSE)
    fallback |= set(unreadable)
    taken = [k for k in range(len(paths)) if k not in fallback]
    if not taken:
        return {}, {}, sorted(fallback)
    if acts is None:
        acts = ACTION_SCHEMA.empty_table().append_column("_idx", pa.array([], pa.int32()))
    # line numbers: the header is line 1, a file's actions follow in order
    idx = acts.column("_idx").combine_chunks()
    lineno, prev, n = [], None, 0
    for k in idx.to_pylist():
        n = n + 1 if k == prev else 2
        prev = k
        lineno.append(n)
    acts = acts.append_column("lineno", pa.array(lineno, pa.int32()))
    hdr = pa.table(
        {
            "_idx": pa.array(taken, pa.int32()),
            "sid": [split[k][0].sid for k in taken],  # type: ignore[index]
            "last": pa.array([counts[k] + 1 for k in taken], pa.int32()),
        }
    )
    pairs = [(k, pid, role) for k in taken for pid, role in split[k][0].roles.items()]  # type: ignore[index]
    roles = pa.table(
        {
            "_idx": pa.array([p[0] for p in pairs], pa.int32()),
            "pid": [p[1] for p in pairs],
            "role": [p[2] for p in pairs],
        }
    )
    outputs = {name: sql.replace("{corpus}", corpus) for name, sql in _OUTPUTS.items()}
    tables, bad = run_sql(
        connection(),
        {"act": acts, "hdr": hdr, "roles": roles},
        _STEPS,
        outputs,
        "SELECT _idx FROM bad",
    )
    fallback |= set(bad)
    headers = {k: split[k][1].rows for k in taken if k not in fallback}  # type: ignore[index]
    return tables, headers, sorted(fallback)


def convert_sessions(units, out, first: int) -> list[int]:
    """A run of session files through the fast path: header rows replayed and action rows
    emitted for the files it took; the positions of those it hands back."""
    tables, headers, fallback = read_batch([u.path for u in units], out.corpus)
    was = out.unit
    for k, rows in headers.items():
        out.unit = first + k
        for table, row in rows:
            out.row(table, row)
    out.unit = was
    emit_batch(out, tables, lambda idx: pc.add(idx, first).cast(pa.int32()))
    return fallback
