"""A mapping compiled to DuckDB SQL: one statement per table block, built as sqlglot trees.

The reader hands over one relation ``src`` (a row per record text: a JSON document, a JSON
Lines line, a CSV or Parquet row as JSON) for a whole batch of files. The plan then runs,
all in DuckDB:

1. ``m_docs``: the valid records parsed once; ``m_bad``: the lines that are not JSON.
2. ``m_recs``: the session records (``source.records`` unnested, or ``group_by`` groups).
3. ``m_sessions``: the sessions block's columns; records without an id are rejected.
4. one ``m_b<N>`` per block: its items (``from`` unnested level by level, with the
   enclosing item as ``_parent``), filtered by ``where``, each column evaluated and cast to
   its canonical type, ``attrs`` the item minus every field some expression reads.
5. derived rows: ``sequence`` edges (the next node of each session), participants from the
   events' actors, relative times from absolute ones, ``started_at``/``duration_s``.

A value that does not convert (a time that does not parse, text where a number belongs) is a
reject of its row whose reason names the mapping line of the column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pyarrow as pa
from sqlglot import exp

from graphlake.ingest.mapping.expressions import (
    ExpressionError,
    Refs,
    compile_expression,
    json_path,
    slot_column,
    sql,
    template,
)
from graphlake.ingest.mapping.spec import (
    ID_COLUMN,
    Block,
    Level,
    Located,
    Mapping,
    MappingError,
    Split,
)
from graphlake.schema import TABLES

_TIME_COLUMNS = frozenset({"t", "t_end", "t_start"})
_EPOCH = {"epoch_s": 1.0, "epoch_ms": 1e3, "epoch_us": 1e6}
_PREFIX = {"participants": "p", "steps": "s", "nodes": "n", "events": "e", "annotations": "a"}


def _duck_type(t: pa.DataType) -> str | None:
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_int32(t):
        return "INTEGER"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_list(t):
        return "VARCHAR[]"
    return None  # text


def _lit(v) -> exp.Expression:
    if v is None:
        return exp.Null()
    if isinstance(v, bool):
        return exp.Boolean(this=v)
    if isinstance(v, int | float):
        return exp.Literal.number(v)
    return exp.Literal.string(str(v))


@dataclass
class Column:
    """One compiled column: its value, the raw text it came from (to tell NULL from a value
    that did not convert) and the mapping line to blame."""

    name: str
    value: str
    raw: str | None
    line: int
    what: str
    absolute_time: bool = False


@dataclass
class CompiledBlock:
    block: Block
    number: int
    select: str  # the block's rows, with _session_id, _unit, _ord, _item, _why
    columns: list[Column] = field(default_factory=list)
    #: the block's other compiled expressions (where, id, attrs, derive ids, reject rules)
    extra: dict = field(default_factory=dict)


def _column(
    mapping: Mapping, table: str, name: str, loc: Located, refs: Refs, plain: bool = False
) -> Column:
    spec_type = TABLES[table].schema.field(name).type
    value = loc.value
    opts: dict = value if isinstance(value, dict) else {"expr": value}
    try:
        tree = compile_expression(opts["expr"], refs, plain=plain, as_json=bool(opts.get("json")))
    except ExpressionError as exc:
        raise MappingError(f"{mapping.ref(loc.line)}: {table}.{name}: {exc}") from None
    if "map" in opts:
        case = exp.Case(this=tree)
        for k, v in opts["map"].items():
            case = case.when(_lit(k), _lit(v))
        tree = case.else_(_lit(opts.get("default")))
    elif "default" in opts:
        tree = exp.func("coalesce", tree, _lit(opts["default"]))
    text = sql(tree)
    if opts.get("json"):  # objects and lists as canonical JSON text, anything else as text
        text = (
            f"(CASE WHEN json_type(({text})::JSON) IN ('OBJECT', 'ARRAY') "
            f"THEN graphlake_canonical_json(({text})::VARCHAR) ELSE ({text})::JSON->>'$' END)"
        )
    duck = _duck_type(spec_type)
    fmt = opts.get("format")
    what = f"{table}.{name} ({mapping.ref(loc.line)})"
    if name in _TIME_COLUMNS and fmt:  # an absolute time, made relative to the session start
        return Column(name, _timestamp(text, fmt), text, loc.line, what, absolute_time=True)
    if duck == "TIMESTAMPTZ":
        return Column(name, _timestamp(text, fmt or "iso"), text, loc.line, what)
    if duck == "VARCHAR[]":
        cast = f"(CASE WHEN json_valid(({text})::VARCHAR) THEN from_json(({text})::JSON, '[\"VARCHAR\"]') ELSE TRY_CAST(({text}) AS VARCHAR[]) END)"
        return Column(name, cast, text, loc.line, what)
    if duck is None:
        return Column(name, f"(({text})::VARCHAR)", None, loc.line, what)
    return Column(name, f"TRY_CAST(({text}) AS {duck})", text, loc.line, what)


def _timestamp(text: str, fmt: str) -> str:
    if fmt == "iso":
        return f"TRY_CAST(({text})::VARCHAR AS TIMESTAMPTZ)"
    if fmt in _EPOCH:
        return f"to_timestamp(TRY_CAST(({text}) AS DOUBLE) / {_EPOCH[fmt]})"
    return f"(try_strptime(({text})::VARCHAR, {sql(exp.Literal.string(fmt))}))::TIMESTAMPTZ"


def level_path(level: Level) -> tuple[tuple[str, ...], str | None]:
    """A ``from`` level as (key path, what it unnests there): ``$.a.b[*]`` -> (('a', 'b'),
    'ARRAY'), ``$.a.*`` -> (('a',), 'OBJECT'), ``$.a`` -> (('a',), None); a split reads its
    field (``_value``: the item itself, ``()``)."""
    if isinstance(level, Split):
        return (() if level.field == "_value" else tuple(level.field.split("."))), None
    if level == "$rows":
        return (), None
    kind = "ARRAY" if level.endswith("[*]") else "OBJECT" if level.endswith(".*") else None
    body = level[1:].removesuffix("[*]").removesuffix(".*").strip(".")
    return (tuple(k.strip('"') for k in body.split(".")) if body else ()), kind


def _level_list(scope: str, level: str) -> tuple[str, str | None]:
    """The JSON list of items at ``level`` (one item when the path names a single value),
    and for an object's members the list of their names."""
    path, kind = level_path(level)
    if kind == "OBJECT":
        container = sql(exp.Literal.string(json_path(path)))
        members = sql(exp.Literal.string(json_path(path) + ".*"))
        is_obj = f"json_type({scope}, {container}) = 'OBJECT'"
        return (
            f"(CASE WHEN {is_obj} THEN json_extract({scope}, {members}) ELSE []::JSON[] END)",
            f"(CASE WHEN {is_obj} THEN json_keys({scope}, {container}) ELSE []::VARCHAR[] END)",
        )
    lit = sql(exp.Literal.string(level))
    if kind == "ARRAY":
        return f"json_extract({scope}, {lit})", None
    return (
        f"(CASE WHEN json_extract({scope}, {lit}) IS NULL THEN []::JSON[] ELSE [json_extract({scope}, {lit})] END)",
        None,
    )


