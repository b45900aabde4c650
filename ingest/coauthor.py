"""CoAuthor ingestor: keystroke logs of people writing with GPT-3 suggestions (Lee et al. 2022).

One ``.jsonl`` file is one session; every line (an editor or suggestion event) becomes an
``events`` row. On top, each suggestion episode

    suggestion-get (user) -> suggestion-open (api: the candidates) -> hover* ->
    suggestion-select (user) + text-insert (api, or user in later studies' logs)
    or   suggestion-close (user)

(a ``suggestion-reopen`` brings the last candidates back: after a close the same episode goes
on; after a select, choosing again is an episode of its own, so every accepted suggestion has
one) becomes three workflow nodes (the writer's request, the AI's suggestions, the writer's
response) and one ``adoption`` annotation, so Kolab's retention metrics run unchanged:

* **adopt**: a suggestion was selected and the writer never edited inside the inserted span;
* **modify**: selected, then the writer inserted or deleted text strictly inside the span
  (typing right after it, or before it, is not modifying it);
* **reject**: dismissed by the writer without a select.

The document is replayed from the Quill deltas, so the span is tracked through every later
edit, and the text at any event can be rebuilt (``document_at``). Details: docs/coauthor.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from graphlake.ingest import register
from graphlake.ingest.base import (
    SHAPE_ERRORS,
    Emitter,
    Ingestor,
    RecordError,
    SourceUnit,
    file_units,
    head_bytes,
    json_lines,
    parse_isolated,
    shape_reason,
    to_json,
)
from graphlake.ingest.vectorised import Batches, TupleBatch
from graphlake.schema.quill import DeltaError, apply_delta

KNOWN = frozenset({"eventName", "eventSource", "eventTimestamp", "textDelta"})
GENERATION = (
    "currentN",
    "currentMaxToken",
    "currentTemperature",
    "currentTopP",
    "currentPresencePenalty",
    "currentFrequencyPenalty",
)
STEP = "writing"
MAX_TIMESTAMP_MS = 4_102_444_800_000  # 2100-01-01: anything later is not a real log
_SESSION_ID = re.compile(r"[0-9a-f]{32}")


@dataclass
class Episode:
    k: int
    t_get: float
    line_get: int
    t_open: float | None = None
    suggestions: list = field(default_factory=list)
    t_decide: float | None = None
    selected: bool = False
    chosen: int | None = None
    dismissed: bool = False
    span: list[int] | None = None  # [start, end) of the inserted suggestion
    modified: bool = False
    lines: dict[str, int] = field(default_factory=dict)
    reopened_from: int | None = None  # the episode whose candidates a reopen brought back
    reopens: int = 0  # times a dismissed list was reopened before the decision

    def chosen_text(self) -> str | None:
        for s in self.suggestions:
            if isinstance(s, dict) and s.get("index") == self.chosen:
                text = s.get("trimmed") if s.get("trimmed") is not None else s.get("original")
                return text if isinstance(text, str) else None
        return None

    def is_chosen_insert(self, text: str | None) -> bool:
        """Whether a writer-sourced insert is the chosen suggestion landing in the document
        (logs of later studies insert it with eventSource "user"): its text is the chosen
        candidate's, or, where the candidates are unknown, more than one typed character."""
        chosen = self.chosen_text()
        if not text:
            return False
        if chosen is None:
            return len(text) > 1
        return text.strip() == chosen.strip()


def _track(spans: list[Episode], kind: str, pos: int, n: int, by_writer: bool = True) -> None:
    """Move the tracked spans through one edit; mark those a writer's edit touches inside
    (the system inserting text moves spans but does not modify them)."""
    for ep in spans:
        s, e = ep.span
        if kind == "insert":
            if pos <= s:
                ep.span = [s + n, e + n]
            elif pos < e:
                ep.modified = ep.modified or by_writer
                ep.span = [s, e + n]
        else:
            end = pos + n
            if end <= s:
                ep.span = [s - n, e - n]
            elif pos < e:
                ep.modified = ep.modified or by_writer
                before = max(0, min(s, end) - pos)
                inside = min(e, end) - max(s, pos)
                ep.span = [s - before, e - before - inside]


