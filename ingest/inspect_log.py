"""inspect_ai evaluation logs (``.eval`` archives and ``.json`` logs) as sessions.

A log is one evaluation: a task run against a model, with its samples. Where inspect_ai is
installed, its own reader (``inspect_ai.log.read_eval_log``) reads the file, migrating older
log versions as inspect does. Without it, the fallback reads the archive directly: a ``.eval``
file is a zip of ``header.json`` and ``samples/<id>_epoch_<n>.json``, whose entries inspect
compresses with Zstandard (zip method 93, which Python's ``zipfile`` cannot open before 3.14:
each entry's bytes are read from its local header and decompressed with ``zstandard``, never
past ``$GRAPHLAKE_MAX_FILE_BYTES``); a ``.json`` log holds the same objects in one document.
Both give the same dictionaries, so the mapping below is one.

* the evaluation is a ``runs`` row (``run_id`` = ``inspect:<eval_id>``): task, model,
  solver plan, creation time, task arguments and generate config in ``settings``;
* a sample (one epoch of it) is a session (``<eval_id>/<sample id>/<epoch>``, ``scenario_id``
  = the sample id, ``goal`` = its input, the target and metadata in ``attrs``);
* each message is a node (user -> human, assistant -> the model, system, tool -> ``tool:<fn>``)
  in order, joined by ``next`` edges, with its time from the model or tool event that made it;
  a message event each; tool calls and results are ``tool_call`` / ``tool_result`` events
  (``request_id`` = the call id), linked by a ``calls`` edge;
* every score is a ``score`` annotation (``label`` = scorer, ``value`` where numeric, the
  value itself, answer and explanation in ``text`` / ``attrs``); ``model_usage`` per model
  is ``usage`` annotations on the session; a sample's error is an ``error`` event.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

from graphlake.errors import InputLimitError
from graphlake.ingest.base import Emitter, load_json, read_whole, run_row, to_json
from graphlake.ingest.spans import SpanError, edge, emit_session_graph

_ZSTD = 93  # the zip compression method number of Zstandard
#: inspect_ai's grade letters as its value_to_float reads them (the letter stays in text)
_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
#: Sample fields read into rows; the others (target, metadata, store, output, working time,
#: ...) stay in the session's attrs. Events (and the pool they share in the archive,
#: events_data) give message times and are not kept otherwise.
_SAMPLE_READ = frozenset(
    {"id", "epoch", "input", "messages", "events", "events_data", "scores", "model_usage",
     "started_at", "total_time", "attachments"}
)  # fmt: skip


def score_value(value) -> float | None:
    """A score's number as inspect_ai's ``value_to_float`` reads it: grade letters, numbers
    (also written as text: "10", "8.5", "1e3"), yes/no and true/false. Where inspect would
    warn and count 0 (a list, an object, other text) the value is NULL here, and the score's
    text keeps what it was."""
    if isinstance(value, str) and value in _GRADES:  # inspect's CORRECT, INCORRECT, ...
        return _GRADES[value]
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("yes", "true"):
            return 1.0
        if low in ("no", "false"):
            return 0.0
        try:
            number = float(low)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


#: members of one .eval archive read at most (a sample a member: a zip of a million empty
#: members is not an evaluation)
MAX_MEMBERS = 20_000
_CHUNK = 1 << 20


def read_log(path: Path, own_reader: bool = True) -> dict:
    """The log as inspect's ``EvalLog.model_dump(mode="json")`` gives it. graphlake's limits
    hold whichever reader reads it: a ``.json`` log is at most ``$GRAPHLAKE_MAX_FILE_BYTES``,
    and so is everything a ``.eval`` archive inflates to, all members together, checked by
    streaming each member through its decompressor before any reader inflates it whole."""
    from graphlake.config import max_file_bytes

    limit = max_file_bytes()
    if path.suffix == ".json":
        size = path.stat().st_size
        if size > limit:
            raise InputLimitError(
                f"{path.name} is {size:,} bytes, over the {limit:,}-byte limit for files read "
                "whole ($GRAPHLAKE_MAX_FILE_BYTES)"
            )
    elif own_reader:
        check_archive(path, limit)
    if own_reader:
        try:
            from inspect_ai.log import read_eval_log
        except ImportError:
            pass
        else:
            log = read_eval_log(str(path), resolve_attachments=True)
            return log.model_dump(mode="json", exclude_none=True)
    if path.suffix == ".json":
        doc = load_json(read_whole(path))
        if not isinstance(doc, dict) or "eval" not in doc:
            raise SpanError("not an inspect_ai log: no 'eval' object")
        return migrate(doc)
    return migrate(_read_archive(path))


#: the scorer name inspect gives a sample's lone ``score`` of the oldest logs
#: (inspect_ai.log._log.SCORER_PLACEHOLDER)
SCORER_PLACEHOLDER = "88F74D2C"
_BASE57 = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def eval_id_of(ev: dict) -> str:
    """The id inspect gives an evaluation that a log of an older inspect left without one:
    a hash of its run id, task id and creation time (``EvalSpec.model_post_init``:
    ``base57_id_hash``, BLAKE2s to 128 bits in shortuuid's alphabet), so that both readers
    name its sessions alike, on every read."""
    content = f"{ev.get('run_id', '')}{ev.get('task_id', '')}{ev.get('created', '')}"
    n = int.from_bytes(hashlib.blake2s(content.encode(), digest_size=16).digest(), "big")
    out = []
    while n:
        n, rem = divmod(n, 57)
        out.append(_BASE57[rem])
    text = "".join(reversed(out)) or _BASE57[0]
    return text[-22:] if len(text) > 22 else text.rjust(22, _BASE57[0])


def migrate(log: dict) -> dict:
    """An older log in today's shape, as inspect's own reader migrates it: the evaluation's
    id, a sample's ``transcript`` (where older logs kept its events and their attachments)
    as ``events`` and ``attachments``, a lone ``score`` as ``scores``."""
    ev = log.get("eval")
    if isinstance(ev, dict) and not ev.get("eval_id"):
        log["eval"] = {**ev, "eval_id": eval_id_of(ev)}
    for sample in log.get("samples") or []:
        if not isinstance(sample, dict):
            continue
        if "score" in sample and "scores" not in sample:
            sample["scores"] = {SCORER_PLACEHOLDER: sample.pop("score")}
        transcript = sample.get("transcript")
        if isinstance(transcript, dict):
            del sample["transcript"]
            sample.setdefault("events", transcript.get("events") or [])
            sample.setdefault("attachments", transcript.get("content") or {})
    return log


def _read_archive(path: Path) -> dict:
    from graphlake.config import max_file_bytes

    limit = max_file_bytes()
    with _open_archive(path) as zf:
        names = zf.namelist()
        if "header.json" not in names and "_journal/start.json" not in names:
            raise SpanError("not an inspect_ai .eval archive: no header.json")
        budget = [limit]  # all members together, not each alone

        def entry(name: str) -> bytes:
            data = _entry(zf, name, budget[0])
            budget[0] -= len(data)
            return data

        header = json.loads(entry("header.json" if "header.json" in names else
                                  "_journal/start.json"))  # fmt: skip
        samples = [
            json.loads(entry(n))
            for n in sorted(names)
            if n.startswith("samples/") and n.endswith(".json")
        ]
    return {**header, "samples": samples}


def _open_archive(path: Path) -> zipfile.ZipFile:
    """The archive, refused when it is not a zip or holds more than :data:`MAX_MEMBERS`."""
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise SpanError(f"not a readable .eval archive ({exc}): truncated or not a zip") from None
    if len(zf.infolist()) > MAX_MEMBERS:
        n = len(zf.infolist())
        zf.close()
        raise InputLimitError(
            f"{path.name} holds {n:,} members; an .eval archive is read with at most "
            f"{MAX_MEMBERS:,}: split the evaluation"
        )
    return zf


def check_archive(path: Path, limit: int) -> None:
    """Refuse an archive with more than :data:`MAX_MEMBERS` members, or whose members inflate
    past ``limit`` bytes together: their declared sizes first, then each member streamed
    through its decompressor (a Zstandard frame may declare any size) a chunk at a time, so
    nothing is held but one chunk. The bytes it costs are a pass of decompression."""
    with _open_archive(path) as zf:
        infos = zf.infolist()
        declared = sum(i.file_size for i in infos)
        if declared > limit:
            raise InputLimitError(
                f"{path.name} inflates to {declared:,} bytes (its members' declared sizes), over "
                f"the {limit:,}-byte limit ($GRAPHLAKE_MAX_FILE_BYTES)"
            )
        left = limit
        for info in infos:
            for chunk in _stream(zf, info):
                left -= len(chunk)
                if left < 0:
                    raise InputLimitError(
                        f"{path.name}: {info.filename} inflates past what its header declares, "
                        f"and the archive past the {limit:,}-byte limit ($GRAPHLAKE_MAX_FILE_BYTES)"
                    )


def _stream(zf: zipfile.ZipFile, info: zipfile.ZipInfo):
    """A member's inflated bytes, a chunk at a time (Zstandard through ``zstandard``)."""
    if info.compress_type != _ZSTD:
        with zf.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                yield chunk
        return
    import io

    import zstandard

    raw = _raw_member(zf, info)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw))
    try:
        while chunk := reader.read(_CHUNK):
            yield chunk
    except zstandard.ZstdError as exc:
        raise SpanError(
            f"{info.filename}: the Zstandard data is damaged or truncated ({exc})"
        ) from None


