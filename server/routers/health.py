"""GET /health, and the payload endpoint the load benchmark uses as its ceiling."""

from __future__ import annotations

import os
from functools import cache
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from graphlake.server.models import Health
from graphlake.server.state import Serving, State, get_server_state, get_state

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health)
def health(state: Annotated[Serving, Depends(get_state)]):
    """Liveness, and the lake version every answer reads."""
    return _health(state)


def _health(state: Serving) -> dict:
    return {
        "status": "ok",
        "lake_version": state.con.version,
        "lake": str(state.settings.lake),
        "worker": os.getpid(),
    }


@router.post("/refresh", response_model=Health)
def refresh(state: Annotated[State, Depends(get_server_state)]):
    """Move the service to the newest lake snapshot (after an ingest); answers the version it
    now reads. Requests already running finish on the snapshot they started with."""
    state.refresh()
    return _health(state.current)


@cache
def _payload(size: int) -> bytes:
    body = b'{"pad":"' + b"x" * max(0, size - 10) + b'"}'
    return body


@router.get("/health/payload", include_in_schema=False)
async def payload(size: Annotated[int, Query(ge=0, le=10_000_000)] = 1000):
    """A precomputed JSON body of ``size`` bytes: what this server can serve at best
    (``python -m benchmarks.serve`` measures the other endpoints against it). Served on the
    event loop, as warm instance fetches are."""
    return Response(_payload(size), media_type="application/json")
