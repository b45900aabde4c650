"""Almanac ingestor: graphlake's interchange format for Humans' Almanac sessions (seed 002).

A session is a JSON Lines file (``schemas/almanac-session.schema.json``): a header line
(session id, map, condition C_visible / C_not_visible, split, the Guide and the Follower with
personas) and one line per timestamped action (message, draw, erase, undo, reset) with its
mental-model tuple and, for drawing actions, the Follower's canvas after it. Maps are
``maps/<map_id>.json`` in the appendix D format (``schemas/almanac-map.schema.json``).

Actions become events and nodes in time order; the five mental-model components become
``mental_model`` annotations; the canvas is stored as the cells each action changed
(``canvas_cells``, +1 / -1), so the full grid after any action is one GROUP BY away; map
landmarks land in ``landmarks`` with their cells. Mapping: docs/almanac.md.
"""

from __future__ import annotations

from pathlib import Path

from graphlake.ingest import register
from graphlake.ingest.base import (
    SHAPE_ERRORS,
    Emitter,
    Ingestor,
    SourceUnit,
    attrs_json,
    file_units,
    head_bytes,
    iso_time,
    json_lines,
    load_json,
    read_whole,
    shape_reason,
    to_json,
)
from graphlake.ingest.base import RecordError as _Bad

ACTIONS = ("message", "draw", "erase", "undo", "reset")
CONDITIONS = ("C_visible", "C_not_visible")
ROLES = ("guide", "follower")
MM = ("rationale", "team_goal", "partner_intent", "self_reasoning", "alignment")
#: Traum's (1995) grounding acts, as Almanac 3.3.2 codes actions.
GROUNDING_ACTS = (
    "initiate",
    "continue",
    "acknowledge",
    "repair",
    "request_repair",
    "request_acknowledge",
    "cancel",
    "other",
)
HEADER_KNOWN = frozenset(
    {"type", "session_id", "map_id", "condition", "split", "started_at", "participants"}
)
ACTION_KNOWN = frozenset(
    {"type", "t", "actor", "action", "text", "canvas", "mental_model", "grounding_act"}
)
STEP = "session"
FAST_BATCH = 2000  # session files per vectorised batch (~200,000 action lines)


@register("almanac")
class AlmanacIngestor(Ingestor):
    """Almanac sessions (JSON Lines) and maps (maps/<map_id>.json)."""

    name = "almanac"
    independent_units = True  # a session file or a map file reads nothing else
    help = "Almanac: session .jsonl files (graphlake format) and map .json files, or a folder."

    def units(self, path: Path) -> list[SourceUnit]:
        return file_units(
            path, {".jsonl": "session", ".json": "map"}, "Almanac session .jsonl or map .json files"
        )

    def parse_many(self, units: list[SourceUnit], start: int, out, tick=None) -> None:
        """Runs of session files go through the vectorised reader
        (:mod:`graphlake.ingest.almanac_fast`); what it hands back, and maps, through
        :meth:`parse`."""
        from graphlake.ingest.almanac_fast import convert_sessions
        from graphlake.ingest.vectorised import parse_batched

        parse_batched(
            units,
            start,
            out,
            tick,
            lambda u: u.kind == "session",
            convert_sessions,
            self.parse,
            FAST_BATCH,
        )

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        if unit.kind == "session":
            _Session(unit.path, out).run()
        elif unit.kind == "map":
            _map(unit.path, out)
        else:
            out.reject(
                source_file=str(unit.path),
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason="not an Almanac file: expected session .jsonl or map .json",
                raw=head_bytes(unit.path),
            )


def _cells(value, what: str) -> set[tuple[int, int]]:
    if not isinstance(value, list):
        raise _Bad(f"{what} must be a list of [row, col] cells")
    out = set()
    for c in value:
        if not (
            isinstance(c, list)
            and len(c) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in c)
        ):
            raise _Bad(f"{what}: {c!r} is not a [row, col] pair of non-negative integers")
        out.add((c[0], c[1]))
    return out


