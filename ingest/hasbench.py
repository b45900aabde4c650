"""HAS-Bench ingestor: task YAML exactly as appendix B.3.2, and execution traces in graphlake's
JSON Lines format (``schemas/hasbench-trace.schema.json``, defined from sections 3.2, 3.3, 4.1
and A.1 of the paper).

* a task (YAML list entry) -> a ``scenarios`` row; its agents and users -> scenario-level
  ``participants``; its relationship triples -> participant-level ``edges``;
* a ``run`` line -> a session (``condition`` = agency level A1-A5, ``scenario_id`` = task_id)
  with its participants;
* a ``step`` line -> a ``step`` event (active participants, observations) and one event per
  action (message, tool call, user-side action: a human-side control action);
* a ``channel_event`` line -> a clarification / feedback / control event with initiator,
  request id and lifecycle status;
* an ``outcome`` line -> ``outcome`` annotations: pass, task_score, delivered, safety, each
  dimension, and the judge scores CQS / FUR / CRJ when present.

Mapping and rejects: docs/hasbench.md.
"""

from __future__ import annotations

from pathlib import Path

import yaml

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
    load_yaml_items,
    read_whole,
    run_row,
    shape_reason,
    stable_id,
    to_json,
)
from graphlake.ingest.base import RecordError as _Bad
from graphlake.ingest.scenario_graph import (
    EDGE_FIELDS,
    PARTICIPANT_FIELDS,
    BadScenario,
    agent_tuples,
    as_dicts,
    relationship_tuples,
    user_tuples,
)

LEVELS = {"A1", "A2", "A3", "A4", "A5"}
CHANNELS = {"clarification", "feedback", "control"}
STATUSES = {"pending", "answered", "expired"}
ACTION_KINDS = {"message", "tool_call", "user_action"}
TASK_KNOWN = frozenset(
    {"task_id", "coordination_mode", "relationships", "agents", "users", "evaluation_criteria"}
)
RUN_KNOWN = frozenset(
    {"type", "run_id", "task_id", "domain", "agency_level", "started_at", "participants"}
)
#: Fields of a run line that describe the one episode, not the settings it ran under.
RUN_EPISODE_FIELDS = frozenset(
    {"type", "run_id", "task_id", "domain", "started_at", "participants", "persona"}
)
ACTION_KNOWN = frozenset({"actor", "kind", "text", "tool", "arguments"})
EVENT_KNOWN = frozenset(
    {
        "type",
        "run_id",
        "event_id",
        "step",
        "t",
        "channel",
        "initiator",
        "actor",
        "request_id",
        "status",
        "text",
    }
)


@register("hasbench")
class HasBenchIngestor(Ingestor):
    """HAS-Bench task YAML (B.3.2) and execution traces (graphlake JSON Lines)."""

    name = "hasbench"
    independent_units = True  # a task file or a trace reads nothing else
    help = "HAS-Bench task .yaml files and .jsonl execution traces, or a folder of them."

    def units(self, path: Path) -> list[SourceUnit]:
        return file_units(
            path,
            {".yaml": "tasks", ".yml": "tasks", ".jsonl": "trace"},
            "HAS-Bench task .yaml files or .jsonl traces",
        )

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        src = str(unit.path)
        if unit.kind == "tasks":
            _tasks(unit.path, out)
        elif unit.kind == "trace":
            _Trace(unit.path, out).run()
        else:
            out.reject(
                source_file=src,
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason="not a HAS-Bench file: expected task .yaml or a .jsonl trace",
                raw=head_bytes(unit.path),
            )


