"""Ingest runs: an ingestor's units parsed into a LakeWriter and committed as one version."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from graphlake import ingest
from graphlake.ingest.base import IngestStats
from graphlake.lake import Lake, LakeWriter, Snapshot


def ingest_path(corpus: str, path: str | Path, lake: Lake | str | Path, *,
                on_unit: Callable[[int, int, Path], None] | None = None,
                flush_rows: int = 200_000) -> tuple[IngestStats, Snapshot | None]:
    """Ingest everything under ``path`` with the ``corpus`` ingestor as one lake version.

    ``on_unit(done, total, path)`` is called after each unit (file or session folder) for
    progress reporting. Returns the counts and the new snapshot (None when nothing was new).
    """
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    ingestor = ingest.get(corpus)
    units = ingestor.units(Path(path))
    writer = LakeWriter(lake, corpus, str(Path(path).resolve()), flush_rows=flush_rows)
    try:
        for i, unit in enumerate(units, 1):
            ingestor.parse(unit, writer)
            if on_unit:
                on_unit(i, len(units), unit.path)
    except BaseException:
        writer.abort()
        raise
    stats, snap = writer.commit()
    stats.units = len(units)
    return stats, snap
