"""Map Task ingestor: the HCRC Map Task release and its GMMT annotations (Li, Gatt and Poesio,
LREC 2026).

The HCRC release (NXT format) keeps each annotation layer in a folder of its own, one file per
dialogue and speaker: ``Data/timed-units/<id>.<g|f>.timed-units.xml`` (every word, silence
and noise with its start and end) and ``Data/moves/<id>.<g|f>.moves.xml`` (the dialogue
moves, instruct / explain / check / align / query / reply / acknowledge / ready / clarify, each
spanning a range of timed units). GMMT adds ``<id>.reference_expressions.json`` (timed
reference expressions by giver and follower) with, optionally, ``<id>.annotated.json`` beside
it (per expression, each participant's interpretation and the status aligned / pending /
misunderstood with a reason); the two join on ``ref_id_unif``. Files
``landmarks_configuration*.csv`` say which landmarks each side's map shows.

Every file of one dialogue found under the ingested path, in whichever layer folder, is read as
one unit, so a dialogue is one session however its layers are spread. Mapping:
docs/maptask.md.
"""

from __future__ import annotations

import csv
import io
import math
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

from graphlake.ingest import register
from graphlake.ingest.base import (
    Emitter,
    Ingestor,
    SourceUnit,
    data_files,
    head_bytes,
    load_json,
    read_whole,
    read_whole_or_reject,
    reject_file,
    to_json,
)
from graphlake.ingest.base import RecordError as _Bad

RE_SUFFIX = ".reference_expressions.json"
ANN_SUFFIX = ".annotated.json"
RE_LIST = "landmark_reference_expressions"
RE_KNOWN = frozenset({"ref_id_unif", "start_time", "end_time", "speaker", "reference expression"})
ANN_KNOWN = frozenset({"ref_id_unif", "interpretations", "reason", "extra"})
SIDES = ("giver", "follower")
FAST_BATCH = 2000  # dialogues per vectorised batch (~60,000 expressions)
STEP = "dialogue"
#: The NXT layers graphlake reads: <id>.<g|f>.<layer>.xml
#: Elements of a moves file that become events: the moves, and the ``ims`` elements the
#: release keeps beside them (kept as events of that kind, with every attribute)
MOVE_LAYER_TAGS = frozenset({"move", "ims"})
LAYER = re.compile(r"^(?P<dialogue>[^.]+)\.(?P<side>[gf])\.(?P<layer>timed-units|moves)\.xml$")
SIDE_OF = {"g": "giver", "f": "follower"}
#: An NXT child reference: file#id(first) or file#id(first)..id(last)
HREF = re.compile(r"#id\(([^)]+)\)(?:\.\.id\(([^)]+)\))?")


#: The timed units all moves of a dialogue may span together: SPAN_FACTOR times its units
#: plus SPAN_SLACK. Moves partition a speaker's words (about 1x); thousands of moves that each
#: span the whole dialogue would copy units x moves ids and words into the lake.
SPAN_FACTOR_ENV = "GRAPHLAKE_MOVE_SPAN_FACTOR"
SPAN_SLACK = 10_000


def span_factor() -> int:
    from graphlake.config import int_env

    return int_env(SPAN_FACTOR_ENV, 4)


def _element_text(el, limit: int = 1 << 16) -> str:
    """An element's XML for a reject, at most ``limit`` characters; an element nested too
    deep to serialise (ElementTree recurses) is named instead of costing the file."""
    try:
        text = ET.tostring(el, encoding="unicode")
    except RecursionError:
        return f"<{el.tag} ...> nested too deep to keep (its attributes: {dict(el.attrib)})"
    return text if len(text) <= limit else text[:limit] + f"... [cut at {limit} characters]"