#: Marks a one-pass split writes around each match (``regexp_replace`` with a rewrite):
#: texts that hold one of these characters take the slower path of separate calls
_MARKS = ("chr(1)", "chr(2)", "chr(3)")


def _split_steps(scope: str, split: Split, rel: str) -> tuple[str, str]:
    """(relation with the pieces' parts beside each row, the JSON list of its items) of a
    split level, zipped into ``{match, groups, text, n}``. One regex pass per text: each
    match is rewritten as ``chr(1) match chr(3) group1 chr(3) ... chr(2)`` and the text cut
    at the marks with string functions (a match's groups cost no second pass). A text that
    holds a mark character itself, or a pattern of more than nine groups, takes DuckDB's
    ``regexp_split_to_array`` and one ``regexp_extract_all`` per group instead."""
    path = sql(exp.Literal.string(json_path(level_path(split)[0])))
    pat = sql(exp.Literal.string(split.pattern))
    g = split.groups
    base = (
        f"SELECT *, CASE WHEN json_type(_v) = 'VARCHAR' THEN _v->>'$' END AS _s "
        f"FROM (SELECT *, json_extract({scope}, {path}) AS _v FROM ({rel}))"
    )
    fast = g <= 9
    rewrite = " || ".join(
        ["chr(1)", "'\\0'"] + [f"chr(3) || '\\{k}'" for k in range(1, g + 1)] + ["chr(2)"]
    )
    clean = " AND ".join(f"strpos(_s, {m}) = 0" for m in _MARKS)
    groups = "".join(
        f", CASE WHEN NOT _fast THEN regexp_extract_all(_s, {pat}, {k}) END AS _g{k}"
        for k in range(1, g + 1)
    )
    rel = (
        f"SELECT *, CASE WHEN _fast THEN string_split(regexp_replace(_s, {pat}, {rewrite}, 'g'), chr(1)) END AS _mk, "
        f"CASE WHEN NOT _fast THEN regexp_split_to_array(_s, {pat}) END AS _pcs, "
        f"CASE WHEN NOT _fast THEN regexp_extract_all(_s, {pat}) END AS _ms{groups} "
        f"FROM (SELECT *, {'(' + clean + ')' if fast else 'false'} AS _fast FROM ({base}))"
    )
    glist = "[" + ", ".join(f"_g{k}[i]" for k in range(1, g + 1)) + "]" if g else "[]::VARCHAR[]"
    slow = (
        "list_transform(range(len(_pcs)), lambda i: "
        "json_object('match', CASE WHEN i = 0 THEN NULL ELSE _ms[i] END, "
        f"'groups', CASE WHEN i = 0 THEN NULL ELSE {glist} END, 'text', _pcs[i + 1], 'n', len(_pcs)))"
    )
    # a marked piece: "match chr(3) g1 ... chr(2) text"; the first piece is the text before
    head = "split_part(p, chr(2), 1)"
    marked = (
        "list_transform(_mk, lambda p, i: CASE WHEN i = 1 THEN "
        "json_object('match', NULL, 'groups', NULL, 'text', p, 'n', len(_mk)) ELSE "
        f"json_object('match', split_part({head}, chr(3), 1), "
        f"'groups', {f'string_split({head}, chr(3))[2:]' if g else '[]::VARCHAR[]'}, "
        "'text', substr(p, strpos(p, chr(2)) + 1), 'n', len(_mk)) END)"
    )
    items = f"(CASE WHEN _s IS NULL THEN []::JSON[] WHEN _fast THEN {marked} ELSE {slow} END)"
    return rel, items


