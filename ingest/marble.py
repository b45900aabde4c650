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
planner's summary, whether to go on) and the evaluator's scores. Each line becomes a session:
assignments, results, communications and summaries become events in iteration order (the log
has no clock, so ``t`` is empty and ``seq`` orders them), and the scores become outcome
annotations. A ``.jsonl`` file may hold task lines and result lines; each line is read as what
it is. The same lines are also read, row for row alike, by a mapping in graphlake's mapping
language (``ingest/marble_results.yaml``, chosen with ``GRAPHLAKE_MARBLE_READER=mapping``);
this module stays the default while the mapping is slower (docs/benchmarks.md). Mapping:
docs/marble.md.
"""

from __future__ import annotations

import functools
import os
import re
from importlib import resources
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
    json_lines_with_bytes,
    line_slices,
    load_yaml,
    parse_isolated,
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

READER_ENV = "GRAPHLAKE_MARBLE_READER"
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
    # a task file, a config or a result log reads nothing else; a scenario that a task file
    # and a config both name is a collision the pipeline decides by a whole read
    independent_units = True
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

    #: who reads result-log lines: "python" (this module, the default) or "mapping"
    #: (ingest/marble_results.yaml); $GRAPHLAKE_MARBLE_READER overrides
    reader: str | None = None

    def result_reader(self) -> str:
        choice = self.reader or os.environ.get(READER_ENV, "python")
        if choice not in ("python", "mapping"):
            raise ValueError(f"${READER_ENV} is {choice!r}: python or mapping")
        return choice

    #: result-log lines gathered across the units of one parse_many call
    _pending: Records | None = None

    def parse_many(self, units, start, out, tick=None) -> None:
        """Each unit parsed alone (a failure is that unit's reject), with the run lines of
        many units converted by the mapping in one pass: a pass has a fixed cost (its
        statements), which slices of a large log would otherwise pay one by one."""
        if self.result_reader() != "mapping":
            return super().parse_many(units, start, out, tick)
        self._pending = Records()
        owners: dict[int, SourceUnit] = {}
        try:
            for i, unit in enumerate(units):
                mark = len(self._pending.text)
                owners[start + i] = unit

                def undo(mark=mark) -> None:
                    _truncate(self._pending, mark)

                parse_isolated(self.parse, unit, out, start + i, undo)
                if len(self._pending.text) >= RUNS_PER_PASS or i == len(units) - 1:
                    _convert_or_fail(self._pending, owners, out)
                    self._pending = Records()
                if tick:
                    tick(unit, 1)
        finally:
            self._pending = None

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        rows = _ScenarioRows()
        self._parse(unit, out, rows)
        rows.emit(out)

    def _parse(self, unit: SourceUnit, out: Emitter, rows: _ScenarioRows) -> None:
        src = str(unit.path)
        if unit.kind == "jsonl":

            def bad(lineno, reason, raw):
                self._reject(out, src, f"line {lineno}", f"line {lineno}: {reason}", raw)

            mapped = self.result_reader() == "mapping"
            shared = self._pending is not None  # parse_many converts the runs of many units
            runs = self._pending if self._pending is not None else Records()
            for lineno, line, text in json_lines_with_bytes(unit.path, bad, unit.span):
                try:
                    if isinstance(line, dict) and "iterations" in line and mapped:
                        runs.add(out.unit, src, unit.path.stem, lineno, text.decode("utf-8"))
                    elif isinstance(line, dict) and "iterations" in line:
                        _ResultLog(unit.path, lineno, out).read(line)
                    else:
                        self._task(line, None, src, f"line {lineno}", out, rows)
                except SHAPE_ERRORS as exc:  # one odd line is one reject, not a lost file
                    bad(lineno, shape_reason(exc), line)
                if rows.full():
                    rows.emit(out)
                if len(runs.text) >= RUNS_PER_PASS and not shared:
                    result_logs().convert_records(runs, out)
                    runs = Records()
            if runs.text and not shared:
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


def _truncate(records: Records, n: int) -> None:
    """Forget what a failed unit added to ``records`` (records are appended unit by unit)."""
    for name in ("unit", "file", "stem", "line", "text"):
        del getattr(records, name)[n:]


def _convert_or_fail(runs: Records, owners: dict, out) -> None:
    """Convert the gathered runs; if the pass fails, each unit's runs alone, so that a unit
    whose runs break the pass is that unit's failure and the others land."""
    if not runs.text:
        return
    try:
        result_logs().convert_records(runs, out)
        return
    except Exception:  # noqa: BLE001 - then unit by unit
        pass
    for index in dict.fromkeys(runs.unit):
        alone = Records()
        for k, u in enumerate(runs.unit):
            if u == index:
                alone.add(u, runs.file[k], runs.stem[k], runs.line[k], runs.text[k])
        try:
            result_logs().convert_records(alone, out)
        except Exception as exc:  # noqa: BLE001 - one unit's failure, the rest land
            out.fail_unit(index, owners[index], exc)


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


# task_evaluation and code_quality also stay in the session's attrs whole: their numeric parts
# become annotations, but they may hold text (rationales) too
RESULT_KNOWN = frozenset(
    {
        "task",
        "coordination_mode",
        "iterations",
        "planning_scores",
        "communication_scores",
        "token_usage",
        "agent_kpis",
        "total_milestones",
    }
)
ITERATION_KNOWN = frozenset(
    {
        "iteration",
        "chain_length",
        "current_agent",
        "task_assignments",
        "task_results",
        "result",
        "communications",
        "summary",
    }
)
PLANNER = "planner"


class _ResultLog:
    """One run of MARBLE's engine (a result-log line) -> a session with its events and
    outcome annotations. Session id: ``<file stem>:<line>`` (the engine appends a line per
    run, so earlier lines keep their numbers)."""

    def __init__(self, path: Path, lineno: int, out: Emitter):
        self.src, self.out = str(path), out
        self.sid = f"{path.stem}:{lineno}"
        self.ref = f"line {lineno}"
        self.agents: list[str] = []

    def reject(self, reason: str, raw) -> None:
        self.out.reject(
            source_file=self.src,
            target_table="sessions",
            record_kind="run",
            record_ref=self.ref,
            reason=f"{self.ref}: {reason}",
            raw=raw,
            session_id=self.sid,
        )

    def _agent(self, agent) -> str:
        name = agent if isinstance(agent, str) else to_json(agent)
        if name not in self.agents:
            self.agents.append(name)
        return name

    def read(self, run: dict) -> None:
        iterations = run.get("iterations")
        if not isinstance(iterations, list) or not all(isinstance(i, dict) for i in iterations):
            self.reject(
                "'iterations' must be a list of objects, as MARBLE's engine writes them", run
            )
            return
        mode = run.get("coordination_mode")
        events = []
        for k, it in enumerate(iterations):
            events.extend(self._iteration(k, it, mode == "star"))
        task = run.get("task") if isinstance(run.get("task"), str) else None
        planner = any(e["actor"] == PLANNER for e in events)
        self.out.row(
            "sessions",
            {
                "session_id": self.sid,
                "goal": task,
                "title": " ".join((task or "").split())[:120] or None,
                "condition": mode if isinstance(mode, str) and mode else None,
                "participants": [*self.agents, *([PLANNER] if planner else [])],
                "source_file": self.src,
                "attrs": attrs_json(run, RESULT_KNOWN),
            },
        )
        for a in self.agents:
            self.out.row(
                "participants",
                {
                    "session_id": self.sid,
                    "participant_id": a,
                    "kind": "ai",
                    "role": "agent",
                    "name": a,
                },
            )
        if planner:
            self.out.row(
                "participants",
                {
                    "session_id": self.sid,
                    "participant_id": PLANNER,
                    "kind": "ai",
                    "role": "planner",
                    "name": "engine planner",
                },
            )
        for e in events:
            self.out.row("events", e)
        for row in self._scores(run):
            self.out.row("annotations", row)

    def _iteration(self, k: int, it: dict, star: bool) -> list[dict]:
        """An iteration's events: assignments (by the planner in star mode, self-planned
        otherwise), results, communications, then the planner's summary."""
        n = it.get("iteration", it.get("chain_length", k + 1))
        base = {"session_id": self.sid, "step_id": f"iteration {n}"}
        rows: list[dict] = []

        def add(kind, actor, channel, text, payload=None, attrs=None):
            rows.append(
                {
                    **base,
                    "event_id": f"i{k}/{len(rows)}",
                    "seq": k * 1000 + len(rows),
                    "actor": actor,
                    "actor_type": "ai",
                    "kind": kind,
                    "channel": channel,
                    "initiator": "agent",
                    "text": text if isinstance(text, str) or text is None else to_json(text),
                    "payload": payload,
                    "attrs": to_json(attrs) if attrs else None,
                }
            )

        assignments = it.get("task_assignments") or {}
        for agent, task in assignments.items() if isinstance(assignments, dict) else []:
            add(
                "task_assignment",
                PLANNER if star else self._agent(agent),
                "coordination",
                task,
                attrs={"assignee": self._agent(agent)},
            )
        results = it.get("task_results") or []
        for r in results if isinstance(results, list) else []:
            if isinstance(r, dict) and "agent_id" in r and "result" in r:
                add("task_result", self._agent(r["agent_id"]), "tool", r["result"])
            elif isinstance(r, dict):
                for agent, res in r.items():
                    add("task_result", self._agent(agent), "tool", res)
        if "current_agent" in it:  # chain mode: one agent acts per link
            add("task_result", self._agent(it["current_agent"]), "tool", it.get("result"))
        comms = it.get("communications") or []
        for c in comms if isinstance(comms, list) else [comms]:
            for sender, recipient, text, conversation in _speakers(c):
                extra = {"to": self._agent(recipient)} if recipient else {}
                if conversation:
                    extra["conversation"] = conversation
                add(
                    "message",
                    self._agent(sender) if sender else None,
                    "chat",
                    text,
                    attrs=extra or None,
                )
        if it.get("summary") is not None:
            add(
                "summary",
                PLANNER,
                "coordination",
                it.get("summary"),
                attrs={k: v for k, v in it.items() if k not in ITERATION_KNOWN} or None,
            )
        elif any(k not in ITERATION_KNOWN for k in it):
            add(
                "iteration",
                None,
                "system",
                None,
                attrs={k: v for k, v in it.items() if k not in ITERATION_KNOWN},
            )
        return rows

    def _scores(self, run: dict) -> list[dict]:
        """The evaluator's scores as outcome annotations: one per iteration for planning and
        communication (-1: no communication that iteration, as MARBLE records it), the
        task evaluation and code quality (each numeric part), KPIs per agent, milestones and
        tokens."""
        base = {
            "session_id": self.sid,
            "kind": "outcome",
            "target_kind": "session",
            "target_id": self.sid,
            "annotator": "MARBLE evaluator",
        }
        rows = []

        def add(aid, label, value, target=None):
            if isinstance(value, bool) or not isinstance(value, int | float):
                return
            rows.append(
                {
                    **base,
                    "annotation_id": aid,
                    "label": label,
                    "value": float(value),
                    **(target or {}),
                }
            )

        for key in ("planning_scores", "communication_scores"):
            for i, v in enumerate(run.get(key) or []):
                add(f"{key}/{i}", key.rstrip("s"), v, {"step_id": f"iteration {i + 1}"})
        for key in ("task_evaluation", "code_quality"):
            v = run.get(key)
            if isinstance(v, dict):
                for part, x in v.items():
                    if isinstance(x, dict):  # per role (a buyer's and a seller's scores)
                        target = {"target_kind": "participant", "target_id": part}
                        for sub, y in _leaves(x):
                            add(f"{key}/{part}/{sub}", f"{key}:{sub}", y, target)
                    else:
                        add(f"{key}/{part}", f"{key}:{part}", x)
            else:
                add(key, key, v)
        kpis = run.get("agent_kpis")
        for agent, v in kpis.items() if isinstance(kpis, dict) else []:
            add(f"kpi/{agent}", "kpi", v, {"target_kind": "participant", "target_id": agent})
        add("total_milestones", "total_milestones", run.get("total_milestones"))
        add("token_usage", "token_usage", run.get("token_usage"))
        return rows


#: How MARBLE's engine writes who spoke in a communication: "From agent1 to agent2: ..."
_FROM_TO = re.compile(r"^[ \t]*From (\S+?) to (\S+?):[ \t]*", re.M)
#: The engine's header above a conversation's messages: "In Session <uuid>" (not a message)
_SESSION = re.compile(r"^[ \t]*In Session[ \t]+(\S+?)[ \t]*:?[ \t]*$", re.M)


def _leaves(d: dict, prefix: str = "") -> list[tuple[str, object]]:
    """(dotted key, value) of every leaf of a nested object."""
    out: list[tuple[str, object]] = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.extend(_leaves(v, key + "."))
        else:
            out.append((key, v))
    return out


def _speakers(c) -> list[tuple[str | None, str | None, object, str | None]]:
    """A communication as (sender, recipient, text, conversation) messages: a text holding
    "From A to B:" lines is one message per such line, with what follows it up to the next;
    an "In Session <id>" header names the conversation of the messages below it and is not a
    message itself; anything else is one message without a known speaker."""
    if not isinstance(c, str):
        return [(None, None, c, None)]
    out: list[tuple[str | None, str | None, object, str | None]] = []
    heads = list(_SESSION.finditer(c))
    parts: list[tuple[str | None, int, int]] = [(None, 0, len(c))] if not heads else []
    if heads:
        if c[: heads[0].start()].strip():
            parts.append((None, 0, heads[0].start()))
        for h, nxt in zip(heads, [*heads[1:], None], strict=True):
            parts.append((h.group(1), h.end(), nxt.start() if nxt else len(c)))
    for conversation, start, end in parts:
        text = c[start:end]
        marks = list(_FROM_TO.finditer(text))
        if not marks:
            if text.strip():
                out.append((None, None, text.strip() if heads else c, conversation))
            continue
        if text[: marks[0].start()].strip():  # text before the first speaker line
            out.append((None, None, text[: marks[0].start()].strip(), conversation))
        for m, nxt in zip(marks, [*marks[1:], None], strict=True):
            stop = nxt.start() if nxt else len(text)
            out.append((m.group(1), m.group(2), text[m.end() : stop].strip(), conversation))
    return out
