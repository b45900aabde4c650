"""`graphlake frames index`: recordings in the lake -> sampled, read, embedded frames.

For each recording (a ``media`` row of kind screen_recording or video) not indexed yet:

1. the sampler (:mod:`graphlake.vision.sampler`) yields the frames worth reading;
2. each batch is read by OCR, its text embedded with MiniLM (and its pictures with OpenCLIP
   when ``--model`` names one), shrunk to a JPEG thumbnail, and stamped with the workflow
   state at its time (step, active nodes, human / AI activity, open AI episode);
3. the batch is appended to LanceDB (:mod:`graphlake.vision.store`) at once, so a run killed
   half-way loses at most one batch: the next run starts after the last frame written, with
   the sampler state that frame carries, and yields what the uninterrupted run would have;
4. a finished recording gets a progress row, and its frames (no vectors) are committed to the
   lake's ``frames`` table, so SQL joins them with nodes, events and adoptions.

Node labels, node details and chat turns of the same sessions are embedded into the
``texts`` table for ``graphlake search text``. Rerunning on an indexed lake does nothing.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphlake.errors import GraphlakeError
from graphlake.lake import Lake
from graphlake.query.connection import Connection
from graphlake.vision import store as st
from graphlake.vision.embed import DEFAULT_TEXT_MODEL, image_embedder, text_embedder
from graphlake.vision.sampler import SampledFrame, SamplerStats, sample_frames

THUMB_WIDTH = 320
RECORDING_KINDS = ("screen_recording", "video")
CHAT_CHANNELS = ("chat",)


@dataclass
class IndexReport:
    recordings: int = 0  # recordings indexed in this run
    already: int = 0  # recordings found indexed already
    missing: list[str] = field(default_factory=list)  # recordings whose file is gone
    frames: int = 0
    decoded: int = 0
    checked: int = 0
    texts: int = 0
    lake_rows: int = 0
    indexes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def skipped_share(self) -> float:
        """Share of the checked frames skipped as near-duplicates."""
        return 1 - self.frames / self.checked if self.checked else 0.0


def _vectors(vecs: np.ndarray) -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel(), pa.float32()), vecs.shape[1])


def frame_id(media_id: str, t: float) -> str:
    return f"{media_id[:16]}-{int(round(t * 1000)):09d}"


def thumbnail(rgb: np.ndarray, width: int = THUMB_WIDTH) -> bytes:
    from PIL import Image

    img = Image.fromarray(rgb)
    if img.width > width:
        img = img.resize((width, max(1, round(img.height * width / img.width))), Image.BILINEAR)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=80)
    return buf.getvalue()


#: indexes recordings elsewhere (a cluster): (indexer, connection, table, todo, report)
RecordingsRunner = Callable[["FrameIndexer", Connection, Any, list["Recording"], IndexReport], None]


@dataclass
class ReadFrames:
    """What the models made of one batch of sampled frames: everything a frames row holds
    but the workflow state, which the driver adds (it holds the lake connection). Small:
    the pictures themselves stay where they were read."""

    t: list[float]
    kind: list[str]
    dhash: list[int]
    block_hash: list[bytes]
    text: list[str]
    ocr_score: list[float | None]
    thumbnail: list[bytes]
    text_vectors: np.ndarray
    image_vectors: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.t)


class FrameReader:
    """The model stage of indexing: OCR, MiniLM and (given ``model``) OpenCLIP, loaded once
    and applied batch by batch. The local indexer holds one; on Ray each actor of the pool
    holds one (:mod:`graphlake.cluster.frames`), so both paths read a batch with this code."""

    def __init__(
        self,
        text_model: str = DEFAULT_TEXT_MODEL,
        model: str | None = None,
        threads: int | None = None,
    ):
        """``threads``: OCR threads (None: every core; a pool's actor: the CPUs it holds)."""
        self.text_model, self.model, self.threads = text_model, model, threads

    def read(self, frames: list[SampledFrame]) -> ReadFrames:
        from graphlake.vision.ocr import screen_reader

        ocr = screen_reader(self.threads)
        read = [ocr.read(f.image) for f in frames]
        texts = [text for text, _ in read]
        return ReadFrames(
            t=[f.t for f in frames],
            kind=[f.kind for f in frames],
            dhash=[f.dhash for f in frames],
            block_hash=[f.block_hash for f in frames],
            text=texts,
            ocr_score=[score for _, score in read],
            thumbnail=[thumbnail(f.image) for f in frames],
            text_vectors=text_embedder(self.text_model).encode(texts),
            image_vectors=(
                image_embedder(self.model).encode_images([f.image for f in frames])
                if self.model
                else None
            ),
        )


class WorkflowClock:
    """The workflow state of one session at any time: step, active nodes, who is acting."""

    def __init__(self, con: Connection, corpus: str, session_id: str):
        p = {"c": corpus, "s": session_id}

        def columns(sql: str) -> dict[str, list]:
            return con.execute(sql, p, max_rows=None, timeout_s=None).table.to_pydict()

        steps = columns(
            "SELECT step_id, t_start, t_end FROM steps WHERE corpus = $c "
            "AND session_id = $s AND t_start IS NOT NULL ORDER BY t_start"
        )
        occ = columns(
            "SELECT node_id, t_start, t_end, actor_type FROM node_occurrences "
            "WHERE corpus = $c AND session_id = $s AND t_start IS NOT NULL"
        )
        episodes = columns(
            "SELECT coalesce(source_t_start, ai_t_start) AS t0, "
            "coalesce(response_t_end, ai_t_end) AS t1 FROM adoptions "
            "WHERE corpus = $c AND session_id = $s"
        )
        self.steps = steps
        text_cols = ("node_id", "actor_type")
        self.occ = {
            k: np.array(v, dtype=object if k in text_cols else float) for k, v in occ.items()
        }
        self.episodes = [
            (a, b)
            for a, b in zip(episodes["t0"], episodes["t1"], strict=True)
            if a is not None and b is not None
        ]

    def at(self, t: float) -> dict:
        step = None
        for sid, t0, t1 in zip(
            self.steps["step_id"], self.steps["t_start"], self.steps["t_end"], strict=True
        ):
            if t0 <= t and (t1 is None or t <= t1):
                step = sid
        active = (
            (self.occ["t_start"] <= t) & (t <= self.occ["t_end"])
            if len(self.occ.get("t_start", []))
            else np.zeros(0, bool)
        )
        kinds = set(self.occ["actor_type"][active]) if active.any() else set()
        return {
            "step_id": step,
            "node_ids": sorted(self.occ["node_id"][active].tolist()) if active.any() else [],
            "human_active": "human" in kinds,
            "ai_active": "ai" in kinds,
            "ai_episode": any(a <= t <= b for a, b in self.episodes),
        }


@dataclass
class Recording:
    corpus: str
    session_id: str
    media_id: str
    uri: str
    duration_s: float | None


def recordings(con: Connection, session: str | None) -> list[Recording]:
    where = "list_contains($kinds, kind)"
    params: dict = {"kinds": list(RECORDING_KINDS)}
    if session:
        where += " AND session_id = $s"
        params["s"] = session
    rows = con.rows(
        f"SELECT DISTINCT corpus, session_id, media_id, uri, duration_s FROM media "
        f"WHERE {where} ORDER BY corpus, session_id, media_id",
        params,
    )
    return [Recording(**r) for r in rows]


class FrameIndexer:
    """Index the recordings of one lake (see the module docstring)."""

    def __init__(
        self,
        lake: Lake | str | Path,
        *,
        every: float = 2.0,
        model: str | None = None,
        text_model: str = DEFAULT_TEXT_MODEL,
        batch: int = 16,
        on_progress: Callable[[str, float, float], None] | None = None,
    ):
        self.lake = lake if isinstance(lake, Lake) else Lake(lake)
        if not self.lake.exists():
            raise GraphlakeError(
                f"no lake at {self.lake.root}; ingest something first "
                "(graphlake ingest ... or graphlake demo)"
            )
        self.every = every
        self.model = model
        self.text_model = text_model
        self.batch = batch
        self.on_progress = on_progress or (lambda what, done, total: None)
        self.store = st.FrameStore(self.lake.root)
        # models load at the first batch, so a rerun with nothing to do costs no model load
        self.reader = FrameReader(text_model, model)

    @property
    def ocr(self):
        from graphlake.vision.ocr import screen_reader

        return screen_reader()

    def _meta(self) -> dict[str, str]:
        text = text_embedder(self.text_model)
        meta = {
            st.META_TEXT: text.identity,
            st.META_TEXT_SPEC: self.text_model,
            st.META_FORMAT: st.FORMAT,
            st.META_OCR: self.ocr.identity,
        }
        if self.model:
            meta[st.META_IMAGE] = image_embedder(self.model).identity
            meta[st.META_IMAGE_SPEC] = self.model
        return meta

    def _frames_table(self):
        text = text_embedder(self.text_model)
        image = image_embedder(self.model) if self.model else None
        schema = st.frames_schema(text.dim, image.dim if image else None, self._meta())
        return self.store.open_for_write("frames", schema, (st.META_TEXT, st.META_IMAGE))

    def run(
        self,
        session: str | None = None,
        *,
        texts: bool = True,
        recordings_by: RecordingsRunner | None = None,
    ) -> IndexReport:
        """Index what is not indexed yet. ``recordings_by(indexer, con, table, todo,
        report)`` indexes the recordings instead of this process, writing through
        :meth:`append` and :meth:`finish_recording`
        (:func:`graphlake.cluster.frames.on_ray`: a Ray cluster)."""
        started = time.perf_counter()
        report = IndexReport()
        with Connection(self.lake, sandboxed=False) as con:
            todo = []
            done = self.store.progress()
            for rec in recordings(con, session):
                if (rec.session_id, rec.media_id) in done:
                    report.already += 1
                elif not Path(rec.uri).is_file():
                    report.missing.append(rec.uri)
                else:
                    todo.append(rec)
            if todo or (self.model and self.store.exists()):
                table = self._frames_table()  # refuses other models before any work
            if todo and recordings_by is not None:
                recordings_by(self, con, table, todo, report)
            else:
                total = sum(r.duration_s or 0.0 for r in todo)
                base = 0.0
                for rec in todo:
                    self._index_recording(con, table, rec, report, base, total)
                    base += rec.duration_s or 0.0
                    report.recordings += 1
            if texts:
                report.texts = self._index_texts(con, session)
            report.lake_rows = self._sync_lake(con)
        for name in ("frames", "texts"):
            if self.store.exists(name) and (report.frames if name == "frames" else report.texts):
                report.indexes += self.store.ensure_indexes(name)
        report.seconds = time.perf_counter() - started
        return report

    # ------------------------------------------------------------------ recordings
    def _index_recording(
        self, con, table, rec: Recording, report: IndexReport, base: float, total: float
    ) -> None:
        resume = self.store.resume_point(rec.session_id, rec.media_id)
        after, last_hash = resume if resume else (None, None)
        clock = WorkflowClock(con, rec.corpus, rec.session_id)
        stats = SamplerStats()
        label = f"{rec.session_id} {Path(rec.uri).name}"
        buffer: list[SampledFrame] = []
        written = 0
        for frame in sample_frames(
            rec.uri, self.every, after=after, last_hash=last_hash, stats=stats
        ):
            buffer.append(frame)
            if len(buffer) >= self.batch:
                written += self._write(table, rec, clock, buffer)
                buffer = []
            self.on_progress(label, base + frame.t, total)
        written += self._write(table, rec, clock, buffer)
        self.finish_recording(rec, written, stats, report)
        self.on_progress(label, base + (rec.duration_s or 0.0), total)

    def finish_recording(
        self, rec: Recording, written: int, stats: SamplerStats, report: IndexReport
    ) -> None:
        """Mark ``rec`` indexed (after its last batch is written) and count it."""
        self.store.mark_done(
            {
                "session_id": rec.session_id,
                "media_id": rec.media_id,
                "every": self.every,
                "frames": written,
                "decoded": stats.decoded,
                "duration_s": rec.duration_s,
            }
        )
        report.frames += written
        report.decoded += stats.decoded
        report.checked += stats.checked

    def _write(
        self, table, rec: Recording, clock: WorkflowClock, frames: list[SampledFrame]
    ) -> int:
        if not frames:
            return 0
        return self.append(table, rec, clock, self.reader.read(frames))

    def append(self, table, rec: Recording, clock: WorkflowClock, read: ReadFrames) -> int:
        """Write one read batch of ``rec`` to LanceDB with the workflow state at each time."""
        if not len(read):
            return 0
        n = len(read)
        cols: dict[str, object] = {
            "frame_id": [frame_id(rec.media_id, t) for t in read.t],
            "corpus": [rec.corpus] * n,
            "session_id": [rec.session_id] * n,
            "media_id": [rec.media_id] * n,
            "t": read.t,
            "kind": read.kind,
            "text": read.text,
            "ocr_score": read.ocr_score,
            "dhash": read.dhash,
            "block_hash": read.block_hash,
            "thumbnail": read.thumbnail,
        }
        states = [clock.at(t) for t in read.t]
        for key in ("step_id", "node_ids", "human_active", "ai_active", "ai_episode"):
            cols[key] = [s[key] for s in states]
        schema = table.schema
        cols["text_vector"] = _vectors(read.text_vectors)
        if "image_vector" in schema.names:
            assert read.image_vectors is not None, "read without the image model"
            cols["image_vector"] = _vectors(read.image_vectors)
        data = pa.table({name: cols[name] for name in schema.names}, schema=schema)
        table.add(data)
        return n

    # ------------------------------------------------------------------ texts
    def _index_texts(self, con: Connection, session: str | None) -> int:
        """Embed node labels/details and chat turns of sessions not in ``texts`` yet."""
        filt = "WHERE session_id = $s" if session else ""
        params = {"s": session} if session else {}
        rows = con.execute(
            f"""
            SELECT * FROM (
              SELECT corpus, session_id, 'node' AS source, node_id AS ref_id, t_start AS t,
                     step_id, actor_type,
                     trim(coalesce(label, '') || CASE WHEN detail IS NULL OR detail = '' THEN ''
                          ELSE ': ' || detail END) AS text
              FROM nodes
              UNION ALL
              SELECT corpus, session_id, 'chat', event_id, t, step_id, actor_type, text
              FROM events WHERE list_contains($channels, channel) AND text IS NOT NULL
                AND text <> ''
            ) {filt} ORDER BY corpus, session_id, source, ref_id""",
            {**params, "channels": list(CHAT_CHANNELS)},
            max_rows=None,
            timeout_s=None,
        ).table
        rows = rows.filter(pa.compute.not_equal(rows.column("text"), ""))
        if rows.num_rows == 0:
            return 0
        existing = self.store.table("texts")
        if existing is not None:
            have = pa.compute.unique(
                existing.search()
                .select(["session_id"])
                .limit(existing.count_rows())
                .to_arrow()
                .column("session_id")
            )
            rows = rows.filter(pa.compute.invert(pa.compute.is_in(rows.column("session_id"), have)))
            if rows.num_rows == 0:
                return 0
        embedder = text_embedder(self.text_model)
        schema = st.texts_schema(
            embedder.dim,
            {
                st.META_TEXT: embedder.identity,
                st.META_TEXT_SPEC: self.text_model,
                st.META_FORMAT: st.FORMAT,
            },
        )
        table = self.store.open_for_write("texts", schema, (st.META_TEXT,))
        chunk = 4096
        for i in range(0, rows.num_rows, chunk):
            part = rows.slice(i, chunk)
            vecs = embedder.encode(part.column("text").to_pylist())
            ids = [
                f"{c}/{s}/{src}/{r}"
                for c, s, src, r in zip(
                    *(
                        part.column(k).to_pylist()
                        for k in ("corpus", "session_id", "source", "ref_id")
                    ),
                    strict=True,
                )
            ]
            data = part.append_column("text_id", pa.array(ids)).append_column(
                "text_vector", _vectors(vecs)
            )
            table.add(data.select(schema.names).cast(schema))
            self.on_progress("texts", min(i + chunk, rows.num_rows), rows.num_rows)
        return rows.num_rows

    # ------------------------------------------------------------------ lake
    def _sync_lake(self, con: Connection) -> int:
        """Commit the frames of finished recordings that the lake's ``frames`` lacks."""
        table = self.store.table("frames")
        done = self.store.progress()
        if table is None or not done:
            return 0
        in_lake = {
            (r["session_id"], r["media_id"])
            for r in con.rows("SELECT DISTINCT session_id, media_id FROM frames")
        }
        todo = done - in_lake
        if not todo:
            return 0
        cols = [
            "corpus",
            "session_id",
            "frame_id",
            "media_id",
            "t",
            "kind",
            "text",
            "ocr_score",
            "dhash",
        ]
        rows = table.search().select(cols).limit(table.count_rows()).to_arrow()
        durations = {
            (r["session_id"], r["media_id"]): r["duration_s"]
            for r in con.rows(
                "SELECT session_id, media_id, max(duration_s) AS duration_s FROM media GROUP BY ALL"
            )
        }
        from graphlake.lake.writer import UNIT, LakeRun
        from graphlake.schema import TABLES

        rows = rows.filter(
            pa.compute.is_in(
                pa.compute.binary_join_element_wise(
                    rows.column("session_id"), rows.column("media_id"), "\x1f"
                ),
                pa.array([f"{s}\x1f{m}" for s, m in todo]),
            )
        )
        added = 0
        for corpus in sorted(set(rows.column("corpus").to_pylist())):
            part = rows.filter(pa.compute.equal(rows.column("corpus"), corpus))
            part = part.sort_by(
                [("session_id", "ascending"), ("media_id", "ascending"), ("t", "ascending")]
            )
            sess, media, t = (part.column(k).to_pylist() for k in ("session_id", "media_id", "t"))
            t_end = []
            for i in range(len(t)):
                if i + 1 < len(t) and (sess[i + 1], media[i + 1]) == (sess[i], media[i]):
                    t_end.append(t[i + 1])
                else:
                    end = durations.get((sess[i], media[i]))
                    t_end.append(max(end, t[i]) if end is not None else t[i] + self.every)
            schema = TABLES["frames"].schema
            data = {
                "corpus": part.column("corpus"),
                "session_id": part.column("session_id"),
                "frame_id": part.column("frame_id"),
                "media_id": part.column("media_id"),
                "t": part.column("t"),
                "t_end": pa.array(t_end, pa.float64()),
                "kind": part.column("kind"),
                "text": part.column("text"),
                "ocr_score": part.column("ocr_score"),
                "phash": part.column("dhash"),
                "thumbnail": pa.array(
                    [f"/frames/{f}/thumbnail.jpg" for f in part.column("frame_id").to_pylist()]
                ),
                "attrs": pa.nulls(part.num_rows, pa.string()),
            }
            arrow = (
                pa.table(data)
                .cast(schema)
                .append_column(UNIT, pa.array([0] * part.num_rows, pa.int32()))
            )
            run = LakeRun(self.lake, corpus, f"frames index ({self.store.path})")
            em = run.emitter("frames")
            em.rows("frames", arrow)
            stats, _snap = run.commit([em.close()])
            added += stats.added.get("frames", 0)
        return added
