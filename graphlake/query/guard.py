"""sqlglot in front of DuckDB: parse every statement, admit only reads, name unknown things.

The public SQL paths (CLI, later HTTP) run only what passes :func:`check`:

* exactly one statement, and it must be a query (SELECT, set operations, WITH ... SELECT);
* no functions that reach outside the lake (``read_csv``, ``glob``, ``getenv``, ...);
* every table is a lake view or a CTE *visible where it is named* (names resolve by scope, as
  DuckDB resolves them: a CTE named like a file does not cover a reference outside its query),
  every column exists: otherwise a "did you mean" error with the line and column, before DuckDB
  sees anything;
* the statement stays within size, nesting and tree-depth limits (sqlglot recurses while
  parsing and walks ancestors while qualifying, so unbounded input could exhaust the stack or
  take quadratic time), and the guard's own work counts against the caller's time limit.

:func:`transpile` renders the same statement in another dialect (Spark SQL for the
distributed path).
"""

from __future__ import annotations

import difflib
import re
import time

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.qualify import qualify

from graphlake.errors import QueryTimeoutError, SqlError
from graphlake.sandbox import FORBIDDEN_FUNCTIONS
from graphlake.schema.graph_macros import MACROS, TABLE_MACROS

#: Table functions that only compute values (no I/O): DuckDB's and graphlake's graph macros.
SAFE_TABLE_FUNCTIONS = {"range", "generate_series", "unnest", *TABLE_MACROS}
#: Longest statement accepted, in characters. Generated filters longer than this belong in a
#: parameter or a join, not in the SQL text.
MAX_STATEMENT_CHARS = 100_000
#: Deepest nesting of parentheses and CASE ... END accepted (sqlglot's parser recurses about 20
#: Python frames per level and the stack ends near 45).
MAX_NESTING = 32
#: Deepest syntax tree accepted; a chain of thousands of ORs is this deep, and qualifying it is
#: quadratic in its depth. The named queries reach 16.
MAX_TREE_DEPTH = 256
_OPEN = {"L_PAREN", "L_BRACKET", "L_BRACE", "CASE"}
_CLOSE = {"R_PAREN", "R_BRACKET", "R_BRACE", "END"}
_UNRESOLVED = re.compile(r"Column '([^']+)' could not be resolved(?:\. Line: (\d+), Col: (\d+))?")


def suggest(name: str, candidates) -> str:
    """' Did you mean ...?' for the closest candidate, or '' (shared with the pattern
    compiler)."""
    close = difflib.get_close_matches(name.lower(), sorted(set(candidates)), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def check_length(sql: str) -> None:
    """Refuse a statement longer than :data:`MAX_STATEMENT_CHARS`."""
    if len(sql) > MAX_STATEMENT_CHARS:
        raise SqlError(
            f"statement is {len(sql):,} characters; the limit is "
            f"{MAX_STATEMENT_CHARS:,}. Pass long value lists as a parameter "
            "(e.g. WHERE x IN (SELECT unnest($ids))) instead of in the text"
        )


_DUCKDB = sqlglot.Dialect.get_or_raise("duckdb")


def _tokens(sql: str) -> list:
    """The statement's tokens, once it is known not too long or nested too deeply to parse
    safely (checked on the tokens, before the recursive parser sees them)."""
    check_length(sql)
    tokens = _DUCKDB.tokenize(sql)
    depth = deepest = 0
    for token in tokens:
        kind = token.token_type.name
        if kind in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_NESTING:
                    raise SqlError(
                        f"statement nests parentheses/CASE more than {MAX_NESTING} deep (line "
                        f"{token.line}, column {token.col}); flatten it, e.g. with a CTE",
                        line=token.line,
                        col=token.col,
                    )
        elif kind in _CLOSE:
            depth = max(0, depth - 1)
    return tokens


def _tree_depth(tree: exp.Expression) -> int:
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.iter_expressions())
    return deepest