def _nested_fields(
    paths: set[tuple[str, ...]], arrays: dict[tuple[str, ...], str]
) -> list[tuple[str, ...]]:
    """The fields read below another (``metrics.cost``) that attrs must take out, less those
    whose parent is dropped whole already."""
    dropped = {p for p in paths if len(p) == 1}
    return [
        p
        for p in sorted(p for p in paths if len(p) > 1 and p not in arrays)
        if not any(p[:k] in dropped for k in range(1, len(p)))
    ]


def _typed_paths(
    paths: set[tuple[str, ...]], arrays: dict[tuple[str, ...], str]
) -> list[tuple[str, ...]]:
    """The paths whose JSON type the attrs expression asks, in the order of ``_lt`` (one
    ``json_type`` call per row, :func:`_attr_helpers`): each list the blocks unnest, then
    every field above a nested one read."""
    lists = sorted(a for a in arrays if a)
    above = sorted({q[:k] for q in _nested_fields(paths, arrays) for k in range(1, len(q))})
    return lists + [a for a in above if a not in lists]


def _patch(paths: set[tuple[str, ...]], arrays: dict[tuple[str, ...], str], scope: str) -> str:
    """``scope`` minus the fields at ``paths`` (RFC 7396 merge patches with nulls: DuckDB's
    json_merge_patch), and minus each list at ``arrays`` when it is a list. One merge of the
    record: the patch for each combination of the lists being lists or not is a literal,
    chosen by the types ``_lt`` holds (one ``json_type`` call over every path it needs).

    A field read below another (``metrics.cost``) is taken out only where everything above
    it is an object: a merge patch replaces whatever is not an object with one, so a record
    whose ``metrics`` is ``5``, or has none, would keep ``{}`` instead (its value lost, or an
    empty object it never had). Where everything above is an object (the common case) the
    nested fields join the same literal patch: still one merge of the record."""
    nested = _nested_fields(paths, arrays)
    if nested:
        top = _merged({p for p in paths if p not in nested}, arrays, scope)
        every = _merged(paths, arrays, scope)  # the nested fields as any other: one merge
        return _nested_patch(top, every, nested, _typed_paths(paths, arrays))
    return _merged(paths, arrays, scope)


def _merged(paths: set[tuple[str, ...]], arrays: dict[tuple[str, ...], str], scope: str) -> str:
    """:func:`_patch` of fields whose parents are objects (or are not looked at)."""
    plain = sorted(p for p in paths if p and p not in arrays)
    lists = sorted(a for a in arrays if a)
    if not lists:
        if not plain:
            return scope
        return f"json_merge_patch({scope}, {sql(exp.Literal.string(_null_patch(plain)))})"
    if len(lists) > 4:  # rare: one merge per list
        out = (
            f"json_merge_patch({scope}, {sql(exp.Literal.string(_null_patch(plain)))})"
            if plain
            else scope
        )
        for p in lists:
            patch = sql(exp.Literal.string(_null_patch([p])))
            kind = sql(exp.Literal.string(json_path(p)))
            out = f"(CASE WHEN json_type({scope}, {kind}) = '{arrays[p]}' THEN json_merge_patch({out}, {patch}) ELSE {out} END)"
        return out
    types = "_lt"  # json_type of each list path, computed once beside (_attr_helpers)
    case = []
    for mask in range(1 << len(lists)):
        chosen = [p for k, p in enumerate(lists) if mask >> k & 1]
        cond = " AND ".join(
            f"{types}[{k + 1}] {'=' if mask >> k & 1 else 'IS DISTINCT FROM'} '{arrays[lists[k]]}'"
            for k in range(len(lists))
        )
        # a constant patch in every branch: DuckDB parses a literal patch once, not per row
        patch = sql(exp.Literal.string(_null_patch(plain + chosen))) if plain + chosen else "'{}'"
        case.append(f"WHEN {cond} THEN json_merge_patch({scope}, {patch})")
    return f"(CASE {' '.join(reversed(case))} END)"


def _nested_patch(
    top: str, every: str, nested: list[tuple[str, ...]], typed: list[tuple[str, ...]]
) -> str:
    """``every`` (one merge that takes out the ``nested`` fields too) when everything above
    them is an object (one condition over ``_lt``), else ``top`` merged with each path's
    patch where its own chain is all objects (``'{}'``, no change, where it is not)."""

    def objects(group) -> str:
        above = sorted({q[:k] for q in group for k in range(1, len(q))})
        return " AND ".join(f"_lt[{typed.index(q) + 1}] = 'OBJECT'" for q in above)

    each = ", ".join(
        f"CASE WHEN {objects([path])} THEN {sql(exp.Literal.string(_null_patch([path])))} "
        "ELSE '{}' END"
        for path in nested
    )
    return f"(CASE WHEN {objects(nested)} THEN {every} ELSE json_merge_patch({top}, {each}) END)"


