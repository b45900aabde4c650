"""Frame search: text, paraphrase or picture in, the moments of the recordings out.

A text query is ranked three ways: LanceDB full-text search over the OCR text (trigram BM25
candidates, kept when they hold most of the query's trigrams; see :func:`fts_ranking`), MiniLM
similarity of the query and the OCR text (so a paraphrase finds the screen), and, when the
frames have OpenCLIP vectors, CLIP similarity of the query and the picture (half weight: CLIP
reads screens poorly). A picture query is read by the same OCR and ranked by its text as
above, by the Hamming distance of its difference hash, and by its OpenCLIP vector when present.
The rankings are fused with reciprocal rank fusion (:mod:`graphlake.search.fusion`); for a
short text query, frames showing more of its words come first (:mod:`graphlake.search.rank`).

Vector searches scan exactly while the table (or the rows a filter leaves) is small, and use
the ANN index with ``NPROBES`` partitions and a ``REFINE``-fold exact re-rank otherwise.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from graphlake.errors import GraphlakeError
from graphlake.query.connection import Connection
from graphlake.search.context import workflow_context
from graphlake.search.filters import SearchFilters
from graphlake.search.fusion import rrf
from graphlake.search.rank import query_words, why, words_first, words_present
from graphlake.vision import FRAMES_INSTALL
from graphlake.vision import store as st
from graphlake.vision.sampler import dhash_of_image, hamming

NPROBES = 20
REFINE = 10
#: Share of a query's letter trigrams a frame's OCR text must hold to count as a text match.
MIN_COVERAGE = 0.6
#: Hamming distance (of 64 bits) beyond which two pictures are not considered alike.
MAX_HAMMING = 16
HIT_COLUMNS = ["frame_id", "corpus", "session_id", "media_id", "t", "kind", "text"]


def open_table(lake_root, name: str = "frames"):
    store = st.FrameStore(lake_root)
    table = store.table(name)
    if table is None:
        raise GraphlakeError(
            f"no {name} indexed in {Path(lake_root)}: run `graphlake frames index --lake "
            f"{lake_root}` first (needs the frames extra: {FRAMES_INSTALL})"
        )
    return table


def _where(table, where: str | None):
    return table.count_rows(where) if where else table.count_rows()


def vector_ranking(
    table, column: str, vector: np.ndarray, where: str | None, n: int, columns: list[str]
) -> list[dict]:
    q = (
        table.search(vector.astype(np.float32), vector_column_name=column)
        .distance_type("cosine")
        .select([*columns, "_distance"])
        .limit(n)
    )
    if where:
        q = q.where(where, prefilter=True)
    if st.has_ann_index(table, column) and _where(table, where) > st.EXACT_MAX_ROWS:
        q = q.nprobes(NPROBES).refine_factor(REFINE)
    else:
        q = q.bypass_vector_index()
    return q.to_list()


def trigrams(text: str) -> set[str]:
    """Letter trigrams of the text with case and whitespace dropped (OCR loses spaces)."""
    s = "".join(text.lower().split())
    return {s[i : i + 3] for i in range(len(s) - 2)}


def coverage(query: str, text: str | None) -> float:
    """Share of the query's trigrams found in ``text``: 1.0 when the words are on screen."""
    q = trigrams(query)
    return len(q & trigrams(text or "")) / len(q) if q else 0.0


def fts_ranking(
    table,
    text: str,
    where: str | None,
    n: int,
    columns: list[str],
    min_coverage: float | None = None,
) -> list[dict]:
    """BM25 hits, best first. With ``min_coverage`` (the trigram-indexed frames), only hits
    holding that share of the query's trigrams count, ordered by that share: trigram BM25
    scores any shared trigram, which for a paraphrase is noise that would outvote the
    vectors in the fusion; the words actually on screen cover the query almost fully."""
    if not text.strip():
        return []
    q = (
        table.search(text, query_type="fts", fts_columns="text")
        .select([*columns, "_score"])
        .limit(n)
    )
    if where:
        q = q.where(where, prefilter=True)
    try:
        hits = q.to_list()
    except (ValueError, RuntimeError, OSError):  # no FTS index yet, or an unparsable query
        return []
    if min_coverage is None:
        return hits
    scored = [(coverage(text, h.get("text")), h) for h in hits]
    kept = [(c, h) for c, h in scored if c >= min_coverage]
    kept.sort(key=lambda ch: (-ch[0], -ch[1].get("_score", 0.0)))
    return [h for _, h in kept]


def _meta_spec(table, key: str) -> str | None:
    raw = (table.schema.metadata or {}).get(key.encode())
    return raw.decode() if raw else None