def _raw_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's compressed bytes, read from its local header (zipfile cannot open method
    93 before Python 3.14); at most the archive's own size."""
    assert zf.fp is not None
    zf.fp.seek(info.header_offset)
    local = zf.fp.read(30)
    if local[:4] != b"PK\x03\x04":
        raise SpanError(f"{info.filename}: the archive's local header is damaged")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    zf.fp.seek(info.header_offset + 30 + name_len + extra_len)
    return zf.fp.read(info.compress_size)


def _entry(zf: zipfile.ZipFile, name: str, limit: int) -> bytes:
    """One entry's bytes, Zstandard included, refusing one that would inflate past the
    limit (its declared size, and the decompressor's bound when the size lies)."""
    info = zf.getinfo(name)
    if info.file_size > limit:
        raise InputLimitError(
            f"{name} inflates to {info.file_size:,} bytes, over the {limit:,}-byte limit "
            "($GRAPHLAKE_MAX_FILE_BYTES)"
        )
    if info.compress_type != _ZSTD:
        with zf.open(info) as fh:
            data = fh.read(limit + 1)
    else:
        import zstandard

        raw = _raw_member(zf, info)
        try:
            data = zstandard.ZstdDecompressor().decompress(raw, max_output_size=limit + 1)
        except zstandard.ZstdError as exc:
            raise SpanError(f"{name}: the Zstandard data is damaged or truncated ({exc})") from None
    if len(data) > limit:
        raise InputLimitError(
            f"{name} inflates past the {limit:,}-byte limit ($GRAPHLAKE_MAX_FILE_BYTES, for "
            "all the archive's members together)"
        )
    return data


