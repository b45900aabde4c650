"""Service settings: where the lake is, who may call, and the limits on every answer."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Settings:
    lake: Path
    version: int | None = None  # pin to this lake version (newest when None)
    token: str | None = None  # every request needs "Authorization: Bearer <token>"
    allow_writes: bool = False  # POST /benchmarks/{id}/score?save=true may write a run into
    # the lake (graphlake serve --allow-writes); without it the service only reads
    max_rows: int = 10_000  # rows one /sql or /queries answer may hold
    query_timeout_s: float = 30.0  # a statement running longer is stopped (HTTP 408)
    max_body_bytes: int = 1_000_000  # larger request bodies are refused (HTTP 413)
    session_cache: int = 1024  # sessions kept in memory for contexts
    preload_rows: int = 20_000_000  # corpora up to this many occurrences + events are read
    # into memory at startup (0: per-session queries)
    version_record: Path | None = None  # --workers N: the file all workers follow (State)
    clip_cache_bytes: int = 1 << 30  # clips kept under <lake>/_graphlake/cache/clips, oldest
    # dropped beyond this
    hold_bytes: int = 4 << 20  # tables whose Parquet files total at most this are held in
    # DuckDB's memory, sorted by key (graphlake.query.catalog.hold_in_memory; 0: none)
    result_cache_bytes: int = 64 << 20  # answers of repeatable /sql and /queries statements
    # kept per lake version (server/result_cache.py; 0: none)
    sql_workers: int = 4  # statements (/sql, /queries) running at once, in their own pool
    sql_queue: int = 32  # statements waiting beyond those; more are refused (HTTP 503)
    max_connections: int = 1024  # open connections; past it the one waiting longest for its
    # headers is closed, or the new one refused (HTTP 503) if every one has a request running
    client_timeout_s: float = 10.0  # a request's headers, and then its body, must arrive
    # within this (slow or silent clients are closed; a late body is HTTP 408)

    @classmethod
    def from_env(cls) -> Settings:
        """The settings ``graphlake serve`` hands every worker process it starts (uvicorn
        imports the app by name, so they travel as environment variables)."""
        import json
        import os

        config = json.loads(os.environ.get("GRAPHLAKE_SERVE_CONFIG", "{}"))
        if config.get("version_record"):
            config["version_record"] = Path(config["version_record"])
        return cls(lake=Path(os.environ["GRAPHLAKE_SERVE_LAKE"]), **config)


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