@register("coauthor")
class CoAuthorIngestor(Ingestor):
    """CoAuthor keystroke logs (.jsonl, one session per file)."""

    name = "coauthor"
    independent_units = True  # a CoAuthor log is one session and reads nothing else
    help = "CoAuthor keystroke logs: one .jsonl file per writing session, or a folder of them."

    def units(self, path: Path) -> list[SourceUnit]:
        return file_units(path, "jsonl", "a CoAuthor .jsonl file")

    def parse_many(self, units: list[SourceUnit], start: int, out, tick=None) -> None:
        """Each log parsed on its own (a failure is that file's reject), with the events of
        many logs collected into one Arrow batch."""
        rows = LogRows()
        for i, unit in enumerate(units):
            mark = rows.mark()
            parse_isolated(
                lambda u, o: self._parse(u, o, rows), unit, out, start + i,
                undo=lambda mark=mark: rows.undo(mark),
            )  # fmt: skip
            if rows.full():
                rows.emit(out)
            if tick:
                tick(unit, 1)
        rows.emit(out)

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        rows = LogRows()
        self._parse(unit, out, rows)
        rows.emit(out)

    def _parse(self, unit: SourceUnit, out: Emitter, rows: LogRows) -> None:
        if unit.kind != "jsonl":
            out.reject(
                source_file=str(unit.path),
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason="not a CoAuthor log: expected a .jsonl file",
                raw=head_bytes(unit.path),
            )
            return
        _Session(unit.path, out, rows).run()


class LogRows(Batches):
    """The tables with a row per log line or episode, batched across logs
    (:class:`~graphlake.ingest.vectorised.TupleBatch`); sessions, participants, steps and
    documents (a few rows a log) go through the emitter row by row."""

    def __init__(self) -> None:
        self.events = TupleBatch(
            "events",
            (
                "session_id", "event_id", "seq", "t", "timestamp", "actor", "actor_type",
                "kind", "channel", "initiator", "node_id", "text", "payload", "attrs",
            ),
            {"step_id": STEP},
        )  # fmt: skip
        self.nodes = TupleBatch(
            "nodes",
            (
                "session_id", "node_id", "local_id", "actor_type", "actor", "label", "detail",
                "t_start", "t_end", "in_degree", "out_degree",
            ),
            {"step_id": STEP, "n_occurrences": 1},
        )  # fmt: skip
        self.occurrences = TupleBatch(
            "node_occurrences",
            ("session_id", "node_id", "t_start", "t_end", "actor_type"),
            {"seq": 0, "step_id": STEP},
        )
        self.edges = TupleBatch(
            "edges",
            ("session_id", "edge_id", "src", "dst"),
            {"kind": "sequential", "level": "action", "step_id": STEP},
        )
        self.adoptions = TupleBatch(
            "annotations",
            (
                "session_id", "annotation_id", "target_id", "source_node", "ai_node",
                "response_node", "label", "attrs",
            ),
            {
                "kind": "adoption", "target_kind": "node", "step_id": STEP, "source_seq": 0,
                "ai_seq": 0, "response_seq": 0, "annotator": "derived from the log",
            },
        )  # fmt: skip
        super().__init__(self.events, self.nodes, self.occurrences, self.edges, self.adoptions)


def _channel(name: str) -> str:
    if name.startswith("suggestion"):
        return "suggestion"
    return "system" if name.startswith("system") else "editor"


def _micros(ms: float) -> int:
    """Microseconds since 1970 of a millisecond timestamp that is not an integer, rounded as
    ``datetime.fromtimestamp`` rounds it."""
    return (datetime.fromtimestamp(ms / 1000, UTC) - _EPOCH) // timedelta(microseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NUMBER = (int, float)


