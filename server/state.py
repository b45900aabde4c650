"""What every request reads: the settings, the pinned connection and the protocols over it.
Routers get it with ``Depends(get_state)``; tests build their own with ``create_app``."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import orjson
from fastapi import Request, Response

from graphlake.protocols import Benchmarks
from graphlake.query.connection import Connection
from graphlake.server.settings import Settings


@dataclass(frozen=True)
class Serving:
    """What one request reads: the settings, one pinned connection and the protocols over
    it. A request takes it once, so every answer it gives comes from one lake version."""

    settings: Settings
    con: Connection
    bench: Benchmarks


class State:
    """The server's one mutable cell: the :class:`Serving` requests start with, replaced by
    ``refresh`` in one assignment."""

    def __init__(self, settings: Settings, con: Connection, bench: Benchmarks):
        self.settings = settings
        self.current = Serving(settings, con, bench)
        self._lock = threading.Lock()

    def refresh(self) -> bool:
        """Move to the newest lake snapshot (``POST /refresh``): open it beside the current
        one, read it in, then swap. Requests that started on the old one finish on it: the
        old connection stops taking new statements a grace period later (requests are bounded
        by the query time limit), and its catalog closes after its last statement."""
        with self._lock:
            old = self.current
            newest = old.con.lake.snapshot(None).lake_version
            if newest == old.con.version:
                return False
            con = Connection(old.con.lake, newest)
            bench = new_benchmarks(self.settings, con)
            if self.settings.preload_rows:
                bench.sessions.preload()
            self.current = Serving(self.settings, con, bench)
        grace = threading.Timer(max(60.0, 2 * self.settings.query_timeout_s), old.con.close)
        grace.daemon = True
        grace.start()
        return True


def new_benchmarks(settings: Settings, con: Connection) -> Benchmarks:
    return Benchmarks(
        con,
        session_cache=settings.session_cache,
        preload_rows=settings.preload_rows,
        index_timeout_s=settings.query_timeout_s,
    )


def get_state_now(request: Request) -> Serving:
    """The snapshot this request reads (for handlers that skip dependency injection)."""
    return request.app.state.graphlake.current


async def get_state(request: Request) -> Serving:  # async: no thread hop per request
    return request.app.state.graphlake.current


async def get_server_state(request: Request) -> State:
    """The server's state itself: only ``POST /refresh`` needs it."""
    return request.app.state.graphlake


def json_response(payload, status: int = 200) -> Response:
    """orjson-encoded JSON (datetimes as ISO 8601); the hot paths skip pydantic re-validation
    and declare their model for the OpenAPI schema instead."""
    return Response(
        orjson.dumps(payload, option=orjson.OPT_NON_STR_KEYS),
        status_code=status,
        media_type="application/json",
    )
