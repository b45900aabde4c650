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
    max_rows: int = 10_000  # rows one /sql or /queries answer may hold
    query_timeout_s: float = 30.0  # a statement running longer is stopped (HTTP 408)
    max_body_bytes: int = 1_000_000  # larger request bodies are refused (HTTP 413)
    session_cache: int = 1024  # sessions kept in memory for contexts
    preload_rows: int = 20_000_000  # corpora up to this many occurrences + events are read
    # into memory at startup (0: per-session queries)
    version_record: Path | None = None  # --workers N: the file all workers follow (State)
    clip_cache_bytes: int = 1 << 30  # clips kept under <lake>/_graphlake/cache/clips, oldest
    # dropped beyond this
    sql_workers: int = 4  # statements (/sql, /queries) running at once, in their own pool
    sql_queue: int = 32  # statements waiting beyond those; more are refused (HTTP 503)


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
