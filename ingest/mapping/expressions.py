"""Mapping expressions: DuckDB SQL whose bare names are fields of the record at hand.

An expression is parsed by sqlglot and rewritten tree to tree: ``info.exit_status`` becomes
``json_extract_string(_item, '$."info"."exit_status"')``, ``session.x`` reads the session
record, ``parent.x`` the enclosing item, and ``raw(x)`` keeps the JSON value
(``json_extract``) instead of its text. Field access is DuckDB's own JSON functions (yyjson in
C++), so nothing here walks a record in Python. Which fields an expression reads is known from
the tree, so the fields nobody reads can go to ``attrs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

#: Names an expression may use as they are (columns of the relation the block reads)
PROVIDED = frozenset(
    {
        "_index",
        "_parent_index",
        "_line",
        "_file",
        "_stem",
        "_session_id",
        "_item",
        "_parent",
        "_record",
        "_rec_index",
        "_key",
        "_parent_key",
        "_number",
        "_ord",
    }
)
#: What the first part of a dotted name refers to
SCOPES = {"session": "_record", "parent": "_parent"}


class ExpressionError(ValueError):
    """An expression that does not parse or names something it cannot."""


@dataclass
class Refs:
    """The field paths an expression reads, per scope (``_item``, ``_record``, ``_parent``)."""

    paths: dict[str, set[tuple[str, ...]]] = field(default_factory=dict)
    #: (scope, as JSON) -> the paths read there, in slot order: every field of a scope is
    #: extracted in one call (one parse of the JSON for all the block's columns)
    slots: dict[tuple[str, bool], list[tuple[str, ...]]] = field(default_factory=dict)
    #: provided names used as they are (``_parent``, ``_record``, ...)
    provided: set[str] = field(default_factory=set)

    def add(self, scope: str, path: tuple[str, ...]) -> None:
        self.paths.setdefault(scope, set()).add(path)

    def slot(self, scope: str, path: tuple[str, ...], as_json: bool) -> int:
        """The 1-based position of ``path`` in the scope's extracted list."""
        self.add(scope, path)
        paths = self.slots.setdefault((scope, as_json), [])
        if path not in paths:
            paths.append(path)
        return paths.index(path) + 1

    def columns(self, source: dict[str, str] | None = None) -> list[str]:
        """The select-list items that extract every slot: ``json_extract_string(_item,
        ['$.a', '$.b']) AS _fs_item``; ``source`` renames the JSON column a scope reads."""
        out = []
        for (scope, as_json), paths in self.slots.items():
            fn = "json_extract" if as_json else "json_extract_string"
            col = (source or {}).get(scope, scope)
            lst = ", ".join(sql(exp.Literal.string(json_path(p))) for p in paths)
            out.append(f"{fn}({col}, [{lst}]) AS {slot_column(scope, as_json)}")
        return out

    def scopes(self) -> set[str]:
        return {scope for scope, _ in self.slots}


def slot_column(scope: str, as_json: bool) -> str:
    return f"_f{'j' if as_json else 's'}{scope}"


def json_path(parts: tuple[str, ...]) -> str:
    """``('info', 'exit status')`` as ``$."info"."exit status"`` (every key quoted)."""
    return "$" + "".join('."' + p.replace('"', '\\"') + '"' for p in parts)


def _parts(node: exp.Expression) -> list[str] | None:
    """The dotted name a Column or a Dot chain spells, or None for anything else."""
    if isinstance(node, exp.Column):
        return [p.name for p in node.parts]
    if isinstance(node, exp.Dot):
        left = _parts(node.this)
        if left is None or not isinstance(node.expression, exp.Identifier):
            return None
        return [*left, node.expression.name]
    return None