def parse(sql: str) -> exp.Expression:
    """Parse exactly one DuckDB statement or raise :class:`SqlError` with its position."""
    try:
        tokens = _tokens(sql)  # tokenized once: the parser reads the same tokens
        statements = [s for s in _DUCKDB.parser().parse(tokens, sql) if s is not None]
    except ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        raise SqlError(
            f"SQL syntax error: {err.get('description', exc)}"
            f" (line {err.get('line')}, column {err.get('col')})",
            line=err.get("line"),
            col=err.get("col"),
        ) from None
    except TokenError as exc:  # an unterminated string or quoted name, say
        raise SqlError(f"SQL syntax error: {exc}; check for an unclosed quote") from None
    except RecursionError:
        raise SqlError(
            "statement is nested too deeply to parse; flatten it, e.g. with a CTE"
        ) from None
    if len(statements) != 1:
        raise SqlError(
            f"expected exactly one statement, got {len(statements)}; run them one at a time"
        )
    tree = statements[0]
    depth = _tree_depth(tree)
    if depth > MAX_TREE_DEPTH:
        raise SqlError(
            f"statement's syntax tree is {depth} levels deep; the limit is "
            f"{MAX_TREE_DEPTH}. A long chain of OR/AND/|| is this deep: use "
            "x IN (...) or a list parameter instead"
        )
    return tree


def _cte_in_scope(table: exp.Table) -> bool:
    """True when ``table`` names a CTE visible where it stands.

    Walks outwards as DuckDB resolves names: a query's own WITH covers its body and the
    subqueries inside it; inside a CTE's definition only the CTEs before it (and itself, when
    RECURSIVE) are visible. A CTE anywhere else in the statement does not count."""
    name = table.name.lower()
    node = table
    while node.parent is not None:
        parent = node.parent
        if isinstance(parent, exp.With) and isinstance(node, exp.CTE):
            ctes = parent.expressions
            here = next(i for i, cte in enumerate(ctes) if cte is node)
            visible = ctes[: here + 1] if parent.args.get("recursive") else ctes[:here]
            if any(cte.alias_or_name.lower() == name for cte in visible):
                return True
            node = parent.parent if parent.parent is not None else parent  # skip its query
            continue
        if isinstance(parent, exp.Query) and node is not parent.args.get("with_"):
            with_ = parent.args.get("with_")
            if with_ and any(cte.alias_or_name.lower() == name for cte in with_.expressions):
                return True
        node = parent
    return False


def _in_time(deadline: float | None, step: str) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise QueryTimeoutError(
            f"the statement's checks ({step}) ran past the time limit; "
            "simplify the statement or raise the time limit"
        )


def check(
    sql: str, columns: dict[str, list[str]], *, deadline: float | None = None
) -> exp.Expression:
    """Admit ``sql`` if it is a read over known tables and columns; return its parse tree.

    ``columns`` maps every view the caller may read to its column names. ``deadline`` (a
    ``time.monotonic()`` instant) stops the checks with :class:`QueryTimeoutError` once passed,
    so a caller's time limit covers the guard as well as the query."""
    try:
        return _check(sql, columns, deadline)
    except RecursionError:
        raise SqlError(
            "statement is nested too deeply to check; flatten it, e.g. with a CTE"
        ) from None


