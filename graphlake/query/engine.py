"""Run guarded SQL against a lake snapshot, with a row cap and a time limit.

``run_sql`` opens a sandboxed :class:`~graphlake.query.connection.Connection`, runs one
statement and closes it: convenient for one-off questions. To ask several, open the connection
once (``graphlake.connect(lake)`` or ``Connection(lake)``); opening is the expensive part::

    from graphlake.query import run_sql
    result = run_sql("SELECT label, count(*) FROM adoptions GROUP BY 1", lake="~/lake")
    result.table            # a pyarrow.Table
"""

from __future__ import annotations

from graphlake.query.connection import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    Connection,
    QueryResult,
    as_lake,
)

__all__ = ["DEFAULT_MAX_ROWS", "DEFAULT_TIMEOUT_S", "QueryResult", "run_sql"]


def run_sql(
    sql: str,
    lake,
    *,
    version: int | None = None,
    params: dict | None = None,
    max_rows: int | None = DEFAULT_MAX_ROWS,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
) -> QueryResult:
    """Check ``sql`` with the guard, then run it on the lake at ``version``.

    ``max_rows`` caps the rows returned (``truncated`` says when the cap cut the result; None
    means no cap); ``timeout_s`` interrupts a query that runs too long.
    """
    with Connection(as_lake(lake), version) as con:
        return con.sql(sql, params, max_rows=max_rows, timeout_s=timeout_s)