class _Session:
    def __init__(self, path: Path, out: Emitter, rows: LogRows):
        self.path, self.out, self.src = path, out, str(path)
        self.rows = rows
        m = _SESSION_ID.search(path.stem)
        self.sid = m.group(0) if m else path.stem
        genre = path.stem[: m.start()].strip("_-") if m and m.start() else path.parent.name
        self.genre = genre or None
        self.doc: str | None = None
        self.prompt: str | None = None  # the document at system-initialize
        self.t0: int | None = None
        self.t_last = 0.0
        self.episodes: list[Episode] = []
        self.tracked: list[Episode] = []  # episodes whose inserted span edits move
        self.open: Episode | None = None
        self.last: Episode | None = None  # the latest episode with candidates (for reopen)
        self.settings: dict = {}

    def reject(self, lineno: int, reason: str, raw, table: str = "events") -> None:
        self.out.reject(
            source_file=self.src,
            target_table=table,
            record_kind="event",
            record_ref=f"line {lineno}",
            reason=f"line {lineno}: {reason}",
            raw=raw,
            session_id=self.sid,
        )

    def run(self) -> None:
        for lineno, ev in json_lines(self.path, self.reject):
            if (
                type(ev) is not dict
                or type(ev.get("eventTimestamp")) not in _NUMBER  # a bool is no time
                or not isinstance(ev.get("eventName"), str)
            ):
                self.reject(
                    lineno,
                    "an event needs eventName and a numeric eventTimestamp (milliseconds)",
                    ev,
                )
                continue
            if not (
                math.isfinite(ev["eventTimestamp"]) and 0 <= ev["eventTimestamp"] < MAX_TIMESTAMP_MS
            ):
                self.reject(
                    lineno,
                    f"eventTimestamp {ev['eventTimestamp']!r} is not a time "
                    "between 1970 and 2100 in milliseconds since 1970",
                    ev,
                )
                continue
            try:
                self.event(lineno, ev)
            except SHAPE_ERRORS as exc:  # a field of odd type: this event, not the file
                self.reject(lineno, shape_reason(exc), ev)
        if self.t0 is None:
            self.out.reject(
                source_file=self.src,
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason="no usable events: nothing to ingest",
                raw=head_bytes(self.path),
                session_id=self.sid,
            )
            return
        self.finish()

    # -- one log line ----------------------------------------------------------------------
    def event(self, lineno: int, ev: dict) -> None:
        name, source = ev["eventName"], ev.get("eventSource")
        if self.t0 is None:
            self.t0 = ev["eventTimestamp"]
            self.settings = {k: ev.get(k) for k in GENERATION if k in ev}
        t = (ev["eventTimestamp"] - self.t0) / 1000.0
        if t > self.t_last:
            self.t_last = t
        if name == "system-initialize" and self.prompt is None:
            doc = ev.get("currentDoc")
            if doc is not None and not isinstance(doc, str):
                raise RecordError(f"currentDoc is {type(doc).__name__}, not the document text")
            self.prompt = doc or ""
            if self.doc is None:
                self.doc = self.prompt
        delta = ev.get("textDelta")
        inserted = None
        if isinstance(delta, dict) and delta.get("ops") is not None:
            try:
                self.doc, edits = apply_delta(self.doc or "", delta["ops"])
            except DeltaError as exc:
                self.reject(
                    lineno,
                    f"{exc}; the event was kept out and the replayed document may drift from here",
                    ev,
                )
                return
            inserted = "".join(
                [op["insert"] for op in delta["ops"] if isinstance(op.get("insert"), str)]
            )  # apply_delta checked that every op is an object
            self.edits(source, edits, inserted)
        node = self.episode_step(name, source, t, ev, lineno)
        human = source == "user"
        ts = ev["eventTimestamp"]
        extra = dict(ev)
        for k in KNOWN:
            extra.pop(k, None)
        if delta and not isinstance(delta, dict):
            extra["textDelta"] = delta
        self.rows.events.append(
            (
                self.out.unit, self.sid, f"l{lineno}",
                ev["eventNum"] if isinstance(ev.get("eventNum"), int) else lineno,
                t, ts * 1000 if type(ts) is int else _micros(ts),
                "writer" if human else "gpt3", "human" if human else "ai", name, _channel(name),
                "human" if human else "agent", node, inserted,
                to_json(delta) if isinstance(delta, dict) else None, to_json(extra),
            )
        )  # fmt: skip

    def edits(self, source, edits, inserted: str | None) -> None:
        ep = self.open
        if (
            ep is not None
            and ep.selected
            and ep.span is None
            and edits
            and edits[0][0] == "insert"
            and (source == "api" or (source == "user" and ep.is_chosen_insert(inserted)))
        ):
            _, pos, n = edits[0]  # the selected suggestion landing in the document
            ep.span = [pos, pos + n]
            self.tracked.append(ep)
            self.open = None
            return
        if self.tracked:
            for kind, pos, n in edits:
                _track(self.tracked, kind, pos, n, source == "user")

    def _new_episode(self, t: float, lineno: int, base: Episode | None = None) -> Episode:
        ep = Episode(len(self.episodes), t, lineno)
        if base is not None:  # choosing again from a reopened list: its candidates, shown now
            ep.reopened_from, ep.t_open, ep.suggestions = base.k, t, base.suggestions
        self.episodes.append(ep)
        self.open = ep
        return ep

    def episode_step(self, name, source, t, ev, lineno) -> str | None:
        if name == "suggestion-get" and source == "user":
            return f"ep{self._new_episode(t, lineno).k}/request"
        if name == "suggestion-reopen":
            base = (
                self.open if self.open is not None and self.open.t_open is not None else self.last
            )
            if base is None:
                return None
            if base.selected:  # a second choice from the same candidates: its own episode
                ep = self._new_episode(t, lineno, base)
                if ev.get("currentSuggestions"):
                    ep.suggestions = _suggestions(ev)
                return f"ep{ep.k}/request"
            if base.dismissed:  # closed, then brought back: the decision is still to come
                base.dismissed, base.t_decide = False, None
                base.reopens += 1
            self.open = base
            return f"ep{base.k}/suggestion"
        ep = self.open
        if ep is None:
            return None
        if name == "suggestion-open":
            ep.t_open = t
            ep.suggestions = _suggestions(ev)
            self.last = ep
            return f"ep{ep.k}/suggestion"
        if name == "suggestion-select" and source == "user":
            if ep.selected:  # selected again without a reopen event: a new choice too
                ep = self._new_episode(t, lineno, ep)
            ep.t_decide, ep.selected = t, True
            ep.chosen = ev.get("currentSuggestionIndex")
            self.last = ep
            return f"ep{ep.k}/response"
        if name == "suggestion-close" and source == "user" and not ep.selected:
            ep.t_decide, ep.dismissed = t, True
            self.open = None
            return f"ep{ep.k}/response"
        if name.startswith("suggestion"):
            return f"ep{ep.k}/suggestion"
        return None

    # -- after the last line ---------------------------------------------------------------
    def finish(self) -> None:
        sid, out = self.sid, self.out
        initial = self.prompt or ""
        title = initial.strip().split("\n", 1)[0] if initial else None
        out.row(
            "sessions",
            {
                "session_id": sid,
                "title": title,
                "goal": initial or None,
                "domain": self.genre,
                "participants": ["writer", "gpt3"],
                "started_at": datetime.fromtimestamp(self.t0 / 1000, UTC),
                "duration_s": self.t_last,
                "source_file": self.src,
            },
        )
        out.row(
            "participants",
            {
                "session_id": sid,
                "participant_id": "writer",
                "kind": "human",
                "role": "writer",
                "name": "writer",
            },
        )
        out.row(
            "participants",
            {
                "session_id": sid,
                "participant_id": "gpt3",
                "kind": "ai",
                "role": "suggester",
                "name": "gpt-3",
                "attrs": to_json({"generation": self.settings}),
            },
        )
        out.row(
            "steps",
            {
                "session_id": sid,
                "step_id": STEP,
                "ordinal": 0,
                "name": "writing",
                "t_start": 0.0,
                "t_end": self.t_last,
            },
        )
        out.row(
            "documents",
            {
                "session_id": sid,
                "doc_id": "prompt",
                "kind": "prompt",
                "uri": self.src,
                "text": initial,
            },
        )
        out.row(
            "documents",
            {
                "session_id": sid,
                "doc_id": "final",
                "kind": "final_text",
                "uri": self.src,
                "text": self.doc,
            },
        )
        nodes, edges, prev = [], [], None
        for ep in self.episodes:
            prev = self.episode_rows(ep, prev, nodes, edges)
        succ = {src for src, _ in edges}
        pred = {dst for _, dst in edges}
        unit, add = out.unit, self.rows.nodes.append
        for nid, atype, actor, label, a, b, detail in nodes:
            # a chain: one successor and one predecessor, but at its ends
            add(
                (
                    unit, sid, nid, nid, atype, actor, label, detail, a, b,
                    int(nid in pred), int(nid in succ),
                )
            )  # fmt: skip
        add = self.rows.edges.append
        for src, dst in edges:
            add((unit, sid, f"{src}->{dst}:sequential", src, dst))

    def episode_rows(
        self, ep: Episode, prev: str | None, node_rows: list[tuple], edges: list[tuple[str, str]]
    ) -> str | None:
        """Nodes, edges and the adoption annotation of one episode; returns its last node."""
        sid, out, k = self.sid, self.out, ep.k
        ask = "Ask for suggestions" if ep.reopened_from is None else "Reopen the suggestions"
        nodes = [
            (
                f"ep{k}/request",
                "human",
                "writer",
                ask,
                ep.t_get,
                ep.t_open if ep.t_open is not None else ep.t_get,
                None,
            )
        ]
        if ep.t_open is not None:
            end = ep.t_decide if ep.t_decide is not None else ep.t_open
            nodes.append(
                (
                    f"ep{k}/suggestion",
                    "ai",
                    "gpt3",
                    f"Offer {len(ep.suggestions)} suggestions",
                    ep.t_open,
                    end,
                    to_json(ep.suggestions),
                )
            )
        label = None
        if ep.t_decide is not None:
            label = "reject" if ep.dismissed else ("modify" if ep.modified else "adopt")
            text = {
                "reject": "Dismiss the suggestions",
                "adopt": "Keep the suggestion",
                "modify": "Keep and edit the suggestion",
            }[label]
            nodes.append(
                (f"ep{k}/response", "human", "writer", text, ep.t_decide, ep.t_decide, None)
            )
        node_rows.extend(nodes)
        unit, add = out.unit, self.rows.occurrences.append
        for nid, atype, _actor, _label, a, b, _detail in nodes:
            add((unit, sid, nid, a, b, atype))
        chain = [n[0] for n in nodes]
        if prev is not None:
            chain = [prev, *chain]
        edges.extend(zip(chain, chain[1:], strict=False))
        if label is not None and ep.t_open is not None:
            self.rows.adoptions.append(
                (
                    unit, sid, f"ep{k}/adoption", f"ep{k}/response", f"ep{k}/request",
                    f"ep{k}/suggestion", f"ep{k}/response", label,
                    to_json(
                        {
                            "chosen_index": ep.chosen,
                            "span": ep.span,
                            "chosen_text": ep.chosen_text(),
                            **(
                                {"reopened_from": f"ep{ep.reopened_from}"}
                                if ep.reopened_from is not None
                                else {}
                            ),
                            **({"reopens": ep.reopens} if ep.reopens else {}),
                        }
                    ),
                )
            )  # fmt: skip
        return chain[-1]


def _suggestions(ev: dict) -> list:
    """The offered suggestions: a list in CoAuthor's logs; anything else is refused here, while
    the event is read, rather than breaking the session's rows at the end."""
    got = ev.get("currentSuggestions") or []
    if not isinstance(got, list):
        raise RecordError(f"currentSuggestions is {type(got).__name__}, not a list of suggestions")
    return got
