"""POST /sql and the named queries: read-only, sandboxed, row- and time-limited.

JSON by default (``{"columns", "rows", "truncated", "lake_version"}``); send
``Accept: application/vnd.apache.arrow.stream`` for Arrow IPC or
``Accept: application/vnd.apache.parquet`` for Parquet, for large answers.
"""

from __future__ import annotations

import base64
import io
from decimal import Decimal
from typing import Annotated

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from fastapi import APIRouter, Depends, Request, Response

from graphlake import data_cap
from graphlake.query import named
from graphlake.query.connection import RowsResult
from graphlake.query.output import plain_numbers
from graphlake.server.errors import NotFound
from graphlake.server.models import NamedQueryInfo, NamedQueryRequest, SqlRequest, SqlResponse
from graphlake.server.result_cache import CachedAnswer, answer_key
from graphlake.server.sql_pool import ServiceBusyError
from graphlake.server.state import Serving, get_state, json_response

router = APIRouter(tags=["sql"])
StateDep = Annotated[Serving, Depends(get_state)]
ARROW = "application/vnd.apache.arrow.stream"
PARQUET = "application/vnd.apache.parquet"
_BINARY = {200: {"content": {ARROW: {}, PARQUET: {}}}}


def _format(request: Request) -> str:
    accept = request.headers.get("accept", "")
    return "arrow" if ARROW in accept else "parquet" if PARQUET in accept else "json"


def _encode(result, fmt: str) -> CachedAnswer:
    table = plain_numbers(result.table)  # HUGEINT sums as integers in every format
    headers = (
        ("X-Graphlake-Truncated", str(result.truncated).lower()),
        ("X-Graphlake-Lake-Version", str(result.snapshot.lake_version)),
    )
    if fmt == "arrow":
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return CachedAnswer(sink.getvalue(), ARROW, headers)
    if fmt == "parquet":
        sink = io.BytesIO()
        pq.write_table(table, sink)
        return CachedAnswer(sink.getvalue(), PARQUET, headers)
    cols = table.column_names
    data = table.to_pydict()
    rows = [list(r) for r in zip(*(data[c] for c in cols), strict=True)] if cols else []
    body = orjson.dumps(
        {
            "columns": cols,
            "rows": rows,
            "truncated": result.truncated,
            "lake_version": result.snapshot.lake_version,
        },
        option=orjson.OPT_NON_STR_KEYS,
        default=_json_value,
    )
    return CachedAnswer(body, "application/json", headers)


def _json_value(value):
    """What JSON has no type for, as the text a client can read back: a decimal inside a
    list or struct as a number, bytes as base64, an interval as ISO 8601 (``P1M3DT7200S``).
    Without it such a column made the answer a 500."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, pa.MonthDayNano):
        seconds = value.nanoseconds / 1e9
        return f"P{value.months}M{value.days}DT{seconds:g}S"
    raise TypeError(f"{type(value).__name__} has no JSON form")


def _response(cached: CachedAnswer, cache: str | None = None) -> Response:
    headers = dict(cached.headers)
    if cache is not None:
        headers["X-Graphlake-Cache"] = cache
    return Response(cached.body, media_type=cached.media_type, headers=headers)


def _encode_rows(result: RowsResult) -> CachedAnswer:
    """A JSON answer from Python rows (the same body :func:`_encode` makes from Arrow)."""
    headers = (
        ("X-Graphlake-Truncated", str(result.truncated).lower()),
        ("X-Graphlake-Lake-Version", str(result.snapshot.lake_version)),
    )
    body = json_response(
        {
            "columns": result.columns,
            "rows": result.rows,
            "truncated": result.truncated,
            "lake_version": result.snapshot.lake_version,
        }
    ).body
    return CachedAnswer(bytes(body), "application/json", headers)


def _statement(state: Serving, sql: str, params, fmt: str) -> tuple[CachedAnswer, int, bool]:
    """Run in the SQL pool: the encoded answer, the version it read, and whether a repeat
    may be answered from the cache. A JSON answer is made from DuckDB's rows where they hold
    what Arrow would (no Arrow table in between: half a point lookup's time)."""
    s = state.settings
    try:
        # never while a build has the data cap lifted (graphlake.data_cap)
        with data_cap.statement(s.query_timeout_s):
            if fmt == "json":
                result = state.con.sql_rows(
                    sql, params, max_rows=s.max_rows, timeout_s=s.query_timeout_s
                )
            else:
                result = state.con.sql(
                    sql, params, max_rows=s.max_rows, timeout_s=s.query_timeout_s
                )
    except data_cap.BuildUnderWay as exc:
        raise ServiceBusyError(str(exc)) from None
    keep = bool(state.results.max_bytes) and state.con.repeatable(sql)
    encoded = _encode_rows(result) if isinstance(result, RowsResult) else _encode(result, fmt)
    return encoded, result.snapshot.lake_version, keep


async def _in_pool(request: Request, state: Serving, sql: str, params) -> Response:
    """Answer from this version's result cache (server/result_cache.py) when the same
    statement was answered before, else run it in the server's SQL pool (server/sql_pool.py),
    never in the thread pool the other routes share."""
    fmt, max_rows = _format(request), state.settings.max_rows
    cached = state.results.get(answer_key(state.con.version, sql, params, max_rows, fmt))
    if cached is not None:
        return _response(cached, "hit")
    pool = request.app.state.sql_pool
    encoded, version, keep = await pool.run(
        _statement, state, sql, params, fmt, timeout_s=state.settings.query_timeout_s
    )
    if keep:
        state.results.put(answer_key(version, sql, params, max_rows, fmt), encoded)
    return _response(encoded, "miss" if keep else "off")


@router.post("/sql", response_model=SqlResponse, responses=_BINARY)
async def run_sql(request: Request, state: StateDep, body: SqlRequest):
    """Run one read-only statement over the lake views, with bound ``params``. Writes, file
    access and other databases are refused (400); answers stop at the server's row limit
    (``truncated``) and statements at its time limit (408); when every SQL slot is taken the
    answer is 503 with ``Retry-After``."""
    return await _in_pool(request, state, body.sql, body.params)


def _info(q) -> dict:
    return {
        "name": q.name,
        "title": q.title,
        "description": q.description,
        "params": [
            {
                "name": p.name,
                "type": p.type,
                "required": p.required,
                "default": p.default,
                "doc": p.doc,
            }
            for p in q.params
        ],
        "chart": q.chart,
    }


@router.get("/queries", response_model=list[NamedQueryInfo], tags=["queries"])
def list_queries():
    """The named queries shipped in queries/, with their typed parameters."""
    return [_info(q) for q in named.load_all().values()]


def _named(name: str):
    queries = named.load_all()
    if name not in queries:
        raise NotFound(f"no named query {name!r}; the queries are {', '.join(queries)}")
    return queries[name]


@router.get("/queries/{name}", response_model=NamedQueryInfo, tags=["queries"])
def get_query(name: str):
    return _info(_named(name))


@router.post("/queries/{name}", response_model=SqlResponse, responses=_BINARY, tags=["queries"])
async def run_query(
    request: Request, state: StateDep, name: str, body: NamedQueryRequest | None = None
):
    """Run a named query; ``params`` are checked against its declared types."""
    q = _named(name)
    given = {
        k: (None if v is None else str(v))
        for k, v in ((body.params if body else None) or {}).items()
    }
    return await _in_pool(request, state, q.sql, q.bind(given))