def _null_patch(paths: list[tuple[str, ...]]) -> str:
    import json

    root: dict = {}
    for p in paths:
        node = root
        for k in p[:-1]:
            nxt = node.setdefault(k, {})
            if nxt is None:  # a parent is dropped whole already
                break
            node = nxt
        else:
            node[p[-1]] = None
    return json.dumps(root, sort_keys=True)


@dataclass
class Plan:
    """The compiled statements of a mapping, run by :mod:`graphlake.ingest.mapping.run`."""

    mapping: Mapping
    setup: list[str]
    sessions: CompiledBlock
    blocks: list[CompiledBlock]
    grouped: bool


def _scope_refs(mapping: Mapping, compiled: list[tuple[Block, Refs]]) -> dict[tuple, dict]:
    """For every item context (the session record, each ``from`` prefix): the field paths
    read there, and the lists below it that blocks unnest (both leave its attrs)."""
    read: dict[tuple, set] = {(): set()}
    lists: dict[tuple, dict] = {(): {}}
    for block, refs in compiled:
        levels = tuple(block.from_paths)
        read.setdefault(levels, set()).update(refs.paths.get("_item", set()))
        read[()].update(refs.paths.get("_record", set()))
        for scope, paths in refs.paths.items():  # parent.x, parent.parent.x, ...
            if scope.startswith("_parent"):
                up = int(scope[len("_parent") :] or 1)
                if up <= len(levels):
                    read.setdefault(levels[:-up], set()).update(paths)
        for k, level in enumerate(levels):
            path, kind = level_path(level)
            if isinstance(level, Split):  # the split field is read there
                read.setdefault(levels[:k], set()).add(path)
            elif level != "$rows":  # (a single value: left in place unless it is a list)
                lists.setdefault(levels[:k], {})[path] = kind or "ARRAY"
    out: dict[tuple, dict] = {}
    for ctx in set(read) | set(lists):
        out[ctx] = {"read": read.get(ctx, set()), "lists": lists.get(ctx, {})}
    return out


def _expression(mapping: Mapping, block: Block, what: str, loc: Located, refs: Refs) -> str:
    try:
        if what.startswith("reject reason"):
            return sql(template(str(loc.value), refs))
        value = loc.value["expr"] if isinstance(loc.value, dict) else loc.value
        return sql(compile_expression(value, refs, plain=block.derive is not None))
    except ExpressionError as exc:
        raise MappingError(f"{mapping.ref(loc.line)}: {block.table}.{what}: {exc}") from None


_NUMBER = re.compile(r"\b_number\b")


def compile_mapping(mapping: Mapping) -> Plan:
    grouped = bool(mapping.source.get("group_by"))
    all_blocks = [mapping.sessions, *mapping.blocks]
    refs_of: list[tuple[Block, Refs]] = []
    columns_of: list[list[Column]] = []
    extras: list[dict[str, str]] = []
    # blocks that read the same items share one extraction: every field any of them reads is
    # pulled from each item in one call, its attrs computed once (``m_items_<g>``)
    group_refs: dict[tuple, Refs] = {}
    for i, block in enumerate(all_blocks):
        # blocks without `from` read the session record: their fields come out with the
        # sessions' own, in one extraction; derived participants read the derived rows
        if block.derive:
            refs = Refs()
        else:
            refs = group_refs.setdefault(() if i == 0 else tuple(block.from_paths), Refs())
        cols = [
            _column(mapping, block.table, n, loc, refs, plain=block.derive is not None)
            for n, loc in block.columns.items()
        ]
        extra: dict[str, str] = {}
        for key in ("where", "id", "src", "dst"):
            loc = getattr(block, key)
            if loc is not None:
                extra[key] = _expression(mapping, block, key, loc, refs)
        if isinstance(block.attrs, Located):
            extra["attrs"] = _expression(mapping, block, "attrs", block.attrs, refs)
        if block.derive:
            extra["ids"] = [  # type: ignore[assignment]
                _expression(mapping, block, "derive.ids", loc, refs) for loc in block.derive.ids
            ]
            if block.derive.order is not None:
                extra["order"] = _expression(
                    mapping, block, "derive.order", block.derive.order, refs
                )
        extra["rejects"] = [  # type: ignore[assignment]
            (
                _expression(mapping, block, "reject when", r.when, refs),
                _expression(mapping, block, "reject reason", r.reason, refs),
            )
            for r in block.rejects
        ]
        refs_of.append((block, refs))
        columns_of.append(cols)
        extras.append(extra)
    scopes = _scope_refs(
        mapping, [r for r in refs_of[1:] if not r[0].derive] + [(mapping.sessions, refs_of[0][1])]
    )

    setup = _records_sql(mapping, grouped)
    sessions = _sessions_block(mapping, columns_of[0], extras[0], scopes, refs_of[0][1])
    setup.append(f"CREATE OR REPLACE TEMP TABLE m_sessions AS {sessions.select}")
    groups: dict[tuple, int] = {}
    for block in all_blocks[1:]:
        if (block.table == "edges" and block.sequence) or block.derive:
            continue
        levels = tuple(block.from_paths)
        if levels not in groups:
            groups[levels] = len(groups)
            keep = any(
                b.attrs is True
                for b in all_blocks[1:]
                if tuple(b.from_paths) == levels and not b.derive
            )
            rel = _items_relation(mapping, block, levels, scopes, grouped, group_refs[levels], keep)
            kind = "TABLE" if levels else "VIEW"  # the session records are a table already
            setup.append(f"CREATE OR REPLACE TEMP {kind} m_items_{groups[levels]} AS {rel}")
    compiled = []
    numbered: dict[str, list[str]] = {}
    for n, (block, cols, extra) in enumerate(
        zip(all_blocks[1:], columns_of[1:], extras[1:], strict=True), 1
    ):
        if (block.table == "edges" and block.sequence) or block.derive:
            compiled.append(CompiledBlock(block, n, "", cols, extra))
            continue
        items = f"m_items_{groups[tuple(block.from_paths)]}"
        texts = [c.value for c in cols] + [v for k, v in extra.items() if isinstance(v, str)]
        number = any(_NUMBER.search(t) for t in texts)
        if number:  # this block's rows are numbered with the table's other numbered blocks
            where = f"WHERE ({extra['where']})" if "where" in extra else ""
            order = block.order if block.order is not None else n
            numbered.setdefault(block.table, []).append(
                f"SELECT {n} AS _b, {order} AS _o, _rid, _session_id, _ord FROM {items} {where}"
            )
        repeats = not positional_ids(block.table, all_blocks[1:])
        compiled.append(_items_block(block, n, cols, extra, items, number, repeats))
    for table, parts in numbered.items():
        setup.append(
            f"CREATE OR REPLACE TEMP TABLE m_num_{table} AS SELECT _b, _rid, "
            "row_number() OVER (PARTITION BY _session_id, _ord[1] ORDER BY _o, _ord, _b) - 1 AS _number "
            f"FROM ({' UNION ALL '.join(parts)})"
        )
    return Plan(mapping, setup, sessions, compiled, grouped)


