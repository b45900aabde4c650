"""The FastAPI app factory: one pinned lake connection, one router per resource, one error
shape, token and body-size guards in front of everything."""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

import graphlake
from graphlake.config import serve_room_bytes
from graphlake.data_cap import settle
from graphlake.query.connection import Connection
from graphlake.server import errors
from graphlake.server.middleware import GuardMiddleware
from graphlake.server.models import ErrorResponse
from graphlake.server.routers import (
    benchmarks,
    corpora,
    health,
    media,
    search,
    sessions,
    sql,
    workbench,
)
from graphlake.server.settings import Settings
from graphlake.server.sql_pool import SqlPool
from graphlake.server.state import State, new_benchmarks

DESCRIPTION = """
graphlake serves a human-agent collaboration lake to model evaluators: benchmark protocols
(Kolab 1a-2b in seven input conditions, Almanac, HAS-Bench and tau2 prefixes) as deterministic,
leakage-safe instances; scoring with the papers' metrics; sessions, graphs, events, chat and
recordings sliced by step, window or hops; frame and text search with workflow context; and
read-only SQL over the lake.

Every list is cursor-paginated (`?limit=&cursor=`, answers `{"items": [...], "next_cursor"}`);
every error is `{"error": {"status", "code", "message"}}`.
"""


def create_app(settings: Settings, *, connection: Connection | None = None) -> FastAPI:
    """The app over ``settings.lake`` (or an open ``connection``), pinned to one snapshot."""
    # the State moves the service between versions (POST /refresh, after a vacuum), not the
    # connection by itself: every part of an answer comes from one version
    con = connection or Connection(
        settings.lake, settings.version, follow=False, hold_bytes=settings.hold_bytes
    )
    state = State(settings, con, new_benchmarks(settings, con))

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        state.current.sessions.load()  # the sessions table in key order: a few MB
        if settings.preload_rows:  # before the first request, not during it
            state.current.bench.sessions.preload()
        settle(serve_room_bytes())  # the data cap: room for statements above what is held
        state.warm_in_background()  # the instance indexes: requests wait for these builds
        yield
        state.stop_warming()
        app.state.sql_pool.close()
        if connection is None:
            state.current.con.close()

    app = FastAPI(
        title="graphlake",
        version=graphlake.__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served below from vendored assets: /docs works offline
        redoc_url=None,
        # every route may answer these, always in the one error shape (server/errors.py)
        responses={
            status: {"model": ErrorResponse}
            for status in (400, 401, 404, 408, 409, 413, 422, 500, 501, 503)
        },
    )
    app.state.graphlake = state
    app.state.sql_pool = SqlPool(settings.sql_workers, settings.sql_queue)
    errors.install(app)
    # routes are matched in order: after health (the load benchmark's ceiling) comes the
    # evaluation hot path
    for module in (health, benchmarks, sessions, media, search, sql, corpora, workbench):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=workbench.STATIC), name="static")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        """Swagger UI from the package's own copy (no CDN), like the workbench's libraries."""
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title="graphlake API",
            swagger_js_url="/static/vendor/swagger-ui-bundle.js",
            swagger_css_url="/static/vendor/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
        )

    app.add_middleware(
        GuardMiddleware,
        token=settings.token,
        max_body_bytes=settings.max_body_bytes,
        body_timeout_s=settings.client_timeout_s,
    )
    return app
