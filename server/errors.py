"""One JSON error shape for every failure: ``{"error": {"status", "code", "message"}}``.

Domain errors map to HTTP statuses here, in one place; the message is the domain error's own
text, which says what to do next.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from graphlake.cursors import CursorError, StaleCursorError
from graphlake.errors import (
    GraphlakeError,
    LakeVersionError,
    MissingExtraError,
    NamedQueryError,
    NotFoundError,
    QueryMemoryError,
    QueryTimeoutError,
    SnapshotGoneError,
    SqlError,
    UnknownCorpusError,
)
from graphlake.protocols.spec import ProtocolError
from graphlake.server.sql_pool import ServiceBusyError

log = logging.getLogger("graphlake.server")

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "read_only",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",
    409: "conflict",
    413: "too_large",
    416: "range_not_satisfiable",
    422: "invalid_request",
    500: "internal",
    501: "not_implemented",
    503: "busy",
}


def error_body(status: int, message: str, code: str | None = None) -> dict:
    return {
        "error": {"status": status, "code": code or _CODES.get(status, "error"), "message": message}
    }


def error_response(
    status: int, message: str, code: str | None = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(status, message, code), status_code=status, headers=headers)


#: A session, media file, node or named query the lake does not have (404).
NotFound = NotFoundError


class BadRequest(GraphlakeError, ValueError):
    """A request the service understood but cannot answer as asked (empty window, a body that
    is not a picture)."""


class ReadOnly(GraphlakeError, PermissionError):
    """A request that would write to the lake, to a service started without
    ``--allow-writes`` (403)."""


def _status(exc: GraphlakeError) -> int:
    """The HTTP status of a domain error. Only errors graphlake raises on purpose get here: a
    bare ``KeyError`` or ``LookupError`` from a bug is a 500, never a 404."""
    if isinstance(exc, QueryTimeoutError):
        return 408
    if isinstance(exc, ReadOnly):
        return 403
    if isinstance(exc, MissingExtraError):
        return 501
    if isinstance(exc, ServiceBusyError | SnapshotGoneError):
        return 503
    if isinstance(exc, StaleCursorError):
        return 409
    if isinstance(exc, NotFoundError | LakeVersionError | UnknownCorpusError):
        return 404
    if isinstance(exc, SqlError | NamedQueryError | ProtocolError | CursorError | ValueError):
        return 400
    return 500


def install(app: FastAPI) -> None:
    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException):
        return error_response(exc.status_code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        parts = []
        for e in exc.errors():
            where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
            parts.append(f"{where}: {e.get('msg')}")
        return error_response(422, "invalid request: " + "; ".join(parts))

    @app.exception_handler(SnapshotGoneError)
    async def _gone(request: Request, exc: SnapshotGoneError):
        """A vacuum deleted the served version's files while this request read them: move
        the service to the newest version now (the next request would anyway) and say so."""
        from starlette.concurrency import run_in_threadpool

        state = request.app.state.graphlake
        await run_in_threadpool(state.refresh)
        return error_response(
            503,
            f"{exc}. This server now serves lake version {state.current.con.version}: "
            "send the request again",
            "lake_moved",
            headers={"Retry-After": "0"},
        )

    @app.exception_handler(GraphlakeError)
    async def _domain(request: Request, exc: GraphlakeError):
        status = _status(exc)
        if status == 500:
            log.error(
                "unmapped domain error on %s %s", request.method, request.url.path, exc_info=exc
            )
        code = (
            "stale_cursor"
            if isinstance(exc, StaleCursorError)
            else "bad_cursor"
            if isinstance(exc, CursorError)
            else "memory_limit"
            if isinstance(exc, QueryMemoryError)
            else None
        )
        headers = {"Retry-After": "1"} if status == 503 else None
        return error_response(status, str(exc), code, headers=headers)

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception):
        # Starlette calls this from its outermost middleware for anything unhandled: the
        # client gets the one error shape, the log gets the traceback.
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(
            500,
            "internal error: the server logged the traceback; please "
            "report it with the request that caused it",
        )
