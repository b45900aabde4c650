"""tau2-bench ingestor: results files, run folders and task files, as tau2-bench writes them.

tau2 saves a run in one of two layouts (``Results.save`` in ``src/tau2/data_model/
simulation.py``): a monolithic results file ``{timestamp, info, tasks[], simulations[]}``, or
a run folder holding ``results.json`` (the same metadata with a ``simulation_index`` instead
of the simulations) and ``simulations/<id>.json``, one file per simulation. A task file is a
list of tasks.

Every run becomes a ``runs`` row whose ``run_id`` is tau2's own run identity
(``src/tau2/data_model/run_identity.py``: sha256 of the results timestamp and the sorted
simulation ids, 16 hex characters), so graphlake and tau2 name a run alike wherever the files
move. Every simulation becomes a session between three participants: ``assistant`` (the LLM
agent), ``user`` (the LLM user simulator, a simulated human in HAS-Bench terms) and ``tool``
(the environment). Half-duplex simulations hold ``messages``; full-duplex (voice) ones hold
``ticks``, whose speech chunks are joined into utterances with a start and an end, so speech
that overlaps stays two overlapping intervals. Every task becomes a ``scenarios`` row; sessions
point at it through ``scenario_id``. Mapping details: ``docs/tau2.md``.

Files are streamed with ijson (one simulation in memory at a time), so a results file of any
size ingests with bounded memory.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

import ijson
import orjson

from graphlake.errors import InputLimitError
from graphlake.ingest import register
from graphlake.ingest.base import (
    SHAPE_ERRORS,
    Emitter,
    Ingestor,
    RepairedUtf8,
    SourceUnit,
    attrs_json,
    data_files,
    file_units,
    head_bytes,
    iso_time,
    load_json,
    read_whole,
    reject_encoding,
    run_row,
    shape_reason,
    tail_bytes,
    to_json,
    within,
)
from graphlake.ingest.base import RecordError as _Bad
from graphlake.ingest.vectorised import Batches, TupleBatch

RESULTS_NAME = "results.json"
#: What ijson raises where a file stops being JSON (truncation, NaN). Bytes that are not
#: UTF-8 are replaced as they are read (RepairedUtf8), so they cost no simulation.
BROKEN_JSON = (ijson.JSONError, UnicodeDecodeError)
#: Files up to this size are parsed whole by orjson (held in memory, about ten times the
#: bytes) instead of streamed pass by pass with ijson: a tenth of the time
WHOLE_FILE_ENV = "GRAPHLAKE_TAU2_WHOLE_FILE_BYTES"
WHOLE_FILE_BYTES = 32 << 20


class _Clean:
    """What the whole-file path reports where the stream reports replaced bytes: none (orjson
    reads only valid UTF-8; anything else takes the stream)."""

    replaced = 0
    first_bad = None


def _read_small(path: Path):
    """The file's JSON value when it is small enough and orjson reads it, else None: the
    stream decides (NaN, Infinity, huge integers, bytes that are not UTF-8, a break; a file
    that is just ``null`` streams too, to the same answer)."""
    from graphlake.config import int_env

    try:
        if path.stat().st_size > int_env(WHOLE_FILE_ENV, WHOLE_FILE_BYTES):
            return None
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


SIMULATIONS_DIR = "simulations"
SIM_KNOWN = frozenset(
    {"id", "task_id", "start_time", "duration", "messages", "ticks", "reward_info"}
)
TICK_KNOWN = frozenset(
    {
        "tick_id",
        "timestamp",
        "agent_chunk",
        "user_chunk",
        "agent_tool_calls",
        "user_tool_calls",
        "agent_tool_results",
        "user_tool_results",
        "tick_duration_seconds",
    }
)
CHUNK_KNOWN = frozenset({"role", "content", "timestamp", "contains_speech", "utterance_ids"})
MSG_KNOWN = frozenset({"role", "content", "tool_calls", "timestamp", "id", "requestor"})
TOOL_CALL_KNOWN = frozenset({"id", "name", "arguments", "requestor"})
TASK_KNOWN = frozenset({"id", "description", "user_scenario", "evaluation_criteria"})
#: What tells a file of one task (``tasks/task_*.json``) from other JSON objects.
TASK_FILE_KEYS = frozenset({"user_scenario", "evaluation_criteria"})
ROLES = {"assistant": ("ai", "agent"), "user": ("human", "human"), "tool": ("system", None)}


def _ts(text) -> datetime:
    """tau2's times: ISO 8601 texts without a zone (read as UTC), required."""
    if not isinstance(text, str):
        raise _Bad(f"timestamp {text!r} is not an ISO 8601 text")
    return iso_time(text, "timestamp")


