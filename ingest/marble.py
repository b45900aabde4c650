"""MultiAgentBench (MARBLE) ingestor: task JSONL, scenario YAML and the engine's result logs.

Each task (a JSONL line, or one YAML config) becomes a ``scenarios`` row; its agents become
scenario-level ``participants`` and its relationship triples participant-level ``edges``
(``level = 'participant'``). These rows describe a scenario, not a recorded session, so their
``session_id`` is ``''`` and their ids are qualified by the scenario id
(``coding/1/agent2``). MARBLE spells the coordination field ``coordinate_mode``; it is read as
HAS-Bench's ``coordination_mode``.

A result log is what MARBLE's engine appends after each run (``Engine._write_to_jsonl`` in
``marble/engine/engine.py``): one JSON line per run with the task text, the coordination mode,
every iteration (task assignments, each agent's result, the agents' communications, the
planner's summary, whether to go on) and the evaluator's scores. Those lines are read by a
mapping in graphlake's mapping language, ``ingest/marble_results.yaml``: each becomes a
session whose assignments, results, communications and summaries are events in iteration
order (the log has no clock, so ``t`` is empty and ``seq`` orders them) and whose scores are
outcome annotations. A ``.jsonl`` file may hold task lines and result lines; each line is
read as what it is. Mapping: docs/marble.md.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

import yaml

from graphlake.ingest import register
from graphlake.ingest.base import (
    SHAPE_ERRORS,
    Emitter,
    Ingestor,
    SourceUnit,
    file_units,
    head_bytes,
    json_lines_with_bytes,
    line_slices,
    load_yaml,
    read_whole,
    shape_reason,
    to_json,
)
from graphlake.ingest.mapping.ingestor import MappingIngestor
from graphlake.ingest.mapping.sources import Records
from graphlake.ingest.scenario_graph import (
    EDGE_FIELDS,
    PARTICIPANT_FIELDS,
    agent_tuples,
    relationship_tuples,
)
from graphlake.ingest.scenario_graph import BadScenario as _Bad
from graphlake.ingest.vectorised import Batches, TupleBatch

#: result-log lines converted in one pass of the mapping
RUNS_PER_PASS = 5_000


@functools.cache
def result_logs() -> MappingIngestor:
    """The mapping that reads MARBLE's engine result logs (``ingest/marble_results.yaml``)."""
    from graphlake.ingest.mapping import spec

    path = Path(str(resources.files("graphlake.ingest").joinpath("marble_results.yaml")))
    return MappingIngestor(spec.load(path))


KNOWN = frozenset(
    {
        "scenario",
        "task_id",
        "coordinate_mode",
        "coordination_mode",
        "relationships",
        "task",
        "agents",
    }
)

_TASK_COLUMNS = KNOWN | {"metrics"}


