"""``graphlake frames index --engine ray``: recordings sampled by Ray tasks, their frames read
by a pool of actors, every batch written by this process in the local engine's order.

Stages, each the local engine's code:

1. **Sample** (:func:`sample_batches`, a Ray generator task per recording): decode and pick
   the frames worth reading (:func:`graphlake.vision.sampler.sample_frames`), in batches of
   ``--batch`` frames, as the local indexer batches them.
2. **Read** (a pool of :class:`graphlake.vision.indexer.FrameReader` actors, one per CPU):
   each actor loads OCR and MiniLM (and OpenCLIP) once and reads whole batches; pictures go
   from the sampler to the actor through Ray's object store, never through this process.
3. **Write** (this process, the driver): batches are appended to LanceDB in sampling order
   with the workflow state at each frame (:meth:`FrameIndexer.append`), and a recording is
   marked done after its last batch, so ids, texts and vectors are the local engine's and a
   run killed at any point resumes where the local one would. Up to one recording per actor
   is sampled at a time, so short recordings keep the pool busy too.

Failures. An actor whose process dies is restarted by Ray (its models load again) and its
unfinished batches are read again (``max_restarts``, ``max_task_retries``). A sampler task
that dies is started again by the driver from the last frame it received, with that frame's
block hash: the resume the sampler offers after a kill, which yields the frames the
uninterrupted run would have.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from graphlake.cluster.runtime import attached, cluster_cpus, stall_s, stalled
from graphlake.errors import GraphlakeError
from graphlake.vision.indexer import (
    FrameReader,
    IndexReport,
    Recording,
    RecordingsRunner,
    WorkflowClock,
)
from graphlake.vision.sampler import SampledFrame, SamplerStats, sample_frames

#: a reader actor that dies is restarted, and its batches retried, this many times
ACTOR_RESTARTS = 4
#: a sampler task that dies is started again from its last frame this many times
SAMPLER_RESTARTS = 4


@dataclass
class _Batch:
    """A batch on its way: its recording, its last time (progress) and the actor's answer."""

    rec: Recording
    last_t: float
    answer: object  # ObjectRef of ReadFrames


def sample_batches(
    uri: str, every: float, batch: int, after: float | None, last_hash: bytes | None
) -> Iterator[object]:
    """The Ray task sampling one recording. Per batch it yields a small header
    ``("batch", last t, last block hash)`` and then the frames, so the driver learns where a
    restart would resume without pulling the pictures; it ends with ``("end", stats)``."""
    stats = SamplerStats()
    buffer: list[SampledFrame] = []
    for frame in sample_frames(uri, every, after=after, last_hash=last_hash, stats=stats):
        buffer.append(frame)
        if len(buffer) >= batch:
            yield ("batch", buffer[-1].t, buffer[-1].block_hash)
            yield buffer
            buffer = []
    if buffer:
        yield ("batch", buffer[-1].t, buffer[-1].block_hash)
        yield buffer
    yield ("end", stats)


def on_ray(address: str | None = None, workers: int | None = None) -> RecordingsRunner:
    """What indexes a :class:`FrameIndexer`'s recordings on the cluster at ``address``
    (None: one started here), with ``workers`` reader actors (default: one per CPU):
    ``FrameIndexer(lake).run(recordings_by=on_ray(...))``."""

    def index(indexer, con, table, todo: list[Recording], report: IndexReport) -> None:
        _index_on_ray(indexer, con, table, todo, report, address=address, workers=workers)

    return index


def _index_on_ray(
    indexer,
    con,
    table,
    todo: list[Recording],
    report: IndexReport,
    *,
    address: str | None,
    workers: int | None,
) -> None:
    """Index ``todo`` through the cluster, writing with ``indexer`` (a FrameIndexer)."""
    with attached(address, workers=workers) as ray:
        # never more actors than CPUs: an actor waiting for a CPU would hold its batches
        n = min(workers or cluster_cpus(ray), cluster_cpus(ray))
        reader = ray.remote(FrameReader).options(
            num_cpus=1, max_restarts=ACTOR_RESTARTS, max_task_retries=ACTOR_RESTARTS
        )
        # one CPU, one OCR thread each: n one-thread readers outpace fewer many-thread ones
        actors = [reader.remote(indexer.text_model, indexer.model, threads=1) for _ in range(n)]
        # the sampler takes no CPU of its own: the readers hold them all, and decoding is a
        # small share of the work (it also waits while the readers are behind)
        sampler = ray.remote(sample_batches).options(
            num_cpus=0, max_retries=0, _generator_backpressure_num_objects=2 * n + 2
        )
        _Driver(ray, indexer, con, table, report, actors, sampler).run(todo)