# -- task YAML -> scenarios ----------------------------------------------------------------------
def _tasks(path: Path, out: Emitter) -> None:
    src = str(path)
    text = read_whole(path)
    try:
        items = load_yaml_items(text)  # a list of tasks is read task by task
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        out.reject(
            source_file=src,
            target_table="scenarios",
            record_kind="file",
            record_ref="$",
            reason=f"not valid YAML ({exc})",
            raw=text,
        )
        return
    for k, item in enumerate(items):
        try:
            if item.error is not None:
                raise _Bad(item.error)
            rows = _task(item.value, src)
        except (_Bad, BadScenario) as exc:
            out.reject(
                source_file=src,
                target_table="scenarios",
                record_kind="task",
                record_ref=f"$[{k}]",
                reason=str(exc),
                raw=item.source if item.error is not None else item.value,
            )
            continue
        for table, row in rows:
            out.row(table, row)


def _task(task, src: str) -> list[tuple[str, dict]]:
    if not isinstance(task, dict) or not task.get("task_id"):
        raise _Bad("a HAS-Bench task is a mapping with task_id (appendix B.3.2)")
    sid = str(task["task_id"])
    users = task.get("users") or []
    people = as_dicts(
        agent_tuples(task.get("agents"), sid) + user_tuples(users, sid), PARTICIPANT_FIELDS
    )
    edges = as_dicts(
        relationship_tuples(task.get("relationships"), sid, {p["participant_id"] for p in people}),
        EDGE_FIELDS,
    )
    user = users[0] if users and isinstance(users[0], dict) else {}
    domain = sid.split("_", 1)[0] if "_" in sid else None
    rows = [
        (
            "scenarios",
            {
                "session_id": "",
                "scenario_id": sid,
                "title": sid,
                "domain": domain,
                "goal": _s(user.get("goal")),
                "instructions": _s(user.get("task_instructions")),
                "known_info": _j(user.get("known_info")),
                "unknown_info": _j(user.get("unknown_info")),
                "persona": _s(user.get("persona")),
                "coordination_mode": _s(task.get("coordination_mode")),
                "evaluation_criteria": _j(task.get("evaluation_criteria")),
                "source_file": src,
                "attrs": attrs_json(task, TASK_KNOWN),
            },
        )
    ]
    return rows + [("participants", p) for p in people] + [("edges", e) for e in edges]


def _s(v) -> str | None:
    return v if isinstance(v, str) or v is None else to_json(v)


def _j(v) -> str | None:
    return None if v is None else to_json(v)