@register("maptask")
class MapTaskIngestor(Ingestor):
    """GMMT-annotated Map Task dialogues and landmark configurations."""

    name = "maptask"
    independent_units = True  # a dialogue (its files), a landmarks CSV or a layer set: nothing else
    help = (
        "HCRC Map Task release (Data/timed-units, Data/moves NXT XML) and GMMT: "
        "<id>.reference_expressions.json (+ <id>.annotated.json), "
        "landmarks_configuration*.csv; a folder of them."
    )

    def units(self, path: Path) -> list[SourceUnit]:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(
                f"{path} does not exist; give a GMMT "
                "<id>.reference_expressions.json, a landmarks CSV, or a "
                "folder of them"
            )
        files = data_files(path)
        named = [(p, p.name) for p in files]  # a name costs a parse of the path each time
        names = {name for _p, name in named}
        by_path = {str(p): p for p in files}
        layers: dict[str, list[Path]] = defaultdict(list)  # dialogue id -> its NXT files
        for p, name in named:
            m = LAYER.match(name)
            if m:
                layers[m["dialogue"]].append(p)
        units = []
        for p, name in named:
            if LAYER.match(name):
                continue
            if name.endswith(RE_SUFFIX):
                ann = by_path.get(str(p)[: -len(RE_SUFFIX)] + ANN_SUFFIX)
                if ann is None:  # not listed (a single file was given): beside it on disk?
                    beside = p.with_name(name[: -len(RE_SUFFIX)] + ANN_SUFFIX)
                    ann = beside if beside.is_file() else None
                units.append(
                    SourceUnit(
                        p,
                        "dialogue",
                        tuple(layers.pop(name[: -len(RE_SUFFIX)], ())),
                        (ann,) if ann is not None else (),
                    )
                )
            elif name.endswith(ANN_SUFFIX):
                partner = name[: -len(ANN_SUFFIX)] + RE_SUFFIX
                if partner not in names and not (p.parent / partner).exists():
                    units.append(SourceUnit(p, "orphan_annotations"))
            elif p.suffix.lower() == ".csv" and name.startswith("landmarks_configuration"):
                units.append(SourceUnit(p, "landmarks"))
            else:
                units.append(SourceUnit(p, "other"))
        for _dialogue, layer_files in sorted(layers.items()):  # release only, no GMMT
            units.append(SourceUnit(layer_files[0], "release_dialogue", tuple(layer_files)))
        return units

    def parse_many(self, units: list[SourceUnit], start: int, out, tick=None) -> None:
        """Runs of GMMT dialogues without release layers go through the vectorised reader
        (:mod:`graphlake.ingest.maptask_fast`); what it hands back, and every other unit,
        through :meth:`parse`."""
        from graphlake.ingest.maptask_fast import convert_dialogues
        from graphlake.ingest.vectorised import parse_batched

        parse_batched(
            units,
            start,
            out,
            tick,
            lambda u: u.kind == "dialogue" and not u.companions,
            convert_dialogues,
            self.parse,
            FAST_BATCH,
        )

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        src = str(unit.path)
        if unit.kind == "dialogue":
            _Dialogue(unit.path, out).run(unit.companions)
        elif unit.kind == "release_dialogue":
            _Dialogue(unit.path, out).release_only(unit.companions)
        elif unit.kind == "landmarks":
            _landmarks(unit.path, out)
        else:
            reason = (
                "annotations without their <id>.reference_expressions.json; put both "
                "files side by side"
                if unit.kind == "orphan_annotations"
                else "not a Map Task file graphlake reads: expected the release's "
                "<id>.<g|f>.timed-units.xml or <id>.<g|f>.moves.xml, GMMT's "
                "<id>.reference_expressions.json or <id>.annotated.json, or "
                "landmarks_configuration*.csv"
            )
            out.reject(
                source_file=src,
                target_table="events",
                record_kind="file",
                record_ref="$",
                reason=reason,
                raw=head_bytes(unit.path),
            )


def _read_json(path: Path, out: Emitter, table: str):
    data = read_whole_or_reject(path, out, table)
    if data is None:
        return None
    try:
        obj = load_json(data)
    except ValueError as exc:
        reject_file(out, path, table, f"not valid JSON ({exc}); fix it and re-ingest", data)
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("landmark_reference_expressions"), list):
        reject_file(
            out, path, table, "expected {dialogue_id, landmark_reference_expressions: [...]}", data
        )
        return None
    return obj


def dialogue_id(obj: dict, path: Path) -> str:
    """The dialogue's id: its ``dialogue_id``, else the file name's stem."""
    sid = obj.get("dialogue_id")
    return sid if isinstance(sid, str) and sid else path.name[: -len(RE_SUFFIX)]


def session_attrs(obj: dict, refs) -> dict | None:
    """A dialogue's session attrs: the maps its expressions name, and the file's other
    top-level fields."""
    maps = sorted({str(r.get("lm_id_orig", "")).split("_")[0] for r in refs if r.get("lm_id_orig")})
    extra = {k: v for k, v in obj.items() if k not in ("dialogue_id", RE_LIST)}
    return {"maps": maps, **extra} if maps or extra else None