def _records_sql(mapping: Mapping, grouped: bool) -> list[str]:
    fmt = mapping.source["format"]
    records = mapping.source.get("records") or "$"
    steps = [  # each record parsed once: TRY_CAST is NULL for text that is not JSON, kept
        # (once) as the reject's raw text
        "CREATE OR REPLACE TEMP TABLE m_parsed AS SELECT * EXCLUDE (_text), "
        "CASE WHEN _doc IS NULL THEN _text END AS _text FROM (SELECT _unit, _file, _stem, _line, "
        "_text, TRY_CAST(_text AS JSON) AS _doc FROM src WHERE NOT regexp_full_match(_text, '\\s*'))",
        "CREATE OR REPLACE TEMP VIEW m_docs AS SELECT _unit, _file, _stem, _line, _doc "
        "FROM m_parsed WHERE _doc IS NOT NULL",
        "CREATE OR REPLACE TEMP VIEW m_bad AS SELECT _unit, _file, _line, _text FROM m_parsed "
        "WHERE _doc IS NULL",
    ]
    if grouped:
        refs = Refs()
        key_sql = sql(compile_expression(mapping.source["group_by"], refs))
        slots = "".join(", " + c for c in refs.columns({"_item": "_doc", "_record": "_doc"}))
        steps.append(
            "CREATE OR REPLACE TEMP TABLE m_recs AS SELECT _unit, any_value(_file) AS _file, "
            "any_value(_stem) AS _stem, min(_line) AS _line, "
            f"({key_sql})::VARCHAR AS _group, arg_min(_doc, _line) AS _record, "
            "list(_doc ORDER BY _line) AS _rows, min(_line) AS _rec_index, 1 AS _n "
            f"FROM (SELECT *{slots} FROM m_docs) GROUP BY _unit, ({key_sql})::VARCHAR"
        )
    elif fmt == "json" and records != "$":
        lst, _ = _level_list("_doc", records)
        steps.append(
            "CREATE OR REPLACE TEMP TABLE m_recs AS SELECT _unit, _file, _stem, _line, "
            "unnest(_l) AS _record, generate_subscripts(_l, 1) - 1 AS _rec_index, "
            f"count(*) OVER (PARTITION BY _unit, _file) AS _n FROM (SELECT *, {lst} AS _l FROM m_docs)"
        )
        container = records.removesuffix("[*]")
        kind = sql(exp.Literal.string(container))
        steps.append(
            "CREATE OR REPLACE TEMP TABLE m_norecs AS SELECT _unit, _file, _line, _doc FROM m_docs "
            f"WHERE json_type(_doc, {kind}) IS DISTINCT FROM 'ARRAY'"
            if records.endswith("[*]")
            else "CREATE OR REPLACE TEMP TABLE m_norecs AS SELECT _unit, _file, _line, _doc FROM m_docs "
            f"WHERE json_extract(_doc, {kind}) IS NULL"
        )
    else:
        steps.append(
            "CREATE OR REPLACE TEMP VIEW m_recs AS SELECT _unit, _file, _stem, _line, _doc AS _record, "
            f"{'0' if fmt == 'json' else '_line'} AS _rec_index, "
            "count(*) OVER (PARTITION BY _unit, _file) AS _n FROM m_docs"
        )
    return steps