def _obj(v) -> dict:
    """An object the format says is one; anything else (kept in attrs by the caller) as {}."""
    return v if isinstance(v, dict) else {}


def _s(v) -> str | None:
    return v if isinstance(v, str) or v is None else to_json(v)


@register("tau2")
class Tau2Ingestor(Ingestor):
    """tau2-bench results files (simulations, tasks, run info) and task files."""

    name = "tau2"
    independent_units = True  # a results file, tasks file or run folder reads nothing else
    help = "tau2-bench results files ({info, tasks, simulations}) or task files ([task, ...])."
    _whole: dict | None = None  # the file being read, when it was small enough to parse once
    _events: TupleBatch

    def units(self, path: Path) -> list[SourceUnit]:
        """Run folders (``results.json`` beside ``simulations/``) as one unit each, and every
        other file on its own."""
        path = Path(path)
        if (
            path.is_file()
            and path.name == RESULTS_NAME
            and (path.parent / SIMULATIONS_DIR).is_dir()
        ):
            path = path.parent
        runs = sorted(
            {
                p.parent
                for p in (data_files(path) if path.is_dir() else [])
                if p.name == RESULTS_NAME and (p.parent / SIMULATIONS_DIR).is_dir()
            }
        )
        inside = [(d / RESULTS_NAME, d / SIMULATIONS_DIR) for d in runs]
        files = [
            u
            for u in file_units(path, "json", "a tau2 results or tasks .json file, or a run folder")
            if not runs
            or not any(u.path == meta or u.path.is_relative_to(sims) for meta, sims in inside)
        ]
        return sorted(
            [*files, *(SourceUnit(d, "run_dir") for d in runs)], key=lambda u: str(u.path)
        )

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        # a unit's events, handed over as Arrow batches; a unit that fails hands over none
        # beyond those already handed over, which the emitter drops with the unit
        self._events = TupleBatch("events", EVENT_FIELDS)
        self._parse_unit(unit, out)
        self._events.emit(out)

    def _parse_unit(self, unit: SourceUnit, out: Emitter) -> None:
        src = str(unit.path)
        if unit.kind == "run_dir":
            self._run_dir(unit.path, out)
            return
        if unit.kind != "json":
            out.reject(
                source_file=src,
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason="not a tau2 file: expected a .json results or tasks file",
                raw=head_bytes(unit.path),
            )
            return
        self._whole = _read_small(unit.path)
        try:
            self._parse_json(unit, out)
        finally:
            self._whole = None

    def _parse_json(self, unit: SourceUnit, out: Emitter) -> None:
        src = str(unit.path)
        try:
            shape = self._shape(unit.path)
        except (ijson.JSONError, ValueError, UnicodeDecodeError) as exc:
            out.reject(
                source_file=src,
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason=f"not valid JSON ({exc}); fix it and re-ingest",
                raw=head_bytes(unit.path),
            )
            return
        if shape == "tasks":
            self._tasks(unit.path, "item", out, None)
        elif shape == "task":
            doc = self._whole if self._whole is not None else load_json(read_whole(unit.path))
            # tau2 loads such files from <domain>/tasks/: the folder above names the domain
            up = unit.path.parent
            self._task(doc, "$", src, up.parent.name if up.name == "tasks" else None, out)
        elif shape == "results":
            info = self._one(unit.path, "info")
            info = info if isinstance(info, dict) else {}
            domain = _obj(info.get("environment_info")).get("domain_name")
            self._tasks(unit.path, "tasks.item", out, domain)
            ids, keys, stream = self._ids_and_keys(unit.path)
            if stream.replaced:
                reject_encoding(
                    out, unit.path, "events", stream.replaced, stream.first_bad, "every simulation"
                )
            run = self._run(
                unit.path,
                run_name(unit.path),
                self._one(unit.path, "timestamp"),
                info,
                ids,
                {
                    k: self._one(unit.path, k)
                    for k in keys
                    if k not in ("timestamp", "info", "tasks", "simulations")
                },
                out,
            )
            landed = out.accepted["sessions"]
            try:
                self._simulations(unit.path, info, run, out)
            except BROKEN_JSON as exc:  # truncated mid-array, a NaN, bytes that are not UTF-8
                landed = out.accepted["sessions"] - landed
                out.reject(
                    source_file=src,
                    target_table="sessions",
                    record_kind="file",
                    record_ref="$.simulations",
                    raw=tail_bytes(unit.path, 1 << 16),
                    reason=f"the file stops being valid JSON inside 'simulations' "
                    f"({type(exc).__name__}: {str(exc)[:200]}); the {landed} "
                    "simulation(s) before that point landed, the rest did not. Fix "
                    "the file (a truncated copy? a NaN?) and re-ingest",
                )
        else:
            out.reject(
                source_file=src,
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason="neither a tau2 results file (an object with "
                "'simulations'), a task file (a list of tasks) nor one task (an object with "
                "'user_scenario' or 'evaluation_criteria')",
                raw=head_bytes(unit.path),
            )

    # -- file shape and streaming ------------------------------------------------------------
    # A file of up to WHOLE_FILE_BYTES that orjson reads is held in memory (``_whole``) and
    # each pass below is a look-up in it; anything else (larger, NaN, bytes that are not
    # UTF-8, a truncated copy) is streamed by ijson, pass by pass, in bounded memory.
    _whole = None

    def _shape(self, path: Path) -> str:
        doc = self._whole
        if doc is not None:
            if isinstance(doc, list):
                return "tasks"
            if isinstance(doc, dict) and "simulations" in doc:
                return "results"
            return "task" if isinstance(doc, dict) and TASK_FILE_KEYS & doc.keys() else "other"
        task = False
        with RepairedUtf8(path) as fh:
            for prefix, event, value in ijson.parse(fh):
                if prefix == "" and event == "start_array":
                    return "tasks"
                if prefix == "" and event == "map_key" and value == "simulations":
                    return "results"
                task = task or (prefix == "" and event == "map_key" and value in TASK_FILE_KEYS)
            return "task" if task else "other"

    def _one(self, path: Path, prefix: str):
        """The first value at ``prefix``; None when absent or past a point where the file
        stops being valid JSON (the simulations pass reports that)."""
        doc = self._whole
        if doc is not None:
            return doc.get(prefix) if isinstance(doc, dict) else None
        try:
            with RepairedUtf8(path) as fh:
                for item in ijson.items(fh, prefix, use_float=True):
                    return item
        except BROKEN_JSON:
            pass
        return None

    def _items(self, path: Path, prefix: str, *, to_the_break: bool = False):
        """(index, value) at ``prefix``, streamed. ``to_the_break``: stop quietly where the
        file stops being valid JSON instead of raising."""
        doc = self._whole
        if doc is not None:
            *keys, last = prefix.split(".")
            assert last == "item", prefix
            for key in keys:
                doc = doc.get(key) if isinstance(doc, dict) else None
            yield from enumerate(doc if isinstance(doc, list) else ())
            return
        with RepairedUtf8(path) as fh:
            try:
                yield from enumerate(ijson.items(fh, prefix, use_float=True))
            except BROKEN_JSON:
                if not to_the_break:
                    raise

    def _ids_and_keys(self, path: Path) -> tuple[list[str], list[str], RepairedUtf8 | _Clean]:
        """The simulation ids (for the run identity) and the top-level keys, in one
        streaming pass over parse events: no simulation is built in memory. The stream comes
        back too: it says whether bytes that are not UTF-8 were replaced."""
        doc = self._whole
        if isinstance(doc, dict):
            sims = doc.get("simulations")
            ids = [
                x["id"]
                for x in (sims if isinstance(sims, list) else ())
                if isinstance(x, dict) and isinstance(x.get("id"), str)
            ]
            return ids, list(doc), _Clean()
        ids, keys = [], []
        with RepairedUtf8(path) as fh:
            try:
                for prefix, event, value in ijson.parse(fh):
                    if prefix == "simulations.item.id" and event == "string":
                        ids.append(value)
                    elif prefix == "" and event == "map_key":
                        keys.append(value)
            except BROKEN_JSON:
                pass  # what came before the break; the simulations pass reports it
        return ids, keys, fh

    # -- runs --------------------------------------------------------------------------------
    @staticmethod
    def _run(
        path: Path, name: str, timestamp, info: dict, sim_ids: list[str], extras: dict, out: Emitter
    ) -> str:
        """Emit the run's row; return its id (tau2's run identity, see the module doc)."""
        digest = hashlib.sha256((timestamp if isinstance(timestamp, str) else "").encode())
        for sim_id in sorted(sim_ids):
            digest.update(b"\0" + sim_id.encode())
        run_id = digest.hexdigest()[:16]
        agent, user = _obj(info.get("agent_info")), _obj(info.get("user_info"))
        env = _obj(info.get("environment_info"))
        try:
            started = _ts(timestamp) if timestamp is not None else None
        except _Bad:
            started = None
        out.row(
            "runs",
            run_row(
                run_id,
                name,
                str(path),
                started_at=started,
                agent=_s(agent.get("implementation")),
                agent_model=_s(agent.get("llm")),
                user_simulator=_s(user.get("implementation")),
                user_model=_s(user.get("llm")),
                policy=_s(env.get("policy")),
                settings={
                    **{
                        k: v
                        for k, v in info.items()
                        if k not in ("agent_info", "user_info", "environment_info")
                    },
                    "domain": env.get("domain_name"),
                },
                attrs={
                    "agent_info": info.get("agent_info"),
                    "user_info": info.get("user_info"),
                    "environment_info": {k: v for k, v in env.items() if k != "policy"}
                    if env or "environment_info" not in info
                    else info["environment_info"],
                    **({"timestamp": timestamp} if started is None and timestamp else {}),
                    **extras,
                },
            ),
        )
        return run_id

    def _run_dir(self, folder: Path, out: Emitter) -> None:
        """A run folder: ``results.json`` metadata, then each ``simulations/<id>.json``."""
        meta_path = folder / RESULTS_NAME
        try:
            meta = load_json(read_whole(meta_path))
        except ValueError as exc:
            out.reject(
                source_file=str(meta_path),
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason=f"not valid JSON ({exc}); fix it and re-ingest",
                raw=head_bytes(meta_path),
            )
            return
        if not isinstance(meta, dict):
            out.reject(
                source_file=str(meta_path),
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason="a run folder's results.json must be an object with info and tasks",
                raw=meta,
            )
            return
        info = _obj(meta.get("info"))
        domain = _obj(info.get("environment_info")).get("domain_name")
        self._tasks(meta_path, "tasks.item", out, domain)
        files = [f for f in sorted((folder / SIMULATIONS_DIR).glob("*.json")) if within(f, folder)]
        index = meta.get("simulation_index")
        indexed = (
            [e.get("id") for e in index if isinstance(e, dict)] if isinstance(index, list) else None
        )
        # tau2 identifies a folder run by its index, else by the simulation file names
        ids = [i for i in indexed if isinstance(i, str)] if indexed else [f.stem for f in files]
        extras = {
            k: v for k, v in meta.items() if k not in ("timestamp", "info", "tasks", "simulations")
        }
        run = self._run(folder, folder.name, meta.get("timestamp"), info, ids, extras, out)
        for missing in sorted(set(ids) - {f.stem for f in files}):
            out.reject(
                source_file=str(meta_path),
                target_table="sessions",
                record_kind="simulation",
                record_ref=f"$.simulation_index[id={missing}]",
                reason=f"simulation {missing} is in the run's index but "
                f"{SIMULATIONS_DIR}/{missing}.json is missing; restore the file and "
                "re-ingest",
                raw=next(
                    (e for e in index if isinstance(e, dict) and e.get("id") == missing), missing
                ),
                session_id=missing,
            )
        for f in files:
            try:
                sim = load_json(read_whole(f))
            except (InputLimitError, ValueError) as exc:  # one simulation, not the run
                out.reject(
                    source_file=str(f),
                    target_table="sessions",
                    record_kind="simulation",
                    record_ref="$",
                    reason=str(exc)
                    if isinstance(exc, InputLimitError)
                    else f"not valid JSON ({exc}); fix it and re-ingest",
                    raw=head_bytes(f),
                    session_id=f.stem,
                )
                continue
            self._one_simulation(sim, info, run, str(f), "$", out)

    # -- tasks -> scenarios ------------------------------------------------------------------
    def _tasks(self, path: Path, prefix: str, out: Emitter, domain: str | None) -> None:
        for k, task in self._items(path, prefix, to_the_break=True):
            ref = f"$.{prefix.replace('.item', '')}[{k}]" if "." in prefix else f"$[{k}]"
            self._task(task, ref, str(path), domain, out)

    def _task(self, task, ref: str, src: str, domain: str | None, out: Emitter) -> None:
        """One task's ``scenarios`` row (from a task list, a results file's tasks, or a file
        of one task, as some tau2 domains keep them: ``tasks/task_*.json``)."""
        if not isinstance(task, dict) or not isinstance(task.get("id"), str | int):
            out.reject(
                source_file=src,
                target_table="scenarios",
                record_kind="task",
                record_ref=ref,
                reason="a task needs an 'id'",
                raw=task,
            )
            return
        scen = task.get("user_scenario") or {}
        ins = scen.get("instructions") if isinstance(scen, dict) else None
        structured = isinstance(ins, dict)
        desc = task.get("description") or {}
        dom = domain or (_s(ins.get("domain")) if structured else None)
        out.row(
            "scenarios",
            {
                "session_id": "",
                "scenario_id": scenario_id(dom, task["id"]),
                "title": _s(desc.get("purpose") if isinstance(desc, dict) else desc),
                "domain": dom,
                "goal": _s(ins.get("reason_for_call")) if structured else _s(ins),
                "known_info": _s(ins.get("known_info")) if structured else None,
                "unknown_info": _s(ins.get("unknown_info")) if structured else None,
                "instructions": _s(ins.get("task_instructions")) if structured else None,
                "persona": _s(scen.get("persona")) if isinstance(scen, dict) else None,
                "evaluation_criteria": _s(task.get("evaluation_criteria")),
                "source_file": src,
                "attrs": to_json(
                    {k: v for k, v in task.items() if k not in TASK_KNOWN}
                    | ({"description": desc} if isinstance(desc, dict) else {})
                ),
            },
        )

    # -- simulations -> sessions, participants, events, annotations --------------------------
    def _simulations(self, path: Path, info: dict, run: str, out: Emitter) -> None:
        """Every simulation, streamed. Where the stream breaks on what Python's own JSON
        writer produces but JSON does not allow (NaN, Infinity, 1e999 in one simulation),
        the file is read whole instead (within GRAPHLAKE_MAX_FILE_BYTES) and the simulations
        after the break land too; a file that is not JSON even then raises to the caller."""
        first: dict[str, int] = {}  # simulation id -> where it was first read
        done = 0
        try:
            for k, sim in self._items(path, "simulations.item"):
                self._simulation_at(k, sim, first, path, info, run, out)
                done = k + 1
        except BROKEN_JSON:
            rest = _whole_simulations(path)
            if rest is None:
                raise
            for k, sim in enumerate(rest[done:], start=done):
                self._simulation_at(k, sim, first, path, info, run, out)

    def _simulation_at(self, k, sim, first, path: Path, info: dict, run: str, out) -> None:
        sid = sim.get("id") if isinstance(sim, dict) else None
        if isinstance(sid, str) and sid in first:
            out.reject(
                source_file=str(path),
                target_table="sessions",
                record_kind="simulation",
                record_ref=f"$.simulations[{k}]",
                raw=sim,
                session_id=sid,
                reason=f"simulation id {sid!r} is used again here; the one at "
                f"$.simulations[{first[sid]}] was ingested and this one was not. "
                "Give every simulation its own id and re-ingest",
            )
            return
        if isinstance(sid, str):
            first[sid] = k
        self._one_simulation(sim, info, run, str(path), f"$.simulations[{k}]", out)

    def _one_simulation(self, sim, info: dict, run: str, src: str, ref: str, out: Emitter) -> None:
        try:
            self._simulation(sim, info, run, src, out)
        except SHAPE_ERRORS as exc:
            out.reject(
                source_file=src,
                target_table="sessions",
                record_kind="simulation",
                record_ref=ref,
                reason=shape_reason(exc),
                raw=sim,
                session_id=sim.get("id") if isinstance(sim, dict) else None,
            )

    def _simulation(self, sim, info: dict, run: str, src: str, out: Emitter) -> None:
        if not isinstance(sim, dict):
            raise _Bad(
                f"a simulation is an object with id, task_id and messages or ticks, "
                f"not a {type(sim).__name__}"
            )
        if sim.get("id") is not None and not isinstance(sim["id"], str):
            raise _Bad(f"simulation id {sim['id']!r} must be a text, as tau2 writes it")
        if not sim.get("id"):
            raise _Bad("a simulation needs an 'id'")
        messages, ticks = sim.get("messages"), sim.get("ticks")
        if not isinstance(messages, list) and not isinstance(ticks, list):
            raise _Bad(
                f"simulation {sim['id']}: needs a 'messages' list (half-duplex) or a "
                "'ticks' list (full-duplex)"
            )
        sid = sim["id"]
        start = _ts(sim.get("start_time"))
        agent, user = info.get("agent_info") or {}, info.get("user_info") or {}
        domain = (info.get("environment_info") or {}).get("domain_name")
        attrs = {k: v for k, v in sim.items() if k not in SIM_KNOWN}
        tick_rows = []
        if not isinstance(messages, list):
            reader = _TickReader(sid, start, src, out)
            tick_rows = reader.read(ticks)
            if reader.tick_fields:
                attrs["tick_fields"] = reader.tick_fields
        out.row(
            "sessions",
            {
                "session_id": sid,
                "title": _s(sim.get("task_id")),
                "domain": _s(domain),
                "participants": ["assistant", "user", "tool"],
                "started_at": start,
                "duration_s": float(sim["duration"])
                if isinstance(sim.get("duration"), int | float)
                else None,
                "source_file": src,
                "run_id": run,
                "scenario_id": scenario_id(domain, sim["task_id"])
                if sim.get("task_id") is not None
                else None,
                "attrs": to_json(attrs) if attrs else None,
            },
        )
        for pid, (kind, _), who in (
            ("assistant", ROLES["assistant"], agent),
            ("user", ROLES["user"], user),
            ("tool", ROLES["tool"], {}),
        ):
            out.row(
                "participants",
                {
                    "session_id": sid,
                    "participant_id": pid,
                    "kind": kind,
                    "role": {"assistant": "agent", "user": "user_simulator", "tool": "environment"}[
                        pid
                    ],
                    "name": _s(who.get("llm")) if who else _s(domain),
                    "attrs": to_json({**who, "simulated": True})
                    if pid == "user"
                    else (to_json(who) if who else None),
                },
            )
        unit, add = out.unit, self._events.append
        if isinstance(messages, list):
            for i, msg in enumerate(messages):
                try:
                    rows = self._message(sid, i, msg, start)
                except SHAPE_ERRORS as exc:
                    out.reject(
                        source_file=src,
                        target_table="events",
                        record_kind="message",
                        record_ref=f"$.simulations[id={sid}].messages[{i}]",
                        reason=f"simulation {sid} message #{i}: {shape_reason(exc)}",
                        raw=msg,
                        session_id=sid,
                    )
                    continue
                for r in rows:
                    add((unit, *r))
        for r in tick_rows:
            add((unit, *r))
        if len(self._events) >= Batches.size:
            self._events.emit(out)
        for row in _outcomes(sid, sim.get("reward_info")):
            out.row("annotations", row)

    @staticmethod
    def _message(sid: str, i: int, msg, start: datetime) -> list[tuple]:
        if not isinstance(msg, dict):
            raise _Bad("expected an object with role, content and timestamp")
        role = msg.get("role")
        if role not in ROLES:
            raise _Bad(f"role {role!r} is not assistant, user or tool")
        ts = _ts(msg.get("timestamp"))
        t = (ts - start).total_seconds()
        atype, initiator = ROLES[role]
        base = (sid, t, None, ts)
        if role == "tool":
            return [_tool_result(base, f"m{i}", i * 100, msg)]
        rows = [
            (
                *base, f"m{i}", i * 100, role, atype, "message", "chat", initiator, None,
                None, _s(msg.get("content")), None, attrs_json(msg, MSG_KNOWN),
            )
        ]  # fmt: skip
        calls = msg.get("tool_calls") or []
        if not isinstance(calls, list):
            raise _Bad("tool_calls must be a list")
        rows.extend(
            _tool_call(base, f"m{i}/call{j}", i * 100 + j, call, role, j)
            for j, call in enumerate(calls, 1)
        )
        return rows


