"""A long-lived, pinned, sandboxed connection to one lake snapshot.

Opening a catalog (one DuckDB view per table over the files its pinned Delta version lists,
plus macros and derived views) costs hundreds of milliseconds; running a point query on an
open one costs well under one. Everything that answers more than one question (the Python API,
the HTTP server, the CLI) therefore opens a :class:`Connection` once and reuses it::

    with Connection(Lake("~/lake")) as con:        # pinned to the newest snapshot
        con.sql("SELECT count(*) FROM adoptions").table
        con.refresh()                              # move to a newer snapshot, if any

DuckDB itself is sandboxed and bounded (:func:`sandbox`): once the views exist,
``enable_external_access`` is switched off with ``allowed_paths`` set to exactly the snapshot's
Parquet files, memory and spill are capped and the configuration is locked, so a statement that
slips past the sqlglot guard still cannot read or write a file outside the lake, attach a
database, take the machine's memory or turn the sandbox off. The guard stays in front for its
helpful errors (did-you-mean, read-only).

A vacuum (``graphlake lake compact --vacuum``) may delete the files of the snapshot a
connection reads. A connection that follows the newest version (opened without ``version``)
then reopens at the newest one, warns with :class:`SnapshotMovedWarning` and runs the
statement again; one pinned to a version on purpose raises :class:`SnapshotGoneError`.

A connection is safe to share between threads: each thread runs on its own DuckDB cursor over
the same in-memory catalog. ``refresh()`` and ``close()`` never pull a catalog from under a
running statement: every statement holds the catalog it started on (a reference count), and a
replaced or closed catalog is closed, with its cursors, when its last statement ends.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable

import duckdb
import pyarrow as pa

from graphlake.config import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S
from graphlake.errors import (
    GraphlakeError,
    LakeVersionError,
    QueryMemoryError,
    QueryTimeoutError,
    SnapshotGoneError,
    SnapshotMovedWarning,
    SqlError,
)
from graphlake.lake import Lake, Snapshot
from graphlake.query.catalog import Catalog, hold_in_memory, open_catalog, snapshot_files
from graphlake.query.deadlines import DEADLINES
from graphlake.query.guard import check, check_length, repeatable
from graphlake.query.pattern import compile_patterns
from graphlake.query.point_lookup import HeldIndexes, PointPlan, plan_of
from graphlake.sandbox import confine
from graphlake.tabular import NotPlain, all_plain, plain_rows

#: What DuckDB raises when a file a view reads is gone: IO (not found) or, in the sandbox,
#: permission (a path that no longer resolves is not among the allowed ones).
_FILE_ERRORS = (duckdb.IOException, duckdb.PermissionException)


def _arrow_reader(cur: duckdb.DuckDBPyConnection, batch_rows: int):
    """The executed statement's rows as an Arrow ``RecordBatchReader``. DuckDB 1.x names it
    ``fetch_record_batch``; DuckDB 2's ``to_arrow_reader`` on an executed cursor warns that it
    copies the rows (it suggests the relation API, which costs more here: see ``_run``) and
    then calls ``_result_as_arrow``, which is taken directly where it exists."""
    fetch = getattr(cur, "fetch_record_batch", None)
    if fetch is not None:
        return fetch(batch_rows)
    own = getattr(cur, "_result_as_arrow", None)
    if own is not None:
        return own(batch_rows, reader=True)
    return cur.to_arrow_reader(batch_rows)


class QueryResult:
    """An answer: the rows as Arrow, whether the row cap cut them, and the snapshot read."""

    __slots__ = ("snapshot", "table", "truncated")

    def __init__(self, table: pa.Table, truncated: bool, snapshot: Snapshot):
        self.table = table
        self.truncated = truncated
        self.snapshot = snapshot


class RowsResult:
    """An answer as Python rows (:meth:`Connection.sql_rows`): column names, DuckDB type
    names, the rows, whether the row cap cut them, and the snapshot read."""

    __slots__ = ("columns", "rows", "snapshot", "truncated", "types")

    def __init__(self, columns, types, rows, truncated: bool, snapshot: Snapshot):
        self.columns, self.types, self.rows = columns, types, rows
        self.truncated, self.snapshot = truncated, snapshot


def sandbox(cat: Catalog, lake: Lake, memory: str | None = None) -> None:
    """Bound and confine ``cat``'s DuckDB for good (:func:`graphlake.sandbox.confine`)."""
    cat.temp_dir, cat.memory_limit = confine(cat.con, lake.meta_dir, cat.files, memory)


