"""``graphlake mapping draft``: a starting mapping from sample files, and ``explain``: which
source fields land in which column and which go to ``attrs``.

A draft is a guess from field statistics (which keys every record has, their types, a sample
value): the session's id, the list that holds the messages, and in it the fields that look
like a speaker, a text and a time. Every field is listed in a comment with its statistics, so
the person finishing the mapping sees what there is without opening the files.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from graphlake.ingest.base import load_json, read_whole

_ID_KEYS = ("session_id", "instance_id", "task_id", "trajectory_id", "id", "index", "uuid")
_ACTOR_KEYS = ("role", "name", "speaker", "source", "agent_name", "sender", "author", "from")
_TEXT_KEYS = ("content", "text", "message", "utterance", "msg", "body")
_TIME_KEYS = ("timestamp", "time", "created_at", "created", "ts", "start_time", "date")


def _records(path: Path) -> tuple[str, list[Any]]:
    data = read_whole(path)
    name = path.name.lower()
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl", [load_json(line) for line in data.splitlines() if line.strip()]
    return "json", [load_json(data)]


def _lists(value: Any, path: tuple = ()) -> list[tuple[tuple, list]]:
    """Every list of objects in ``value`` with its key path (depth-first, shallow first)."""
    out = []
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value[:20]):
        out.append((path, value))
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict | list):
                out.extend(_lists(v, (*path, k)))
    return out


def _stats(items: list[dict]) -> dict[str, dict]:
    seen: dict[str, Counter] = defaultdict(Counter)
    example: dict[str, Any] = {}
    for it in items:
        for k, v in it.items():
            seen[k][type(v).__name__] += 1
            if k not in example and v not in (None, "", [], {}):
                example[k] = v
    return {
        k: {"n": sum(c.values()), "types": dict(c), "example": example.get(k)}
        for k, c in seen.items()
    }


def _pick(stats: dict, names: tuple[str, ...]) -> str | None:
    lower = {k.lower(): k for k in stats}
    return next((lower[n] for n in names if n in lower), None)


def _path(parts: tuple) -> str:
    return "$" + "".join(
        f".{p}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) else f'."{p}"' for p in parts
    )


def _show(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v
    text = text.replace("\n", " ")
    return text[:60] + ("..." if len(text) > 60 else "")


def _time_format(example: Any) -> str:
    if isinstance(example, int | float):
        return "epoch_ms" if example > 1e11 else "epoch_s"
    return "iso"


def draft(samples: list[Path], name: str) -> str:
    """The text of a starting mapping for files like ``samples``."""
    fmt, records = "json", []
    for p in samples:
        fmt, recs = _records(p)
        records.extend(recs)
    if not records:
        raise ValueError("the samples hold no records")
    top = records[0]
    records_path = "$"
    sessions = [r for r in records if isinstance(r, dict)]
    if fmt == "json" and isinstance(top, list):
        if top and all(isinstance(x, dict) for x in top[:20]):
            # a list: of sessions (each with its own list) or of messages (one session)
            inner = _lists(top[0]) if isinstance(top[0], dict) else []
            if inner:
                records_path, sessions = "$[*]", [x for r in records for x in r]
            else:
                sessions = []
    s_stats = _stats(sessions) if sessions else {}
    if sessions:
        candidates = [lst for s in sessions[:50] for lst in _lists(s)]
        ranked = Counter(p for p, _ in candidates)
        items_path = max(ranked, key=lambda p: (ranked[p], -len(p))) if ranked else None
        items = [it for p, lst in candidates if p == items_path for it in lst]
        from_path = _path(items_path) + "[*]" if items_path is not None else None
    else:
        items = [x for r in records for x in r]
        from_path = "$[*]"
    i_stats = _stats(items)
    lines = [
        "# A starting mapping drafted by `graphlake mapping draft` from",
        *[f"#   {p}" for p in samples],
        "# Check it with `graphlake mapping check`, see what lands where with",
        "# `graphlake mapping explain`, then ingest with `graphlake ingest --mapping`.",
        "graphlake_mapping: 1",
        f"name: {name}",
        "description: TODO what the format is and who writes it",
        "detect:",
        f"  suffixes: [{'.jsonl' if fmt == 'jsonl' else '.json'}]",
    ]
    always = [k for k, s in s_stats.items() if s["n"] == len(sessions)]
    if always:
        lines.append(f"  keys: [{', '.join(always[:4])}]")
    elif i_stats:
        lines.append(
            f"  item_keys: [{', '.join([k for k, s in i_stats.items() if s['n'] == len(items)][:3])}]"
        )
    lines += ["source:", f"  format: {fmt}"]
    if records_path != "$":
        lines.append(f"  records: {records_path}")
    lines.append("sessions:")
    sid = _pick(s_stats, _ID_KEYS)
    if sid:
        lines.append(f"  id: {sid}")
    lines.append("  columns:")
    lines.append("    title: _stem  # or a field; goal, condition, domain, ... from these fields:")
    for k, st in s_stats.items():
        lines.append(
            f"    #   {k}: {st['n']}/{len(sessions)} records, {', '.join(st['types'])}; e.g. {_show(st['example'])}"
        )
    actor = _pick(i_stats, _ACTOR_KEYS)
    text = _pick(i_stats, _TEXT_KEYS)
    when = _pick(i_stats, _TIME_KEYS)
    if from_path:
        lines += ["events:", f"  from: {from_path}", "  columns:"]
        if actor:
            lines.append(f"    actor: {actor}")
            lines.append(
                f"    actor_type: {{expr: {actor}, map: {{user: human, human: human, system: system, tool: system}}, default: ai}}"
            )
        lines.append("    kind: \"'message'\"")
        if text:
            lines.append(f"    text: {text}")
        if when:
            lines.append(
                f"    timestamp: {{expr: {when}, format: {_time_format(i_stats[when]['example'])}}}"
            )
        lines.append("    # fields of each item:")
        for k, st in i_stats.items():
            lines.append(
                f"    #   {k}: {st['n']}/{len(items)} items, {', '.join(st['types'])}; e.g. {_show(st['example'])}"
            )
        lines += ["participants:", "  derive: events"]
    return "\n".join(lines) + "\n"


def explain(mapping, samples: list[Path]) -> list[tuple[str, str, str]]:
    """(table.column, expression, fields it reads) of every column, then (context, '-> attrs',
    fields no expression reads) from ``samples``."""
    from graphlake.ingest.mapping.compile import compile_mapping
    from graphlake.ingest.mapping.expressions import Refs, compile_expression

    compile_mapping(mapping)
    rows: list[tuple[str, str, str]] = []
    read: dict[tuple, set] = defaultdict(set)
    for block in [mapping.sessions, *mapping.blocks]:
        levels = tuple(block.from_paths)
        named = dict(block.columns)
        for key in ("id", "where", "src", "dst"):
            if getattr(block, key) is not None:
                named[f"({key})"] = getattr(block, key)
        for col, loc in named.items():
            refs = Refs()
            v = loc.value["expr"] if isinstance(loc.value, dict) else loc.value
            compile_expression(v, refs)
            fields = []
            for scope, paths in refs.paths.items():
                up = int(scope[len("_parent") :] or 1) if scope.startswith("_parent") else 0
                ctx = () if scope == "_record" else levels[: len(levels) - up]
                prefix = "session." if scope == "_record" and levels else "parent." * up
                for p in paths:
                    if p:  # () is the item itself (_value)
                        read[ctx].add(p[0])
                    fields.append(prefix + (".".join(p) or "_value"))
            rows.append((f"{block.table}.{col}", str(v), ", ".join(sorted(fields)) or "(none)"))
        for i, lvl in enumerate(levels):
            from graphlake.ingest.mapping.compile import level_path

            path, kind = level_path(lvl)
            if path:
                read[levels[:i]].add(path[0])
            elif kind == "OBJECT":  # `$.*`: every member of the item is an item of its own
                read[levels[:i]].add("*")
    if samples:
        fmt = mapping.source["format"]
        for p in samples:
            _, recs = _records(p)
            if fmt == "json" and (mapping.source.get("records") or "$") != "$":
                recs = [x for r in recs for x in _walk(r, mapping.source["records"])]
            contexts: dict[tuple, set] = defaultdict(set)
            for r in recs:
                if isinstance(r, dict):
                    contexts[()].update(r)
                for block in mapping.blocks:
                    items = [r]
                    for i, lvl in enumerate(block.from_paths):
                        if not isinstance(lvl, str):  # a split: its pieces are not fields
                            break
                        items = [x for it in items for x in _walk(it, lvl)]
                        for it in items:
                            if isinstance(it, dict):
                                contexts[tuple(block.from_paths[: i + 1])].update(it)
            for ctx, keys in sorted(contexts.items(), key=lambda kv: len(kv[0])):
                taken = read.get(ctx, set())
                left = [] if "*" in taken else sorted(keys - taken)
                where = "session record" if not ctx else " / ".join(ctx)
                rows.append(
                    (where, "-> attrs", ", ".join(left) or "(nothing: every field has a column)")
                )
    return rows


def _walk(value: Any, path: str) -> list[Any]:
    """The values a simple JSON path (``$``, ``$.a.b``, ``$[*]``, ``$.a[*]``, ``$.a.*``) finds."""
    body = path[1:]
    star = body.endswith("[*]")
    members = body.endswith(".*") or body == "*"
    body = body.removesuffix("[*]").removesuffix("*").strip(".")
    node = value
    for k in [x.strip('"') for x in body.split(".")] if body else []:
        if not isinstance(node, dict) or k not in node:
            return []
        node = node[k]
    if star:
        return node if isinstance(node, list) else []
    if members:
        return list(node.values()) if isinstance(node, dict) else []
    return [] if node is None else [node]
