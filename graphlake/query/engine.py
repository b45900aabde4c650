"""Run guarded SQL against a lake snapshot, with a row cap and a time limit.

This is the Python API behind ``graphlake sql`` and ``graphlake query run``::

    from graphlake.query import run_sql
    result = run_sql("SELECT label, count(*) FROM adoptions GROUP BY 1", lake="~/lake")
    result.table            # a pyarrow.Table
    result.table.to_pandas()
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from graphlake.errors import QueryTimeoutError, SqlError
from graphlake.lake import Lake, Snapshot
from graphlake.query.catalog import open_catalog
from graphlake.query.guard import check
from graphlake.query.pattern import compile_patterns

DEFAULT_MAX_ROWS = 100_000
DEFAULT_TIMEOUT_S = 300.0


@dataclass
class QueryResult:
    table: pa.Table
    truncated: bool
    snapshot: Snapshot


def _as_lake(lake) -> Lake:
    return lake if isinstance(lake, Lake) else Lake(os.fspath(lake))


def run_sql(sql: str, lake, *, version: int | None = None, params: dict | None = None,
            max_rows: int | None = DEFAULT_MAX_ROWS,
            timeout_s: float | None = DEFAULT_TIMEOUT_S) -> QueryResult:
    """Check ``sql`` with the guard, then run it on the lake at ``version``.

    ``max_rows`` caps the rows returned (``truncated`` says when the cap cut the result; None
    means no cap); ``timeout_s`` interrupts a query that runs too long.
    """
    sql = compile_patterns(sql)
    cat = open_catalog(_as_lake(lake), version)
    try:
        check(sql, cat.columns)
        return _execute(cat, sql, params, max_rows, timeout_s)
    finally:
        cat.close()


def _execute(cat, sql, params, max_rows, timeout_s) -> QueryResult:
    timer = None
    timed_out = threading.Event()
    if timeout_s:
        def _interrupt():
            timed_out.set()
            cat.con.interrupt()

        timer = threading.Timer(timeout_s, _interrupt)
        timer.daemon = True
        timer.start()
    try:
        rel = cat.con.sql(sql, params=params or None)
        if rel is None:
            raise SqlError("the statement returned no result set")
        reader = rel.to_arrow_reader(65_536)
        batches, rows, truncated = [], 0, False
        for batch in reader:
            if max_rows is not None and rows + batch.num_rows > max_rows:
                batches.append(batch.slice(0, max_rows - rows))
                truncated = True
                break
            batches.append(batch)
            rows += batch.num_rows
        table = pa.Table.from_batches(batches, schema=reader.schema)
    except duckdb.InterruptException:
        if timed_out.is_set():
            raise QueryTimeoutError(f"query ran past its {timeout_s:g} s limit and was stopped; "
                                    "narrow it (WHERE, LIMIT) or raise --timeout") from None
        raise
    except duckdb.Error as exc:
        raise SqlError(f"DuckDB: {exc}") from None
    finally:
        if timer:
            timer.cancel()
    return QueryResult(table, truncated, cat.snapshot)
