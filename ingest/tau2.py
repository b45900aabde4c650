"""tau2-bench ingestor: results files and task files, exactly as tau2-bench publishes them.

A results file is ``{timestamp, info, tasks[], simulations[]}``; a task file is a list of
tasks. Every simulation becomes a session between three participants: ``assistant`` (the LLM
agent), ``user`` (the LLM user simulator, a simulated human in HAS-Bench terms) and ``tool``
(the environment). Every task becomes a ``scenarios`` row; sessions point at it through
``scenario_id``. Mapping details: ``docs/tau2.md``.

Files are streamed with ijson (one simulation in memory at a time), so a results file of any
size ingests with bounded memory.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import ijson

from graphlake.ingest import register
from graphlake.ingest.base import Emitter, SourceUnit, attrs_json, file_units, to_json
from graphlake.ingest.base import RecordError as _Bad

SIM_KNOWN = frozenset({"id", "task_id", "start_time", "duration", "messages", "reward_info"})
MSG_KNOWN = frozenset({"role", "content", "tool_calls", "timestamp", "id", "requestor"})
TOOL_CALL_KNOWN = frozenset({"id", "name", "arguments", "requestor"})
TASK_KNOWN = frozenset({"id", "description", "user_scenario", "evaluation_criteria"})
ROLES = {"assistant": ("ai", "agent"), "user": ("human", "human"), "tool": ("system", None)}


def _ts(text) -> datetime:
    if not isinstance(text, str):
        raise _Bad(f"timestamp {text!r} is not an ISO 8601 text")
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise _Bad(f"timestamp {text!r} is not ISO 8601 (e.g. 2025-10-05T07:52:53.055)") from None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)  # tau2 writes local times, no zone


def _s(v) -> str | None:
    return v if isinstance(v, str) or v is None else to_json(v)


@register("tau2")
class Tau2Ingestor:
    """tau2-bench results files (simulations, tasks, run info) and task files."""

    name = "tau2"
    help = "tau2-bench results files ({info, tasks, simulations}) or task files ([task, ...])."

    def units(self, path: Path) -> list[SourceUnit]:
        return file_units(path, "json", "a tau2 results or tasks .json file")

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        src = str(unit.path)
        if unit.kind != "json":
            out.reject(source_file=src, target_table="sessions", record_kind="file",
                       record_ref="$", reason="not a tau2 file: expected a .json results or "
                       "tasks file", raw=unit.path.read_bytes()[: 1 << 20])
            return
        try:
            shape = self._shape(unit.path)
        except (ijson.JSONError, ValueError, UnicodeDecodeError) as exc:
            out.reject(source_file=src, target_table="sessions", record_kind="file",
                       record_ref="$", reason=f"not valid JSON ({exc}); fix it and re-ingest",
                       raw=unit.path.read_bytes()[: 1 << 20])
            return
        if shape == "tasks":
            self._tasks(unit.path, "item", out, None)
        elif shape == "results":
            info = self._one(unit.path, "info")
            info = info if isinstance(info, dict) else {}
            domain = (info.get("environment_info") or {}).get("domain_name")
            self._tasks(unit.path, "tasks.item", out, domain)
            self._simulations(unit.path, info, out)
        else:
            out.reject(source_file=src, target_table="sessions", record_kind="file",
                       record_ref="$", reason="neither a tau2 results file (an object with "
                       "'simulations') nor a task file (a list of tasks)",
                       raw=unit.path.read_bytes()[: 1 << 20])

    # -- file shape and streaming ------------------------------------------------------------
    @staticmethod
    def _shape(path: Path) -> str:
        with path.open("rb") as fh:
            for prefix, event, value in ijson.parse(fh):
                if prefix == "" and event == "start_array":
                    return "tasks"
                if prefix == "" and event == "map_key" and value == "simulations":
                    return "results"
            return "other"

    @staticmethod
    def _one(path: Path, prefix: str):
        with path.open("rb") as fh:
            for item in ijson.items(fh, prefix, use_float=True):
                return item
        return None

    @staticmethod
    def _items(path: Path, prefix: str):
        with path.open("rb") as fh:
            yield from enumerate(ijson.items(fh, prefix, use_float=True))

    # -- tasks -> scenarios ------------------------------------------------------------------
    def _tasks(self, path: Path, prefix: str, out: Emitter, domain: str | None) -> None:
        src = str(path)
        for k, task in self._items(path, prefix):
            ref = f"$.{prefix.replace('.item', '')}[{k}]" if "." in prefix else f"$[{k}]"
            if not isinstance(task, dict) or not isinstance(task.get("id"), str | int):
                out.reject(source_file=src, target_table="scenarios", record_kind="task",
                           record_ref=ref, reason="a task needs an 'id'", raw=task)
                continue
            scen = task.get("user_scenario") or {}
            ins = scen.get("instructions") if isinstance(scen, dict) else None
            structured = isinstance(ins, dict)
            desc = task.get("description") or {}
            dom = domain or (_s(ins.get("domain")) if structured else None)
            out.row("scenarios", {
                "session_id": "", "scenario_id": scenario_id(dom, task["id"]),
                "title": _s(desc.get("purpose") if isinstance(desc, dict) else desc),
                "domain": dom,
                "goal": _s(ins.get("reason_for_call")) if structured else _s(ins),
                "known_info": _s(ins.get("known_info")) if structured else None,
                "unknown_info": _s(ins.get("unknown_info")) if structured else None,
                "instructions": _s(ins.get("task_instructions")) if structured else None,
                "persona": _s(scen.get("persona")) if isinstance(scen, dict) else None,
                "evaluation_criteria": _s(task.get("evaluation_criteria")),
                "source_file": src,
                "attrs": to_json({k: v for k, v in task.items() if k not in TASK_KNOWN}
                                 | ({"description": desc} if isinstance(desc, dict) else {})),
            })

    # -- simulations -> sessions, participants, events, annotations --------------------------
    def _simulations(self, path: Path, info: dict, out: Emitter) -> None:
        src = str(path)
        for k, sim in self._items(path, "simulations.item"):
            try:
                self._simulation(sim, info, src, out)
            except _Bad as exc:
                out.reject(source_file=src, target_table="sessions", record_kind="simulation",
                           record_ref=f"$.simulations[{k}]", reason=str(exc), raw=sim,
                           session_id=sim.get("id") if isinstance(sim, dict) else None)

    def _simulation(self, sim, info: dict, src: str, out: Emitter) -> None:
        if not isinstance(sim, dict) or not isinstance(sim.get("id"), str) or not sim["id"]:
            raise _Bad("a simulation needs an 'id'")
        if not isinstance(sim.get("messages"), list):
            raise _Bad(f"simulation {sim['id']}: 'messages' must be a list")
        sid = sim["id"]
        start = _ts(sim.get("start_time"))
        run = {k: v for k, v in info.items() if k not in ("user_info", "agent_info")}
        agent, user = info.get("agent_info") or {}, info.get("user_info") or {}
        domain = (info.get("environment_info") or {}).get("domain_name")
        out.row("sessions", {
            "session_id": sid, "title": _s(sim.get("task_id")), "domain": _s(domain),
            "participants": ["assistant", "user", "tool"], "started_at": start,
            "duration_s": float(sim["duration"]) if isinstance(sim.get("duration"), int | float)
            else None, "source_file": src,
            "scenario_id": scenario_id(domain, sim["task_id"]) if sim.get("task_id") is not None
            else None,
            "attrs": to_json({**{k: v for k, v in sim.items() if k not in SIM_KNOWN},
                              "run": run}),
        })
        for pid, (kind, _), who in (("assistant", ROLES["assistant"], agent),
                                    ("user", ROLES["user"], user), ("tool", ROLES["tool"], {})):
            out.row("participants", {
                "session_id": sid, "participant_id": pid, "kind": kind,
                "role": {"assistant": "agent", "user": "user_simulator",
                         "tool": "environment"}[pid],
                "name": _s(who.get("llm")) if who else _s(domain),
                "attrs": to_json({**who, "simulated": True}) if pid == "user"
                else (to_json(who) if who else None)})
        for i, msg in enumerate(sim["messages"]):
            try:
                rows = self._message(sid, i, msg, start)
            except _Bad as exc:
                out.reject(source_file=src, target_table="events", record_kind="message",
                           record_ref=f"$.simulations[id={sid}].messages[{i}]",
                           reason=f"simulation {sid} message #{i}: {exc}", raw=msg,
                           session_id=sid)
                continue
            for r in rows:
                out.row("events", r)
        for row in _outcomes(sid, sim.get("reward_info")):
            out.row("annotations", row)

    @staticmethod
    def _message(sid: str, i: int, msg, start: datetime) -> list[dict]:
        if not isinstance(msg, dict):
            raise _Bad("expected an object with role, content and timestamp")
        role = msg.get("role")
        if role not in ROLES:
            raise _Bad(f"role {role!r} is not assistant, user or tool")
        ts = _ts(msg.get("timestamp"))
        t = (ts - start).total_seconds()
        atype, initiator = ROLES[role]
        base = {"session_id": sid, "t": t, "timestamp": ts}
        if role == "tool":
            req = msg.get("requestor")
            return [{**base, "event_id": f"m{i}", "seq": i * 100, "actor": "tool",
                     "actor_type": "system", "kind": "tool_result",
                     "channel": "control" if req == "user" else "tool",
                     "initiator": "human" if req == "user" else "agent",
                     "request_id": _s(msg.get("id")),
                     "status": "error" if msg.get("error") else "answered",
                     "text": _s(msg.get("content")), "attrs": attrs_json(msg, MSG_KNOWN)}]
        rows = [{**base, "event_id": f"m{i}", "seq": i * 100, "actor": role, "actor_type": atype,
                 "kind": "message", "channel": "chat", "initiator": initiator,
                 "text": _s(msg.get("content")), "attrs": attrs_json(msg, MSG_KNOWN)}]
        calls = msg.get("tool_calls") or []
        if not isinstance(calls, list):
            raise _Bad("tool_calls must be a list")
        for j, call in enumerate(calls, 1):
            if not isinstance(call, dict) or not call.get("name"):
                raise _Bad(f"tool call #{j} has no name")
            req = call.get("requestor") or role
            rows.append({**base, "event_id": f"m{i}/call{j}", "seq": i * 100 + j,
                         "actor": req, "actor_type": ROLES.get(req, ("ai", "agent"))[0],
                         "kind": "tool_call",
                         "channel": "control" if req == "user" else "tool",
                         "initiator": "human" if req == "user" else "agent",
                         "request_id": _s(call.get("id")), "text": _s(call["name"]),
                         "payload": to_json(call.get("arguments")),
                         "attrs": attrs_json(call, TOOL_CALL_KNOWN)})
        return rows


def scenario_id(domain: str | None, task_id) -> str:
    """tau2 task ids repeat across domains ("0" in airline and retail): qualify them."""
    return f"{domain}/{task_id}" if domain else str(task_id)


def _outcomes(sid: str, info) -> list[dict]:
    """reward_info -> one outcome annotation per reward, check and assertion."""
    if not isinstance(info, dict):
        return []
    base = {"session_id": sid, "kind": "outcome", "target_kind": "session", "target_id": sid,
            "annotator": "tau2 evaluator"}
    rows = [{**base, "annotation_id": "reward", "label": "reward",
             "value": _num(info.get("reward")),
             "attrs": to_json({k: info.get(k) for k in ("reward_basis", "info")})}]
    db = info.get("db_check")
    if isinstance(db, dict):
        rows.append({**base, "annotation_id": "db_check", "label": "db_match",
                     "value": _num(db.get("db_match")), "attrs": to_json(db)})
    for key, label_of, value_of in (
        ("env_assertions", lambda a: (a.get("env_assertion") or {}).get("func_name"),
         lambda a: a.get("reward")),
        ("action_checks", lambda a: (a.get("action") or {}).get("name"),
         lambda a: a.get("action_reward")),
        ("nl_assertions", lambda a: a.get("nl_assertion"), lambda a: a.get("met")),
        ("communicate_checks", lambda a: a.get("info"), lambda a: a.get("met")),
    ):
        for k, item in enumerate(info.get(key) or []):
            if not isinstance(item, dict):
                continue
            rows.append({**base, "annotation_id": f"{key}/{k}",
                         "label": f"{key.rstrip('s')}:{_s(label_of(item))}",
                         "value": _num(value_of(item)), "attrs": to_json(item)})
    for basis, v in (info.get("reward_breakdown") or {}).items():
        rows.append({**base, "annotation_id": f"reward_breakdown/{basis}",
                     "label": f"reward_breakdown:{basis}", "value": _num(v)})
    return rows


def _num(v) -> float | None:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    return float(v) if isinstance(v, int | float) else None
