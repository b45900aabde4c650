"""An ingest's parse on Ray: units in chunks, each chunk one task writing Arrow into staging.

The chunks, their start offsets and each task's work are those of the local parse workers
(``graphlake.pipeline._worker``), so the staged rows, the rejects and the one lake
version the driver commits are the same as a local ingest's. A task whose worker dies is run
again by Ray (``max_retries``): it rewrites the same staging files, and only the summary of
the attempt that finished is committed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from graphlake.cluster.runtime import attached, cluster_cpus, stall_s, stalled
from graphlake.ingest.base import SourceUnit
from graphlake.lake.writer import StagingSummary

#: a parse task lost with its worker is run again this many times before the ingest fails
TASK_RETRIES = 3


def parse_on_ray(
    parse: Callable[..., StagingSummary],
    chunk_size: Callable[[int, int], int],
    corpus: str,
    staging: Path,
    units: list[SourceUnit],
    flush_rows: int,
    default_run: dict,
    settings: dict[str, str],
    *,
    address: str | None = None,
    workers: int | None = None,
    on_chunk: Callable[[list[SourceUnit]], None] | None = None,
) -> list[StagingSummary]:
    """Parse ``units`` on the cluster at ``address`` (None: one started here with
    ``workers`` CPUs); returns each chunk's staging summary in chunk order.

    ``parse(corpus, staging, start, units, flush_rows, default_run, settings)`` is the
    local engine's worker function and ``chunk_size(units, workers)`` its chunking (both
    :mod:`graphlake.pipeline`'s, handed down: the pipeline sits above this layer)."""
    with attached(address, workers=workers) as ray:
        task = ray.remote(parse).options(num_cpus=1, max_retries=TASK_RETRIES)
        size = chunk_size(len(units), cluster_cpus(ray))
        chunks = {
            task.remote(
                corpus, str(staging), start, units[start : start + size], flush_rows,
                default_run, settings,
            ): (start, units[start : start + size])
            for start in range(0, len(units), size)
        }  # fmt: skip
        done: dict[int, StagingSummary] = {}
        pending, patience = list(chunks), stall_s()
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=patience)
            if not ready:  # no chunk finished, none was reported lost: the cluster hangs
                raise stalled(f"parsing {len(pending)} of {len(chunks)} chunks", patience)
            start, chunk = chunks[ready[0]]
            done[start] = ray.get(ready[0])
            if on_chunk:
                on_chunk(chunk)
        return [done[start] for start in sorted(done)]
