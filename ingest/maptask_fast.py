"""Vectorised reading of clean GMMT dialogues: the bulk path of ``ingest maptask``.

A GMMT dialogue is two JSON files: its reference expressions and, beside them, their
interpretations. Each expression becomes an event, a node, a node occurrence and an edge to the
next in time, and each interpretation record two interpretation annotations and a grounding
annotation: seven canonical rows, which built one Python dict at a time cost about 30 us an
expression. Here each file is parsed by orjson, every record is judged by the record parser's
own checks (:func:`graphlake.ingest.maptask.checked_expression`) and its fields without a
column are written by the same code, but only the columns that come from the source are
collected, into one Arrow table per batch of dialogues; DuckDB derives the rest (nodes,
occurrences, the time-ordered chain of edges, the three annotations per record) in one script.

Nothing is judged here. A dialogue with anything the record parser would reject or have to
judge (a file that is not JSON or past the size limit, an expression that fails the checks, an
interpretation without its expression, a value where a text belongs, release layers beside it)
goes back whole to :class:`graphlake.ingest.maptask._Dialogue`;
``tests/test_maptask_fast.py`` checks that both paths give the same rows.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from graphlake.ingest.base import RecordError, to_json
from graphlake.ingest.maptask import (
    ANN_SUFFIX,
    RE_KNOWN,
    RE_LIST,
    RE_SUFFIX,
    SIDES,
    STEP,
    _Dialogue,
    checked_expression,
    dialogue_id,
    grounding_attrs,
    session_attrs,
)
from graphlake.ingest.vectorised import connection, emit_batch, run_sql

_S, _F = pa.string(), pa.float64()
#: What the batch keeps of each expression and each interpretation record
_EXPRESSION = pa.schema(
    [
        ("sid", _S), ("rid", _S), ("k", pa.int64()), ("a", _F), ("b", _F), ("speaker", _S),
        ("text", _S), ("label", _S), ("local_id", _S), ("detail", _S), ("attrs", _S),
        ("_idx", pa.int32()),
    ]
)  # fmt: skip
_INTERPRETATION = pa.schema(
    [
        ("sid", _S), ("rid", _S), ("has_giver", pa.bool_()), ("giver", _S),
        ("has_follower", pa.bool_()), ("follower", _S), ("status", _S), ("reason", _S),
        ("attrs", _S), ("_idx", pa.int32()),
    ]
)  # fmt: skip

_C = "'{corpus}' AS corpus, sid AS session_id"
_STEPS = """
CREATE OR REPLACE TEMP TABLE x AS
  SELECT *, row_number() OVER (PARTITION BY _idx ORDER BY a, rid) AS pos,
         count(*) OVER (PARTITION BY _idx) AS n,
         lead(rid) OVER (PARTITION BY _idx ORDER BY a, rid) AS next
  FROM ex;
"""
_SIDE = """
SELECT {c}, rid || '/interpretation/{side}' AS annotation_id, 'interpretation' AS kind,
       'event' AS target_kind, rid AS target_id, '{step}' AS step_id,
       nullif({side}, '') AS label, NULL AS text, 'GMMT annotators' AS annotator,
       '{{"participant":"{side}"}}' AS attrs, _idx
FROM ann WHERE has_{side}"""
_OUTPUTS = {
    "events": f"""
SELECT {_C}, rid AS event_id, k AS seq, a AS t, b AS t_end, speaker AS actor,
       'human' AS actor_type, 'message' AS kind, 'speech' AS channel, speaker AS initiator,
       rid AS node_id, '{STEP}' AS step_id, text, attrs, _idx
FROM x""",
    "nodes": f"""
SELECT {_C}, rid AS node_id, local_id, '{STEP}' AS step_id, 'human' AS actor_type,
       speaker AS actor, label, detail, a AS t_start, b AS t_end, 1 AS n_occurrences,
       (pos > 1)::INTEGER AS in_degree, (pos < n)::INTEGER AS out_degree, _idx
FROM x""",
    "node_occurrences": f"""
SELECT {_C}, rid AS node_id, 0 AS seq, a AS t_start, b AS t_end, '{STEP}' AS step_id,
       'human' AS actor_type, _idx
FROM x""",
    "edges": f"""