def grounding_attrs(rec: dict, interp: dict, extra: dict) -> str:
    """A grounding annotation's attrs: the status record's other fields, interpretation
    flags beyond the two sides, and the record's fields without a column."""
    return to_json(
        {
            **{k: v for k, v in extra.items() if k != "status"},
            **{k: v for k, v in interp.items() if k not in SIDES},
            **{k: v for k, v in rec.items() if k not in ANN_KNOWN},
        }
    )


def checked_expression(rec, seen: dict) -> tuple[str, str, Any, Any]:
    """A reference expression's id, speaker, start and end (numbers as the source wrote them,
    int or float: ordering and durations use them as they are), or :class:`RecordError`
    saying what is wrong with it (both readers judge expressions with this)."""
    if not isinstance(rec, dict):
        raise _Bad("a reference expression is an object with ref_id_unif, speaker, times")
    rid = rec.get("ref_id_unif")
    if not isinstance(rid, str) or not rid:
        raise _Bad("reference expression has no ref_id_unif")
    if rid in seen:
        raise _Bad(f"duplicate ref_id_unif {rid!r}; ids must be unique in a dialogue")
    speaker = rec.get("speaker")
    if speaker not in SIDES:
        raise _Bad(f"{rid}: speaker {speaker!r} is neither giver nor follower")
    a, b = rec.get("start_time"), rec.get("end_time")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b)) or b < a:
        raise _Bad(
            f"{rid}: start_time/end_time must be numbers with end >= start, got {a!r}, {b!r}"
        )
    return rid, speaker, a, b


