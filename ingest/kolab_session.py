"""Kolab session folders: the graph plus optional side files (layout: docs/kolab-layout.md).

The Kolab release layout of side files is not published, so graphlake defines one. Every file
but ``graph.json`` is optional; each one that is present is read on its own, and a bad record
in one becomes a reject while the rest of the folder lands.

    <session>/graph.json      workflow graph, exactly as the paper's extraction format
    <session>/meta.json       {domain, occupation, condition, split, started_at, participant}
    <session>/chat.jsonl      one chat message per line, with agent tool calls  -> events
    <session>/ratings.json    per-step ratings, the seven items, rubrics        -> annotations
    <session>/survey.json     post-session survey answers                       -> annotations
    <session>/workflow.md     the workflow planning document (or .txt)          -> documents
    <session>/transcript.srt  think-aloud transcript                            -> documents
    <session>/*.mp4|mov|webm|mkv  screen recording                             -> media
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from graphlake.ingest.base import (
    SHAPE_ERRORS,
    Emitter,
    attrs_json,
    load_json,
    read_whole_or_reject,
    shape_reason,
    to_json,
    within,
)
from graphlake.ingest.base import RecordError as _Bad
from graphlake.ingest.kolab import GRAPH_FILE, VIDEO_EXT, KolabIngestor, ParsedGraph
from graphlake.ingest.timefmt import TimeFormatError, parse_clock

#: The seven collaboration items of the Kolab workflow document (appendix A.3), in order.
COLLAB_ITEMS = (
    "understood_task",
    "responsive",
    "reduced_effort",
    "proactive",
    "accurate",
    "smooth",
    "controllable",
)
SIDE_FILES = {
    "graph.json",
    "meta.json",
    "chat.jsonl",
    "ratings.json",
    "survey.json",
    "workflow.md",
    "workflow.txt",
    "transcript.srt",
}
CHAT_KNOWN = frozenset({"t", "time", "role", "actor", "text", "tool_calls", "node"})
TOOL_KNOWN = frozenset({"id", "name", "input", "output", "t", "time"})
RATING_KNOWN = frozenset(
    {
        "step",
        "output_quality",
        "output_quality_reason",
        "collaboration",
        "collaboration_items",
        "rubric",
        "rubrics_satisfied",
        "agent_completed",
        "agent_completed_why",
    }
)
HUMAN_ROLES = {"human", "user"}
AI_ROLES = {"ai", "assistant", "agent"}


class _Reader:
    """Side-file parsing for one session folder, sharing the graph's identifiers."""

    def __init__(self, out: Emitter, graph: ParsedGraph):
        self.out = out
        self.g = graph
        self.sid = graph.session_id

    def reject(self, path: Path, table: str, kind: str, ref: str, reason: str, raw) -> None:
        self.out.reject(
            source_file=str(path),
            target_table=table,
            record_kind=kind,
            record_ref=ref,
            reason=reason,
            raw=raw,
            session_id=self.sid,
        )

    def read_json_file(self, path: Path, table: str):
        data = read_whole_or_reject(path, self.out, table, self.sid)
        if data is None:
            return None
        try:
            return load_json(data)
        except ValueError as exc:
            self.reject(
                path,
                table,
                "file",
                "$",
                f"{path.name} is not valid JSON ({exc}); fix the syntax and re-ingest",
                data,
            )
            return None

    # -- chat.jsonl -> events --------------------------------------------------------------
    def chat(self, path: Path) -> None:
        with path.open("rb") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                ref = f"line {lineno}"
                try:
                    msg = load_json(line)
                except ValueError as exc:
                    self.reject(
                        path,
                        "events",
                        "chat_message",
                        ref,
                        f"line {lineno} is not valid JSON ({exc})",
                        line,
                    )
                    continue
                try:
                    self._message(msg, lineno)
                except _Bad as exc:
                    self.reject(path, "events", "chat_message", ref, f"line {lineno}: {exc}", msg)

    def _time(self, rec: dict) -> float | None:
        t = rec.get("t", rec.get("time"))
        if t is None:
            return None
        if isinstance(t, int | float) and not isinstance(t, bool):
            return float(t)
        try:
            return parse_clock(t)
        except TimeFormatError as exc:
            raise _Bad(f"time {exc}") from None

    def _message(self, msg, lineno: int) -> None:
        if not isinstance(msg, dict):
            raise _Bad("expected an object with role, text and t")
        role = str(msg.get("role", "")).lower()
        if role in HUMAN_ROLES:
            actor, atype = self.g.human_id, "human"
        elif role in AI_ROLES:
            actor = str(msg.get("actor") or next(iter(sorted(self.g.ai_actors)), "ai")).lower()
            atype = "ai"
        else:
            raise _Bad(f"role {msg.get('role')!r} is not human/user or ai/assistant")
        t = self._time(msg)
        calls = msg.get("tool_calls") or []
        if not isinstance(calls, list):
            raise _Bad("tool_calls must be a list of {id, name, input, output}")
        node = msg.get("node")
        node_id = (
            f"{self.g.segment_at(t)}/{node}"
            if isinstance(node, str) and "/" not in node and self.g.segment_at(t)
            else node
        )
        eid = f"chat/{lineno}"
        rows = [
            {
                "session_id": self.sid,
                "event_id": eid,
                "seq": lineno * 1000,
                "t": t,
                "actor": actor,
                "actor_type": atype,
                "kind": "message",
                "channel": "chat",
                "initiator": "human" if atype == "human" else "agent",
                "node_id": node_id,
                "step_id": self.g.segment_at(t),
                "text": _str(msg.get("text")),
                "attrs": attrs_json(msg, CHAT_KNOWN),
            }
        ]
        for j, call in enumerate(calls, 1):
            if not isinstance(call, dict) or not call.get("name"):
                raise _Bad(f"tool call #{j} needs at least a 'name'")
            ct = self._time(call)
            ct = t if ct is None else ct
            req = str(call.get("id") or f"{eid}/tool{j}")
            common = {
                "session_id": self.sid,
                "t": ct,
                "actor": actor,
                "actor_type": atype,
                "channel": "tool",
                "initiator": "agent" if atype == "ai" else "human",
                "request_id": req,
                "step_id": self.g.segment_at(ct),
                "text": _str(call.get("name")),
            }
            rows.append(
                {
                    **common,
                    "event_id": f"{eid}/tool{j}",
                    "seq": lineno * 1000 + 2 * j - 1,
                    "kind": "tool_call",
                    "payload": _payload(call.get("input")),
                    "attrs": attrs_json(call, TOOL_KNOWN),
                }
            )
            if "output" in call:
                rows.append(
                    {
                        **common,
                        "event_id": f"{eid}/tool{j}/result",
                        "seq": lineno * 1000 + 2 * j,
                        "kind": "tool_result",
                        "actor": "tool",
                        "actor_type": "system",
                        "status": "answered",
                        "payload": _payload(call.get("output")),
                    }
                )
        for r in rows:
            self.out.row("events", r)

    # -- ratings.json -> annotations -------------------------------------------------------
    def ratings(self, path: Path) -> None:
        obj = self.read_json_file(path, "annotations")
        if obj is None:
            return
        entries = obj.get("steps") if isinstance(obj, dict) else None
        if not isinstance(entries, list):
            self.reject(
                path,
                "annotations",
                "rating",
                "$.steps",
                "ratings.json must be "
                '{"steps": [{"step": <key or badge>, "output_quality": 1-5, ...}]}',
                obj,
            )
            return
        for i, entry in enumerate(entries):
            try:
                for row in self._rating(entry):
                    self.out.row("annotations", row)
            except _Bad as exc:
                self.reject(path, "annotations", "rating", f"$.steps[{i}]", str(exc), entry)

    def _rating(self, e) -> list[dict]:
        if not isinstance(e, dict):
            raise _Bad("each rating entry is an object with 'step' and the ratings")
        step = e.get("step")
        segs = [s for s in self.g.segments if step in (s.key, s.badge)]
        if not segs:
            known = sorted({s.badge or s.key for s in self.g.segments})
            raise _Bad(
                f"step {step!r} names no step key or badge of this session "
                f"(known: {', '.join(known)})"
            )
        by_key = any(s.key == step for s in segs)
        base = {
            "session_id": self.sid,
            "target_kind": "step" if by_key else "badge",
            "target_id": step,
            "step_id": segs[0].key,
            "annotator": self.g.human_id,
        }
        pre = f"rating/{step}"
        rows = []
        for name in ("output_quality", "collaboration"):
            if e.get(name) is not None:
                rows.append(
                    {
                        **base,
                        "annotation_id": f"{pre}/{name}",
                        "kind": "rating",
                        "label": name,
                        "value": _score(e[name], name),
                        "text": _str(e.get(f"{name}_reason")),
                    }
                )
        items = e.get("collaboration_items")
        if isinstance(items, list):
            if len(items) != len(COLLAB_ITEMS):
                raise _Bad(
                    f"collaboration_items has {len(items)} scores; the workflow document "
                    f"has 7 ({', '.join(COLLAB_ITEMS)})"
                )
            items = dict(zip(COLLAB_ITEMS, items, strict=True))
        if isinstance(items, dict):
            for name, v in items.items():
                rows.append(
                    {
                        **base,
                        "annotation_id": f"{pre}/item/{name}",
                        "kind": "rating",
                        "label": f"collab_item:{name}",
                        "value": _score(v, name),
                    }
                )
        elif items is not None:
            raise _Bad("collaboration_items must be a list of 7 scores or an object")
        rubric = e.get("rubric") or []
        satisfied = set(e.get("rubrics_satisfied") or [])
        for k, text in enumerate(rubric, 1):
            rows.append(
                {
                    **base,
                    "annotation_id": f"{pre}/rubric/{k}",
                    "kind": "rubric",
                    "label": f"rubric:{k}",
                    "value": 1.0 if k in satisfied else 0.0,
                    "text": _str(text),
                }
            )
        if "agent_completed" in e:
            rows.append(
                {
                    **base,
                    "annotation_id": f"{pre}/agent_completed",
                    "kind": "outcome",
                    "label": "agent_completed",
                    "value": 1.0 if e["agent_completed"] else 0.0,
                    "text": _str(e.get("agent_completed_why")),
                }
            )
        extra = attrs_json(e, RATING_KNOWN)
        if extra and rows:
            rows[0]["attrs"] = extra
        return rows

    # -- survey.json -> annotations ----------------------------------------------------------
    def survey(self, path: Path) -> None:
        obj = self.read_json_file(path, "annotations")
        if obj is None:
            return
        if not isinstance(obj, dict):
            self.reject(
                path,
                "annotations",
                "survey",
                "$",
                "survey.json must be an object of question -> answer",
                obj,
            )
            return
        for k, (q, a) in enumerate(obj.items()):
            num = float(a) if isinstance(a, int | float) and not isinstance(a, bool) else None
            self.out.row(
                "annotations",
                {
                    "session_id": self.sid,
                    "annotation_id": f"survey/{k}",
                    "kind": "survey",
                    "target_kind": "session",
                    "target_id": self.sid,
                    "label": q,
                    "value": num,
                    "text": None if num is not None else _str(a),
                    "annotator": self.g.human_id,
                },
            )

    # -- documents and media ---------------------------------------------------------------
    def document(self, path: Path, kind: str) -> None:
        data = read_whole_or_reject(path, self.out, "documents", self.sid)
        if data is None:
            return
        text = data.decode("utf-8", errors="replace")
        self.out.row(
            "documents",
            {
                "session_id": self.sid,
                "doc_id": path.name,
                "kind": kind,
                "uri": str(path.resolve()),
                "text": text,
            },
        )

    def media(self, path: Path) -> None:
        h = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        digest = h.hexdigest()
        self.out.row(
            "media",
            {
                "session_id": self.sid,
                "media_id": digest[:16],
                "uri": str(path.resolve()),
                "kind": "screen_recording",
                "size_bytes": path.stat().st_size,
                "sha256": digest,
                **probe_video(path),
            },
        )