# -- JSON Lines traces -> sessions, events, outcome annotations ---------------------------------
class _Trace:
    def __init__(self, path: Path, out: Emitter):
        self.path, self.out, self.src = path, out, str(path)
        self.runs: dict[str, dict] = {}  # run_id -> {participant id: kind}
        self.settings_runs: set[str] = set()  # graphlake runs (run settings) emitted

    def settings_run(self, rec: dict) -> str:
        """The graphlake run of a HAS-Bench episode: its trace file plus its run settings
        (agent and user-simulator models, agency level, channels and any other setting the
        line carries). Episodes of one file with equal settings are one run."""
        settings = {k: v for k, v in rec.items() if k not in RUN_EPISODE_FIELDS}
        run_id = f"{self.path.stem}:{stable_id(self.path.name, to_json(settings))[:10]}"
        if run_id not in self.settings_runs:
            self.settings_runs.add(run_id)
            self.out.row(
                "runs",
                run_row(
                    run_id,
                    f"{self.path.stem} {rec.get('agent_model') or ''} "
                    f"{rec.get('agency_level') or ''}".strip(),
                    self.src,
                    agent_model=_s(rec.get("agent_model")),
                    user_model=_s(rec.get("user_simulator")),
                    user_simulator="simulated user" if rec.get("user_simulator") else None,
                    settings=settings,
                ),
            )
        return run_id

    def run(self) -> None:
        for lineno, rec in json_lines(self.path, self.reject):
            try:
                self.line(rec, lineno)
            except SHAPE_ERRORS as exc:
                rid = rec.get("run_id") if isinstance(rec, dict) else None
                self.reject(lineno, shape_reason(exc), rec, rid if isinstance(rid, str) else None)

    def reject(self, lineno: int, reason: str, raw, rid: str | None = None) -> None:
        self.out.reject(
            source_file=self.src,
            target_table="events",
            record_kind="trace_line",
            record_ref=f"line {lineno}",
            reason=f"line {lineno}: {reason}",
            raw=raw,
            session_id=rid,
        )

    def line(self, rec, lineno: int) -> None:
        if not isinstance(rec, dict):
            raise _Bad("each line is an object with type and run_id")
        kind = rec.get("type")
        rid = rec.get("run_id")
        if not isinstance(rid, str) or not rid:
            raise _Bad("missing run_id")
        if kind == "run":
            self.header(rec, rid)
            return
        if rid not in self.runs:
            raise _Bad(f"run_id {rid!r} has no 'run' line before it; put the run header first")
        {"step": self.step, "channel_event": self.channel_event, "outcome": self.outcome}.get(
            kind, self.unknown
        )(rec, rid)

    @staticmethod
    def unknown(rec, rid) -> None:
        raise _Bad(f"type {rec.get('type')!r} is none of run, step, channel_event, outcome")

    def header(self, rec: dict, rid: str) -> None:
        if rid in self.runs:
            raise _Bad(f"run_id {rid!r} is declared twice")
        level = rec.get("agency_level")
        if level is not None and level not in LEVELS:
            raise _Bad(f"agency_level {level!r} is not one of A1-A5")
        if not rec.get("task_id"):
            raise _Bad("a run line needs the task_id it enacts")
        started = iso_time(rec.get("started_at"))
        parts = rec.get("participants") or [
            {"id": "agent_0", "kind": "ai"},
            {"id": "user_0", "kind": "human"},
        ]
        kinds = {}
        for p in parts:
            if (
                not isinstance(p, dict)
                or not p.get("id")
                or p.get("kind") not in ("human", "ai", "system")
            ):
                raise _Bad(f"participant {p!r} needs an id and a kind of human, ai or system")
            kinds[p["id"]] = p["kind"]
        self.runs[rid] = kinds
        self.out.row(
            "sessions",
            {
                "session_id": rid,
                "scenario_id": str(rec["task_id"]),
                "title": str(rec["task_id"]),
                "domain": _s(rec.get("domain")),
                "condition": level,
                "participants": list(kinds),
                "started_at": started,
                "source_file": self.src,
                "run_id": self.settings_run(rec),
                "attrs": attrs_json(rec, RUN_KNOWN),
            },
        )
        for p in parts:
            ai = p["kind"] == "ai"
            self.out.row(
                "participants",
                {
                    "session_id": rid,
                    "participant_id": p["id"],
                    "kind": p["kind"],
                    "role": p.get("role") or ("agent" if ai else "user"),
                    "name": p.get("name")
                    or (rec.get("agent_model") if ai else rec.get("user_simulator")),
                    "persona": _s(rec.get("persona")) if p["kind"] == "human" else None,
                    "attrs": to_json(
                        {k: v for k, v in p.items() if k not in ("id", "kind", "role", "name")}
                    )
                    or None,
                },
            )

    def actor_type(self, rid: str, actor) -> str:
        kind = self.runs[rid].get(actor)
        if kind is None:
            raise _Bad(f"actor {actor!r} is not a participant of run {rid}")
        return kind

    def step(self, rec: dict, rid: str) -> None:
        n = rec.get("step")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise _Bad(f"step {n!r} must be a non-negative integer")
        actions = rec.get("actions")
        if not isinstance(actions, list):
            raise _Bad("a step needs an actions list")
        t = _num(rec.get("t"))
        rows = [
            {
                "session_id": rid,
                "event_id": f"s{n}",
                "seq": n * 1000,
                "t": t,
                "actor": None,
                "actor_type": "system",
                "kind": "step",
                "channel": "system",
                "payload": to_json(
                    {"active": rec.get("active"), "observations": rec.get("observations")}
                ),
                "attrs": attrs_json(
                    rec, {"type", "run_id", "step", "t", "actions", "active", "observations"}
                ),
            }
        ]
        for j, a in enumerate(actions, 1):
            if not isinstance(a, dict) or a.get("kind") not in ACTION_KINDS:
                raise _Bad(f"step {n} action #{j}: kind must be message, tool_call or user_action")
            atype = self.actor_type(rid, a.get("actor"))
            human = atype == "human"
            channel = {"message": "chat", "tool_call": "tool", "user_action": "control"}[a["kind"]]
            rows.append(
                {
                    "session_id": rid,
                    "event_id": f"s{n}/a{j}",
                    "seq": n * 1000 + j,
                    "t": t,
                    "actor": a["actor"],
                    "actor_type": atype,
                    "kind": a["kind"],
                    "channel": channel,
                    "initiator": "human" if human else "agent",
                    "text": _s(a.get("text") if a.get("text") is not None else a.get("tool")),
                    "payload": _j(a.get("arguments")),
                    "attrs": attrs_json(a, ACTION_KNOWN),
                }
            )
        for r in rows:  # only after the whole step validated: a step lands whole or not
            self.out.row("events", r)

    def channel_event(self, rec: dict, rid: str) -> None:
        if rec.get("channel") not in CHANNELS:
            raise _Bad(f"channel {rec.get('channel')!r} is not clarification, feedback or control")
        if rec.get("initiator") not in ("agent", "human"):
            raise _Bad(f"initiator {rec.get('initiator')!r} is neither agent nor human")
        if rec.get("status") not in STATUSES:
            raise _Bad(f"status {rec.get('status')!r} is not pending, answered or expired")
        if not rec.get("event_id"):
            raise _Bad("a channel event needs an event_id")
        actor = rec.get("actor")
        atype = self.actor_type(rid, actor) if actor is not None else None
        step = rec.get("step") if isinstance(rec.get("step"), int) else None
        self.out.row(
            "events",
            {
                "session_id": rid,
                "event_id": f"c/{rec['event_id']}",
                "seq": step * 1000 + 500 if step is not None else None,
                "t": _num(rec.get("t")),
                "actor": actor,
                "actor_type": atype,
                "kind": rec["channel"],
                "channel": rec["channel"],
                "initiator": rec["initiator"],
                "request_id": _s(rec.get("request_id")),
                "status": rec["status"],
                "text": _s(rec.get("text")),
                "attrs": attrs_json(rec, EVENT_KNOWN),
            },
        )

    def outcome(self, rec: dict, rid: str) -> None:
        if not isinstance(rec.get("pass"), bool):
            raise _Bad("an outcome needs pass: true or false")
        base = {
            "session_id": rid,
            "kind": "outcome",
            "target_kind": "session",
            "target_id": rid,
            "annotator": "HAS-Bench evaluator",
        }
        rows = [
            {
                **base,
                "annotation_id": "pass",
                "label": "pass",
                "value": 1.0 if rec["pass"] else 0.0,
                "attrs": attrs_json(
                    rec,
                    {
                        "type",
                        "run_id",
                        "pass",
                        "task_score",
                        "delivered",
                        "safety",
                        "dimensions",
                        "judge",
                    },
                ),
            }
        ]
        for label in ("task_score", "delivered", "safety"):
            if rec.get(label) is not None:
                rows.append(
                    {**base, "annotation_id": label, "label": label, "value": _num(rec[label])}
                )
        for name, v in (rec.get("dimensions") or {}).items():
            rows.append(
                {
                    **base,
                    "annotation_id": f"dimension/{name}",
                    "label": f"dimension:{name}",
                    "value": _num(v),
                }
            )
        for name, v in (rec.get("judge") or {}).items():
            rows.append(
                {
                    **base,
                    "annotation_id": f"judge/{name}",
                    "label": f"judge:{name}",
                    "value": _num(v),
                    "annotator": "LLM judge",
                }
            )
        for r in rows:
            self.out.row("annotations", r)


def _num(v) -> float | None:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    return float(v) if isinstance(v, int | float) else None
