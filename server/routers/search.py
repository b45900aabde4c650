"""Search: frames by what the screen showed (text or a picture), texts by what was said, and
each frame's thumbnail. Needs the vision extra and an index (``graphlake frames index``)."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from graphlake.search import SearchFilters, search_frames, search_text
from graphlake.search.frames import frame_thumbnail
from graphlake.server.errors import BadRequest, NotFound
from graphlake.server.models import FrameHit, Page, TextHit
from graphlake.server.state import Serving, get_state_now
from graphlake.vision.store import FrameStore

router = APIRouter(tags=["search"])
StateDep = Annotated[Serving, Depends(get_state_now)]
MAX_K = 200
MAX_IMAGE_BYTES = 16 << 20
_FRAME_ID = re.compile(r"[0-9a-f]{16}-\d{9}")


def _store(state: Serving, table: str) -> None:
    if not FrameStore(state.con.lake.root).exists(table):
        raise NotFound(
            f"no {table} indexed for this lake: run `graphlake frames index "
            f"--lake {state.con.lake.root}` (vision extra), then search again"
        )


class Filters:
    """The query parameters every search shares."""

    def __init__(
        self,
        corpus: Annotated[str | None, Query(max_length=200)] = None,
        session: Annotated[str | None, Query(max_length=500)] = None,
        t0: float | None = None,
        t1: float | None = None,
        step: Annotated[str | None, Query(max_length=200)] = None,
        actor: Annotated[str | None, Query(pattern="^(human|ai)$")] = None,
        k: Annotated[int, Query(ge=1, le=MAX_K)] = 10,
    ):
        self.filters = dict(corpus=corpus, session=session, t0=t0, t1=t1, step=step, actor=actor)
        self.k = k


FiltersDep = Annotated[Filters, Depends()]


@router.get("/search/frames", response_model=Page[FrameHit])
def frames(
    state: StateDep,
    f: FiltersDep,
    q: Annotated[
        str, Query(min_length=1, max_length=2000, description="What the screen showed, in words.")
    ],
    during_ai: bool = False,
):
    """Frames ranked by full text and meaning (and CLIP, when indexed with --model)."""
    _store(state, "frames")
    filters = SearchFilters(**f.filters, during_ai=during_ai)
    hits = search_frames(state.con.lake.root, state.con, q, filters=filters, k=f.k)
    return {"items": hits, "next_cursor": None}


@router.post("/search/frames/image", response_model=Page[FrameHit])
async def frames_by_image(
    request: Request, state: StateDep, f: FiltersDep, during_ai: bool = False
):
    """Frames like the picture in the request body (PNG or JPEG bytes): its OCR text, its
    difference hash, and its OpenCLIP vector when the frames have one."""
    body = await request.body()
    if not body:
        raise BadRequest("send the picture as the request body (PNG or JPEG bytes)")
    if len(body) > MAX_IMAGE_BYTES:
        raise BadRequest(f"the picture is over {MAX_IMAGE_BYTES >> 20} MiB")
    _store(state, "frames")
    from starlette.concurrency import run_in_threadpool

    filters = SearchFilters(**f.filters, during_ai=during_ai)
    try:
        hits = await run_in_threadpool(
            search_frames, state.con.lake.root, state.con, image=body, filters=filters, k=f.k
        )
    except OSError as exc:  # Pillow cannot read it
        raise BadRequest(f"the body is not a picture Pillow can read: {exc}") from None
    return {"items": hits, "next_cursor": None}


@router.get("/search/text", response_model=Page[TextHit])
def texts(
    state: StateDep,
    f: FiltersDep,
    q: Annotated[str, Query(min_length=1, max_length=2000, description="Words or a paraphrase.")],
):
    """Node labels, node details and chat turns ranked by full text and meaning."""
    _store(state, "texts")
    hits = search_text(state.con.lake.root, state.con, q, filters=SearchFilters(**f.filters), k=f.k)
    return {"items": hits, "next_cursor": None}


@router.get(
    "/frames/{frame_id}/thumbnail.jpg",
    response_class=Response,
    responses={200: {"content": {"image/jpeg": {}}}},
)
def thumbnail(frame_id: str, state: StateDep):
    """The JPEG thumbnail (320 px wide) of one indexed frame."""
    if not _FRAME_ID.fullmatch(frame_id):
        raise NotFound(f"no frame {frame_id!r}: frame ids look like 0123456789abcdef-000012000")
    _store(state, "frames")
    try:
        data = frame_thumbnail(state.con.lake.root, frame_id)
    except KeyError:
        raise NotFound(f"no frame {frame_id!r} in the index") from None
    return Response(
        data, media_type="image/jpeg", headers={"Cache-Control": "public, max-age=86400, immutable"}
    )