#: An event's columns, in the order of the tuples the readers below make; ``base`` is its
#: first four (session, t, t_end, timestamp)
EVENT_FIELDS = (
    "session_id", "t", "t_end", "timestamp", "event_id", "seq", "actor", "actor_type", "kind",
    "channel", "initiator", "request_id", "status", "text", "payload", "attrs",
)  # fmt: skip


def _tool_call(base: tuple, event_id: str, seq: int, call, role: str, j: int) -> tuple:
    """A tool call; one requested by the user is a human-side control action (HAS-Bench 3.2)."""
    if not isinstance(call, dict) or not call.get("name"):
        raise _Bad(f"tool call #{j} has no name")
    req = call.get("requestor") or role
    return (
        *base, event_id, seq, req, ROLES.get(req, ("ai", "agent"))[0], "tool_call",
        "control" if req == "user" else "tool", "human" if req == "user" else "agent",
        _s(call.get("id")), None, _s(call["name"]), to_json(call.get("arguments")),
        attrs_json(call, TOOL_CALL_KNOWN),
    )  # fmt: skip


def _tool_result(base: tuple, event_id: str, seq: int, msg) -> tuple:
    if not isinstance(msg, dict):
        raise _Bad("a tool result must be an object")
    req = msg.get("requestor")
    return (
        *base, event_id, seq, "tool", "system", "tool_result",
        "control" if req == "user" else "tool", "human" if req == "user" else "agent",
        _s(msg.get("id")), "error" if msg.get("error") else "answered",
        _s(msg.get("content")), None, attrs_json(msg, MSG_KNOWN),
    )  # fmt: skip


