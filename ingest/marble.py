"""MultiAgentBench (MARBLE) ingestor: task JSONL and scenario YAML, as the project releases them.

Each task (a JSONL line, or one YAML config) becomes a ``scenarios`` row; its agents become
scenario-level ``participants`` and its relationship triples participant-level ``edges``
(``level = 'participant'``). These rows describe a scenario, not a recorded session, so their
``session_id`` is ``''`` and their ids are qualified by the scenario id
(``coding/1/agent2``). MARBLE spells the coordination field ``coordinate_mode``; it is read as
HAS-Bench's ``coordination_mode``. Mapping: docs/marble.md.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from graphlake.ingest import register
from graphlake.ingest.base import Emitter, SourceUnit, file_units, json_lines, load_yaml, to_json
from graphlake.ingest.scenario_graph import BadScenario as _Bad
from graphlake.ingest.scenario_graph import agent_rows, relationship_rows

KNOWN = frozenset({"scenario", "task_id", "coordinate_mode", "coordination_mode",
                   "relationships", "task", "agents"})


@register("marble")
class MarbleIngestor:
    """MultiAgentBench task JSONL files and scenario YAML configs."""

    name = "marble"
    help = "MultiAgentBench: task .jsonl files and scenario .yaml configs, or a folder of them."

    def units(self, path: Path) -> list[SourceUnit]:
        return file_units(path, {".jsonl": "jsonl", ".yaml": "yaml", ".yml": "yaml"},
                          "MARBLE task .jsonl or scenario .yaml files")

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        src = str(unit.path)
        if unit.kind == "jsonl":
            def bad(lineno, reason, raw):
                self._reject(out, src, f"line {lineno}", f"line {lineno}: {reason}", raw)

            for lineno, task in json_lines(unit.path, bad):
                self._task(task, None, src, f"line {lineno}", out)
        elif unit.kind == "yaml":
            text = unit.path.read_bytes()
            try:
                task = load_yaml(text)
            except yaml.YAMLError as exc:
                self._reject(out, src, "$", f"not valid YAML ({exc})", text)
                return
            self._task(task, unit.path.stem, src, "$", out)
        else:
            self._reject(out, src, "$", "not a MARBLE file: expected .jsonl tasks or a .yaml "
                         "scenario config", unit.path.read_bytes()[: 1 << 20])

    @staticmethod
    def _reject(out: Emitter, src: str, ref: str, reason: str, raw) -> None:
        out.reject(source_file=src, target_table="scenarios", record_kind="task",
                   record_ref=ref, reason=reason, raw=raw)

    def _task(self, task, stem: str | None, src: str, ref: str, out: Emitter) -> None:
        try:
            sid = _scenario_id(task, stem)
            agents = agent_rows(task.get("agents"), sid)
            edges = relationship_rows(task.get("relationships"), sid,
                                      {a["participant_id"] for a in agents})
        except _Bad as exc:
            self._reject(out, src, ref, str(exc), task)
            return
        body = task.get("task") if isinstance(task.get("task"), dict) else {}
        mode = task.get("coordination_mode", task.get("coordinate_mode"))
        env = task.get("environment") if isinstance(task.get("environment"), dict) else {}
        out.row("scenarios", {
            "session_id": "", "scenario_id": sid,
            "title": " ".join(str(body.get("content") or "").split())[:120] or None,
            "domain": task.get("scenario") or env.get("type") or None,
            "goal": body.get("content"), "instructions": body.get("output_format"),
            "coordination_mode": mode or None,
            "evaluation_criteria": to_json(task["metrics"]) if task.get("metrics") else None,
            "source_file": src,
            "attrs": to_json({k: v for k, v in task.items() if k not in KNOWN | {"metrics"}}
                             | {"task": {k: v for k, v in body.items()
                                         if k not in ("content", "output_format")}}
                             | ({"spelled": "coordinate_mode"} if "coordinate_mode" in task
                                else {}))})
        for a in agents:
            out.row("participants", a)
        for e in edges:
            out.row("edges", e)


def _scenario_id(task, stem: str | None) -> str:
    if not isinstance(task, dict):
        raise _Bad("a MARBLE task is an object with scenario, task_id, agents, relationships")
    if stem is not None:
        env = task.get("environment") if isinstance(task.get("environment"), dict) else {}
        domain = (task.get("scenario") or env.get("type") or "").lower()
        return f"{domain}/{stem}" if domain else stem
    if task.get("task_id") in (None, ""):
        raise _Bad("a task line needs a task_id")
    return f"{task.get('scenario') or 'task'}/{task['task_id']}"