SELECT {_C}, rid || '->' || next || ':sequential' AS edge_id, rid AS src, next AS dst,
       'sequential' AS kind, 'action' AS level, '{STEP}' AS step_id, _idx
FROM x WHERE next IS NOT NULL""",
    "annotations": " UNION ALL ".join(_SIDE.format(c=_C, side=side, step=STEP) for side in SIDES)
    + f"""
UNION ALL
SELECT {_C}, rid || '/grounding', 'grounding', 'event', rid, '{STEP}', status, reason,
       'GMMT annotators', attrs, _idx
FROM ann""",
}


class _Judge(Exception):
    """Something in the dialogue the record parser has to judge."""


def _text(v) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise _Judge


def _load(path: Path, limit: int) -> dict:
    try:
        if path.stat().st_size > limit:
            raise _Judge
        obj = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise _Judge from exc
    if not isinstance(obj, dict) or not isinstance(obj.get(RE_LIST), list):
        raise _Judge
    return obj


def _dialogue(path: Path, k: int, ex: list, ann: list, limit: int):
    """One dialogue's expressions and interpretations appended to ``ex`` and ``ann`` (only
    when all of it is clean), and what its session row needs."""
    obj = _load(path, limit)
    sid = dialogue_id(obj, path)
    refs: dict[str, dict] = {}
    rows = []
    for seq, rec in enumerate(obj[RE_LIST]):
        try:
            rid, speaker, a, b = checked_expression(rec, refs)
        except RecordError as exc:
            raise _Judge from exc
        refs[rid] = rec
        text = rec.get("reference expression")
        local = rec.get("ref_id_orig") or rid
        rows.append(
            (
                sid, rid, seq, float(a), float(b), speaker,
                text if isinstance(text, str) else to_json(text),
                text if isinstance(text, str) else None,
                _text(local), _text(rec.get("lm_id_orig")),
                to_json({f: v for f, v in rec.items() if f not in RE_KNOWN}), k,
            )
        )  # fmt: skip
    ann_path = path.with_name(path.name[: -len(RE_SUFFIX)] + ANN_SUFFIX)
    interps = []
    if ann_path.is_file():
        for rec in _load(ann_path, limit)[RE_LIST]:
            rid = rec.get("ref_id_unif") if isinstance(rec, dict) else None
            if not isinstance(rid, str) or rid not in refs:
                raise _Judge  # an interpretation of no expression: a reject
            interp, extra = rec.get("interpretations") or {}, rec.get("extra") or {}
            if not isinstance(interp, dict) or not isinstance(extra, dict):
                raise _Judge
            interps.append(
                (
                    sid, rid, "giver" in interp, _text(interp.get("giver") or None),
                    "follower" in interp, _text(interp.get("follower") or None),
                    _text(extra.get("status")), _text(rec.get("reason")),
                    grounding_attrs(rec, interp, extra), k,
                )
            )  # fmt: skip
    ex.extend(rows)
    ann.extend(interps)
    ends = [r["end_time"] for r in refs.values()]
    return sid, ends, session_attrs(obj, refs.values())


def _table(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    columns: list = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    return pa.Table.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
    )


def convert_dialogues(units, out, first: int) -> list[int]:
    """A run of GMMT dialogues through the fast path: rows emitted for the dialogues it took;
    the positions of those it hands back."""
    from graphlake.config import max_file_bytes

    limit = max_file_bytes()
    ex: list[tuple] = []
    ann: list[tuple] = []
    sessions, fallback = [], []
    for k, unit in enumerate(units):
        n_ex, n_ann = len(ex), len(ann)
        try:
            sessions.append((k, *_dialogue(unit.path, k, ex, ann, limit)))
        except _Judge:
            del ex[n_ex:], ann[n_ann:]
            fallback.append(k)
    outputs = {name: sql.replace("{corpus}", out.corpus) for name, sql in _OUTPUTS.items()}
    tables, _ = run_sql(
        connection(),
        {"ex": _table(ex, _EXPRESSION), "ann": _table(ann, _INTERPRETATION)},
        _STEPS,
        outputs,
    )
    was = out.unit
    for k, sid, ends, attrs in sessions:
        out.unit = first + k
        _Dialogue(units[k].path, out).session(sid, ends, attrs)
    out.unit = was
    emit_batch(out, tables, lambda idx: pc.add(idx, first).cast(pa.int32()))
    return fallback
