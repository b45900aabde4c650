"""A statement rewritten for another SQL dialect: the layer above the guard and the pattern
compiler (it uses both; neither imports it)."""

from __future__ import annotations

import sqlglot
from sqlglot.errors import ParseError

from graphlake.errors import SqlError
from graphlake.query.pattern import compile_patterns
from graphlake.query.portable import to_spark


def transpile(sql: str, dialect: str, params: dict | None = None) -> str:
    """The statement rewritten for ``dialect`` (e.g. ``spark``), pretty-printed.

    Patterns are compiled first. For Spark the portable path is used (macros inlined,
    meaning-changing constructs rewritten or refused, ``params`` bound when given)."""
    if dialect == "spark":
        return to_spark(sql, params, pretty=True)
    try:
        out = sqlglot.transpile(compile_patterns(sql), read="duckdb", write=dialect, pretty=True)
    except ParseError as exc:
        raise SqlError(f"SQL syntax error: {exc}") from None
    except ValueError as exc:  # unknown dialect
        raise SqlError(
            f"{exc}. Dialects include spark, postgres, bigquery, snowflake, trino"
        ) from None
    return ";\n".join(out)
