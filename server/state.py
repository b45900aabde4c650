"""What every request reads: the settings, the pinned connection and the protocols over it.
Routers get it with ``Depends(get_state)``; tests build their own with ``create_app``."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool

from graphlake.protocols import Benchmarks
from graphlake.query.connection import Connection
from graphlake.server.clips import ClipCache
from graphlake.server.result_cache import ResultCache
from graphlake.server.session_index import SessionIndex
from graphlake.server.settings import Settings

log = logging.getLogger("graphlake.server")


@dataclass(frozen=True)
class Serving:
    """What one request reads: the settings, one pinned connection and the protocols over
    it. A request takes it once, so every answer it gives comes from one lake version."""

    settings: Settings
    con: Connection
    bench: Benchmarks
    clips: ClipCache
    #: answers of repeatable statements on this version (server/result_cache.py)
    results: ResultCache
    #: the sessions table in key order, for /sessions (server/session_index.py)
    sessions: SessionIndex

    @classmethod
    def of(cls, settings: Settings, con: Connection, bench: Benchmarks, clips: ClipCache):
        """What requests read on ``con``'s version: caches of its own start empty."""
        return cls(
            settings, con, bench, clips, ResultCache(settings.result_cache_bytes), SessionIndex(con)
        )


class State:
    """The server's one mutable cell: the :class:`Serving` requests start with, replaced by
    ``refresh`` in one assignment.

    Under ``graphlake serve --workers N`` every worker process has its own State; they share
    one small record of the lake version the service reads (``settings.version_record``).
    ``POST /refresh`` in any worker moves that worker and writes the record; every other worker
    sees the record change (a stat, at most once a second, on its next request) and moves to
    the same version, so all workers answer from one lake version.

    A vacuum (``graphlake lake compact --vacuum``) that deletes the files of the version a
    worker serves moves that worker to the newest version before its next request: the vacuum
    writes its record before deleting anything, and every request stats that record (about
    a microsecond). A request already running when the files go answers 503 ``lake_moved``
    (retry at once), and the worker moves on the same way."""

    #: Seconds between two looks at the shared version record.
    FOLLOW_EVERY_S = 1.0

    def __init__(self, settings: Settings, con: Connection, bench: Benchmarks):
        self.settings = settings
        self.clips = ClipCache(con.lake.root, settings.clip_cache_bytes)
        self.current = Serving.of(settings, con, bench, self.clips)
        self._lock = threading.Lock()
        self._record = settings.version_record
        self._record_seen: int | None = None  # its mtime when last read
        self._next_look = 0.0
        self._vacuum_seen: int | None = self._vacuum_mtime()
        self._stop_warming = threading.Event()
        self.warming: threading.Thread | None = None  # the latest warm-up (tests join it)

    def warm_in_background(self) -> None:
        """Build the served version's instance indexes on a daemon thread (Benchmarks.warm);
        a request for one of them meanwhile waits for its build, not for a second one."""
        bench = self.current.bench
        self.warming = threading.Thread(
            target=bench.warm, args=(self._stop_warming,), name="warm-indexes", daemon=True
        )
        self.warming.start()

    def stop_warming(self) -> None:
        """No further index builds (the service is stopping); one under way finishes."""
        self._stop_warming.set()

    def refresh(self) -> bool:
        """Move to the newest lake snapshot (``POST /refresh``), and tell the other workers."""
        moved = self.move_to(self.current.con.lake.snapshot(None).lake_version)
        if self._record is not None:
            write_version_record(self._record, self.current.con.version)
        return moved

    def move_to(self, version: int) -> bool:
        """Open ``version`` beside the current snapshot, read it in, then swap. Requests that
        started on the old one finish on it: the old connection stops taking new statements a
        grace period later (requests are bounded by the query time limit), and its catalog
        closes after its last statement."""
        with self._lock:
            old = self.current
            if version == old.con.version:
                return False
            con = Connection(  # the State moves it
                old.con.lake, version, follow=False, hold_bytes=self.settings.hold_bytes
            )
            bench = new_benchmarks(self.settings, con)
            if self.settings.preload_rows:
                bench.sessions.preload()
            serving = Serving.of(self.settings, con, bench, self.clips)
            serving.sessions.load()
            self.current = serving
        self.warm_in_background()
        grace = threading.Timer(max(60.0, 2 * self.settings.query_timeout_s), old.con.close)
        grace.daemon = True
        grace.start()
        return True

    def _vacuum_mtime(self) -> int | None:
        try:
            return self.current.con.lake.vacuum_path.stat().st_mtime_ns
        except FileNotFoundError:
            return None

    def vacuum_due(self) -> int | None:
        """The newest version, when a vacuum since the last look leaves the served version
        unreadable (its files are being deleted); else None."""
        seen = self._vacuum_mtime()
        if seen == self._vacuum_seen:
            return None
        self._vacuum_seen = seen
        lake = self.current.con.lake
        record = lake.vacuum_record() or {}
        newest = lake.snapshot(None).lake_version
        serving = self.current.con.version
        if serving < record.get("readable_from", 0) and serving != newest:
            log.warning(
                "lake version %s was vacuumed: serving version %s from now on", serving, newest
            )
            return newest
        return None

    def due(self) -> int | None:
        """The version to move to before this request: the newest after a vacuum took the
        served one, or the one the shared record names when another worker moved there; else
        None. Costs a stat, and one more once a second under --workers N."""
        vacuumed = self.vacuum_due()
        if vacuumed is not None:
            return vacuumed
        if self._record is None or time.monotonic() < self._next_look:
            return None
        self._next_look = time.monotonic() + self.FOLLOW_EVERY_S
        try:
            seen = self._record.stat().st_mtime_ns
        except FileNotFoundError:
            return None
        if seen == self._record_seen:
            return None
        self._record_seen = seen
        try:
            version = orjson.loads(self._record.read_bytes())["version"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return version if version != self.current.con.version else None


def write_version_record(path: Path, version: int) -> None:
    """Write the shared version record atomically (a reader never sees half of it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(orjson.dumps({"version": version}))
    os.replace(tmp, path)


def new_benchmarks(settings: Settings, con: Connection) -> Benchmarks:
    return Benchmarks(
        con,
        session_cache=settings.session_cache,
        preload_rows=settings.preload_rows,
        index_timeout_s=settings.query_timeout_s,
    )


def get_state_now(request: Request) -> Serving:
    """The snapshot this request reads, for sync dependencies (run in a worker thread, where
    following another worker's refresh may block)."""
    state = request.app.state.graphlake
    target = state.due()
    if target is not None:
        state.move_to(target)
    return state.current


async def get_state(request: Request) -> Serving:  # async: no thread hop per request
    """The snapshot this request reads; when another worker refreshed, this one follows first
    (in a thread: opening a snapshot takes a moment)."""
    state = request.app.state.graphlake
    target = state.due()
    if target is not None:
        await run_in_threadpool(state.move_to, target)
    return state.current


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
