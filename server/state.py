"""What every request reads: the settings, the pinned connection and the protocols over it.
Routers get it with ``Depends(get_state)``; tests build their own with ``create_app``."""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field

import orjson
from fastapi import Request, Response

from graphlake.protocols import Benchmarks
from graphlake.query.connection import Connection
from graphlake.server.errors import BadRequest, CursorConflict
from graphlake.server.settings import Settings


@dataclass
class State:
    settings: Settings
    con: Connection
    bench: Benchmarks
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self) -> bool:
        """Move to the newest lake snapshot (``POST /refresh``): open it beside the current
        one, read it in, then swap; the old snapshot closes a grace period later, after the
        requests still reading it (each bounded by the query time limit) have finished."""
        with self.lock:
            newest = self.con.lake.snapshot(None).lake_version
            if newest == self.con.version:
                return False
            con = Connection(self.con.lake, newest)
            bench = new_benchmarks(self.settings, con)
            if self.settings.preload_rows:
                bench.sessions.preload()
            old, self.con, self.bench = self.con, con, bench
        grace = threading.Timer(max(60.0, 2 * self.settings.query_timeout_s), old.close)
        grace.daemon = True
        grace.start()
        return True


def new_benchmarks(settings: Settings, con: Connection) -> Benchmarks:
    return Benchmarks(con, session_cache=settings.session_cache,
                      preload_rows=settings.preload_rows)


def get_state_now(request: Request) -> State:
    return request.app.state.graphlake


async def get_state(request: Request) -> State:  # async: no thread hop per request
    return request.app.state.graphlake


def json_response(payload, status: int = 200) -> Response:
    """orjson-encoded JSON (datetimes as ISO 8601); the hot paths skip pydantic re-validation
    and declare their model for the OpenAPI schema instead."""
    return Response(orjson.dumps(payload, option=orjson.OPT_NON_STR_KEYS), status_code=status,
                    media_type="application/json")


def encode_cursor(key) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, *, version: int | None = None):
    """The key a cursor holds (None for the first page). Offset cursors carry the lake version
    they were cut on; one from another version is a 409 that says to start over."""
    if not cursor:
        return None
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("cursor is not one this service issued; pass the next_cursor of the "
                         "previous page, or none for the first page") from None
    if version is not None and isinstance(key, dict) and key.get("v") != version:
        raise CursorConflict(f"cursor was issued at lake version {key.get('v')} and the server "
                             f"now reads version {version}; list again from the first page")
    return key
