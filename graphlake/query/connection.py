"""A long-lived, pinned, sandboxed connection to one lake snapshot.

Opening a catalog (one DuckDB view per table over the files its pinned Delta version lists,
plus macros and derived views) costs hundreds of milliseconds; running a point query on an
open one costs well under one. Everything that answers more than one question (the Python API,
the HTTP server, the CLI) therefore opens a :class:`Connection` once and reuses it::

    with Connection(Lake("~/lake")) as con:        # pinned to the newest snapshot
        con.sql("SELECT count(*) FROM adoptions").table
        con.refresh()                              # move to a newer snapshot, if any

DuckDB itself is sandboxed: once the views exist, ``enable_external_access`` is switched off
with ``allowed_directories`` set to the lake's table folder and the configuration is locked, so
a statement that slips past the sqlglot guard still cannot read or write a file outside the
lake, attach a database or turn the sandbox off. The guard stays in front for its helpful
errors (did-you-mean, read-only).

A connection is safe to share between threads: each thread runs on its own DuckDB cursor over
the same in-memory catalog.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from pathlib import Path

import duckdb
import pyarrow as pa

from graphlake.config import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S
from graphlake.errors import GraphlakeError, QueryTimeoutError, SqlError
from graphlake.lake import Lake, Snapshot
from graphlake.query.catalog import Catalog, open_catalog
from graphlake.query.guard import check, check_length
from graphlake.query.pattern import compile_patterns


class QueryResult:
    """An answer: the rows as Arrow, whether the row cap cut them, and the snapshot read."""

    __slots__ = ("snapshot", "table", "truncated")

    def __init__(self, table: pa.Table, truncated: bool, snapshot: Snapshot):
        self.table = table
        self.truncated = truncated
        self.snapshot = snapshot


def sandbox(con: duckdb.DuckDBPyConnection, lake_root: str | os.PathLike) -> None:
    """Confine ``con`` to reading files under ``lake_root``, for good (configuration locked)."""
    root = str(Path(lake_root).resolve()).rstrip("/") + "/"
    con.execute("SET allowed_directories = $dirs", {"dirs": [root]})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def as_lake(lake) -> Lake:
    return lake if isinstance(lake, Lake) else Lake(os.fspath(lake))


class Connection:
    """One lake snapshot, opened once: guarded, sandboxed, row-capped and time-limited SQL."""

    def __init__(self, lake, version: int | None = None, *, sandboxed: bool = True,
                 threads: int | None = None):
        self.lake = as_lake(lake)
        self._sandboxed = sandboxed
        self._threads = threads
        self._lock = threading.Lock()
        self._local = threading.local()
        self._cat: Catalog | None = None
        self._generation = 0
        self._checked: OrderedDict = OrderedDict()
        self._open(version)

    # ---------------------------------------------------------------- lifecycle
    def _open(self, version: int | None) -> None:
        cat = open_catalog(self.lake, version, threads=self._threads)
        if self._sandboxed:
            sandbox(cat.con, self.lake.root)
        with self._lock:
            old, self._cat = self._cat, cat
            self._generation += 1
        if old is not None:
            old.close()

    @property
    def catalog(self) -> Catalog:
        if self._cat is None:
            raise GraphlakeError("this connection is closed; open a new one with "
                                 "graphlake.connect(lake)")
        return self._cat

    @property
    def snapshot(self) -> Snapshot:
        return self.catalog.snapshot

    @property
    def version(self) -> int:
        return self.catalog.snapshot.lake_version

    @property
    def columns(self) -> dict[str, list[str]]:
        return self.catalog.columns

    def refresh(self) -> bool:
        """Move to the newest lake snapshot; True when the version changed."""
        newest = self.lake.snapshot(None).lake_version
        if self._cat is not None and newest == self.version:
            return False
        self._open(None)
        return True

    def close(self) -> None:
        with self._lock:
            cat, self._cat = self._cat, None
        if cat is not None:
            cat.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    # ---------------------------------------------------------------- queries
    def cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's DuckDB cursor over the current catalog (views, macros, sandbox)."""
        cat = self.catalog
        local = self._local
        if getattr(local, "generation", None) != self._generation:
            local.cursor = cat.con.cursor()
            local.generation = self._generation
        return local.cursor

    def check(self, statement: str, *, deadline: float | None = None) -> str:
        """The statement as DuckDB will run it (patterns compiled), or a :class:`SqlError`.

        Statements that passed are remembered (the last 512, for this snapshot's catalog): a
        client repeating one parameterised statement pays for parsing and qualifying once.
        ``deadline`` (``time.monotonic()``) bounds the checks."""
        key = (self._generation, statement)
        with self._lock:
            hit = self._checked.get(key)
            if hit is not None:
                self._checked.move_to_end(key)
                return hit
        check_length(statement)
        try:
            sql = compile_patterns(statement)
        except RecursionError:
            raise SqlError("statement is nested too deeply to check; flatten it, e.g. with a "
                           "CTE") from None
        check(sql, self.columns, deadline=deadline)
        with self._lock:
            self._checked[key] = sql
            while len(self._checked) > 512:
                self._checked.popitem(last=False)
        return sql

    def sql(self, statement: str, params: dict | None = None, *,
            max_rows: int | None = DEFAULT_MAX_ROWS,
            timeout_s: float | None = DEFAULT_TIMEOUT_S) -> QueryResult:
        """Check ``statement`` with the guard, then run it with bound ``params``.

        ``max_rows`` caps the rows returned (``truncated`` says when it cut; None: no cap);
        ``timeout_s`` interrupts a statement that runs too long (None: no limit). The limit
        covers checking and running together: what the guard spends, the query cannot.
        """
        start = time.monotonic()
        sql = self.check(statement, deadline=start + timeout_s if timeout_s else None)
        left = max(timeout_s - (time.monotonic() - start), 1e-3) if timeout_s else None
        return self.execute(sql, params, max_rows=max_rows, timeout_s=left,
                            _limit_s=timeout_s)

    def execute(self, sql: str, params: dict | None = None, *,
                max_rows: int | None = DEFAULT_MAX_ROWS,
                timeout_s: float | None = DEFAULT_TIMEOUT_S,
                _limit_s: float | None = None) -> QueryResult:
        """Run SQL graphlake itself built (no guard; still sandboxed, capped and limited)."""
        snapshot = self.snapshot
        cur = self.cursor()
        timer = None
        timed_out = threading.Event()
        if timeout_s:
            def _interrupt():
                timed_out.set()
                cur.interrupt()

            timer = threading.Timer(timeout_s, _interrupt)
            timer.daemon = True
            timer.start()
        try:
            rel = cur.sql(sql, params=params or None)
            if rel is None:
                raise SqlError("the statement returned no result set")
            reader = rel.to_arrow_reader(65_536)
            batches, rows, truncated = [], 0, False
            for batch in reader:
                if max_rows is not None and rows + batch.num_rows > max_rows:
                    batches.append(batch.slice(0, max_rows - rows))
                    truncated = True
                    break
                batches.append(batch)
                rows += batch.num_rows
            table = pa.Table.from_batches(batches, schema=reader.schema)
        except duckdb.InterruptException:
            if timed_out.is_set():
                raise QueryTimeoutError(
                    f"query ran past its {_limit_s or timeout_s:g} s limit and was stopped; "
                    "narrow it (WHERE, LIMIT) or raise the time limit") from None
            raise
        except duckdb.Error as exc:
            raise SqlError(f"DuckDB: {exc}") from None
        finally:
            if timer:
                timer.cancel()
        return QueryResult(table, truncated, snapshot)

    def rows(self, sql: str, params: dict | None = None) -> list[dict]:
        """Rows of SQL graphlake built, as dicts (no cap; for small internal lookups)."""
        return self.execute(sql, params, max_rows=None, timeout_s=None).table.to_pylist()