def _checks(cols: list[Column], rules: list[tuple[str, str]] = ()) -> str:  # type: ignore[assignment]
    """The row's reject reason: the first of the block's own reject rules that holds, else
    every column whose value did not convert, with its line."""
    if rules:
        whens = " ".join(f"WHEN coalesce(({w}), false) THEN ({r})" for w, r in rules)
        return f"(CASE {whens} ELSE {_checks(cols)} END)"
    parts = [
        f"CASE WHEN ({c.raw}) IS NOT NULL AND ({c.value}) IS NULL THEN "
        f"{sql(exp.Literal.string(c.what + ': '))} || left(({c.raw})::VARCHAR, 80) || "
        f"{sql(exp.Literal.string(' does not convert to ' + ('a time' if 'TIMESTAMP' in c.value or c.absolute_time else 'the column type')))} END"
        for c in cols
        if c.raw is not None
    ]
    return f"concat_ws('; ', {', '.join(parts)})" if parts else "''"


def _has_lists(levels: tuple, scopes: dict) -> bool:
    """Whether the attrs expression of ``levels`` reads types from ``_lt``."""
    s = scopes.get(levels, {"read": set(), "lists": {}})
    return bool(_typed_paths(s["read"], s["lists"]))


def _attr_helpers(levels: tuple, scopes: dict, scope: str) -> str:
    """Select-list items the attrs expression reads: the JSON type of ``scope`` and of each
    path :func:`_typed_paths` names, each computed once per row."""
    s = scopes.get(levels, {"read": set(), "lists": {}})
    lists = _typed_paths(s["read"], s["lists"])
    # the JSON's kind from its first character: no parse (the text is valid JSON already)
    out = (
        f", CASE WHEN {scope} IS NULL THEN 'NULL' WHEN regexp_matches({scope}, '^\\s*\\{{') THEN 'OBJECT' "
        f"WHEN regexp_matches({scope}, '^\\s*\\[') THEN 'ARRAY' ELSE json_type({scope}) END AS _jt"
    )
    if lists:
        kinds = ", ".join(sql(exp.Literal.string(json_path(p))) for p in lists)
        out += f", json_type({scope}, [{kinds}]) AS _lt"
    return out


def _attrs(block: Block, levels: tuple, scopes: dict, scope: str) -> str:
    if not block.attrs:
        return "NULL::VARCHAR"
    s = scopes.get(levels, {"read": set(), "lists": {}})
    if () in s["read"]:  # the item is read whole (``_value``): nothing is left of it
        return "NULL::VARCHAR"
    patched = _patch(s["read"], s["lists"], scope)
    # a list the blocks unnest whole (``from: $[*]``) leaves nothing of its own
    other = "NULL::VARCHAR" if () in s["lists"] else f"({scope})::VARCHAR"
    # the common case costs one key listing: every key read whole, so nothing is left
    # when every field read is a whole top-level key, one key listing tells "nothing left"
    whole = sorted(p[0] for p in s["read"]) if all(len(p) == 1 for p in s["read"]) else []
    obj = f"nullif(({patched})::VARCHAR, '{{}}')"
    if whole:
        keys = ", ".join(sql(exp.Literal.string(k)) for k in whole)
        obj = f"CASE WHEN list_has_all([{keys}], json_keys({scope})) THEN NULL ELSE {obj} END"
    return (
        f"(CASE _jt WHEN 'OBJECT' THEN {obj} WHEN 'ARRAY' THEN {other} "
        f"WHEN 'NULL' THEN NULL ELSE json_object('value', {scope})::VARCHAR END)"
    )


def _attrs_of(block: Block, extra: dict, leftover: str) -> str:
    """The row's attrs: the block's own expression (a JSON object; empty is NULL), or what
    its item leaves unread."""
    if "attrs" in extra:
        return f"nullif(nullif((({extra['attrs']}))::VARCHAR, '{{}}'), 'null')"
    return leftover