def probe_video(path: Path) -> dict:
    """Duration, fps and size from the container, when PyAV (vision extra) is installed."""
    try:
        import av  # noqa: PLC0415 - heavy, optional
    except ImportError:
        return {}
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            dur = (
                float(stream.duration * stream.time_base)
                if stream.duration
                else (container.duration / 1e6 if container.duration else None)
            )
            rate = stream.average_rate
            return {
                "duration_s": dur,
                "fps": float(rate) if rate else None,
                "width": stream.codec_context.width,
                "height": stream.codec_context.height,
            }
    except Exception:  # noqa: BLE001 - an unreadable video still lands, unprobed
        return {}


def _str(v) -> str | None:
    return v if isinstance(v, str) or v is None else to_json(v)


def _payload(v) -> str | None:
    return None if v is None else to_json(v)


def _score(v, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not 1 <= v <= 5:
        raise _Bad(f"{name} must be a number from 1 to 5, got {v!r}")
    return float(v)


def parse_session_dir(ing: KolabIngestor, folder: Path, out: Emitter) -> None:
    """Parse ``folder/graph.json`` and every side file beside it."""
    meta = None
    meta_path = folder / "meta.json"
    graph_path = folder / GRAPH_FILE
    entries = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    others = [p for p in entries if within(p, folder)]  # links resolved once per entry
    for p in entries:
        if p not in others:
            # never read: its bytes would land in the lake as rows or a reject's payload
            out.reject(
                source_file=str(p),
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason=f"{p.name} is a link out of the session folder (or to nothing); "
                "it was not read. Copy the file into the folder to ingest it",
                raw=str(p),
            )
    meta_data = (
        read_whole_or_reject(meta_path, out, "sessions")
        if meta_path in others and meta_path.is_file()
        else None
    )
    if meta_data is not None:
        try:
            meta = load_json(meta_data)
        except ValueError as exc:
            ing.reject_file(
                out,
                meta_path,
                f"meta.json is not valid JSON ({exc}); the session landed without its metadata",
            )
        if meta is not None and not isinstance(meta, dict):
            ing.reject_file(out, meta_path, "meta.json must be an object")
            meta = None
    graph = (
        ing.parse_graph_file(graph_path, out, meta, fallback_sid=folder.name)
        if graph_path in others
        else None
    )
    if graph is None:
        for p in others:
            if p.name not in (GRAPH_FILE, "meta.json"):
                ing.reject_file(
                    out,
                    p,
                    "side file of a session whose graph.json was rejected; "
                    "fix graph.json and re-ingest the folder",
                    table="events",
                )
        return
    r = _Reader(out, graph)
    readers = {
        "chat.jsonl": r.chat,
        "ratings.json": r.ratings,
        "survey.json": r.survey,
        "workflow.md": lambda f: r.document(f, "workflow_document"),
        "workflow.txt": lambda f: r.document(f, "workflow_document"),
        "transcript.srt": lambda f: r.document(f, "transcript"),
    }
    for p in others:
        name = p.name
        if name in (GRAPH_FILE, "meta.json"):
            continue
        side = readers.get(name)
        if side is None and p.suffix.lower() in VIDEO_EXT and p.is_file():
            side = r.media
        if side is not None:
            try:
                side(p)
            except SHAPE_ERRORS as exc:  # one odd side file must not cost the session
                ing.reject_file(
                    out,
                    p,
                    f"{name}: {shape_reason(exc)}; the session landed without what this file holds",
                    table="documents",
                )
        else:
            ing.reject_file(
                out,
                p,
                f"unrecognised file {name!r} in a session folder; expected "
                f"{', '.join(sorted(SIDE_FILES))} or a video "
                f"({', '.join(sorted(VIDEO_EXT))})",
                table="documents",
            )
