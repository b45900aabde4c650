"""The sessions table of one lake version in key order, for ``GET /sessions`` and
``GET /sessions/{corpus}/{session_id}``: a session is a dictionary lookup and a page of the list
a slice, where a statement over the table's Parquet files costs 5-12 ms (DuckDB reads the
footers of every file the view names before it can prune one).

Read once per version, on first use: one Arrow table of the listed columns sorted by
(corpus, session_id), the row of every key, and where each corpus's rows start and end. The
answers are exactly those of :data:`LIST_SQL` and :data:`ONE_SQL` (tests compare them on every
filter), which stay here as the definition and for callers without an index.
"""

from __future__ import annotations

import bisect
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphlake.query.connection import Connection

COLUMNS = (
    "corpus",
    "session_id",
    "title",
    "goal",
    "condition",
    "domain",
    "split",
    "participants",
    "duration_s",
    "scenario_id",
)

LIST_SQL = f"""
SELECT {", ".join(COLUMNS)}
FROM sessions
WHERE ($corpus IS NULL OR corpus = $corpus) AND ($domain IS NULL OR domain = $domain)
  AND ($condition IS NULL OR condition = $condition)
  AND ($participant IS NULL OR list_contains(participants, $participant))
  AND ($ac IS NULL OR corpus > $ac OR (corpus = $ac AND session_id > $as))
ORDER BY corpus, session_id LIMIT $limit
"""

ONE_SQL = f"SELECT {', '.join(COLUMNS)} FROM sessions WHERE corpus = $c AND session_id = $s"


class SessionIndex:
    """The listed columns of every session of ``con``'s version, in (corpus, session_id)
    order. Thread-safe; memory is the Arrow table plus one dict entry per session (about
    20 MB at 100,000 sessions)."""

    def __init__(self, con: Connection):
        self.con = con
        self._lock = threading.Lock()
        self._table: pa.Table | None = None
        self._row: dict[tuple[str, str], int] = {}
        self._corpora: list[str] = []
        self._spans: dict[str, tuple[int, int]] = {}
        self._ids: dict[str, list[str]] = {}

    @property
    def ready(self) -> bool:
        """True once read: answers then cost no I/O (the routes answer on the event loop)."""
        return self._table is not None

    def load(self) -> None:
        """Read the sessions now (the server does it at startup and after a version move)."""
        self._load()

    def _load(self) -> pa.Table:
        table = self._table
        if table is not None:
            return table
        with self._lock:
            if self._table is None:
                self._build()
            assert self._table is not None
            return self._table

    def _build(self) -> None:
        table = self.con.execute(
            f"SELECT {', '.join(COLUMNS)} FROM sessions ORDER BY corpus, session_id",
            max_rows=None,
            timeout_s=None,
        ).table.combine_chunks()
        corpora = table.column("corpus").to_pylist()
        ids = table.column("session_id").to_pylist()
        self._row = {key: i for i, key in enumerate(zip(corpora, ids, strict=True))}
        spans: dict[str, tuple[int, int]] = {}
        for i, c in enumerate(corpora):
            a, _b = spans.get(c, (i, i))
            spans[c] = (a, i + 1)
        self._spans = spans
        self._corpora = sorted(spans)
        self._ids = {c: ids[a:b] for c, (a, b) in spans.items()}
        self._table = table

    def one(self, corpus: str, session_id: str) -> dict | None:
        """The session's row (as :data:`ONE_SQL` gives it), or None."""
        table = self._load()
        i = self._row.get((corpus, session_id))
        return None if i is None else table.slice(i, 1).to_pylist()[0]

    def page(
        self,
        *,
        corpus: str | None = None,
        domain: str | None = None,
        condition: str | None = None,
        participant: str | None = None,
        after: tuple[str | None, str | None] = (None, None),
        limit: int = 100,
    ) -> list[dict]:
        """Up to ``limit`` rows after the key ``after``, filtered as :data:`LIST_SQL`."""
        table = self._load()
        lo, hi = (0, table.num_rows) if corpus is None else self._spans.get(corpus, (0, 0))
        ac, as_ = after
        if ac is not None:
            lo = max(lo, self._position_after(ac, as_))
        if lo >= hi or limit <= 0:
            return []
        if domain is None and condition is None and participant is None:
            return table.slice(lo, min(limit, hi - lo)).to_pylist()
        part = table.slice(lo, hi - lo)
        mask = pa.scalar(True)
        if domain is not None:
            mask = pc.and_(mask, pc.fill_null(pc.equal(part.column("domain"), domain), False))
        if condition is not None:
            mask = pc.and_(mask, pc.fill_null(pc.equal(part.column("condition"), condition), False))
        if participant is not None:
            lists = part.column("participants").combine_chunks()
            hit = pc.fill_null(pc.equal(pc.list_flatten(lists), participant), False)
            parents = pc.list_parent_indices(lists).to_numpy()
            has = np.zeros(part.num_rows, dtype=bool)
            has[parents[hit.to_numpy(zero_copy_only=False)]] = True
            mask = pc.and_(mask, pa.array(has))
        rows = np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))[:limit]
        return part.take(pa.array(rows, pa.int64())).to_pylist()

    def _position_after(self, ac: str, as_: str | None) -> int:
        """The first row whose key is after (``ac``, ``as_``) in (corpus, session_id) order."""
        total = len(self._row)
        k = bisect.bisect_left(self._corpora, ac)
        if k == len(self._corpora):
            return total
        if self._corpora[k] != ac:  # every row of the next corpus is after
            return self._spans[self._corpora[k]][0]
        a, b = self._spans[ac]
        if as_ is None:  # SQL: corpus = ac AND session_id > NULL is never true
            return b
        return a + bisect.bisect_right(self._ids[ac], as_)
