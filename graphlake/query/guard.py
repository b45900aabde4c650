"""sqlglot in front of DuckDB: parse every statement, admit only reads, name unknown things.

The public SQL paths (CLI, later HTTP) run only what passes :func:`check`:

* exactly one statement, and it must be a query (SELECT, set operations, WITH ... SELECT);
* no functions that reach outside the lake (``read_csv``, ``glob``, ``getenv``, ...);
* every table is a lake view or a CTE, every column exists: otherwise a "did you mean" error
  with the line and column, before DuckDB sees anything.

:func:`transpile` renders the same statement in another dialect (Spark SQL for the
distributed path).
"""

from __future__ import annotations

import difflib
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.qualify import qualify

from graphlake.errors import SqlError
from graphlake.query.graph_macros import TABLE_MACROS

#: Functions that read files, the environment or other databases: never on a public path.
FORBIDDEN_FUNCTIONS = {
    "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json", "read_json_auto",
    "read_json_objects", "read_ndjson", "read_ndjson_auto", "read_ndjson_objects", "read_text",
    "read_blob", "glob", "sniff_csv", "delta_scan", "iceberg_scan", "sqlite_scan",
    "postgres_scan", "mysql_scan", "getenv", "parquet_metadata", "parquet_schema",
    "parquet_file_metadata", "parquet_kv_metadata", "read_xlsx", "query_table", "query",
}
#: Table functions that only compute values (no I/O): DuckDB's and graphlake's graph macros.
SAFE_TABLE_FUNCTIONS = {"range", "generate_series", "unnest", *TABLE_MACROS}
_UNRESOLVED = re.compile(r"Column '([^']+)' could not be resolved(?:\. Line: (\d+), Col: (\d+))?")


def suggest(name: str, candidates) -> str:
    """' Did you mean ...?' for the closest candidate, or '' (shared with the pattern
    compiler)."""
    close = difflib.get_close_matches(name.lower(), sorted(set(candidates)), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def parse(sql: str) -> exp.Expression:
    """Parse exactly one DuckDB statement or raise :class:`SqlError` with its position."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        raise SqlError(f"SQL syntax error: {err.get('description', exc)}"
                       f" (line {err.get('line')}, column {err.get('col')})",
                       line=err.get("line"), col=err.get("col")) from None
    except TokenError as exc:  # an unterminated string or quoted name, say
        raise SqlError(f"SQL syntax error: {exc}; check for an unclosed quote") from None
    if len(statements) != 1:
        raise SqlError(f"expected exactly one statement, got {len(statements)}; run them one "
                       "at a time")
    return statements[0]


def check(sql: str, columns: dict[str, list[str]]) -> exp.Expression:
    """Admit ``sql`` if it is a read over known tables and columns; return its parse tree.

    ``columns`` maps every view the caller may read to its column names.
    """
    tree = parse(sql)
    if not isinstance(tree, exp.Query):
        kind = tree.key.upper()
        raise SqlError(f"only read statements are allowed here (SELECT, WITH ... SELECT, "
                       f"UNION); got {kind}. The lake is written by `graphlake ingest`.")
    for fn in tree.find_all(exp.Func):
        name = (fn.name if isinstance(fn, exp.Anonymous) else fn.sql_name()).lower()
        if name in FORBIDDEN_FUNCTIONS or isinstance(fn, exp.ReadCSV | exp.ReadParquet):
            raise SqlError(f"function {name}() reads outside the lake and is not allowed here; "
                           "query the lake views instead (see `graphlake sql --help`)")
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    known = {t.lower() for t in columns}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            fn = table.this
            fname = (fn.name if isinstance(fn, exp.Anonymous) else
                     getattr(fn, "sql_name", lambda: "")()).lower()
            if fname in SAFE_TABLE_FUNCTIONS or isinstance(fn, exp.Unnest | exp.GenerateSeries):
                continue
            raise SqlError(
                f"table function {fname or fn.sql()!r} is not allowed here."
                f"{suggest(fname, TABLE_MACROS)} The graph functions are "
                f"{', '.join(sorted(TABLE_MACROS))}; otherwise select from the lake views "
                f"({', '.join(sorted(known))})")
        name = table.name.lower()
        if name in ctes:
            continue
        if table.db or name not in known:
            full = ".".join(p for p in (table.db, table.name) if p)
            raise SqlError(f"unknown table {full!r}.{suggest(name, known)} Tables: "
                           f"{', '.join(sorted(known))}")
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
            raise SqlError(f"unknown column {col!r}{where}.{suggest(col, pool)} Columns of "
                           f"{', '.join(sorted(used)) or 'the lake'}: "
                           f"{', '.join(sorted(set(pool)))}", line=line, col=pos) from None
        # anything else sqlglot cannot reason about is left for DuckDB to judge
    return tree


def transpile(sql: str, dialect: str, params: dict | None = None) -> str:
    """The statement rewritten for ``dialect`` (e.g. ``spark``), pretty-printed.

    Patterns are compiled first. For Spark the portable path is used (macros inlined,
    meaning-changing constructs rewritten or refused, ``params`` bound when given)."""
    from graphlake.query.pattern import compile_patterns

    if dialect == "spark":
        from graphlake.query.portable import to_spark

        return to_spark(sql, params, pretty=True)
    try:
        out = sqlglot.transpile(compile_patterns(sql), read="duckdb", write=dialect, pretty=True)
    except ParseError as exc:
        raise SqlError(f"SQL syntax error: {exc}") from None
    except ValueError as exc:  # unknown dialect
        raise SqlError(f"{exc}. Dialects include spark, postgres, bigquery, snowflake, "
                       "trino") from None
    return ";\n".join(out)
