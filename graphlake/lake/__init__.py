"""The lake: versioned Delta tables plus a snapshot log that makes each ingest run atomic."""

from graphlake.lake.store import Lake, Snapshot
from graphlake.lake.writer import LakeRun, StagingEmitter

__all__ = ["Lake", "LakeRun", "Snapshot", "StagingEmitter"]
