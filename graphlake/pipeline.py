"""Ingest runs: an ingestor's units parsed into staging (in parallel when there are many) and
committed as one lake version."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

from graphlake import ingest
from graphlake.errors import WrongCorpusError
from graphlake.ingest.base import IngestStats, SourceUnit
from graphlake.ingest.sniff import is_non_data, sniff, votes
from graphlake.lake import Lake, Snapshot
from graphlake.lake.writer import LakeRun, StagingEmitter, StagingSummary

#: Below this many units, or this many bytes in a few big files, starting worker processes
#: costs more than it saves.
PARALLEL_MIN_UNITS = 400
PARALLEL_MIN_BYTES = 32 << 20


def default_workers(units: list[SourceUnit]) -> int:
    cores = max(1, min(os.cpu_count() or 1, 8))
    if len(units) >= PARALLEL_MIN_UNITS:
        return cores
    if len(units) < 4:
        return 1
    size = sum(u.path.stat().st_size for u in units if u.path.is_file())
    return cores if size >= PARALLEL_MIN_BYTES else 1


def _parse_units(
    corpus: str,
    em: StagingEmitter,
    start: int,
    units: list[SourceUnit],
    tick: Callable[[SourceUnit, int], None] | None = None,
) -> StagingSummary:
    ingestor = ingest.get(corpus)
    # parsing allocates millions of short-lived, acyclic objects: the cyclic GC only slows it
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        ingestor.parse_many(units, start, em, tick)
    finally:
        if was_enabled:
            gc.enable()
    return em.close()


def _worker(
    corpus: str,
    staging: str,
    start: int,
    units: list[SourceUnit],
    flush_rows: int,
    default_run: dict,
) -> StagingSummary:
    em = StagingEmitter(corpus, Path(staging), f"u{start:09d}", flush_rows, default_run)
    return _parse_units(corpus, em, start, units)


def ingest_path(
    corpus: str,
    path: str | Path,
    lake: Lake | str | Path,
    *,
    on_unit: Callable[[int, int, Path], None] | None = None,
    workers: int | None = None,
    flush_rows: int = 50_000,
    prune: bool = False,
) -> tuple[IngestStats, Snapshot | None]:
    """Ingest everything under ``path`` with the ``corpus`` ingestor as one lake version.

    ``workers`` processes parse units in parallel (default: one per core for large inputs).
    ``on_unit(done, total, path)`` reports progress. A session already in the lake whose
    source changed is replaced; with ``prune``, sessions read earlier from files under
    ``path`` that are gone now are deleted (both in the same lake version, and older
    versions keep them). Returns the counts and the new snapshot
    (None when nothing was new). The materialized views are not refreshed here (a run stays
    one version): call :func:`graphlake.lake.derived.refresh` after, as ``graphlake ingest``
    does; until then queries compute those views from their SQL.
    """
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    units = ingest.get(corpus).units(Path(path))
    skipped = [u.path for u in units if is_non_data(u.path)]  # README, LICENSE, ...
    units = [u for u in units if not is_non_data(u.path)]
    total = len(units)
    run = LakeRun(lake, corpus, str(Path(path).resolve()), replace=True, prune=prune)
    workers = default_workers(units) if workers is None else workers
    done = 0

    def tick(unit: SourceUnit, n: int = 1) -> None:
        nonlocal done
        done += n
        if on_unit:
            on_unit(done, total, unit.path)

    try:
        if workers <= 1 or total < 2:
            summaries = [_parse_units(corpus, run.emitter("u0", flush_rows), 0, units, tick)]
        else:
            summaries = []
            chunk = max(1, min(4000, -(-total // (workers * 4))))
            # fork: cheap, and works from notebooks and stdin scripts (spawn cannot re-import
            # an unnamed __main__); the parent holds no lake locks or DuckDB state yet
            method = "fork" if sys.platform.startswith("linux") else "spawn"
            with ProcessPoolExecutor(workers, mp_context=get_context(method)) as pool:
                futures = {
                    pool.submit(
                        _worker,
                        corpus,
                        str(run.staging),
                        start,
                        units[start : start + chunk],
                        flush_rows,
                        run.default_run,
                    ): units[start : start + chunk]
                    for start in range(0, total, chunk)
                }
                for fut in as_completed(futures):
                    summaries.append(fut.result())
                    tick(futures[fut][-1], len(futures[fut]))
        if not any(sum(s.accepted.values()) for s in summaries):
            guess = sniff(Path(path))
            if guess and guess != corpus:  # wrong ingestor: commit nothing, say which
                rejected = sum(sum(s.rejected.values()) for s in summaries)
                raise WrongCorpusError(
                    f"nothing in {path} reads as {corpus} ({rejected} records would be "
                    f"rejected); its files look like {guess} data: try `graphlake ingest "
                    f"{guess} {path}`"
                )
        stats, snap = run.commit(summaries)
        stats.skipped = [str(p) for p in skipped]
        if any(sum(s.rejected.values()) for s in summaries):
            stats.elsewhere = {
                other: n for other, n in votes(Path(path)).items() if other != corpus
            }
    except BaseException:
        run.abort()
        raise
    stats.units = total
    return stats, snap
