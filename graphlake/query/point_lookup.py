"""Point lookups by a held table's whole key, answered from an index instead of by DuckDB.

A statement that asks one row by its key (``SELECT * FROM sessions WHERE corpus = 'kolab'
AND session_id = $s``) costs DuckDB about a millisecond however small the table: planning,
binding and starting its pipeline, with the table held in memory and its zone maps skipping
every other block. That is the ceiling of an evaluation harness fetching sessions one by one
over ``/sql`` (about 500 requests a second at 32 clients on 2 cores, at 100,000 sessions). An
index of the held table's rows by key answers the same statement in a few microseconds.

Only what is certainly that lookup takes this path: one SELECT of bare columns (or ``*``) of
one held table (:func:`graphlake.query.catalog.hold_in_memory`), no alias, join, grouping,
ordering or limit, and a WHERE that is nothing but ``key column = 'text'`` or ``= $name`` for
each column of the table's key, exactly once, with text keys and text parameters. Anything
else, and any parameter DuckDB would judge (missing, extra, not text), goes to DuckDB. The
answer is a slice of DuckDB's own Arrow output for the table, so its columns and types are
the ones DuckDB gives the statement (tests/test_point_lookup.py compares them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import sqlglot
from sqlglot import exp

from graphlake.schema import TABLES

#: the arguments a plain SELECT may carry; any other (joins, group, order, limit, ...) set
#: means it is not a point lookup
_PLAIN_SELECT = {"expressions", "from_", "from", "where"}


@dataclass(frozen=True)
class PointPlan:
    """``SELECT columns FROM table WHERE key = value ...``: for each key column, a literal
    text or the name of a parameter."""

    table: str
    columns: tuple[str, ...] | None  # None: every column, as SELECT *
    bindings: tuple[tuple[str, str | None, str | None], ...]  # (column, literal, parameter)

    def key(self, params) -> tuple[str, ...] | None:
        """The key these ``params`` ask for, or None when DuckDB must judge them."""
        names = {p for _, _, p in self.bindings if p is not None}
        given = params or {}
        if not isinstance(given, dict) or set(given) != names:
            return None
        values = []
        for _col, literal, param in self.bindings:
            value = literal if param is None else given[param]
            if not isinstance(value, str):
                return None
            values.append(value)
        return tuple(values)


def plan_of(sql: str, held: frozenset[str]) -> PointPlan | None:
    """The point plan of ``sql`` (as the guard passed it) when it is a lookup by the whole key
    of a held table, else None."""
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except sqlglot.errors.SqlglotError:
        return None
    if not isinstance(tree, exp.Select):
        return None
    if {k for k, v in tree.args.items() if v} - _PLAIN_SELECT:
        return None
    source = tree.args.get("from_") or tree.args.get("from")
    where = tree.args.get("where")
    if source is None or where is None or source.args.get("joins"):
        return None
    table = source.this
    if not isinstance(table, exp.Table) or table.args.get("alias") or table.db or table.catalog:
        return None
    name = table.name
    if name not in held or table.this.quoted or name not in TABLES:
        return None
    spec = TABLES[name]
    columns = _columns(tree.expressions, name, set(spec.schema.names))
    if isinstance(columns, bool):
        return None
    bindings: dict[str, tuple[str | None, str | None]] = {}
    for eq in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        bound = _binding(eq, name)
        if bound is None or bound[0] in bindings:
            return None
        bindings[bound[0]] = bound[1:]
    if set(bindings) != set(spec.key):
        return None
    for col in spec.key:
        if spec.schema.field(col).type != pa.string():
            return None
    return PointPlan(
        name,
        columns,
        tuple((col, *bindings[col]) for col in spec.key),
    )


def _columns(expressions, table: str, known: set[str]) -> tuple[str, ...] | None | bool:
    """The selected column names, None for ``*``, False for anything else."""
    if len(expressions) == 1 and isinstance(expressions[0], exp.Star):
        return None
    names = []
    for e in expressions:
        if not isinstance(e, exp.Column) or e.this.quoted or e.table not in ("", table):
            return False
        if e.name not in known or e.name in names:
            return False
        names.append(e.name)
    return tuple(names)


def _binding(eq, table: str) -> tuple[str, str | None, str | None] | None:
    if not isinstance(eq, exp.EQ):
        return None
    col, value = eq.this, eq.expression
    if not isinstance(col, exp.Column):
        col, value = value, col
    if not isinstance(col, exp.Column) or col.this.quoted or col.table not in ("", table):
        return None
    if isinstance(value, exp.Literal) and value.is_string:
        return col.name, value.this, None
    if isinstance(value, exp.Placeholder) and isinstance(value.this, str) and value.this:
        if value.this.isdigit():
            return None  # positional ($1): DuckDB binds those from a list
        return col.name, None, value.this
    return None


class HeldIndex:
    """One held table's rows as DuckDB gives them (Arrow) and each key's row."""

    def __init__(self, rows: pa.Table, key: tuple[str, ...]):
        self.rows = rows
        cols = [rows.column(k).to_pylist() for k in key]
        self.at: dict[tuple, int] = {}
        for i, k in enumerate(zip(*cols, strict=True)):
            if k in self.at:  # a repeated key: leave the table to DuckDB
                self.at = {}
                self.unique = False
                return
            self.at[k] = i
        self.unique = True

    def answer(self, plan: PointPlan, key: tuple[str, ...]) -> pa.Table:
        i = self.at.get(key)
        rows = self.rows.slice(i, 1) if i is not None else self.rows.slice(0, 0)
        return rows if plan.columns is None else rows.select(list(plan.columns))


class HeldIndexes:
    """The indexes of one catalog's held tables, each built on first use (one scan of the
    held table, through the same view a statement reads)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._built: dict[str, HeldIndex] = {}

    def get(self, table: str, fetch: Callable[[str], pa.Table]) -> HeldIndex | None:
        """``table``'s index (None when its key repeats); ``fetch`` runs SQL, as Arrow."""
        idx = self._built.get(table)
        if idx is None:
            with self._lock:
                idx = self._built.get(table)
                if idx is None:
                    idx = self._built[table] = HeldIndex(
                        fetch(f"SELECT * FROM {table}"), TABLES[table].key
                    )
        return idx if idx.unique else None
