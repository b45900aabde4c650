"""A mapping file read and checked: YAML with the line of every value, validated against
``schemas/mapping.schema.json``, then checked for what a schema cannot say (columns that the
target table has, expressions that parse). Every error names the file and line to fix."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from graphlake.errors import GraphlakeError
from graphlake.schema import TABLES

#: Tables a mapping can fill, in the order their blocks are compiled
TARGETS = ("sessions", "participants", "steps", "nodes", "events", "annotations", "edges")
#: The id column of each table a block fills (the block's ``id``)
ID_COLUMN = {
    "participants": "participant_id",
    "steps": "step_id",
    "nodes": "node_id",
    "events": "event_id",
    "annotations": "annotation_id",
}
#: Columns a mapping never sets itself (graphlake fills them)
RESERVED = frozenset({"corpus", "session_id", "attrs"})
MAX_MAPPING_BYTES = 1 << 20


class MappingError(GraphlakeError):
    """A mapping file that cannot be used: the message names the file, the line and the fix."""


@dataclass
class Located:
    """A value of the mapping with the line it was written on (1-based)."""

    value: Any
    line: int


@dataclass(frozen=True)
class Split:
    """A ``from`` level that cuts a text field into pieces at each match of a regular
    expression (RE2, DuckDB's): the items are ``{match, groups, text, n}``, the first one the
    text before the first match (``match`` null)."""

    field: str
    pattern: str
    groups: int


#: A ``from`` level: a JSON path (``$.a[*]`` a list, ``$.a.*`` an object's members, ``$rows``
#: a group's rows) or a :class:`Split`
Level = str | Split


@dataclass
class Reject:
    """A block's own reject rule: a record or item for which ``when`` holds is a reject with
    ``reason`` (a text in which ``{expression}`` is replaced by its value)."""

    when: Located
    reason: Located


@dataclass
class Derive:
    """Participants made from the rows of another table: one for each distinct value of the
    ``ids`` expressions (in order of first mention), sorted by ``order`` first."""

    table: str
    ids: list[Located]
    order: Located | None = None


@dataclass
class Block:
    """One table block: where its items are, which rows to keep, its columns."""

    table: str
    where_line: int
    from_paths: list[Level] = field(default_factory=list)
    where: Located | None = None
    id: Located | None = None
    columns: dict[str, Located] = field(default_factory=dict)
    #: keep the unmapped fields in attrs (True), none (False), or this expression's JSON object
    attrs: bool | Located = True
    derive: Derive | None = None
    #: where this block's rows stand among its table's numbered rows (``_number``)
    order: int | None = None
    rejects: list[Reject] = field(default_factory=list)
    #: what a record is called in its rejects (sessions only: ``run``, ``trajectory``)
    record: str | None = None
    # edges only
    kind: str | None = None
    sequence: bool = False
    src: Located | None = None
    dst: Located | None = None


@dataclass
class Mapping:
    """A checked mapping (see ``schemas/mapping.schema.json`` for the language)."""

    name: str
    path: Path
    source: dict
    detect: dict
    description: str
    sessions: Block
    blocks: list[Block]

    def ref(self, line: int) -> str:
        return f"{self.path.name}:{line}"


@functools.cache
def _load_schema() -> dict:
    return json.loads(
        resources.files("graphlake.schemas").joinpath("mapping.schema.json").read_text()
    )


def _construct(
    node: yaml.Node, path: tuple, lines: dict[tuple, int], budget: list[int], loader
) -> Any:
    """The Python value of a composed YAML node, recording each value's line in ``lines``."""
    budget[0] -= 1
    if budget[0] < 0:
        raise MappingError("the mapping has more than 100,000 values: it is not a mapping file")
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        merged: dict = {}
        for key_node, value_node in node.value:
            key = key_node.value
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: shared columns
                sources = (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                for src in sources:
                    value = _construct(src, path, lines, budget, loader)
                    if not isinstance(value, dict):
                        raise MappingError(f"line {src.start_mark.line + 1}: `<<` merges a mapping")
                    merged = {**value, **merged}
                continue
            out[key] = _construct(value_node, (*path, key), lines, budget, loader)
        return {**merged, **out}
    if isinstance(node, yaml.SequenceNode):
        return [_construct(v, (*path, i), lines, budget, loader) for i, v in enumerate(node.value)]
    return loader.construct_object(node)


def _read_yaml(path: Path) -> tuple[str, dict, dict[tuple, int]]:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise MappingError(f"cannot read mapping {path}: {exc.strerror or exc}") from None
    if size > MAX_MAPPING_BYTES:
        raise MappingError(f"{path} is {size:,} bytes: a mapping file is at most 1 MiB")
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise MappingError(
            f"{path.name}{where}: not valid YAML ({getattr(exc, 'problem', exc)})"
        ) from None
    if node is None:
        raise MappingError(f"{path.name}: the file is empty; start from `graphlake mapping draft`")
    lines: dict[tuple, int] = {}
    loader = yaml.SafeLoader("")
    try:
        doc = _construct(node, (), lines, [100_000], loader)
    finally:
        loader.dispose()
    if not isinstance(doc, dict):
        raise MappingError(f"{path.name}:1: a mapping is a YAML object (keys such as name, source)")
    return text, doc, lines


def _line(lines: dict[tuple, int], path: tuple) -> int:
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path, 1)


def _validate(path: Path, doc: dict, lines: dict[tuple, int]) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(_load_schema())
    errors = sorted(
        validator.iter_errors(doc),
        key=lambda e: (_line(lines, tuple(e.absolute_path)), str(e.message)),
    )
    if not errors:
        return
    out = []
    for e in errors[:10]:
        best = jsonschema.exceptions.best_match([e])
        where = ".".join(str(p) for p in e.absolute_path) or "(top)"
        out.append(f"{path.name}:{_line(lines, tuple(e.absolute_path))}: {where}: {best.message}")
    more = f"\n(and {len(errors) - 10} more)" if len(errors) > 10 else ""
    raise MappingError(
        "the mapping does not follow the mapping language:\n" + "\n".join(out) + more
    )


def _level(value: str | dict, line: int, name: str) -> Level:
    if isinstance(value, str):
        return value
    import re

    try:
        groups = re.compile(value["pattern"]).groups
    except re.error as exc:
        raise MappingError(f"{name}:{line}: split pattern does not compile ({exc})") from None
    return Split(value["split"], value["pattern"], groups)


def _located(doc: dict, key: str, lines: dict, path: tuple) -> Located | None:
    return Located(doc[key], _line(lines, (*path, key))) if key in doc else None


def _block(table: str, doc: dict, lines: dict, path: tuple, name: str) -> Block:
    where_line = _line(lines, path)
    frm = doc.get("from")
    raw_levels = [frm] if isinstance(frm, str | dict) else list(frm or [])
    paths = [
        _level(
            v, _line(lines, (*path, "from", i) if isinstance(frm, list) else (*path, "from")), name
        )
        for i, v in enumerate(raw_levels)
    ]
    attrs = doc.get("attrs", True)
    derive = doc.get("derive")
    if isinstance(derive, str):
        derive = Derive(derive, [Located("actor", _line(lines, (*path, "derive")))])
    elif isinstance(derive, dict):
        dp = (*path, "derive")
        derive = Derive(
            derive["from"],
            [
                Located(v, _line(lines, (*dp, "ids", i)))
                for i, v in enumerate(derive.get("ids") or ["actor"])
            ],
            _located(derive, "order", lines, dp),
        )
    b = Block(
        table=table,
        where_line=where_line,
        from_paths=paths,
        where=Located(doc["where"], _line(lines, (*path, "where"))) if "where" in doc else None,
        id=Located(doc["id"], _line(lines, (*path, "id"))) if "id" in doc else None,
        attrs=attrs if isinstance(attrs, bool) else Located(attrs, _line(lines, (*path, "attrs"))),
        derive=derive,
        order=doc.get("order"),
        rejects=[
            Reject(
                Located(r["when"], _line(lines, (*path, "reject", i, "when"))),
                Located(r["reason"], _line(lines, (*path, "reject", i, "reason"))),
            )
            for i, r in enumerate(doc.get("reject") or [])
        ],
        record=doc.get("record"),
        kind=doc.get("kind"),
        sequence=doc.get("sequence") == "nodes",
        src=Located(doc["src"], _line(lines, (*path, "src"))) if "src" in doc else None,
        dst=Located(doc["dst"], _line(lines, (*path, "dst"))) if "dst" in doc else None,
    )
    spec_cols = set(TABLES[table].columns)
    for col, value in (doc.get("columns") or {}).items():
        line = _line(lines, (*path, "columns", col))
        if col in RESERVED:
            raise MappingError(
                f"{name}:{line}: {table}.{col} is filled by graphlake (corpus, session_id, attrs): "
                "remove it from the columns"
            )
        if col not in spec_cols:
            import difflib

            close = difflib.get_close_matches(col, sorted(spec_cols - RESERVED), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise MappingError(
                f"{name}:{line}: {table} has no column {col!r}.{hint} Its columns: "
                f"{', '.join(c for c in TABLES[table].columns if c not in RESERVED)}"
            )
        if col == ID_COLUMN.get(table):  # the id, written with the other columns
            if b.id is not None:
                raise MappingError(
                    f"{name}:{line}: {table} has an `id` already; keep one of the two"
                )
            b.id = Located(value, line)
            continue
        b.columns[col] = Located(value, line)
    if table == "edges" and not b.sequence and (b.src is None or b.dst is None):
        raise MappingError(
            f"{name}:{where_line}: an edges block needs `sequence: nodes`, or `src` and `dst`"
        )
    if b.derive and table != "participants":
        raise MappingError(f"{name}:{where_line}: `derive` is for the participants block only")
    return b


def load(path: str | Path) -> Mapping:
    """Read, validate and check the mapping at ``path``; :class:`MappingError` names the line."""
    path = Path(path)
    _, doc, lines = _read_yaml(path)
    _validate(path, doc, lines)
    name = path.name
    sessions = _block("sessions", doc["sessions"], lines, ("sessions",), name)
    blocks: list[Block] = []
    for table in TARGETS[1:]:
        value = doc.get(table)
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            p = (table, i) if isinstance(value, list) else (table,)
            blocks.append(_block(table, item, lines, p, name))
    src = doc["source"]
    if src.get("records") and src["format"] != "json":
        unit = "lines" if src["format"] == "jsonl" else "rows"
        raise MappingError(
            f"{name}:{_line(lines, ('source', 'records'))}: `records` is for json documents; "
            f"a {src['format']} file's records are its {unit}"
        )
    mapping = Mapping(
        name=doc["name"],
        path=path,
        source=src,
        detect=doc.get("detect") or {},
        description=doc.get("description", ""),
        sessions=sessions,
        blocks=blocks,
    )
    from graphlake.ingest.mapping.compile import check_expressions

    check_expressions(mapping)
    return mapping