def _seconds(ts: Any) -> float | None:
    if not isinstance(ts, str):
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        return "\n".join(texts) if texts else None
    return None


def emit_log(log: dict, out: Emitter, source_file: str) -> None:
    """The canonical rows of one evaluation log."""
    ev = log.get("eval") or {}
    eval_id = str(ev.get("eval_id") or ev.get("task_id") or Path(source_file).stem)
    run_id = f"inspect:{eval_id}"
    model = ev.get("model")
    plan = log.get("plan") or {}
    out.row(
        "runs",
        run_row(
            run_id,
            str(ev.get("task") or "inspect eval"),
            source_file,
            started_at=_when(ev.get("created")),
            agent=", ".join(str(s.get("solver")) for s in plan.get("steps") or []) or None,
            agent_model=model,
            settings={
                k: ev.get(k)
                for k in (
                    "task_id",
                    "task_version",
                    "task_args",
                    "model_generate_config",
                    "dataset",
                    "run_id",
                    "scorers",
                    "config",
                    "revision",
                    "packages",
                )
                if ev.get(k) not in (None, {}, [])
            }  # fmt: skip
            or None,
            attrs={"status": log.get("status"), "results": log.get("results")},
        ),
    )
    for sample in log.get("samples") or []:
        _emit_sample(sample, eval_id, run_id, model, out, source_file)


def _when(ts: Any):
    s = _seconds(ts)
    if s is None:
        return None
    from datetime import UTC

    return datetime.fromtimestamp(s, UTC)