class _TickReader:
    """Full-duplex ticks -> events. tau2 records, every tick, the chunk each side spoke, the
    tool calls each side made and their results (``Tick`` in ``src/tau2/data_model/
    message.py``). A side's consecutive speaking ticks become one ``message`` event from the
    first tick's time to the end of the last (``t``, ``t_end``), its text the chunks joined as
    tau2 joins them (a space only between different utterances). Both sides speaking at once
    gives two overlapping intervals. A tick that cannot be read is rejected alone.

    Fields without a column are kept: a chunk's in its utterance's ``attrs.chunk_fields``, a
    tick's own (wall-clock time, transcript) in :attr:`tick_fields`, which the session keeps.
    """

    SIDES = (("agent", "assistant"), ("user", "user"))

    def __init__(self, sid: str, start: datetime, src: str, out: Emitter):
        self.sid, self.start, self.src, self.out = sid, start, src, out
        self.open: dict[str, dict] = {}
        self.tick_fields: dict[str, dict] = {}

    def read(self, ticks: list) -> list[tuple]:
        rows: list[tuple] = []
        for i, tick in enumerate(ticks):
            try:
                rows.extend(self._tick(i, tick))
            except SHAPE_ERRORS as exc:
                self.out.reject(
                    source_file=self.src,
                    target_table="events",
                    record_kind="tick",
                    record_ref=f"$.ticks[{i}]",
                    session_id=self.sid,
                    raw=tick,
                    reason=f"simulation {self.sid} tick #{i}: {shape_reason(exc)}",
                )
        for side in list(self.open):
            rows.append(self._close(side))
        return rows

    def _tick(self, i: int, tick) -> list[tuple]:
        if not isinstance(tick, dict):
            raise _Bad("expected an object with tick_id and timestamp")
        ts = _ts(tick.get("timestamp"))
        t = (ts - self.start).total_seconds()
        dur = tick.get("tick_duration_seconds")
        t_end = t + (float(dur) if isinstance(dur, int | float) else 0.0)
        tid = tick.get("tick_id", i)
        base = (self.sid, t, None, ts)
        rows: list[tuple] = []
        for k, (side, role) in enumerate(self.SIDES):
            chunk = tick.get(f"{side}_chunk")
            if chunk is not None and not isinstance(chunk, dict):
                raise _Bad(f"{side}_chunk must be an object")
            text = (
                (
                    chunk.get("content")
                    if not chunk.get("is_audio")
                    else chunk.get("audio_script_gold")
                )
                if chunk
                else None
            )
            speaking = (
                bool(chunk)
                and chunk.get("contains_speech", True) is not False
                and isinstance(text, str)
                and bool(text)
            )
            if speaking:
                fields = {
                    k: v
                    for k, v in chunk.items()
                    if k not in CHUNK_KNOWN or (k == "timestamp" and v != tick.get("timestamp"))
                }
                self._extend(side, role, i, tid, t, t_end, ts, text, chunk, fields)
            else:
                if side in self.open:
                    rows.append(self._close(side))
                if chunk:  # a silent chunk: nothing to show, but keep what it carries
                    tick = {
                        **tick,
                        f"{side}_chunk_silent": {
                            k: v for k, v in chunk.items() if k not in ("role", "timestamp")
                        },
                    }
            seq = i * 1000 + k * 100
            calls = tick.get(f"{side}_tool_calls") or []
            results = tick.get(f"{side}_tool_results") or []
            if not isinstance(calls, list) or not isinstance(results, list):
                raise _Bad(f"{side}_tool_calls and {side}_tool_results must be lists")
            rows.extend(
                _tool_call(base, f"tick{tid}/{role}/call{j}", seq + j, call, role, j)
                for j, call in enumerate(calls, 1)
            )
            rows.extend(
                _tool_result(base, f"tick{tid}/{role}/result{j}", seq + 50 + j, res)
                for j, res in enumerate(results, 1)
            )
        extra = {k: v for k, v in tick.items() if k not in TICK_KNOWN}
        if extra:
            self.tick_fields[str(tid)] = extra
        return rows

    def _extend(self, side, role, i, tid, t, t_end, ts, text, chunk, fields) -> None:
        cur = self.open.get(side)
        ids = set(chunk.get("utterance_ids") or [])
        if cur is None:
            atype, initiator = ROLES[role]
            cur = self.open[side] = {
                "session_id": self.sid,
                "event_id": f"tick{tid}/{role}",
                "seq": i * 1000 + 1,
                "t": t,
                "t_end": t_end,
                "timestamp": ts,
                "actor": role,
                "actor_type": atype,
                "kind": "message",
                "channel": "chat",
                "initiator": initiator,
                "_parts": [],
                "_ids": set(),
                "_ticks": [tid, tid],
                "_fields": [],
            }
        elif cur["_ids"] and ids and cur["_ids"].isdisjoint(ids):
            cur["_parts"].append(" ")
        cur["_parts"].append(text)
        cur["_ids"] = ids or cur["_ids"]
        cur["t_end"], cur["_ticks"][1] = t_end, tid
        if fields:
            cur["_fields"].append({"tick_id": tid, **fields})

    def _close(self, side: str) -> tuple:
        row = self.open.pop(side)
        attrs = {"mode": "full_duplex", "ticks": row.pop("_ticks")}
        fields = row.pop("_fields")
        if fields:
            attrs["chunk_fields"] = fields
        row["text"] = "".join(row.pop("_parts"))
        row.pop("_ids")
        row["attrs"] = to_json(attrs)
        return tuple(map(row.get, EVENT_FIELDS))