@register("marble")
class MarbleIngestor(Ingestor):
    """MultiAgentBench task JSONL files and scenario YAML configs."""

    name = "marble"
    help = (
        "MultiAgentBench: task .jsonl files, scenario .yaml configs and the engine's "
        "result logs (.jsonl, one run per line), or a folder of them."
    )

    def units(self, path: Path) -> list[SourceUnit]:
        """Each file, a large .jsonl one in slices (every line is a task or a run of its
        own, so workers can share the file)."""
        return line_slices(
            file_units(
                path,
                {".jsonl": "jsonl", ".yaml": "yaml", ".yml": "yaml"},
                "MARBLE task .jsonl or scenario .yaml files",
            ),
            "jsonl",
        )

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        rows = _ScenarioRows()
        self._parse(unit, out, rows)
        rows.emit(out)

    def _parse(self, unit: SourceUnit, out: Emitter, rows: _ScenarioRows) -> None:
        src = str(unit.path)
        if unit.kind == "jsonl":

            def bad(lineno, reason, raw):
                self._reject(out, src, f"line {lineno}", f"line {lineno}: {reason}", raw)

            runs = Records()
            stem = unit.path.stem
            for lineno, line, text in json_lines_with_bytes(unit.path, bad, unit.span):
                try:
                    if isinstance(line, dict) and "iterations" in line:
                        # a run: read by the result-log mapping, with the file's other runs
                        runs.add(out.unit, src, stem, lineno, text.decode("utf-8"))
                    else:
                        self._task(line, None, src, f"line {lineno}", out, rows)
                except SHAPE_ERRORS as exc:  # one odd line is one reject, not a lost file
                    bad(lineno, shape_reason(exc), line)
                if rows.full():
                    rows.emit(out)
                if len(runs.text) >= RUNS_PER_PASS:
                    result_logs().convert_records(runs, out)
                    runs = Records()
            if runs.text:
                result_logs().convert_records(runs, out)
        elif unit.kind == "yaml":
            text = read_whole(unit.path)
            try:
                task = load_yaml(text)
            except yaml.YAMLError as exc:
                self._reject(out, src, "$", f"not valid YAML ({exc})", text)
                return
            self._task(task, unit.path.stem, src, "$", out, rows)
        else:
            self._reject(
                out,
                src,
                "$",
                "not a MARBLE file: expected .jsonl tasks or a .yaml scenario config",
                head_bytes(unit.path),
            )

    @staticmethod
    def _reject(out: Emitter, src: str, ref: str, reason: str, raw) -> None:
        out.reject(
            source_file=src,
            target_table="scenarios",
            record_kind="task",
            record_ref=ref,
            reason=reason,
            raw=raw,
        )

    def _task(
        self, task, stem: str | None, src: str, ref: str, out: Emitter, rows: _ScenarioRows
    ) -> None:
        try:
            sid = _scenario_id(task, stem)
            agents = agent_tuples(task.get("agents"), sid)
            edges = relationship_tuples(task.get("relationships"), sid, {a[1] for a in agents})
        except _Bad as exc:
            self._reject(out, src, ref, str(exc), task)
            return
        body = task.get("task") if isinstance(task.get("task"), dict) else {}
        mode = task.get("coordination_mode", task.get("coordinate_mode"))
        env = task.get("environment") if isinstance(task.get("environment"), dict) else {}
        unit = out.unit
        rows.scenarios.append(
            (
                unit, sid, " ".join(str(body.get("content") or "").split())[:120] or None,
                task.get("scenario") or env.get("type") or None, body.get("content"),
                body.get("output_format"), mode or None,
                to_json(task["metrics"]) if task.get("metrics") else None, src,
                to_json(_task_attrs(task, body)),
            )
        )  # fmt: skip
        add = rows.participants.append
        for a in agents:
            add((unit, *a))
        add = rows.edges.append
        for e in edges:
            add((unit, *e))


def _task_attrs(task: dict, body: dict) -> dict:
    """A task's fields without a column (and how it spelled the coordination field)."""
    attrs = {k: v for k, v in task.items() if k not in _TASK_COLUMNS}
    attrs["task"] = {k: v for k, v in body.items() if k not in ("content", "output_format")}
    if "coordinate_mode" in task:
        attrs["spelled"] = "coordinate_mode"
    return attrs


class _ScenarioRows(Batches):
    """A file's scenarios, their participants and relationship edges, batched
    (:class:`~graphlake.ingest.vectorised.TupleBatch`): a task line makes about eight rows."""

    def __init__(self) -> None:
        self.scenarios = TupleBatch(
            "scenarios",
            (
                "scenario_id", "title", "domain", "goal", "instructions", "coordination_mode",
                "evaluation_criteria", "source_file", "attrs",
            ),
            {"session_id": ""},
        )  # fmt: skip
        self.participants = TupleBatch("participants", PARTICIPANT_FIELDS)
        self.edges = TupleBatch("edges", EDGE_FIELDS)
        super().__init__(self.scenarios, self.participants, self.edges)


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