class _Dialogue:
    def __init__(self, path: Path, out: Emitter):
        self.path, self.out = path, out
        self.ann_path = path.with_name(path.name[: -len(RE_SUFFIX)] + ANN_SUFFIX)

    def reject(self, path: Path, table: str, kind: str, ref: str, reason: str, raw, sid):
        self.out.reject(
            source_file=str(path),
            target_table=table,
            record_kind=kind,
            record_ref=ref,
            reason=reason,
            raw=raw,
            session_id=sid,
        )

    def run(self, layers: tuple[Path, ...] = ()) -> None:
        obj = _read_json(self.path, self.out, "events")
        if obj is None:
            return
        sid = dialogue_id(obj, self.path)
        refs: dict[str, dict] = {}
        self.node_rows: dict[str, dict] = {}
        for k, rec in enumerate(obj["landmark_reference_expressions"]):
            try:
                refs[self.expression(sid, k, rec, refs)] = rec
            except _Bad as exc:
                self.reject(
                    self.path,
                    "events",
                    "reference_expression",
                    f"$.landmark_reference_expressions[{k}]",
                    f"{sid}: {exc}",
                    rec,
                    sid,
                )
        order = sorted(refs, key=lambda r: (refs[r]["start_time"], r))
        for i, rid in enumerate(order):  # the expressions form one chain in time order
            row = self.node_rows[rid]
            row["in_degree"], row["out_degree"] = int(i > 0), int(i < len(order) - 1)
            self.out.row("nodes", row)
        for a, b in zip(order, order[1:], strict=False):
            self.out.row(
                "edges",
                {
                    "session_id": sid,
                    "edge_id": f"{a}->{b}:sequential",
                    "src": a,
                    "dst": b,
                    "kind": "sequential",
                    "level": "action",
                    "step_id": STEP,
                },
            )
        if self.ann_path.is_file():
            self.annotations(sid, refs)
        ends = [r["end_time"] for r in refs.values()] + _Release(sid, self.out).read(layers)
        self.session(sid, ends, session_attrs(obj, refs.values()))

    def release_only(self, layers: tuple[Path, ...]) -> None:
        """A dialogue of the HCRC release without GMMT annotations."""
        sid = LAYER.match(self.path.name)["dialogue"]
        release = _Release(sid, self.out)
        ends = release.read(layers)
        if ends or release.landed:  # a moves-only dialogue has rows but no times
            self.session(sid, ends, None)

    def session(self, sid: str, ends: list[float], attrs: dict | None) -> None:
        self.out.row(
            "sessions",
            {
                "session_id": sid,
                "title": f"Map Task dialogue {sid}",
                "domain": "map task",
                "participants": list(SIDES),
                "duration_s": max(ends) if ends else None,
                "source_file": str(self.path),
                "attrs": to_json(attrs) if attrs else None,
            },
        )
        for side in SIDES:
            self.out.row(
                "participants",
                {
                    "session_id": sid,
                    "participant_id": side,
                    "kind": "human",
                    "role": side,
                    "name": side,
                },
            )
        self.out.row(
            "steps",
            {
                "session_id": sid,
                "step_id": STEP,
                "ordinal": 0,
                "name": "dialogue",
                "t_start": 0.0,
                "t_end": max(ends) if ends else None,
            },
        )

    def expression(self, sid: str, k: int, rec, seen: dict) -> str:
        rid, speaker, a, b = checked_expression(rec, seen)
        text = rec.get("reference expression")
        attrs = to_json({k: v for k, v in rec.items() if k not in RE_KNOWN})
        self.out.row(
            "events",
            {
                "session_id": sid,
                "event_id": rid,
                "seq": k,
                "t": float(a),
                "t_end": float(b),
                "actor": speaker,
                "actor_type": "human",
                "kind": "message",
                "channel": "speech",
                "initiator": speaker,
                "node_id": rid,
                "step_id": STEP,
                "text": text if isinstance(text, str) else to_json(text),
                "attrs": attrs,
            },
        )
        self.node_rows[rid] = {
            "session_id": sid,
            "node_id": rid,
            "local_id": rec.get("ref_id_orig") or rid,
            "step_id": STEP,
            "actor_type": "human",
            "actor": speaker,
            "label": text if isinstance(text, str) else None,
            "detail": rec.get("lm_id_orig"),
            "t_start": float(a),
            "t_end": float(b),
            "n_occurrences": 1,
        }
        self.out.row(
            "node_occurrences",
            {
                "session_id": sid,
                "node_id": rid,
                "seq": 0,
                "t_start": float(a),
                "t_end": float(b),
                "step_id": STEP,
                "actor_type": "human",
            },
        )
        return rid

    def annotations(self, sid: str, refs: dict) -> None:
        obj = _read_json(self.ann_path, self.out, "annotations")
        if obj is None:
            return
        for k, rec in enumerate(obj["landmark_reference_expressions"]):
            ref = f"$.landmark_reference_expressions[{k}]"
            rid = rec.get("ref_id_unif") if isinstance(rec, dict) else None
            if rid not in refs:
                self.reject(
                    self.ann_path,
                    "annotations",
                    "interpretation",
                    ref,
                    f"{sid}: ref_id_unif {rid!r} is in no reference expression of "
                    f"{self.path.name}; the two files must describe the same "
                    "expressions",
                    rec,
                    sid,
                )
                continue
            interp = rec.get("interpretations") or {}
            extra = rec.get("extra") or {}
            if not isinstance(interp, dict) or not isinstance(extra, dict):
                self.reject(
                    self.ann_path,
                    "annotations",
                    "interpretation",
                    ref,
                    f"{sid}: {rid}: 'interpretations' and 'extra' must be objects "
                    "({giver, follower} and {status})",
                    rec,
                    sid,
                )
                continue
            for side in SIDES:
                if side in interp:
                    self.out.row(
                        "annotations",
                        {
                            "session_id": sid,
                            "annotation_id": f"{rid}/interpretation/{side}",
                            "kind": "interpretation",
                            "target_kind": "event",
                            "target_id": rid,
                            "step_id": STEP,
                            "label": interp.get(side) or None,
                            "annotator": "GMMT annotators",
                            "attrs": to_json({"participant": side}),
                        },
                    )
            self.out.row(
                "annotations",
                {
                    "session_id": sid,
                    "annotation_id": f"{rid}/grounding",
                    "kind": "grounding",
                    "target_kind": "event",
                    "target_id": rid,
                    "step_id": STEP,
                    "label": extra.get("status"),
                    "text": rec.get("reason"),
                    "annotator": "GMMT annotators",
                    "attrs": grounding_attrs(rec, interp, extra),
                },
            )


