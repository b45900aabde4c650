"""Portable SQL: one DuckDB-dialect statement, checked and rewritten so Spark gives the same
answer, not merely an answer.

sqlglot's DuckDB -> Spark translation is best effort: some constructs it cannot express and
some it rewrites into something that runs but means otherwise (``list(x ORDER BY y)`` becomes
``collect_list(x)`` and loses its order; ``epoch(x)`` becomes ``unix_timestamp``, which drops
fractions of a second). :func:`lint` names such constructs with
their line, and :func:`to_spark` applies the rewrites graphlake knows to be exact before
handing the tree to sqlglot's Spark generator:

* GRAPH_TABLE patterns are compiled and graph macros inlined (Spark has no macros);
* ``$name`` parameters become literals;
* ``percentile_cont`` (which sqlglot turns into ``percentile_approx``) becomes Spark's exact
  ``percentile``, and decimal literals become DOUBLE, as DuckDB computes with them;
* ordered list aggregation becomes ``transform(array_sort(collect_list(struct(key IS NULL,
  key, value))), e -> e.value)``, and ``list(DISTINCT x ORDER BY x)`` becomes
  ``array_sort(collect_set(x))`` with one NULL appended when the group had one (NULLs sort
  last and survive DISTINCT in DuckDB).

(Write list lengths as ``array_length(x)``: DuckDB's ``len`` parses like ``length``, which
Spark reserves for text and refuses on arrays: loudly, so the conformance test would say.)

What is left after those rewrites and still unsafe is an error that names the construct, so
no query silently changes meaning on the way to Spark.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from graphlake.errors import SqlError
from graphlake.query.pattern import compile_patterns
from graphlake.schema.graph_macros import expand_macros


@dataclass(frozen=True)
class Finding:
    """One construct that does not carry over to Spark as written."""

    construct: str
    line: int | None
    reason: str
    rewritten: bool  # True: to_spark rewrites it exactly; False: the query cannot go to Spark

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        verdict = "rewritten for Spark" if self.rewritten else "not portable"
        return f"{where}{self.construct}: {self.reason} ({verdict})"


def _line(node: exp.Expression, text: str) -> int | None:
    """The line of ``node`` in ``text``, from token offsets (sqlglot's own line numbers
    drift after multi-line comments)."""
    starts = [
        n._meta["start"] for n in node.walk() if getattr(n, "_meta", None) and "start" in n._meta
    ]
    return text.count("\n", 0, min(starts)) + 1 if starts else None


def _ordered_agg(node: exp.Expression) -> tuple[exp.Expression, list[exp.Ordered], bool] | None:
    """(value, order keys, distinct) when ``node`` is list/array_agg(... ORDER BY ...)."""
    if not isinstance(node, exp.ArrayAgg):
        return None
    inner = node.this
    if not isinstance(inner, exp.Order):
        return None
    value, distinct = inner.this, False
    if isinstance(value, exp.Distinct):
        value, distinct = value.expressions[0], True
    return value, list(inner.expressions), distinct


#: Constructs sqlglot translates into something that runs on Spark but answers differently.
_MISREAD: dict[type, tuple[str, str]] = {
    exp.TimeToUnix: (
        "epoch()",
        "Spark's unix_timestamp drops fractions of a second and does "
        "not take an interval; subtract DOUBLE seconds instead",
    ),
    exp.TimeToStr: ("strftime()", "format codes differ (%Y in DuckDB, yyyy in Spark)"),
    exp.StrToTime: ("strptime()", "format codes differ (%Y in DuckDB, yyyy in Spark)"),
}


#: Functions Spark does not have at all.
_MISSING_IN_SPARK = {
    "lgamma": "Spark has no log-gamma function",
}


def _name(node: exp.Expression) -> str:
    return (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()


def lint(sql: str) -> list[Finding]:
    """Every construct in ``sql`` (DuckDB dialect) that Spark would reject or misread."""
    return _lint(*_compiled(sql))


def _compiled(sql: str) -> tuple[exp.Expression, str]:
    """The statement with its patterns compiled, parsed once, and the compiled text."""
    text = compile_patterns(sql)
    return sqlglot.parse_one(text, read="duckdb"), text


def _lint(tree: exp.Expression, text: str) -> list[Finding]:
    out: list[Finding] = []
    for node in tree.walk():
        if isinstance(node, exp.Join) and str(node.args.get("method") or "").upper() == "ASOF":
            out.append(Finding("ASOF JOIN", _line(node, text), "Spark has no as-of join", False))
        elif isinstance(node, exp.Unnest) and node.args.get("offset"):
            out.append(
                Finding(
                    "WITH ORDINALITY",
                    _line(node, text),
                    "Spark numbers exploded rows with posexplode, 0-based",
                    False,
                )
            )
        elif isinstance(node, exp.PercentileCont):
            out.append(
                Finding(
                    "percentile_cont()",
                    _line(node, text),
                    "sqlglot renders it as percentile_approx, an approximation",
                    True,
                )
            )
        elif _ordered_agg(node):
            out.append(
                Finding(
                    "ordered list aggregation",
                    _line(node, text),
                    "sqlglot renders it as collect_list, which drops the ORDER BY",
                    True,
                )
            )
        elif isinstance(node, exp.Func) and _name(node) in _MISSING_IN_SPARK:
            name = _name(node)
            out.append(Finding(f"{name}()", _line(node, text), _MISSING_IN_SPARK[name], False))
        elif type(node) in _MISREAD:
            construct, reason = _MISREAD[type(node)]
            out.append(Finding(construct, _line(node, text), reason, False))
    return list(dict.fromkeys(out))  # one finding per construct and line


def _literal(value) -> exp.Expression:
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


def _percentile(value: exp.Expression, q: exp.Expression, desc: bool) -> exp.Expression:
    if desc:
        q = exp.Sub(this=exp.Literal.number(1), expression=q.copy())
    return exp.Anonymous(this="percentile", expressions=[value.copy(), q.copy()])


def _rewrite(node: exp.Expression) -> exp.Expression:
    # exact percentiles: Spark's percentile() interpolates like percentile_cont
    if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileCont):
        (key,) = node.expression.expressions
        return _percentile(key.this, node.this.this, bool(key.args.get("desc")))
    if isinstance(node, exp.PercentileCont) and node.expression is not None:
        return _percentile(node.this, node.expression, False)
    # DuckDB computes with DOUBLE where Spark keeps DECIMAL literals exact and then rounds
    # or truncates differently (avg(1.0) gives 5 decimals): make such literals DOUBLE
    if isinstance(node, exp.Literal) and not node.is_string and any(c in node.this for c in ".eE"):
        return exp.Cast(this=node.copy(), to=exp.DataType.build("DOUBLE"))
    agg = _ordered_agg(node)
    if agg:
        value, keys, distinct = agg
        if distinct:
            if len(keys) != 1 or keys[0].this != value or keys[0].args.get("desc"):
                raise SqlError(
                    "list(DISTINCT x ORDER BY y) with y other than x has no exact "
                    "Spark form; order by the value itself or drop DISTINCT"
                )
            # collect_set drops NULL, which DuckDB keeps (once, last): put it back
            null_once = sqlglot.parse_one(
                "transform(slice(filter(collect_list(struct(x AS v)), e -> e.v IS NULL), 1, 1),"
                " e -> e.v)",
                read="spark",
            ).transform(
                lambda n: value.copy() if isinstance(n, exp.Column) and n.name == "x" else n
            )
            return exp.Anonymous(
                this="concat",
                expressions=[
                    exp.Anonymous(
                        this="array_sort",
                        expressions=[exp.Anonymous(this="collect_set", expressions=[value])],
                    ),
                    null_once,
                ],
            )
        if any(k.args.get("desc") for k in keys):
            raise SqlError(
                "list(... ORDER BY ... DESC) has no exact Spark form yet; order "
                "ascending and reverse() the list"
            )
        # DuckDB sorts NULL keys last; Spark orders a struct's NULL fields first
        fields = []
        for i, k in enumerate(keys):
            fields.append(exp.alias_(exp.Is(this=k.this.copy(), expression=exp.Null()), f"n{i}"))
            fields.append(exp.alias_(k.this.copy(), f"k{i}"))
        fields.append(exp.alias_(value.copy(), "v"))
        sorted_list = exp.Anonymous(
            this="array_sort",
            expressions=[
                exp.Anonymous(
                    this="collect_list",
                    expressions=[exp.Anonymous(this="struct", expressions=fields)],
                )
            ],
        )
        lam = exp.Lambda(
            this=exp.Dot(this=exp.column("e"), expression=exp.to_identifier("v")),
            expressions=[exp.to_identifier("e")],
        )
        return exp.Anonymous(this="transform", expressions=[sorted_list, lam])
    return node


def to_spark(sql: str, params: dict | None = None, *, pretty: bool = False) -> str:
    """``sql`` (DuckDB dialect, may hold patterns, macros and ``$params``) as Spark SQL.

    ``params`` are bound as literals; when None, placeholders stay as Spark's ``:name``.
    Raises :class:`SqlError` naming every construct that is not portable.
    """
    tree, text = _compiled(sql)
    blocking = [f for f in _lint(tree, text) if not f.rewritten]
    if blocking:
        raise SqlError("not portable to Spark: " + "; ".join(map(str, blocking)))
    tree = expand_macros(tree)

    def bind(node):
        if params is not None and isinstance(node, exp.Placeholder) and node.name:
            if node.name not in params:
                raise SqlError(f"parameter ${node.name} has no value")
            return _literal(params[node.name])
        return node

    tree = tree.transform(bind).transform(_rewrite, copy=False)
    return tree.sql("spark", pretty=pretty)


def comparable_rows(table) -> list[tuple]:
    """Rows of an Arrow table in a form two engines can be compared on: sorted, floats to
    9 significant digits, lists as tuples, times as UTC ISO text."""
    import datetime as dt
    import decimal
    import math

    def norm(v):
        if isinstance(v, float | decimal.Decimal):
            v = float(v)
            return None if math.isnan(v) else float(f"{v:.9g}")
        if isinstance(v, list):
            return tuple(norm(x) for x in v)
        if isinstance(v, dict):
            return tuple(sorted((k, norm(x)) for k, x in v.items()))
        if isinstance(v, dt.datetime):
            return (v if v.tzinfo else v.replace(tzinfo=dt.UTC)).astimezone(dt.UTC).isoformat()
        return v

    rows = [tuple(norm(v) for v in r.values()) for r in table.to_pylist()]
    return sorted(rows, key=repr)