def _check(sql: str, columns: dict[str, list[str]], deadline: float | None) -> exp.Expression:
    tree = parse(sql)
    _in_time(deadline, "parsing")
    if not isinstance(tree, exp.Query):
        kind = tree.key.upper()
        raise SqlError(
            f"only read statements are allowed here (SELECT, WITH ... SELECT, "
            f"UNION); got {kind}. The lake is written by `graphlake ingest`."
        )
    for fn in tree.find_all(exp.Func):
        name = (fn.name if isinstance(fn, exp.Anonymous) else fn.sql_name()).lower()
        macro = MACROS.get(name) if isinstance(fn, exp.Anonymous) else None
        if macro is not None and len(fn.expressions) != len(macro.params):
            n = len(fn.expressions)
            raise SqlError(
                f"{name}() takes {len(macro.params)} arguments, got {n}: "
                f"{macro.usage} ({macro.doc})"
            )
        if name in FORBIDDEN_FUNCTIONS or isinstance(fn, exp.ReadCSV | exp.ReadParquet):
            raise SqlError(
                f"function {name}() reads outside the lake and is not allowed here; "
                "query the lake views instead (see `graphlake sql --help`)"
            )
    known = {t.lower() for t in columns}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            fn = table.this
            fname = (
                fn.name if isinstance(fn, exp.Anonymous) else getattr(fn, "sql_name", lambda: "")()
            ).lower()
            if fname in SAFE_TABLE_FUNCTIONS or isinstance(fn, exp.Unnest | exp.GenerateSeries):
                continue
            raise SqlError(
                f"table function {fname or fn.sql()!r} is not allowed here."
                f"{suggest(fname, TABLE_MACROS)} The graph functions are "
                f"{', '.join(sorted(TABLE_MACROS))}; otherwise select from the lake views "
                f"({', '.join(sorted(known))})"
            )
        name = table.name.lower()
        if _cte_in_scope(table):
            continue
        if table.db or name not in known:
            full = ".".join(p for p in (table.db, table.name) if p)
            elsewhere = any(c.alias_or_name.lower() == name for c in tree.find_all(exp.CTE))
            hint = (
                " A CTE of that name exists, but not where this reference stands: a WITH "
                "covers only its own query."
                if elsewhere
                else ""
            )
            raise SqlError(
                f"unknown table {full!r}.{hint}{suggest(name, known)} Tables: "
                f"{', '.join(sorted(known))}"
            )
    _in_time(deadline, "names")
    schema = {t: {c: "VARCHAR" for c in cols} for t, cols in columns.items()}
    try:
        qualify(tree.copy(), schema=schema, dialect="duckdb", validate_qualify_columns=True)
    except OptimizeError as exc:
        m = _UNRESOLVED.search(str(exc))
        if m:
            col = m.group(1)
            used = {t.name.lower() for t in tree.find_all(exp.Table)} & known
            pool = [c for t in (used or known) for c in columns[t]]
            line, pos = (int(m.group(2)), int(m.group(3))) if m.group(2) else (None, None)
            where = f" (line {line}, column {pos})" if line else ""
            holders = sorted(t for t in used if col.lower() in {c.lower() for c in columns[t]})
            if len(holders) > 1:  # sqlglot says "could not be resolved" for this too
                who = (
                    f"both {holders[0]} and {holders[1]} have it"
                    if len(holders) == 2
                    else f"{', '.join(holders[:-1])} and {holders[-1]} all have it"
                )
                raise SqlError(
                    f"column {col!r}{where} is ambiguous: {who}. "
                    f"Name the table: {' or '.join(f'{t}.{col}' for t in holders)}",
                    line=line,
                    col=pos,
                ) from None
            raise SqlError(
                f"unknown column {col!r}{where}.{suggest(col, pool)} Columns of "
                f"{', '.join(sorted(used)) or 'the lake'}: "
                f"{', '.join(sorted(set(pool)))}",
                line=line,
                col=pos,
            ) from None
        # anything else sqlglot cannot reason about is left for DuckDB to judge
    _in_time(deadline, "columns")
    return tree


#: Functions whose answer changes from one run to the next over the same lake version: the
#: clock, random numbers and ids, sequences. sqlglot parses some into classes of their own.
VOLATILE_FUNCTIONS = {
    "now",
    "setseed",
    "random_uuid",
    "uuidv4",
    "uuidv7",
    "get_current_time",
    "get_current_timestamp",
    "transaction_timestamp",
    "current_localtime",
    "current_localtimestamp",
    "nextval",
    "currval",
}
_VOLATILE_CLASSES = tuple(
    cls
    for cls in (
        getattr(exp, name, None)
        for name in (
            "Rand",
            "Randn",
            "Uuid",
            "CurrentDate",
            "CurrentTime",
            "CurrentTimestamp",
            "CurrentDatetime",
            "Localtime",
            "Localtimestamp",
            "TableSample",
        )
    )
    if cls is not None
)


def repeatable(tree: exp.Expression) -> bool:
    """True when running the checked statement ``tree`` again on the same lake version gives
    the same answer: no clock, no random numbers or ids, no sampling. Such an answer may be
    kept and handed out again (the service's result cache); DuckDB's order of rows without an
    ORDER BY can differ between runs, but either order is the same answer."""
    for node in tree.walk():
        if isinstance(node, _VOLATILE_CLASSES):
            return False
        if isinstance(node, exp.Anonymous) and node.name.lower() in VOLATILE_FUNCTIONS:
            return False
    return True