def _landmarks(path: Path, out: Emitter) -> None:
    text = read_whole(path).decode("utf-8", errors="replace")
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or not {"id", "map"} <= set(reader.fieldnames):
        out.reject(
            source_file=str(path),
            target_table="landmarks",
            record_kind="file",
            record_ref="$",
            reason="a landmarks CSV needs at least the columns id and map",
            raw=text,
        )
        return
    for lineno, row in enumerate(reader, 2):
        if not row.get("id") or not row.get("map"):
            out.reject(
                source_file=str(path),
                target_table="landmarks",
                record_kind="landmark",
                record_ref=f"line {lineno}",
                reason=f"line {lineno}: id and map must not be empty",
                raw=row,
            )
            continue
        out.row(
            "landmarks",
            {
                "session_id": "",
                "map_id": row["map"],
                "landmark_id": row["id"],
                "name": row.get("name") or None,
                "on_giver_map": _flag(row.get("giver_map_appears")),
                "on_follower_map": _flag(row.get("follower_map_appears")),
                "source_file": str(path),
                "attrs": to_json(
                    {
                        k: v
                        for k, v in row.items()
                        if k
                        not in ("id", "map", "name", "giver_map_appears", "follower_map_appears")
                    }
                ),
            },
        )


def _flag(v) -> bool | None:
    return {"1": True, "0": False}.get(str(v).strip()) if v is not None else None