def _field(parts: list[str], refs: Refs, as_json: bool) -> exp.Expression:
    if parts == ["_value"]:  # the item itself: a string as it is, anything else as JSON
        parts = []
    elif len(parts) == 1 and parts[0] in PROVIDED:
        refs.provided.add(parts[0])
        return exp.column(parts[0])
    scope = "_item"
    if len(parts) > 1 and parts[0] == "parent":  # parent.x, parent.parent.x: items above
        up = 0
        while len(parts) > 1 and parts[0] == "parent":
            up, parts = up + 1, parts[1:]
        scope = "_parent" if up == 1 else f"_parent{up}"
    elif len(parts) > 1 and parts[0] in SCOPES:
        scope, parts = SCOPES[parts[0]], parts[1:]
    k = refs.slot(scope, tuple(parts), as_json)
    return exp.Anonymous(
        this="list_extract",
        expressions=[exp.column(slot_column(scope, as_json)), exp.Literal.number(k)],
    )


def _rewrite(
    node: exp.Expression, refs: Refs, as_json: bool = False, bound: frozenset[str] = frozenset()
) -> exp.Expression:
    parts = _parts(node)
    if parts is not None:
        if parts[0] in bound:  # a lambda's parameter (``x -> x > 0``), not a field
            return node
        return _field(parts, refs, as_json)
    if isinstance(node, exp.Lambda):
        names = bound | {e.name for e in node.expressions}
        node.set("this", _rewrite(node.this, refs, as_json, frozenset(names)))
        return node
    if isinstance(node, exp.Anonymous) and node.name.lower() == "raw":
        if len(node.expressions) != 1 or _parts(node.expressions[0]) is None:
            raise ExpressionError("raw() takes one field name, e.g. raw(tool_calls)")
        return _field(_parts(node.expressions[0]) or [], refs, True)
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, _rewrite(value, refs, as_json, bound))
        elif isinstance(value, list):
            node.set(
                key,
                [
                    _rewrite(v, refs, as_json, bound) if isinstance(v, exp.Expression) else v
                    for v in value
                ],
            )
    return node


def compile_expression(
    text: str | int | float | bool,
    refs: Refs | None = None,
    *,
    plain: bool = False,
    as_json: bool = False,
) -> exp.Expression:
    """The sqlglot tree of a mapping expression, its field names turned into JSON access
    (``plain``: names are columns of a derived relation, left as they are). Numbers and
    booleans written in YAML are literals."""
    refs = refs if refs is not None else Refs()
    if isinstance(text, bool):
        return exp.Boolean(this=text)
    if isinstance(text, int | float):
        return exp.Literal.number(text)
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        first = exc.errors[0]["description"] if exc.errors else str(exc)
        raise ExpressionError(f"{text!r} is not a SQL expression ({first})") from None
    if isinstance(tree, exp.Select | exp.Union | exp.Insert | exp.Command | exp.Create):
        raise ExpressionError(f"{text!r} is a statement; a column takes an expression")
    if any(isinstance(n, exp.Subquery | exp.Select) for n in tree.walk()):
        raise ExpressionError(f"{text!r} holds a subquery; a column reads its own record only")
    if not isinstance(tree, exp.Expression):
        raise ExpressionError(f"{text!r} is not a SQL expression")
    return tree if plain else _rewrite(tree, refs, as_json)


def template(text: str, refs: Refs) -> exp.Expression:
    """A reason text in which each ``{expression}`` is replaced by its value, as one SQL
    concatenation (``line {_line}: ...`` -> ``'line ' || _line || ': ...'``)."""
    import re

    parts: list[exp.Expression] = []
    pos = 0
    for m in re.finditer(r"\{([^{}]+)\}", text):
        if m.start() > pos:
            parts.append(exp.Literal.string(text[pos : m.start()]))
        value = exp.cast(compile_expression(m.group(1), refs), "VARCHAR")
        parts.append(exp.Coalesce(this=value, expressions=[exp.Literal.string("")]))
        pos = m.end()
    if pos < len(text) or not parts:
        parts.append(exp.Literal.string(text[pos:]))
    out: exp.Expression = parts[0]
    for p in parts[1:]:
        out = exp.DPipe(this=out, expression=p, safe=True)
    return out


def sql(tree: exp.Expression) -> str:
    return tree.sql(dialect="duckdb")