#: Statement kinds that write files (or load code): never run on a sandboxed connection
_WRITING = frozenset({"COPY", "ATTACH", "DETACH", "EXPORT", "LOAD", "COPY_DATABASE"})


@functools.lru_cache(maxsize=1024)
def _writes_files(sql: str) -> str | None:
    """The kind of the first statement in ``sql`` that would write a file, or None."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return None  # not SQL DuckDB parses: running it fails with DuckDB's own message
    for st in statements:
        kind = st.type.name
        if kind in _WRITING:
            return kind
        # COPY FROM DATABASE is parsed into a PRAGMA
        if kind == "PRAGMA" and st.query.lstrip().upper().startswith("COPY"):
            return "COPY"
    return None


def as_lake(lake) -> Lake:
    return lake if isinstance(lake, Lake) else Lake(os.fspath(lake))


class _Pinned:
    """A catalog and the statements running on it: closed once retired and idle."""

    __slots__ = ("cat", "cursors", "generation", "indexes", "retired", "users")

    def __init__(self, cat: Catalog, generation: int):
        self.cat, self.generation = cat, generation
        self.users, self.retired = 0, False
        self.cursors: list[duckdb.DuckDBPyConnection] = []
        self.indexes = HeldIndexes()  # point lookups of the held tables

    def close(self) -> None:
        for cur in self.cursors:
            cur.close()
        self.cursors.clear()
        self.cat.close()


class Connection:
    """One lake snapshot, opened once: guarded, sandboxed, row-capped and time-limited SQL."""

    def __init__(
        self,
        lake,
        version: int | None = None,
        *,
        sandboxed: bool = True,
        threads: int | None = None,
        follow: bool | None = None,
        hold_bytes: int = 0,
        lazy: bool = False,
    ):
        """``follow`` (default: when ``version`` is None) reopens at the newest version when
        a vacuum deletes this one's files; otherwise that is a :class:`SnapshotGoneError`.
        ``hold_bytes`` > 0 copies every table whose files total at most that many bytes into
        memory at each open (:func:`~graphlake.query.catalog.hold_in_memory`; the server).
        ``lazy`` pins the version now and makes the catalog (DuckDB views over every table,
        a quarter of a second) at the first statement: a command whose answers are cached
        for the version (``graphlake bench list``) never makes it."""
        self.lake = as_lake(lake)
        self._hold_bytes = hold_bytes
        self._follow = version is None if follow is None else follow
        self._sandboxed = sandboxed
        self._threads = threads
        self._lock = threading.Lock()
        self._reopen_lock = threading.Lock()
        self._local = threading.local()
        self._pin: _Pinned | None = None
        self._generation = 0
        self._checked: OrderedDict = OrderedDict()
        self._pending: Snapshot | None = None  # lazy: the pinned snapshot, not yet opened
        if lazy:
            self._pending = self.lake.snapshot(version)
        else:
            self._open(version)

    # ---------------------------------------------------------------- lifecycle
    def _open(self, version: int | None) -> None:
        cat = self._open_catalog(version)
        if self._hold_bytes:
            hold_in_memory(cat, self.lake, self._hold_bytes)
        if self._sandboxed:
            sandbox(cat, self.lake)
        with self._lock:
            self._generation += 1
            old, self._pin = self._pin, _Pinned(cat, self._generation)
        self._retire(old)

    def _open_catalog(self, version: int | None) -> Catalog:
        """The catalog at ``version``; a vacuum deleting its files while the views are made
        means the newest version (a few tries) or a :class:`SnapshotGoneError`."""
        for attempt in range(3):
            snap = self.lake.snapshot(version)
            try:
                return open_catalog(self.lake, snap.lake_version, threads=self._threads)
            except LakeVersionError as exc:  # the vacuum's record came first: unreadable now
                gone: SnapshotGoneError | None = SnapshotGoneError(str(exc), snap.lake_version)
            except _FILE_ERRORS:
                gone = self._gone_error(snap.lake_version, snapshot_files(self.lake, snap))
                if gone is None:
                    raise
            if not self._follow or attempt == 2:
                assert gone is not None
                raise gone from None
            version = None
        raise AssertionError("unreachable")

    def _gone_error(self, version: int, files: list[str]) -> SnapshotGoneError | None:
        """The error to raise when some of ``version``'s ``files`` are gone (None when they
        are all there: the failure was something else)."""
        if all(os.path.exists(f) for f in files):
            return None
        try:
            self.lake.snapshot(version)
            why = f"the files of lake version {version} of {self.lake.root} were deleted"
        except LakeVersionError as exc:
            why = str(exc)
        return SnapshotGoneError(
            f"{why}; open the newest version (graphlake.connect(lake) follows it, "
            "POST /refresh moves a server)",
            version,
        )

    def _ensure_open(self) -> None:
        """Make a lazy connection's catalog, at the version it pinned (outside ``_lock``:
        :meth:`_open` takes it)."""
        if self._pending is None:
            return
        with self._reopen_lock:
            pending = self._pending
            if pending is not None:
                self._open(pending.lake_version)
                self._pending = None

    def _retire(self, pin: _Pinned | None) -> None:
        """No new statement starts on ``pin``; it closes now if idle, else after its last."""
        if pin is None:
            return
        with self._lock:
            pin.retired = True
            idle = pin.users == 0
        if idle:
            pin.close()

    def _open_pin(self) -> _Pinned:
        pin = self._pin
        if pin is None:
            raise GraphlakeError(
                "this connection is closed; open a new one with graphlake.connect(lake)"
            )
        return pin

    def _acquire(self) -> _Pinned:
        self._ensure_open()
        with self._lock:
            pin = self._open_pin()
            pin.users += 1
            return pin

    def _release(self, pin: _Pinned) -> None:
        with self._lock:
            pin.users -= 1
            idle = pin.retired and pin.users == 0
        if idle:
            pin.close()

    @property
    def catalog(self) -> Catalog:
        self._ensure_open()
        return self._open_pin().cat

    @property
    def snapshot(self) -> Snapshot:
        pending = self._pending
        return pending if pending is not None else self.catalog.snapshot

    @property
    def version(self) -> int:
        return self.snapshot.lake_version

    @property
    def columns(self) -> dict[str, list[str]]:
        return self.catalog.columns

    def refresh(self) -> bool:
        """Move to the newest lake snapshot; True when the version changed. Statements
        running on the old snapshot finish on it."""
        newest = self.lake.snapshot(None).lake_version
        if (self._pin is not None or self._pending is not None) and newest == self.version:
            return False
        with self._reopen_lock:  # a first statement of a lazy connection waits for this open
            self._pending = None
            self._open(None)
        return True

    def close(self) -> None:
        """No new statement starts; the catalog closes when the running ones end."""
        with self._reopen_lock:  # a lazy open under way finishes first, then is retired
            self._pending = None
        with self._lock:
            pin, self._pin = self._pin, None
        self._retire(pin)

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
    def _cursor(self, pin: _Pinned) -> duckdb.DuckDBPyConnection:
        """This thread's DuckDB cursor over ``pin``'s catalog (views, macros, sandbox)."""
        local = self._local
        if getattr(local, "generation", None) != pin.generation:
            cur = pin.cat.con.cursor()
            with self._lock:
                pin.cursors.append(cur)
            local.cursor, local.generation = cur, pin.generation
        return local.cursor

    def _discard_cursor(self, pin: _Pinned, cur: duckdb.DuckDBPyConnection) -> None:
        """Drop this thread's cursor after a failed statement: DuckDB can leave it holding an
        unfinished result (after an out-of-memory stop, say), refusing the next statement."""
        self._local.generation = None
        with self._lock:
            if cur in pin.cursors:
                pin.cursors.remove(cur)
        cur.close()

    def check(self, statement: str, *, deadline: float | None = None) -> str:
        """The statement as DuckDB will run it (patterns compiled), or a :class:`SqlError`.

        Statements that passed are remembered (the last 512, for this snapshot's catalog): a
        client repeating one parameterised statement pays for parsing and qualifying once.
        ``deadline`` (``time.monotonic()``) bounds the checks."""
        pin = self._acquire()
        try:
            return self._check(pin, statement, deadline)
        finally:
            self._release(pin)

    def repeatable(self, statement: str) -> bool:
        """True when ``statement`` (checked, as :meth:`check`) answers the same every time on
        this snapshot: no clock, random numbers or sampling (``guard.repeatable``). The
        server keeps such answers in its result cache."""
        pin = self._acquire()
        try:
            return self._checked_entry(pin, statement, None)[1]
        finally:
            self._release(pin)

    def _check(self, pin: _Pinned, statement: str, deadline: float | None) -> str:
        return self._checked_entry(pin, statement, deadline)[0]

    def _checked_entry(
        self, pin: _Pinned, statement: str, deadline: float | None
    ) -> tuple[str, bool, PointPlan | None]:
        key = (pin.generation, statement)
        with self._lock:
            hit = self._checked.get(key)
            if hit is not None:
                self._checked.move_to_end(key)
                return hit
        check_length(statement)
        try:
            sql = compile_patterns(statement)
        except RecursionError:
            raise SqlError(
                "statement is nested too deeply to check; flatten it, e.g. with a CTE"
            ) from None
        entry = (
            sql,
            repeatable(check(sql, pin.cat.columns, deadline=deadline)),
            plan_of(sql, pin.cat.held) if pin.cat.held else None,
        )
        with self._lock:
            self._checked[key] = entry
            while len(self._checked) > 512:
                self._checked.popitem(last=False)
        return entry

    def sql(
        self,
        statement: str,
        params: dict | None = None,
        *,
        max_rows: int | None = DEFAULT_MAX_ROWS,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
    ) -> QueryResult:
        """Check ``statement`` with the guard, then run it with bound ``params``.

        ``max_rows`` caps the rows returned (``truncated`` says when it cut; None: no cap);
        ``timeout_s`` interrupts a statement that runs too long (None: no limit). The limit
        covers checking and running together: what the guard spends, the query cannot.
        """
        result = self._sql(statement, params, max_rows, timeout_s, as_rows=False)
        assert isinstance(result, QueryResult)
        return result

    def sql_rows(
        self,
        statement: str,
        params: dict | None = None,
        *,
        max_rows: int | None = DEFAULT_MAX_ROWS,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
    ) -> QueryResult | RowsResult:
        """:meth:`sql`, the answer as Python rows when every column is of a type they give
        as Arrow would (:func:`graphlake.tabular.all_plain`), else as Arrow. For a JSON
        answer: a point lookup's Arrow table costs as much as running it (0.9 ms of 2 ms)."""
        return self._sql(statement, params, max_rows, timeout_s, as_rows=True)

    def _sql(self, statement, params, max_rows, timeout_s, *, as_rows: bool):
        start = time.monotonic()

        def work(pin: _Pinned) -> QueryResult | RowsResult:  # checked and run on one catalog
            sql, _, plan = self._checked_entry(
                pin, statement, start + timeout_s if timeout_s else None
            )
            if plan is not None and (max_rows is None or max_rows >= 1):
                found = self._point_lookup(pin, plan, params)
                if found is not None:
                    return found
            left = max(timeout_s - (time.monotonic() - start), 1e-3) if timeout_s else None
            return self._run(pin, sql, params, max_rows, left, timeout_s, as_rows)

        return self._on_pin(work)

    def _point_lookup(self, pin: _Pinned, plan: PointPlan, params) -> QueryResult | None:
        """A lookup by a held table's whole key, from its index (:mod:`.point_lookup`);
        None when DuckDB must answer (the parameters are not what the plan takes)."""
        key = plan.key(params)
        if key is None:
            return None

        def fetch(sql: str) -> pa.Table:
            return self._run(pin, sql, None, None, None, None).table  # type: ignore[union-attr]

        idx = pin.indexes.get(plan.table, fetch)
        if idx is None:
            return None
        return QueryResult(idx.answer(plan, key), False, pin.cat.snapshot)

    def execute(
        self,
        sql: str,
        params: dict | None = None,
        *,
        max_rows: int | None = DEFAULT_MAX_ROWS,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        _limit_s: float | None = None,
        consume: Callable[[pa.RecordBatchReader], None] | None = None,
    ) -> QueryResult:
        """Run SQL graphlake itself built (no guard; still sandboxed, capped and limited).
        Statements that write files are refused here too (DuckDB's own parser says what a
        statement is): with external access off, DuckDB still lets COPY, ATTACH and EXPORT
        write into the connection's temporary folder, where the spill cap does not count
        them (349 MB went past a 100 MiB cap).

        ``consume``: called with a reader of the result's batches instead of gathering them
        (the result's table is then empty): a result larger than memory streams through."""
        refused = _writes_files(sql)
        if refused:
            raise SqlError(
                f"{refused} statements are not run on a lake connection: it reads the lake and "
                "writes nothing (write query results with `graphlake sql --format parquet`, "
                "or `graphlake export`)"
            )
        return self._on_pin(
            lambda pin: self._run(pin, sql, params, max_rows, timeout_s, _limit_s, consume=consume)
        )

    def _on_pin(self, work):
        """``work(pin)`` on the current catalog, which stays open while it runs. When a vacuum
        deleted that catalog's files and this connection follows the newest version, it
        reopens there (once, whichever thread gets there first) and runs ``work`` again."""
        for attempt in range(3):
            pin = self._acquire()
            try:
                return work(pin)
            except SnapshotGoneError:
                if not self._follow or attempt == 2:
                    raise
            finally:
                self._release(pin)
            self._reopen_after(pin)
        raise AssertionError("unreachable")

    def _reopen_after(self, gone: _Pinned) -> None:
        with self._reopen_lock:
            if self._pin is not gone:
                return  # another thread already moved on, or the connection was closed
            old = gone.cat.snapshot.lake_version
            self._open(None)
        warnings.warn(
            f"the files of lake version {old} were deleted (graphlake lake compact "
            f"--vacuum): this connection now reads version {self.version}",
            SnapshotMovedWarning,
            stacklevel=4,
        )

    def _run(
        self,
        pin: _Pinned,
        sql: str,
        params: dict | None,
        max_rows: int | None,
        timeout_s: float | None,
        _limit_s: float | None,
        as_rows: bool = False,
        consume: Callable[[pa.RecordBatchReader], None] | None = None,
    ) -> QueryResult | RowsResult:
        snapshot = pin.cat.snapshot
        cur = self._cursor(pin)
        deadline = None
        timed_out = threading.Event()
        if timeout_s:

            def _interrupt():
                timed_out.set()
                cur.interrupt()

            deadline = DEADLINES.arm(timeout_s, _interrupt)
        try:
            # execute + a reader, not DuckDB's relation API (con.sql): the relation binds the
            # statement once to build itself and again to run, reading every file's footer
            # twice; 1-1.6 ms of a 5 ms point lookup (benchmarks/api.py). The copy of the rows
            # DuckDB warns about costs about 3% on a 38,000-row result
            cur.execute(sql, params or None)
            if cur.description is None:
                raise SqlError("the statement returned no result set")
            if as_rows and all_plain(types := [str(d[1]) for d in cur.description]):
                got = cur.fetchmany(max_rows + 1) if max_rows is not None else cur.fetchall()
                cut = max_rows is not None and len(got) > max_rows
                try:  # as the Arrow path would give them, or that path after all
                    plain = plain_rows(types, got[:max_rows] if cut else got)
                except NotPlain:
                    return self._run(pin, sql, params, max_rows, timeout_s, _limit_s)
                names = [d[0] for d in cur.description]
                return RowsResult(names, types, plain, cut, snapshot)
            reader = _arrow_reader(cur, 65_536)
            batches, rows, truncated = [], 0, False
            if consume is not None:
                consume(reader)
                reader = pa.RecordBatchReader.from_batches(reader.schema, [])
            for batch in reader:
                if max_rows is not None and rows + batch.num_rows > max_rows:
                    batches.append(batch.slice(0, max_rows - rows))
                    truncated = True
                    break
                batches.append(batch)
                rows += batch.num_rows
            table = pa.Table.from_batches(batches, schema=reader.schema)
        except duckdb.InterruptException:
            self._discard_cursor(pin, cur)
            if timed_out.is_set():
                raise QueryTimeoutError(
                    f"query ran past its {_limit_s or timeout_s:g} s limit and was stopped; "
                    "narrow it (WHERE, LIMIT) or raise the time limit"
                ) from None
            raise
        except duckdb.OutOfMemoryException:
            self._discard_cursor(pin, cur)
            raise QueryMemoryError(
                f"query needed more than its memory limit ({pin.cat.memory_limit}) and was "
                "stopped; narrow it (WHERE, fewer columns, no huge lists) or raise "
                "$GRAPHLAKE_MEMORY_LIMIT"
            ) from None
        except duckdb.Error as exc:
            self._discard_cursor(pin, cur)
            if isinstance(exc, _FILE_ERRORS):  # a vacuum may have deleted the files
                gone = self._gone_error(snapshot.lake_version, pin.cat.files)
                if gone is not None:
                    raise gone from None
            raise SqlError(f"DuckDB: {exc}") from None
        finally:
            if deadline is not None:
                DEADLINES.disarm(deadline)
        return QueryResult(table, truncated, snapshot)

    def rows(self, sql: str, params: dict | None = None) -> list[dict]:
        """Rows of SQL graphlake built, as dicts (no cap; for small internal lookups)."""
        return self.execute(sql, params, max_rows=None, timeout_s=None).table.to_pylist()