def _emit_sample(sample: dict, eval_id: str, run_id: str, model, out: Emitter, src: str) -> None:
    sid = f"{eval_id}/{sample.get('id')}/{sample.get('epoch', 1)}"
    t0 = _seconds(sample.get("started_at"))
    events = sample.get("events") or []
    if t0 is None:
        t0 = min(
            (s for e in events if (s := _seconds(e.get("timestamp"))) is not None), default=None
        )

    def rel(ts: Any) -> float | None:
        s = _seconds(ts)
        return None if s is None or t0 is None else round(s - t0, 6)

    # the model and tool events that made the assistant and tool messages, in order
    model_events = [e for e in events if e.get("event") == "model"]
    tool_events = [e for e in events if e.get("event") == "tool"]
    participants: dict[str, tuple[str, str]] = {}
    nodes, edges, rows = [], [], []
    prev: str | None = None
    clock = 0.0
    calls: dict[str, str] = {}  # tool call id -> the node that made the call
    for i, m in enumerate(sample.get("messages") or []):
        role = m.get("role")
        node_id = str(m.get("id") or f"m{i}")
        t_start = t_end = None
        if role == "assistant" and model_events:
            e = model_events.pop(0)
            t_start, t_end = rel(e.get("timestamp")), rel(e.get("completed"))
        elif role == "tool" and tool_events:
            e = tool_events.pop(0)
            t_start, t_end = rel(e.get("timestamp")), rel(e.get("completed"))
        if t_start is None:
            t_start = t_end = clock
        clock = max(clock, t_end if t_end is not None else t_start)
        if role == "user":
            actor_type, actor, kind = "human", "user", ("human", "user")
        elif role == "assistant":
            name = str(m.get("model") or model or "model")
            actor_type, actor, kind = "ai", name, ("ai", "model")
        elif role == "tool":
            actor_type, actor, kind = (
                "tool",
                f"tool:{m.get('function') or 'tool'}",
                ("system", "tool"),
            )
        else:
            actor_type, actor, kind = "system", "system", ("system", "system")
        participants.setdefault(actor, kind)
        text = _text(m.get("content"))
        kept = {k: v for k, v in m.items() if k not in ("id", "role", "content")}
        nodes.append(
            {
                "node_id": node_id,
                "local_id": node_id,
                "actor_type": actor_type,
                "actor": actor,
                "label": f"{role} message",
                "detail": text,
                "t_start": t_start,
                "t_end": t_end,
                "attrs": to_json(kept) if kept else None,
            }
        )
        if prev is not None:
            edges.append(edge(prev, node_id, "next"))
        prev = node_id
        rows.append(
            {
                "event_id": f"{node_id}:msg",
                "t": t_start,
                "actor": actor,
                "actor_type": actor_type,
                "kind": "message",
                "channel": role,
                "node_id": node_id,
                "text": text,
                "payload": to_json(m),
            }
        )
        for call in m.get("tool_calls") or []:
            cid = str(call.get("id"))
            calls[cid] = node_id
            rows.append(
                {
                    "event_id": f"{node_id}:call:{cid}",
                    "t": t_end,
                    "actor": actor,
                    "actor_type": actor_type,
                    "kind": "tool_call",
                    "request_id": cid,
                    "node_id": node_id,
                    "text": call.get("function"),
                    "payload": to_json(call.get("arguments")),
                }
            )
        if role == "tool":
            cid = str(m.get("tool_call_id"))
            if cid in calls:
                edges.append(edge(calls[cid], node_id, "calls"))
            rows.append(
                {
                    "event_id": f"{node_id}:result",
                    "t": t_end,
                    "actor": actor,
                    "actor_type": "tool",
                    "kind": "tool_result",
                    "request_id": cid,
                    "node_id": node_id,
                    "text": m.get("function"),
                    "payload": to_json(m.get("content")),
                    "status": "error" if m.get("error") else None,
                }
            )
    if sample.get("error"):
        err = sample["error"]
        rows.append(
            {
                "event_id": "sample:error",
                "t": clock,
                "actor": "system",
                "actor_type": "system",
                "kind": "error",
                "text": err.get("message") if isinstance(err, dict) else str(err),
                "payload": to_json(err),
            }
        )
    annotations = []
    for scorer, score in (sample.get("scores") or {}).items():
        value = score.get("value") if isinstance(score, dict) else score
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        number = score_value(value)
        annotations.append(
            {
                "annotation_id": f"score:{scorer}",
                "kind": "score",
                "target_kind": "session",
                "target_id": sid,
                "label": scorer,
                "value": number,
                "text": None
                if numeric
                else to_json(value)
                if not isinstance(value, str)
                else value,
                "annotator": scorer,
                "attrs": to_json({k: v for k, v in score.items() if k != "value"})
                if isinstance(score, dict)
                else None,
            }
        )
    for name, usage in (sample.get("model_usage") or {}).items():
        for label, n in (usage or {}).items():
            if isinstance(n, (int, float)) and not isinstance(n, bool):
                annotations.append(
                    {
                        "annotation_id": f"usage:{name}:{label}",
                        "kind": "usage",
                        "target_kind": "session",
                        "target_id": sid,
                        "label": label,
                        "value": float(n),
                        "annotator": "source",
                        "attrs": to_json({"model": name}),
                    }
                )
    _write(out, sid, run_id, sample, src, nodes, edges, rows, annotations, participants, clock)


def _write(
    out, sid, run_id, sample, src, nodes, edges, rows, annotations, participants, clock
) -> None:
    emit_session_graph(out, sid, nodes, edges, rows, annotations, participants)
    kept = {k: v for k, v in sample.items() if k not in _SAMPLE_READ}
    goal = sample.get("input")
    out.row(
        "sessions",
        {
            "session_id": sid,
            "title": f"sample {sample.get('id')} (epoch {sample.get('epoch', 1)})",
            "goal": goal
            if isinstance(goal, str)
            else _text(goal)
            if isinstance(goal, list)
            else None,
            "participants": sorted(participants),
            "started_at": _when(sample.get("started_at")),
            "duration_s": sample.get("total_time")
            if isinstance(sample.get("total_time"), (int, float))
            else clock,
            "source_file": src,
            "scenario_id": str(sample.get("id")),
            "run_id": run_id,
            "attrs": to_json(kept) if kept else None,
        },
    )