def run_name(path: Path) -> str:
    """A results file's run name: its stem, or where tau2 names the file ``results.json``
    (every run folder's file) the folder holding it, so that runs tell apart."""
    if path.stem.lower() == "results" and path.parent.name:
        return path.parent.name
    return path.stem


def scenario_id(domain: str | None, task_id) -> str:
    """tau2 task ids repeat across domains ("0" in airline and retail): qualify them."""
    return f"{domain}/{task_id}" if domain else str(task_id)


def _outcomes(sid: str, info) -> list[dict]:
    """reward_info -> one outcome annotation per reward, check and assertion."""
    if not isinstance(info, dict):
        return []
    base = {
        "session_id": sid,
        "kind": "outcome",
        "target_kind": "session",
        "target_id": sid,
        "annotator": "tau2 evaluator",
    }
    rows = [
        {
            **base,
            "annotation_id": "reward",
            "label": "reward",
            "value": _num(info.get("reward")),
            "attrs": to_json({k: info.get(k) for k in ("reward_basis", "info")}),
        }
    ]
    db = info.get("db_check")
    if isinstance(db, dict):
        rows.append(
            {
                **base,
                "annotation_id": "db_check",
                "label": "db_match",
                "value": _num(db.get("db_match")),
                "attrs": to_json(db),
            }
        )
    for key, label_of, value_of in (
        (
            "env_assertions",
            lambda a: (a.get("env_assertion") or {}).get("func_name"),
            lambda a: a.get("reward"),
        ),
        (
            "action_checks",
            lambda a: (a.get("action") or {}).get("name"),
            lambda a: a.get("action_reward"),
        ),
        ("nl_assertions", lambda a: a.get("nl_assertion"), lambda a: a.get("met")),
        ("communicate_checks", lambda a: a.get("info"), lambda a: a.get("met")),
    ):
        for k, item in enumerate(info.get(key) or []):
            if not isinstance(item, dict):
                continue
            rows.append(
                {
                    **base,
                    "annotation_id": f"{key}/{k}",
                    "label": f"{key.rstrip('s')}:{_s(label_of(item))}",
                    "value": _num(value_of(item)),
                    "attrs": to_json(item),
                }
            )
    for basis, v in (info.get("reward_breakdown") or {}).items():
        rows.append(
            {
                **base,
                "annotation_id": f"reward_breakdown/{basis}",
                "label": f"reward_breakdown:{basis}",
                "value": _num(v),
            }
        )
    return rows


def _num(v) -> float | None:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    return float(v) if isinstance(v, int | float) else None


def _whole_simulations(path: Path) -> list | None:
    """The simulations of a results file parsed whole by the tolerant reader (NaN,
    Infinity, huge numbers), or None when it is too large for that or not JSON even so."""
    try:
        doc = load_json(read_whole(path))
    except (InputLimitError, ValueError):
        return None
    sims = doc.get("simulations") if isinstance(doc, dict) else None
    return sims if isinstance(sims, list) else None
