"""Answers of ``/sql`` and ``/queries`` kept per lake version, handed out again without DuckDB.

A lake version never changes (ingest writes a new one), so the answer to a repeatable
statement (no clock, random numbers or sampling: ``graphlake.query.guard.repeatable``) with
the same parameters, row limit and answer format is the same bytes for as long as that version
is served. Evaluation harnesses and notebooks repeat such lookups often (the same session's
row, the same named query per model); a repeat costs a dictionary lookup on the event loop,
not a trip through the SQL pool, the guard and a Parquet scan.

Bounded: at most ``max_bytes`` of answer bodies in all (least recently used dropped first), and
no single answer larger than an eighth of that is kept. Keys carry the lake version, and the
server gives each version it moves to a cache of its own, so an answer is never served for a
version it was not computed on. ``max_bytes = 0`` turns the cache off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import orjson


@dataclass(frozen=True)
class CachedAnswer:
    body: bytes
    media_type: str
    headers: tuple[tuple[str, str], ...]


def answer_key(
    version: int, statement: str, params, max_rows: int | None, fmt: str
) -> tuple | None:
    """The cache key of one request, or None when its parameters cannot be put in a key
    (orjson refuses them: such a request is simply not cached)."""
    try:
        bound = orjson.dumps(params, option=orjson.OPT_SORT_KEYS) if params else b""
    except TypeError:
        return None
    return (version, statement, bound, max_rows, fmt)


class ResultCache:
    """A thread-safe LRU of answer bodies, bounded by their total size in bytes."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.max_entry = max_bytes // 8
        self._items: OrderedDict[tuple, CachedAnswer] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple | None) -> CachedAnswer | None:
        if key is None or not self.max_bytes:
            return None
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return hit

    def put(self, key: tuple | None, answer: CachedAnswer) -> bool:
        """Keep ``answer`` under ``key``; False when it is too large to keep."""
        size = len(answer.body)
        if key is None or size > self.max_entry:
            return False
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= len(old.body)
            self._items[key] = answer
            self._bytes += size
            while self._bytes > self.max_bytes:
                _k, dropped = self._items.popitem(last=False)
                self._bytes -= len(dropped.body)
        return True

    def stats(self) -> dict:
        with self._lock:
            return {
                "entries": len(self._items),
                "bytes": self._bytes,
                "max_bytes": self.max_bytes,
                "hits": self.hits,
                "misses": self.misses,
            }