def _sessions_block(
    mapping: Mapping, cols: list[Column], extra: dict, scopes: dict, refs: Refs
) -> CompiledBlock:
    block = mapping.sessions
    grouped = bool(mapping.source.get("group_by"))
    if "id" in extra:
        sid = f"(({extra['id']})::VARCHAR)"
    elif grouped:
        sid = "_group"
    elif mapping.source["format"] == "json" and (mapping.source.get("records") or "$") == "$":
        sid = "_stem"
    else:
        sid = "(CASE WHEN _n = 1 THEN _stem ELSE _stem || ':' || _rec_index END)"
    id_line = block.id.line if block.id else block.where_line
    where = f"WHERE ({extra['where']})" if "where" in extra else ""
    rows = ", _rows, _group" if grouped else ""
    base = (
        "SELECT _unit, _file, _stem, _line, _rec_index, _record, _record AS _item, "
        f"NULL::JSON AS _parent, 0 AS _index, NULL::BIGINT AS _parent_index, NULL::VARCHAR AS _key, "
        f"NULL::VARCHAR AS _parent_key, _n{rows} FROM m_recs"
    )
    no_id = sql(
        exp.Literal.string(
            f"sessions.id ({mapping.ref(id_line)}) gave NULL: give every session an id"
        )
    )
    again = sql(
        exp.Literal.string(
            f"sessions.id ({mapping.ref(id_line)}) repeats: an earlier record (this file or "
            "another of the batch) has the same session id, and it landed; make the id unique "
            "(e.g. with the file's folder: regexp_extract(_file, ...))"
        )
    )
    checks = _checks(cols, extra.get("rejects") or [])
    select_cols = "".join(f", {c.value} AS {c.name}" for c in cols)
    slots = "".join(", " + c for c in refs.columns())
    select = (
        f"SELECT _s.* EXCLUDE ({', '.join(['_jt', '_item', '_parent', *(['_lt'] if _has_lists((), scopes) else [])])}){select_cols}, CASE WHEN _session_id IS NULL THEN {no_id} "
        f"WHEN _srep > 1 THEN {again} ELSE {checks} END AS _why, "
        f"{_attrs_of(block, extra, _attrs(block, (), scopes, '_record'))} AS attrs "
        f"FROM (SELECT *, row_number() OVER (PARTITION BY _session_id ORDER BY _unit, _rec_index) AS _srep "
        f"FROM (SELECT *, {sid} AS _session_id{_attr_helpers((), scopes, '_record')} "
        f"FROM (SELECT *{slots} FROM ({base})) {where})) _s"
    )
    return CompiledBlock(block, 0, select, cols)


def _items_relation(
    mapping: Mapping,
    block: Block,
    levels: tuple,
    scopes: dict,
    grouped: bool,
    refs: Refs,
    keep_attrs: bool = True,
) -> str:
    """The items at ``levels`` of every session, each with the fields its blocks read
    (``_fs_item``, ...) and its attrs (``_attrs``)."""
    if not levels:  # the session records, their fields extracted with the sessions' own;
        # their attrs are the session's, not repeated on every such row
        return (
            "SELECT *, _record AS _item, NULL::JSON AS _parent, []::BIGINT[] AS _ord, "
            "NULL::VARCHAR AS _attrs, _unit::BIGINT * 4294967296 + _rec_index AS _rid "
            "FROM m_sessions WHERE _why = ''"
        )
    # the session record's fields, extracted before the items are unnested
    record_slots = "".join(f", {c}" for c in _scoped(refs, "_record").columns())
    carried = "".join(
        f", {slot_column('_record', j)}" for j in (False, True) if ("_record", j) in refs.slots
    )
    rel = (
        "SELECT _unit, _file, _stem, _line, _rec_index, _record, _record AS _item, "
        "NULL::JSON AS _parent, 0 AS _index, NULL::BIGINT AS _parent_index, NULL::VARCHAR AS _key, "
        f"[]::BIGINT[] AS _ord, _session_id{', _rows' if grouped else ''}{record_slots} "
        "FROM m_sessions WHERE _why = ''"
    )
    # the enclosing item travels with its items only where an expression reads it whole;
    # the fields read of it are extracted once, before its items are unnested
    keep_parent = "_parent" in refs.provided
    ancestors = {
        scope: _scoped(refs, scope)
        for scope in sorted(refs.scopes())
        if scope.startswith("_parent") and int(scope[len("_parent") :] or 1) <= len(levels)
    }
    for depth, path in enumerate(levels):
        scope = "_item" if depth else "_record"
        keys = None
        if isinstance(path, Split):
            rel, lst = _split_steps(scope, path, rel)
        elif path == "$rows":
            if not grouped or depth:
                raise MappingError(
                    f"{mapping.ref(block.where_line)}: `from: $rows` needs `source.group_by` "
                    "and comes first"
                )
            lst = "_rows"
        else:
            lst, keys = _level_list(scope, path)
        # the fields read of each enclosing item (parent.x, parent.parent.x) are extracted
        # while it is the item at hand, then carried down with its items
        extract, slots_carried = "", ""
        for scope, sub in ancestors.items():
            up = int(scope[len("_parent") :] or 1)
            at = len(levels) - up
            if depth == at:
                extract += "".join(f", {c}" for c in sub.columns({scope: "_item"}))
            if depth >= at:
                slots_carried += "".join(f", {slot_column(scope, j)}" for _, j in sub.slots)
        parent = "_item AS _parent, " if keep_parent else ""
        if "_record" in refs.provided:
            parent += "_record, "
        key = "unnest(_kl) AS _key" if keys else "NULL::VARCHAR AS _key"
        key_list = f", {keys} AS _kl" if keys else ""
        rel = (
            "SELECT _unit, _file, _stem, _line, _rec_index, _session_id, "
            f"{'_rows, ' if grouped else ''}{parent}_index AS _parent_index, _key AS _parent_key, "
            f"unnest(_l) AS _item, {key}, generate_subscripts(_l, 1) - 1 AS _index, _ord{carried}{slots_carried} "
            f"FROM (SELECT *, {lst} AS _l{key_list}{extract} FROM ({rel}))"
        )
        rel = "SELECT * EXCLUDE (_ord), list_append(_ord, _index) AS _ord FROM (" + rel + ")"
    if levels and not keep_parent:
        rel = f"SELECT *, NULL::JSON AS _parent FROM ({rel})"
    item_slots = "".join(f", {c}" for c in _scoped(refs, "_item").columns())
    if not keep_attrs:  # no block here keeps what is left of its items
        return f"SELECT *{item_slots}, NULL::VARCHAR AS _attrs, row_number() OVER () AS _rid FROM ({rel})"
    attrs = _attrs(block, levels, scopes, "_item")
    helpers = _attr_helpers(levels, scopes, "_item")
    drop = "_jt, _lt" if _has_lists(levels, scopes) else "_jt"
    return (
        f"SELECT * EXCLUDE ({drop}), {attrs} AS _attrs, row_number() OVER () AS _rid "
        f"FROM (SELECT *{item_slots}{helpers} FROM ({rel}))"
    )