def text_rankings(
    table, query: str, where, n: int, columns: list[str], clip_weight: float = 0.5
) -> tuple[dict, dict]:
    from graphlake.vision.embed import DEFAULT_TEXT_MODEL, image_embedder, text_embedder

    rows: dict[str, dict] = {}
    rankings = {}
    on_frames = "frame_id" in columns
    fts = fts_ranking(
        table, query, where, n, columns, min_coverage=MIN_COVERAGE if on_frames else None
    )
    rankings["fts"] = ([r["frame_id" if "frame_id" in r else "text_id"] for r in fts], 1.0)
    spec = _meta_spec(table, st.META_TEXT_SPEC) or DEFAULT_TEXT_MODEL
    vec = text_embedder(spec).encode([query])[0]
    hits = vector_ranking(table, "text_vector", vec, where, n, columns)
    rankings["text_vector"] = ([r["frame_id" if "frame_id" in r else "text_id"] for r in hits], 1.0)
    clip = _meta_spec(table, st.META_IMAGE_SPEC)
    if clip and "image_vector" in table.schema.names:
        ivec = image_embedder(clip).encode_text([query])[0]
        ih = vector_ranking(table, "image_vector", ivec, where, n, columns)
        rankings["image_vector"] = ([r["frame_id"] for r in ih], clip_weight)
        hits = hits + ih
    for r in fts + hits:
        rows.setdefault(r.get("frame_id") or r.get("text_id"), r)
    return rankings, rows


def _load_image(image) -> np.ndarray:
    from PIL import Image

    if isinstance(image, np.ndarray):
        return image
    if isinstance(image, bytes | bytearray):
        return np.asarray(Image.open(io.BytesIO(image)).convert("RGB"))
    path = Path(image)
    if not path.is_file():
        raise GraphlakeError(f"--image {path} is not a file")
    return np.asarray(Image.open(path).convert("RGB"))


def image_rankings(table, image, where, n: int) -> tuple[dict, dict, str]:
    from graphlake.vision.embed import image_embedder
    from graphlake.vision.ocr import screen_reader

    rgb = _load_image(image)
    text, _ = screen_reader().read(rgb)
    rankings, rows = (
        text_rankings(table, text, where, n, HIT_COLUMNS, clip_weight=0) if text else ({}, {})
    )
    rankings.pop("image_vector", None)
    # Hamming distance of the difference hash over every row the filters leave
    q = table.search().select([*HIT_COLUMNS, "dhash"]).limit(max(_where(table, where), 1))
    if where:
        q = q.where(where)
    scan = q.to_arrow()
    if scan.num_rows:
        dist = hamming(dhash_of_image(rgb), scan.column("dhash").to_numpy(zero_copy_only=False))
        order = [i for i in np.argsort(dist, kind="stable")[:n] if dist[i] <= MAX_HAMMING]
        ids = scan.column("frame_id").to_pylist()
        rankings["phash"] = ([ids[i] for i in order], 1.0)
        for i in order:
            rows.setdefault(ids[i], {c: scan.column(c)[int(i)].as_py() for c in HIT_COLUMNS})
    clip = _meta_spec(table, st.META_IMAGE_SPEC)
    if clip and "image_vector" in table.schema.names:
        vec = image_embedder(clip).encode_images([rgb])[0]
        ih = vector_ranking(table, "image_vector", vec, where, n, HIT_COLUMNS)
        rankings["image_vector"] = ([r["frame_id"] for r in ih], 1.0)
        for r in ih:
            rows.setdefault(r["frame_id"], r)
    return rankings, rows, text


def search_frames(
    lake_root,
    con: Connection,
    query: str | None = None,
    *,
    image=None,
    filters: SearchFilters | None = None,
    k: int = 10,
) -> list[dict]:
    """The ``k`` best frames for a text ``query`` or an ``image`` (path, bytes or RGB
    array), each with its workflow context (see :func:`workflow_context`)."""
    if (query is None) == (image is None):
        raise GraphlakeError("give a text query or --image FILE (one of them)")
    if k < 1:
        raise GraphlakeError("--k must be at least 1")
    filters = filters or SearchFilters()
    table = open_table(lake_root)
    where = filters.where("frames")
    n = max(4 * k, 50)
    words: list[str] = []
    if image is not None:
        rankings, rows, _ = image_rankings(table, image, where, n)
        fused = rrf(rankings)[:k]
    else:
        rankings, rows = text_rankings(table, query, where, n, HIT_COLUMNS)
        fused = words_first(query, rrf(rankings), lambda i: rows[i].get("text"))[:k]
        words = query_words(query)
    hits = []
    for frame_id, score, found in fused:
        r = rows[frame_id]
        hits.append(
            {
                "session_id": r["session_id"],
                "corpus": r["corpus"],
                "media_id": r["media_id"],
                "frame_id": frame_id,
                "t": r["t"],
                "score": round(score, 6),
                "matched": found,
                "why": why(found, words_present(words, r["text"]), len(words)),
                "text": r["text"],
                "thumbnail": f"/frames/{frame_id}/thumbnail.jpg",
            }
        )
    for hit, ctx in zip(hits, workflow_context(con, hits), strict=True):
        hit.update(ctx)
    return hits


def frame_thumbnail(lake_root, frame_id: str) -> bytes:
    """The JPEG thumbnail stored for ``frame_id`` (KeyError when there is none)."""
    table = open_table(lake_root)
    rows = (
        table.search()
        .where(f"frame_id = {st.sql_str(frame_id)}")
        .select(["thumbnail"])
        .limit(1)
        .to_list()
    )
    if not rows:
        raise KeyError(frame_id)
    return rows[0]["thumbnail"]
