"""The lake: versioned Delta tables plus a snapshot log that makes each ingest run atomic.

The names resolve on first use (PEP 562): :mod:`graphlake.lake.current`, which a cold
``graphlake sql`` reads, must not load the writer, pyarrow and deltalake (0.3 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphlake.lazy import attributes

if TYPE_CHECKING:  # pragma: no cover - for type checkers and readers
    from graphlake.lake.store import Lake, Snapshot
    from graphlake.lake.writer import LakeRun, StagingEmitter

_WHERE = {"Lake": "store", "Snapshot": "store", "LakeRun": "writer", "StagingEmitter": "writer"}

__all__ = ["Lake", "LakeRun", "Snapshot", "StagingEmitter"]

__getattr__ = attributes(__name__, globals(), _WHERE)