def _items_block(
    block: Block,
    n: int,
    cols: list[Column],
    extra: dict,
    items: str,
    number: bool = False,
    ids_may_repeat: bool = True,
) -> CompiledBlock:
    levels = tuple(block.from_paths)
    where = f"WHERE ({extra['where']})" if "where" in extra else ""
    if number:  # its rows' numbers among the table's numbered rows (``_number``)
        items = (
            f"(SELECT _i.*, _n._number FROM (SELECT * FROM {items} {where}) _i LEFT JOIN m_num_{block.table} _n "
            f"ON _n._b = {n} AND _n._rid = _i._rid)"
        )
        where = ""
    id_col = ID_COLUMN.get(block.table)
    id_expr = None
    if id_col:
        id_expr = (
            f"(({extra['id']})::VARCHAR)"
            if "id" in extra
            else f"'{_PREFIX[block.table]}{n}:' || array_to_string(_ord, '.')"
            if levels
            else f"'{_PREFIX[block.table]}{n}'"
        )
    select_cols = [f"{c.value} AS {c.name}" for c in cols if c.name != id_col]
    if id_col:
        select_cols.append(f"{id_expr} AS {id_col}")
    if block.table == "edges":
        select_cols += [
            f"(({extra['src']})::VARCHAR) AS src",
            f"(({extra['dst']})::VARCHAR) AS dst",
        ]
        select_cols.append(f"{sql(exp.Literal.string(block.kind or 'edge'))} AS kind")
        if "level" not in block.columns:
            select_cols.append("'action' AS level")
    attrs = _attrs_of(block, extra, "_attrs" if block.attrs else "NULL::VARCHAR")
    select = (
        f"SELECT _unit, _file, _session_id, _line, _rec_index, _ord, _index, _item, "
        f"{', '.join(select_cols)}{', ' if select_cols else ''}{_checks(cols, extra.get('rejects') or [])} AS _why, "
        f"{attrs} AS attrs FROM {items} {where}"
    )
    # the item's text is what a reject of the row keeps: a row the block rejects, or (where
    # ids can repeat) any row, since which repeat is rejected shows only once all are in.
    # Copying every item's text into the block's table cost a third of it
    raw = "_item" if ids_may_repeat else "CASE WHEN _why <> '' THEN _item END"
    select = f"SELECT * EXCLUDE (_item), ({raw})::VARCHAR AS _raw FROM ({select})"
    return CompiledBlock(block, n, select, cols)


def positional_ids(table: str, blocks: list[Block]) -> bool:
    """Whether ``table``'s ids are unique by construction: made from positions, which carry
    their block's number (no block of ``blocks`` that fills it names an ``id``; edges' ids
    come from their ends)."""
    return table != "edges" and all(
        b.id is None for b in blocks if b.table == table and not b.derive
    )


def _scoped(refs: Refs, scope: str) -> Refs:
    """The part of ``refs`` that reads ``scope``."""
    return Refs(slots={k: v for k, v in refs.slots.items() if k[0] == scope})


def slot_names(refs: Refs) -> list[str]:
    return [slot_column(scope, j) for scope, j in refs.slots]


def check_expressions(mapping: Mapping) -> None:
    """Compile the mapping and prepare every statement against an empty input, so that a
    misspelt function or a type error is found by ``mapping check``, with its line."""
    import duckdb

    plan = compile_mapping(mapping)
    con = duckdb.connect(config={"threads": 1})
    try:
        from graphlake.ingest.mapping.run import register_functions

        register_functions(con)
        con.execute(
            "CREATE TEMP TABLE src (_unit INTEGER, _file VARCHAR, _stem VARCHAR, _line BIGINT, _text VARCHAR)"
        )
        from graphlake.ingest.mapping.run import statements

        for what, stmt in statements(plan, check=True):
            try:
                con.execute(stmt)
            except duckdb.Error as exc:
                raise MappingError(f"{mapping.ref(what[1])}: {what[0]}: {_short(exc)}") from None
    finally:
        con.close()


def _short(exc: Exception) -> str:
    text = str(exc).split("\n")[0]
    return text[:300]