class _Release:
    """One dialogue's HCRC release layers -> events and dialogue-act annotations.

    Every timed unit becomes an event (kind ``word``, ``silence`` or ``noise``; ``t``/``t_end``
    its times; ``seq`` its start in milliseconds, so both speakers interleave in time). Every
    move becomes an event of kind ``move`` over its first to last word, whose text is those
    words, and an annotation of kind ``dialogue_act`` whose label is the move's label (the
    HCRC coders' move category). A file that is not XML, or a unit or move without usable
    times, is rejected alone; the rest of the dialogue lands.
    """

    KINDS = {"tu": "word", "sil": "silence", "noi": "noise"}

    def __init__(self, sid: str, out: Emitter):
        self.sid, self.out = sid, out
        self.units: dict[str, dict] = {}  # timed-unit id -> its event row
        self.order: dict[str, list[str]] = defaultdict(list)  # file name -> unit ids in order
        self.position: dict[str, dict[str, int]] = defaultdict(dict)  # file -> id -> index
        self.spanned = 0  # timed units the moves read so far have spanned, all together
        self.landed = 0  # move-layer rows landed (they may have no times)

    def read(self, layers: tuple[Path, ...]) -> list[float]:
        """Read the timed units first (moves point into them); return every end time."""
        ends: list[float] = []
        files = sorted(
            layers, key=lambda p: (LAYER.match(p.name)["layer"] != "timed-units", p.name)
        )
        for path in files:
            m = LAYER.match(path.name)
            root = self._parse(path)
            if root is None:
                continue
            if m["layer"] == "timed-units":
                ends += self._timed_units(path, root, SIDE_OF[m["side"]])
            else:
                ends += self._moves(path, root, SIDE_OF[m["side"]])
        return ends

    def _parse(self, path: Path):
        data = read_whole_or_reject(path, self.out, "events", self.sid)
        if data is None:
            return None
        try:
            return ET.fromstring(data)
        except (ET.ParseError, LookupError, ValueError) as exc:  # LookupError: the XML
            # declaration names an encoding Python does not know
            self.out.reject(
                source_file=str(path),
                target_table="events",
                record_kind="file",
                record_ref="$",
                reason=f"not valid XML ({exc}); fix it and re-ingest",
                raw=data,
                session_id=self.sid,
            )
            return None

    def _reject(self, path: Path, kind: str, ref: str, reason: str, el) -> None:
        self.out.reject(
            source_file=str(path),
            target_table="events",
            record_kind=kind,
            record_ref=ref,
            reason=f"{self.sid}: {reason}",
            session_id=self.sid,
            raw=_element_text(el),
        )

    @staticmethod
    def _times(el) -> tuple[float, float] | None:
        """Finite start and end with end >= start, else None (``inf`` would overflow the
        millisecond sequence number and cost the whole file)."""
        try:
            a, b = float(el.get("start")), float(el.get("end"))
        except (TypeError, ValueError):
            return None
        return (a, b) if math.isfinite(a) and math.isfinite(b) and b >= a else None

    def _timed_units(self, path: Path, root, side: str) -> list[float]:
        ends = []
        for k, el in enumerate(e for e in root.iter() if _local(e.tag) in self.KINDS):
            uid = el.get("id") or f"{path.name}#{k}"
            times = self._times(el)
            if times is None:
                self._reject(
                    path,
                    "timed_unit",
                    f"id({uid})",
                    f"timed unit {uid} needs numeric start and end with end >= start",
                    el,
                )
                continue
            kind = self.KINDS[_local(el.tag)]
            row = {
                "session_id": self.sid,
                "event_id": uid,
                "seq": round(times[0] * 1000),
                "t": times[0],
                "t_end": times[1],
                "actor": side,
                "actor_type": "human",
                "kind": kind,
                "channel": "speech",
                "initiator": side,
                "step_id": STEP,
                "text": (el.text or "").strip() or None,
                "attrs": to_json(
                    {
                        "layer": "timed-units",
                        **{
                            k2: v for k2, v in el.attrib.items() if k2 not in ("id", "start", "end")
                        },
                    }
                ),
            }
            self.units[uid] = row
            self.position[path.name].setdefault(uid, len(self.order[path.name]))
            self.order[path.name].append(uid)
            self.out.row("events", row)
            ends.append(times[1])
        return ends

    def _moves(self, path: Path, root, side: str) -> list[float]:
        ends = []
        factor = span_factor()
        budget = factor * len(self.units) + SPAN_SLACK
        for k, el in enumerate(e for e in root.iter() if _local(e.tag) in MOVE_LAYER_TAGS):
            tag = _local(el.tag)
            mid = el.get("id") or f"{path.name}#{tag}{k}"
            spans = self._span(el)
            size = sum(hi - lo for _name, lo, hi in spans)
            if self.spanned + size > budget:
                self._reject(
                    path,
                    "move",
                    f"id({mid})",
                    f"move {mid} spans {size:,} timed units, and the dialogue's moves would "
                    f"span {self.spanned + size:,} in all, over {budget:,} ({SPAN_FACTOR_ENV} = "
                    f"{factor} times its {len(self.units):,} timed units, plus "
                    f"{SPAN_SLACK:,}): moves that overlap that much grow as moves x units. "
                    f"Raise {SPAN_FACTOR_ENV} if the file is right",
                    el,
                )
                continue
            self.spanned += size
            words = [self.units[u] for name, lo, hi in spans for u in self.order[name][lo:hi]]
            times = self._times(el) or ((words[0]["t"], words[-1]["t_end"]) if words else None)
            # a move without times or words (a dialogue whose moves layer comes without its
            # timed units) lands untimed, ordered by its place in the file
            untimed = times is None
            text = " ".join(w["text"] for w in words if w["kind"] == "word" and w["text"])
            label = el.get("label")
            self.landed += 1
            self.out.row(
                "events",
                {
                    "session_id": self.sid,
                    "event_id": mid,
                    "seq": k if times is None else round(times[0] * 1000),
                    "t": None if times is None else times[0],
                    "t_end": None if times is None else times[1],
                    "actor": side,
                    "actor_type": "human",
                    "kind": "move" if tag == "move" else tag,
                    "channel": "speech",
                    "initiator": side,
                    "step_id": STEP,
                    "text": text or None,
                    "attrs": to_json(
                        {
                            "layer": "moves",
                            "label": label,
                            "timed_units": [w["event_id"] for w in words],
                            **({"untimed": True} if untimed else {}),
                            **{
                                k2: v
                                for k2, v in el.attrib.items()
                                if k2 not in ("id", "start", "end", "label")
                            },
                        }
                    ),
                },
            )
            if times is not None:
                ends.append(times[1])
            if tag != "move":
                continue  # only moves carry the coders' dialogue act
            self.out.row(
                "annotations",
                {
                    "session_id": self.sid,
                    "annotation_id": f"{mid}/dialogue_act",
                    "kind": "dialogue_act",
                    "target_kind": "event",
                    "target_id": mid,
                    "step_id": STEP,
                    "label": label,
                    "annotator": "HCRC Map Task coders",
                },
            )
        return ends

    def _span(self, move) -> list[tuple[str, int, int]]:
        """The timed units a move's NXT child references name, in order, as (file, start,
        stop) slices of that file's units: sized before anything is copied."""
        spans = []
        for child in (e for e in move if _local(e.tag) == "child"):
            href = child.get("href") or ""
            m = HREF.search(href)
            if not m:
                continue
            name = href.split("#", 1)[0]
            where = self.position.get(name, {})
            first, last = where.get(m[1]), where.get(m[2] or m[1])
            if first is not None and last is not None and first <= last:
                spans.append((name, first, last + 1))
        return spans


def _local(tag: str) -> str:
    """An XML tag without its namespace ({http://nite.sourceforge.net/}child -> child)."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""
