"""Vectorised reading of clean GMMT dialogues: the bulk path of ``ingest maptask``.

A GMMT dialogue is two JSON files: its reference expressions and, beside them, their
interpretations. Each expression becomes an event, a node, a node occurrence and an edge to the
next in time, and each interpretation record two interpretation annotations and a grounding
annotation: seven canonical rows, which built one Python dict at a time cost about 30 us an
expression. Here each file is parsed by orjson, every record passes the record parser's checks
(:func:`graphlake.ingest.maptask.checked_expression`, repeated here with exact type tests)
and its fields without a column are written as JSON, but only the columns that come from the
source are collected, with each expression's successor in time, into one Arrow table per
batch of dialogues; Arrow compute derives the canonical tables from those columns (nodes,
occurrences, the chain of edges, the three annotations per record).

Nothing is judged here. A dialogue with anything the record parser would reject or have to
judge (a file that is not JSON or past the size limit, an expression that fails the checks, an
interpretation without its expression, release layers beside it) goes back whole to
:class:`graphlake.ingest.maptask._Dialogue`. A value where a text belongs fails the batch's
Arrow conversion; then the dialogues holding one are found and go back.
``tests/test_maptask_fast.py`` checks that both paths give the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from graphlake.ingest.base import to_json
from graphlake.ingest.maptask import (
    ANN_KNOWN,
    RE_KNOWN,
    RE_LIST,
    SIDES,
    STEP,
    _Dialogue,
    dialogue_id,
    grounding_attrs,
    session_attrs,
)
from graphlake.ingest.vectorised import emit_batch

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

_NUMBER = (int, float)  # exact types: a bool is a number to isinstance, not to the checks
_STATUS_ONLY, _SIDE_KEYS = frozenset({"status"}), frozenset(SIDES)
_JSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


class _Judge(Exception):
    """Something in the dialogue the record parser has to judge."""


def _load(path: Path, limit: int) -> dict:
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)  # one read, no stat: past the limit is judged there
        if len(data) > limit:
            raise _Judge
        obj = orjson.loads(data)
    except (OSError, orjson.JSONDecodeError) as exc:
        raise _Judge from exc
    if not isinstance(obj, dict) or not isinstance(obj.get(RE_LIST), list):
        raise _Judge
    return obj


def _extra_keys(rec: dict, known: frozenset[str]) -> tuple[set, tuple[str, ...]]:
    """A record's keys, and those without a column: records of one file mostly share their
    keys, so the loops below work the second out again only when the first differ."""
    return set(rec), tuple(f for f in rec if f not in known)


def _dumps(value: dict) -> str:
    """:func:`to_json` for the common case: orjson in one call."""
    try:
        return orjson.dumps(value, option=_JSON_OPTIONS).decode()
    except TypeError:
        return to_json(value)


def _expressions(obj: dict, sid: str, k: int, refs: dict) -> list[tuple]:
    """A dialogue's expressions as rows, when each passes the record parser's checks
    (:func:`graphlake.ingest.maptask.checked_expression`, whose happy path this repeats with
    exact type tests: anything else is for the record parser to judge)."""
    rows = []
    keys: set | None = None
    extra: tuple[str, ...] = ()
    for seq, rec in enumerate(obj[RE_LIST]):
        if type(rec) is not dict:
            raise _Judge
        rid, speaker = rec.get("ref_id_unif"), rec.get("speaker")
        a: Any = rec.get("start_time")
        b: Any = rec.get("end_time")
        if (
            type(rid) is not str or not rid or rid in refs or speaker not in SIDES
            or type(a) not in _NUMBER or type(b) not in _NUMBER or not b >= a
        ):  # fmt: skip
            raise _Judge
        refs[rid] = rec
        text = rec.get("reference expression")
        local, landmark = rec.get("ref_id_orig") or rid, rec.get("lm_id_orig")
        if type(text) is str:
            label = text
        else:
            label, text = None, to_json(text)
        if rec.keys() != keys:
            keys, extra = _extra_keys(rec, RE_KNOWN)
        rows.append(
            (
                sid, rid, seq, float(a), float(b), speaker, text, label, local, landmark,
                _dumps({f: rec[f] for f in extra}), k,
            )
        )  # fmt: skip
    return rows


def _chain(rows: list[tuple], nexts: list, firsts: list) -> None:
    """The expressions of one dialogue form one chain in time order (start, then id, as the
    record parser orders them): each row's successor's id, or None for the last, and
    whether it is the first, appended to ``nexts`` and ``firsts`` in row order."""
    n = len(rows)
    order = sorted(range(n), key=lambda i: (rows[i][3], rows[i][1]))
    succ: list = [None] * n
    for i, j in zip(order, order[1:], strict=False):
        succ[i] = rows[j][1]
    nexts.extend(succ)
    head = order[0] if n else -1
    firsts.extend(i == head for i in range(n))


def _interpretations(obj: dict, sid: str, k: int, refs: dict) -> list[tuple]:
    """A dialogue's interpretation records as rows, when each names one of its expressions
    and has object-valued ``interpretations`` and ``extra``."""
    rows = []
    keys: set | None = None
    extra: tuple[str, ...] = ()
    for rec in obj[RE_LIST]:
        rid = rec.get("ref_id_unif") if type(rec) is dict else None
        if type(rid) is not str or rid not in refs:
            raise _Judge  # an interpretation of no expression: a reject
        interp, status = rec.get("interpretations") or {}, rec.get("extra") or {}
        if type(interp) is not dict or type(status) is not dict:
            raise _Judge
        if status.keys() <= _STATUS_ONLY and interp.keys() <= _SIDE_KEYS:
            # the common case: what grounding_attrs would merge in is empty
            if rec.keys() != keys:
                keys, extra = _extra_keys(rec, ANN_KNOWN)
            attrs = _dumps({f: rec[f] for f in extra})
        else:
            attrs = grounding_attrs(rec, interp, status)
        rows.append(
            (
                sid, rid, "giver" in interp, interp.get("giver") or None,
                "follower" in interp, interp.get("follower") or None,
                status.get("status"), rec.get("reason"), attrs, k,
            )
        )  # fmt: skip
    return rows


def _dialogue(unit, k: int, ex: list, ann: list, nexts: list, firsts: list, limit: int):
    """One dialogue's expressions and interpretations appended to ``ex`` and ``ann``, and
    its chain to ``nexts`` and ``firsts`` (only when all of it is clean); what its session
    row needs."""
    path = unit.path
    obj = _load(path, limit)
    sid = dialogue_id(obj, path)
    refs: dict[str, dict] = {}
    rows = _expressions(obj, sid, k, refs)
    # the annotations file the unit lists (units() found it beside the expressions)
    interps = [] if not unit.reads else _interpretations(_load(unit.reads[0], limit), sid, k, refs)
    ex.extend(rows)
    ann.extend(interps)
    _chain(rows, nexts, firsts)
    ends = [r["end_time"] for r in refs.values()]
    return sid, ends, session_attrs(obj, refs.values())


def _untextual(rows: list[tuple], schema: pa.Schema) -> set[int]:
    """The dialogues (``_idx``, each row's last value) with a value that is neither text nor
    null in a text column: for the record parser to judge."""
    texts = [i for i, f in enumerate(schema) if f.type == _S]
    return {
        row[-1] for row in rows if any(not (row[i] is None or type(row[i]) is str) for i in texts)
    }


def _table(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    columns: list = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    return pa.Table.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
    )


def _columns(idx: pa.Array, **cols) -> pa.Table:
    """A canonical table's columns from arrays and constants (a text: the same in every
    row), with the ``_idx`` the emitter turns into source units."""
    n = len(idx)
    arrays = {
        name: v if isinstance(v, pa.Array | pa.ChunkedArray) else pa.repeat(pa.scalar(v), n)
        for name, v in cols.items()
    }
    return pa.table({**arrays, "_idx": idx})


def derive(ex: pa.Table, ann: pa.Table, corpus: str) -> dict[str, pa.Table]:
    """The canonical rows of a batch: per expression an event, a node, its occurrence and
    the edge to the next in time; per interpretation record each side's interpretation
    and the grounding (Arrow compute, column by column)."""
    n, c = ex.num_rows, ex.column
    common = {"corpus": corpus, "session_id": c("sid")}
    rid, speaker, a, b, idx = c("rid"), c("speaker"), c("a"), c("b"), c("_idx")
    human, step = "human", STEP
    out = {
        "events": _columns(
            idx,
            **common,
            event_id=rid,
            seq=c("k"),
            t=a,
            t_end=b,
            actor=speaker,
            actor_type=human,
            kind="message",
            channel="speech",
            initiator=speaker,
            node_id=rid,
            step_id=step,
            text=c("text"),
            attrs=c("attrs"),
        ),
        "nodes": _columns(
            idx,
            **common,
            node_id=rid,
            local_id=c("local_id"),
            step_id=step,
            actor_type=human,
            actor=speaker,
            label=c("label"),
            detail=c("detail"),
            t_start=a,
            t_end=b,
            n_occurrences=pa.repeat(pa.scalar(1, pa.int32()), n),
            in_degree=pc.invert(c("first")).cast(pa.int32()),
            out_degree=pc.is_valid(c("next")).cast(pa.int32()),
        ),
        "node_occurrences": _columns(
            idx,
            **common,
            node_id=rid,
            seq=pa.repeat(pa.scalar(0, pa.int32()), n),
            t_start=a,
            t_end=b,
            step_id=step,
            actor_type=human,
        ),
    }
    linked = ex.filter(pc.is_valid(c("next")))
    out["edges"] = _columns(
        linked.column("_idx"), corpus=corpus,
        session_id=linked.column("sid"),
        edge_id=pc.binary_join_element_wise(
            linked.column("rid"), "->", linked.column("next"), ":sequential", ""
        ),
        src=linked.column("rid"), dst=linked.column("next"), kind="sequential",
        level="action", step_id=step,
    )  # fmt: skip
    parts = []
    for side in SIDES:
        got = ann.filter(ann.column(f"has_{side}"))
        label = got.column(side)
        parts.append(
            _columns(
                got.column("_idx"), corpus=corpus,
                session_id=got.column("sid"),
                annotation_id=pc.binary_join_element_wise(
                    got.column("rid"), f"/interpretation/{side}", ""
                ),
                kind="interpretation", target_kind="event", target_id=got.column("rid"),
                step_id=step, label=label,  # "" was made None as it was read
                text=pa.nulls(got.num_rows, pa.string()), annotator="GMMT annotators",
                attrs=f'{{"participant":"{side}"}}',
            )
        )  # fmt: skip
    parts.append(
        _columns(
            ann.column("_idx"), corpus=corpus, session_id=ann.column("sid"),
            annotation_id=pc.binary_join_element_wise(ann.column("rid"), "/grounding", ""),
            kind="grounding", target_kind="event", target_id=ann.column("rid"), step_id=step,
            label=ann.column("status"), text=ann.column("reason"),
            annotator="GMMT annotators", attrs=ann.column("attrs"),
        )
    )  # fmt: skip
    out["annotations"] = pa.concat_tables(parts)
    return out


def convert_dialogues(units, out, first: int) -> list[int]:
    """A run of GMMT dialogues through the fast path: rows emitted for the dialogues it took;
    the positions of those it hands back."""
    from graphlake.config import max_file_bytes

    limit = max_file_bytes()
    ex: list[tuple] = []
    ann: list[tuple] = []
    nexts: list[str | None] = []
    firsts: list[bool] = []
    sessions, fallback = [], []
    for k, unit in enumerate(units):
        n_ex, n_ann = len(ex), len(ann)
        try:
            sessions.append((k, *_dialogue(unit, k, ex, ann, nexts, firsts, limit)))
        except _Judge:
            del ex[n_ex:], ann[n_ann:]
            fallback.append(k)
    try:
        expressions, interps = _table(ex, _EXPRESSION), _table(ann, _INTERPRETATION)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a value where a text belongs: rare
        bad = _untextual(ex, _EXPRESSION) | _untextual(ann, _INTERPRETATION)
        keep = [i for i, row in enumerate(ex) if row[-1] not in bad]
        ex, nexts, firsts = (
            [ex[i] for i in keep],
            [nexts[i] for i in keep],
            [firsts[i] for i in keep],
        )
        ann = [row for row in ann if row[-1] not in bad]
        sessions = [s for s in sessions if s[0] not in bad]
        fallback = sorted({*fallback, *bad})
        expressions, interps = _table(ex, _EXPRESSION), _table(ann, _INTERPRETATION)
    expressions = expressions.append_column("next", pa.array(nexts, _S)).append_column(
        "first", pa.array(firsts, pa.bool_())
    )
    tables = derive(expressions, interps, out.corpus)
    was = out.unit
    for k, sid, ends, attrs in sessions:
        out.unit = first + k
        _Dialogue(units[k].path, out).session(sid, ends, attrs)
    out.unit = was
    emit_batch(out, tables, lambda idx: pc.add(idx, first).cast(pa.int32()))
    return fallback