class _Session:
    def __init__(self, path: Path, out: Emitter):
        self.path, self.out, self.src = path, out, str(path)
        self.sid: str | None = None
        self.roles: dict[str, str] = {}
        self.canvas: set[tuple[int, int]] = set()
        self.history: list[set[tuple[int, int]]] = []  # canvases before each drawing action
        self.node_rows: list[dict] = []
        self.t_last = 0.0

    def reject(self, lineno: int, reason: str, raw) -> None:
        self.out.reject(
            source_file=self.src,
            target_table="events",
            record_kind="action" if self.sid else "session",
            record_ref=f"line {lineno}",
            reason=f"line {lineno}: {reason}",
            raw=raw,
            session_id=self.sid,
        )

    def run(self) -> None:
        for lineno, rec in json_lines(self.path, self.reject):
            try:
                if self.sid is None:
                    self.header(rec)
                else:
                    self.action(rec, lineno)
            except SHAPE_ERRORS as exc:
                self.reject(lineno, shape_reason(exc), rec)
        if self.sid is None:
            return
        nodes = [r["node_id"] for r in self.node_rows]
        for i, row in enumerate(self.node_rows):  # actions form one chain in time order
            row["in_degree"], row["out_degree"] = int(i > 0), int(i < len(nodes) - 1)
            self.out.row("nodes", row)
        for a, b in zip(nodes, nodes[1:], strict=False):
            self.out.row(
                "edges",
                {
                    "session_id": self.sid,
                    "edge_id": f"{a}->{b}:sequential",
                    "src": a,
                    "dst": b,
                    "kind": "sequential",
                    "level": "action",
                    "step_id": STEP,
                },
            )
        self.out.row(
            "steps",
            {
                "session_id": self.sid,
                "step_id": STEP,
                "ordinal": 0,
                "name": "map task",
                "t_start": 0.0,
                "t_end": self.t_last,
            },
        )

    def header(self, rec) -> None:
        if not isinstance(rec, dict) or rec.get("type") != "session":
            raise _Bad(
                'the first line must be the session header ({"type": "session", '
                '"session_id": ..., "map_id": ..., "condition": ..., '
                '"participants": [...]})'
            )
        sid = rec.get("session_id")
        if not isinstance(sid, str) or not sid:
            raise _Bad("session header has no session_id")
        if rec.get("condition") not in CONDITIONS:
            raise _Bad(f"condition {rec.get('condition')!r} is not C_visible or C_not_visible")
        parts = rec.get("participants")
        if (
            not isinstance(parts, list)
            or sorted(p.get("role") for p in parts if isinstance(p, dict)) != ["follower", "guide"]
            or not all(isinstance(p, dict) and p.get("id") for p in parts)
        ):
            raise _Bad("participants must be one guide and one follower, each with an id")
        started = iso_time(rec.get("started_at"))
        self.sid = sid
        self.roles = {p["id"]: p["role"] for p in parts}
        self.out.row(
            "sessions",
            {
                "session_id": sid,
                "title": f"Map Task session {sid}",
                "domain": "map task",
                "condition": rec["condition"],
                "split": rec.get("split"),
                "participants": [p["id"] for p in parts],
                "started_at": started,
                "source_file": self.src,
                "attrs": to_json(
                    {
                        "map_id": rec.get("map_id"),
                        **{k: v for k, v in rec.items() if k not in HEADER_KNOWN},
                    }
                ),
            },
        )
        for p in parts:
            self.out.row(
                "participants",
                {
                    "session_id": sid,
                    "participant_id": p["id"],
                    "kind": "human",
                    "role": p["role"],
                    "name": p["role"],
                    "persona": to_json(p.get("persona")) if p.get("persona") is not None else None,
                    "attrs": attrs_json(p, {"id", "role", "persona"}),
                },
            )

    def action(self, rec, lineno: int) -> None:
        if not isinstance(rec, dict) or rec.get("type") != "action":
            raise _Bad('expected an action line ({"type": "action", ...})')
        kind = rec.get("action")
        if kind not in ACTIONS:
            raise _Bad(f"action {kind!r} is none of {', '.join(ACTIONS)}")
        actor = rec.get("actor")
        if actor not in self.roles:
            raise _Bad(f"actor {actor!r} is not a participant of session {self.sid}")
        t = rec.get("t")
        if not isinstance(t, int | float) or isinstance(t, bool) or t < 0:
            raise _Bad(f"t {t!r} must be seconds from the session start")
        mm = rec.get("mental_model") or {}
        if not isinstance(mm, dict):
            raise _Bad("mental_model must be an object")
        act = rec.get("grounding_act")
        if act is not None and act not in GROUNDING_ACTS:
            raise _Bad(f"grounding_act {act!r} is none of {', '.join(GROUNDING_ACTS)}")
        changes = self.canvas_change(kind, rec)
        eid = f"a{lineno}"
        self.t_last = max(self.t_last, float(t))
        self.out.row(
            "events",
            {
                "session_id": self.sid,
                "event_id": eid,
                "seq": lineno,
                "t": float(t),
                "actor": actor,
                "actor_type": "human",
                "kind": kind,
                "channel": "chat" if kind == "message" else "canvas",
                "initiator": self.roles[actor],
                "node_id": eid,
                "step_id": STEP,
                "text": rec.get("text"),
                "attrs": attrs_json(rec, ACTION_KNOWN),
            },
        )
        self.node_rows.append(
            {
                "session_id": self.sid,
                "node_id": eid,
                "local_id": eid,
                "step_id": STEP,
                "actor_type": "human",
                "actor": self.roles[actor],
                "label": kind if kind != "message" else f"message: {rec.get('text') or ''}"[:200],
                "t_start": float(t),
                "t_end": float(t),
                "n_occurrences": 1,
            }
        )
        self.out.row(
            "node_occurrences",
            {
                "session_id": self.sid,
                "node_id": eid,
                "seq": 0,
                "t_start": float(t),
                "t_end": float(t),
                "step_id": STEP,
                "actor_type": "human",
            },
        )
        for (row, col), delta in changes:
            self.out.row(
                "canvas_cells",
                {
                    "session_id": self.sid,
                    "event_id": eid,
                    "seq": lineno,
                    "row": row,
                    "col": col,
                    "delta": delta,
                },
            )
        for comp in MM:
            if mm.get(comp) is not None:
                self.out.row(
                    "annotations",
                    {
                        "session_id": self.sid,
                        "annotation_id": f"{eid}/mm/{comp}",
                        "kind": "mental_model",
                        "target_kind": "event",
                        "target_id": eid,
                        "step_id": STEP,
                        "label": comp,
                        "text": str(mm[comp]),
                        "annotator": actor,
                    },
                )
        if act is not None:
            self.out.row(
                "annotations",
                {
                    "session_id": self.sid,
                    "annotation_id": f"{eid}/grounding",
                    "kind": "grounding_act",
                    "target_kind": "event",
                    "target_id": eid,
                    "step_id": STEP,
                    "label": act,
                },
            )
        extra = {k: v for k, v in mm.items() if k not in MM}
        if extra:
            self.out.row(
                "annotations",
                {
                    "session_id": self.sid,
                    "annotation_id": f"{eid}/mm/other",
                    "kind": "mental_model",
                    "target_kind": "event",
                    "target_id": eid,
                    "label": "other",
                    "annotator": actor,
                    "attrs": to_json(extra),
                },
            )

    def canvas_change(self, kind: str, rec: dict) -> list[tuple[tuple[int, int], int]]:
        """Cells this action inked (+1) or cleared (-1), from the canvas after it."""
        if kind == "message":
            if rec.get("canvas") is not None:
                raise _Bad("a message carries no canvas")
            return []
        if kind == "reset" and rec.get("canvas") is None:
            after: set[tuple[int, int]] = set()
        elif kind == "undo" and rec.get("canvas") is None:
            after = self.history.pop() if self.history else set()
        else:
            after = _cells(rec.get("canvas"), f"{kind} canvas")
        before = self.canvas
        if kind != "undo":
            self.history.append(before)  # what an undo would return to
        self.canvas = after
        return [(c, 1) for c in sorted(after - before)] + [(c, -1) for c in sorted(before - after)]


