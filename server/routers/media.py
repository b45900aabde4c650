"""Recordings: metadata, the file (HTTP Range), a window as a clip, and frames as JPEG.

Only files the lake's ``media`` table lists are served, looked up by their content-addressed
``media_id``; a path never comes from the request, so nothing outside the lake's own media
can be reached.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response
from fastapi.responses import FileResponse

from graphlake.protocols.kolab import frame_times
from graphlake.server.errors import BadRequest, NotFound
from graphlake.server.models import Frame, Media, Page
from graphlake.server.state import Serving, get_state, json_response

router = APIRouter(prefix="/media", tags=["media"])
StateDep = Annotated[Serving, Depends(get_state)]
_ID = re.compile(r"^[0-9a-f]{8,64}$")


def _media(state: Serving, media_id: str) -> dict:
    rows = (
        state.con.rows(
            "SELECT corpus, session_id, media_id, uri, kind, duration_s, fps, width, height, "
            "size_bytes, sha256 FROM media WHERE media_id = $m LIMIT 1",
            {"m": media_id},
        )
        if _ID.match(media_id)
        else []
    )
    if not rows:
        raise NotFound(
            f"no media {media_id!r} in the lake; a session's recordings are listed "
            "by GET /sessions/{corpus}/{session_id}/media"
        )
    return rows[0]


def _file(row: dict) -> Path:
    path = Path(row["uri"])
    if not path.is_file():
        raise NotFound(
            f"media {row['media_id']} is in the lake but its file is gone "
            f"({path.name}); re-ingest the session folder that holds it"
        )
    return path


def _public(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "uri"}


@router.get("/{media_id}", response_model=Media)
def media_info(state: StateDep, media_id: str):
    """A recording's metadata."""
    return json_response(_public(_media(state, media_id)))


@router.get(
    "/{media_id}/file",
    response_class=FileResponse,
    responses={200: {"content": {"video/mp4": {}}}, 206: {"description": "a range"}},
)
def media_file(state: StateDep, media_id: str):
    """The whole recording; send ``Range: bytes=a-b`` for a part (206)."""
    path = _file(_media(state, media_id))
    return FileResponse(path, media_type="video/mp4")


@router.get(
    "/{media_id}/clip",
    response_class=FileResponse,
    responses={200: {"content": {"video/mp4": {}}}, 206: {"description": "a range"}},
)
def media_clip(
    state: StateDep,
    media_id: str,
    t0: Annotated[float, Query(ge=0)],
    t1: Annotated[float, Query(gt=0)],
):
    """The window [t0, t1) of the recording as an MP4 clip (packets copied, not re-encoded;
    it starts at the keyframe before t0 and holds nothing at or after t1). Range requests
    work on it as on the file. Needs the vision extra (501 without it)."""
    from graphlake.vision.video import write_clip

    if t1 <= t0:
        raise BadRequest("t1 must be greater than t0")
    row = _media(state, media_id)
    path = _file(row)
    key = hashlib.sha256(f"{row['sha256']}|{t0!r}|{t1!r}".encode()).hexdigest()[:24]
    out = state.clips.get(key, lambda part: write_clip(path, t0, t1, part))
    return FileResponse(out, media_type="video/mp4")


@router.get("/{media_id}/frames", response_model=Page[Frame])
def media_frames(
    state: StateDep,
    media_id: str,
    t0: Annotated[float, Query(ge=0)],
    t1: Annotated[float, Query(gt=0)],
    n: Annotated[int, Query(ge=1, le=64)] = 8,
):
    """``n`` evenly spaced frame times in [t0, t1) (the midpoints of n equal slices, none at
    or after t1), each with the URL of its JPEG."""
    _media(state, media_id)
    if t1 <= t0:
        raise BadRequest("t1 must be greater than t0")
    return json_response(
        {
            "items": [
                {"t": t, "url": f"/media/{media_id}/frame.jpg?t={t}"}
                for t in frame_times(t0, t1, n)
            ],
            "next_cursor": None,
        }
    )


@router.get(
    "/{media_id}/frame.jpg",
    response_class=Response,
    responses={200: {"content": {"image/jpeg": {}}}},
)
def media_frame(
    state: StateDep,
    media_id: str,
    t: Annotated[float, Query(ge=0)],
    width: Annotated[int, Query(ge=16, le=4096)] = 1280,
):
    """The frame shown at ``t`` seconds, as JPEG. Needs the vision extra (501 without it)."""
    from graphlake.vision.video import frame_jpeg

    path = _file(_media(state, media_id))
    return Response(
        frame_jpeg(path, t, max_width=width),
        media_type="image/jpeg",
        headers={"Cache-Control": "max-age=3600"},
    )
