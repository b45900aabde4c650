"""One JSON error shape for every failure: ``{"error": {"status", "code", "message"}}``.

Domain errors map to HTTP statuses here, in one place; the message is the domain error's own
text, which says what to do next.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from graphlake.errors import (
    GraphlakeError,
    LakeVersionError,
    MissingExtraError,
    NamedQueryError,
    QueryTimeoutError,
    SqlError,
)
from graphlake.protocols.spec import ProtocolError

_CODES = {400: "bad_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed",
          408: "timeout", 409: "conflict", 413: "too_large", 416: "range_not_satisfiable",
          422: "invalid_request", 500: "internal", 501: "not_implemented"}


def error_body(status: int, message: str, code: str | None = None) -> dict:
    return {"error": {"status": status, "code": code or _CODES.get(status, "error"),
                      "message": message}}


def error_response(status: int, message: str, code: str | None = None,
                   headers: dict | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, code), status_code=status, headers=headers)


class NotFound(GraphlakeError, LookupError):
    """A session, media file, node or named query the lake does not have."""


class BadRequest(GraphlakeError, ValueError):
    """A request the service understood but cannot answer as asked (bad cursor, empty
    window)."""


class CursorConflict(GraphlakeError, ValueError):
    """A cursor from another lake version."""


def _status(exc: Exception) -> int:
    if isinstance(exc, QueryTimeoutError):
        return 408
    if isinstance(exc, MissingExtraError):
        return 501
    if isinstance(exc, CursorConflict):
        return 409
    if isinstance(exc, NotFound | LookupError | LakeVersionError):
        return 404
    if isinstance(exc, SqlError | NamedQueryError | ProtocolError | ValueError):
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

    @app.exception_handler(GraphlakeError)
    async def _domain(request: Request, exc: GraphlakeError):
        return error_response(_status(exc), str(exc))

    @app.exception_handler(LookupError)
    async def _lookup(request: Request, exc: LookupError):
        return error_response(404, str(exc.args[0]) if exc.args else "not found")