def _map(path: Path, out: Emitter) -> None:
    data = read_whole(path)
    try:
        m = load_json(data)
    except ValueError as exc:
        out.reject(
            source_file=str(path),
            target_table="landmarks",
            record_kind="file",
            record_ref="$",
            reason=f"not valid JSON ({exc})",
            raw=data,
        )
        return
    if (
        not isinstance(m, dict)
        or not isinstance(m.get("landmarks"), dict)
        or not isinstance(m.get("grid_size"), list)
    ):
        out.reject(
            source_file=str(path),
            target_table="landmarks",
            record_kind="file",
            record_ref="$",
            reason="an Almanac map has grid_size, start_cell and "
            "landmarks {name: {summary, cells, type}} (appendix D)",
            raw=data,
        )
        return
    map_id = str(m.get("map_id") or path.stem)
    out.row(
        "landmarks",
        {
            "session_id": "",
            "map_id": map_id,
            "landmark_id": "_map",
            "name": "map",
            "source_file": str(path),
            "attrs": to_json({k: v for k, v in m.items() if k != "landmarks"}),
        },
    )
    for name, lm in m["landmarks"].items():
        if not isinstance(lm, dict):
            out.reject(
                source_file=str(path),
                target_table="landmarks",
                record_kind="landmark",
                record_ref=f"$.landmarks[{name!r}]",
                reason=f"landmark {name!r} is not an object with summary, cells and type",
                raw=lm,
            )
            continue
        out.row(
            "landmarks",
            {
                "session_id": "",
                "map_id": map_id,
                "landmark_id": name,
                "name": name,
                "on_giver_map": lm.get("on_guide_map"),
                "on_follower_map": lm.get("on_follower_map"),
                "source_file": str(path),
                "attrs": to_json(
                    {k: v for k, v in lm.items() if k not in ("on_guide_map", "on_follower_map")}
                ),
            },
        )