class _Driver:
    """Feeds the recordings' batches to the actors and writes their answers, each recording
    in its order. Several recordings are sampled at once (one driver thread each, up to one
    per actor): a short recording is a single batch, and only other recordings keep the
    other actors busy. Writes to LanceDB take turns under one lock."""

    def __init__(self, ray, indexer, con, table, report: IndexReport, actors, sampler):
        self.ray, self.indexer, self.con, self.table = ray, indexer, con, table
        self.report, self.actors, self.sampler = report, actors, sampler
        self.turn = itertools.count()
        self.lock = threading.Lock()  # LanceDB writes, the report and the progress
        self.done_s: dict[tuple[str, str], float] = {}  # seconds read, per recording
        self.total = 0.0
        self.per_recording = 2  # batches in flight per recording
        self.patience = stall_s()  # seconds to wait for the cluster's next result

    def run(self, todo: list[Recording]) -> None:
        self.total = sum(r.duration_s or 0.0 for r in todo)
        at_once = max(1, min(len(todo), len(self.actors)))
        self.per_recording = max(2, 2 * len(self.actors) // at_once)
        with ThreadPoolExecutor(at_once, thread_name_prefix="graphlake-ray-recording") as pool:
            for done in as_completed([pool.submit(self.recording, rec) for rec in todo]):
                done.result()  # the first failure stops the run (what is written is kept)

    def recording(self, rec: Recording) -> None:
        ray, indexer = self.ray, self.indexer
        clock = WorkflowClock(self.con, rec.corpus, rec.session_id)
        resume = indexer.store.resume_point(rec.session_id, rec.media_id)
        after, last_hash = resume if resume else (None, None)
        uri = str(Path(rec.uri).resolve())
        in_flight: deque[_Batch] = deque()
        written, stats, restarts = 0, None, 0
        while stats is None:
            items = self.sampler.remote(uri, indexer.every, indexer.batch, after, last_hash)
            try:
                while True:
                    what, *rest = ray.get(self.next_ref(items, rec), timeout=self.patience)
                    if what == "end":
                        stats = rest[0]
                        break
                    frames = self.next_ref(items, rec)  # the pictures go to the actor
                    after, last_hash = rest
                    actor = self.actors[next(self.turn) % len(self.actors)]
                    in_flight.append(_Batch(rec, after, actor.read.remote(frames)))
                    while len(in_flight) >= self.per_recording:
                        written += self.write(in_flight.popleft(), clock)
            except ray.exceptions.GetTimeoutError:
                raise stalled(f"sampling {rec.uri}", self.patience) from None
            except ray.exceptions.RayTaskError:
                raise  # the sampler's own error (an unreadable file): as in a local run
            except ray.exceptions.RayError as exc:  # its process or node was lost
                restarts += 1
                if restarts > SAMPLER_RESTARTS:
                    raise GraphlakeError(
                        f"sampling {rec.uri} was lost {restarts} times on the cluster: {exc}"
                    ) from exc
        while in_flight:
            written += self.write(in_flight.popleft(), clock)
        with self.lock:
            # the counts of a restarted sampler are its last attempt's, as in a resumed run
            indexer.finish_recording(rec, written, stats, self.report)
            self.report.recordings += 1
            self.progress(rec, rec.duration_s or 0.0)

    def next_ref(self, items, rec: Recording):
        """The sampler's next reference, waited for at most the stall limit (iterating a Ray
        generator blocks with no limit)."""
        ready, _ = self.ray.wait([items], timeout=self.patience)
        if not ready:
            raise stalled(f"sampling {rec.uri}", self.patience)
        return next(items)

    def write(self, batch: _Batch, clock: WorkflowClock) -> int:
        """Wait for one batch's answer and append it (the oldest batch of its recording)."""
        ray = self.ray
        try:
            read = ray.get(batch.answer, timeout=self.patience)
        except ray.exceptions.GetTimeoutError:
            raise stalled(f"reading frames of {batch.rec.uri}", self.patience) from None
        except ray.exceptions.RayTaskError:
            raise  # the reader's own error on these frames: as in a local run
        except ray.exceptions.RayError as exc:  # the actor is gone for good
            raise GraphlakeError(
                f"a frame reader on the cluster was lost more than {ACTOR_RESTARTS} times "
                f"({type(exc).__name__}); the batches written so far are kept: run the same "
                "command again to resume"
            ) from exc
        with self.lock:
            n = self.indexer.append(self.table, batch.rec, clock, read)
            self.progress(batch.rec, batch.last_t)
        return n

    def progress(self, rec: Recording, t: float) -> None:
        """Seconds of recording read, over all recordings (called under the lock)."""
        self.done_s[(rec.session_id, rec.media_id)] = t
        label = f"{rec.session_id} {Path(rec.uri).name}"
        self.indexer.on_progress(label, sum(self.done_s.values()), self.total)
