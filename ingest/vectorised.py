"""What the vectorised readers share: parsing many files' JSON records with PyArrow in one
call, one DuckDB connection per process, and filling a converted table out to its canonical
columns.

A vectorised reader takes the files it can convert without judging anything and hands every
other file back to its format's record-by-record parser, which knows the reject reasons.
PyArrow's JSON reader is strict against an explicit schema (an unknown field, a number where a
string belongs, a duplicate key, a float in an integer list all raise), which is exactly the
test "nothing here needs judging" at C speed.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable

import duckdb
import pyarrow as pa
import pyarrow.json as pajson

from graphlake.schema import TABLES

_READ = pajson.ReadOptions(block_size=1 << 26, use_threads=False)


def strict_json(schema: pa.Schema) -> pajson.ParseOptions:
    """Parse options that refuse any field ``schema`` does not name."""
    return pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")


def read_records(
    blobs: list[bytes], counts: list[int], parse: pajson.ParseOptions
) -> tuple[pa.Table | None, list[int]]:
    """Parse each blob's ``counts[k]`` newline-separated JSON objects; a table of every blob
    that parsed with ``_idx`` (the blob's index) on its rows, and the indexes that did not.

    A bad record makes PyArrow refuse the whole buffer, so the batch is bisected until the
    offending blobs are isolated (a few extra reads per bad file). An empty blob with a count
    of zero is simply absent from the table.
    """
    good: list[pa.Table] = []
    bad: list[int] = []
    keep = [k for k, blob in enumerate(blobs) if blob and counts[k]]

    def attempt(lo: int, hi: int) -> None:  # positions lo..hi of ``keep``
        want = sum(counts[k] for k in keep[lo:hi])
        try:
            t = pajson.read_json(
                io.BytesIO(b"\n".join(blobs[k] for k in keep[lo:hi]) + b"\n"),
                read_options=_READ,
                parse_options=parse,
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            t = None
        if t is not None and t.num_rows == want:  # else a bad blob, or one whose lines
            idx = [k for k in keep[lo:hi] for _ in range(counts[k])]  # are not its records
            good.append(t.append_column("_idx", pa.array(idx, pa.int32())))
        elif hi - lo == 1:
            bad.append(keep[lo])
        else:
            mid = (lo + hi) // 2
            attempt(lo, mid)
            attempt(mid, hi)

    if keep:
        attempt(0, len(keep))
    if not good:
        return None, sorted(bad)
    return pa.concat_tables(good), sorted(bad)


_LOCAL = threading.local()


def connection(setup_sql: str = "") -> duckdb.DuckDBPyConnection:
    """One single-threaded DuckDB per thread and setup (its macros), reused across batches:
    setting one up costs more than converting a small batch. Parallelism comes from worker
    processes or threads (a DuckDB connection is not shared between threads; each thread's
    go when it ends); a connection inherited through fork is never reused."""
    cons: dict[tuple[int, str], duckdb.DuckDBPyConnection] = _LOCAL.__dict__.setdefault("cons", {})
    key = (os.getpid(), setup_sql)
    con = cons.get(key)
    if con is None:
        con = duckdb.connect(config={"threads": 1})
        if setup_sql:
            con.execute(setup_sql)
        cons[key] = con
    return con


def run_sql(
    con: duckdb.DuckDBPyConnection,
    inputs: dict[str, pa.Table],
    steps: str,
    outputs: dict[str, str],
    bad_sql: str | None = None,
) -> tuple[dict[str, pa.Table], list[int]]:
    """Register ``inputs``, run the ``steps`` script, and return each output query's table
    and (with ``bad_sql``) the distinct ``_idx`` it names; inputs are unregistered after."""
    try:
        for name, table in inputs.items():
            con.register(name, table)
        if steps:
            con.execute(steps)
        tables = {name: con.sql(sql).to_arrow_table() for name, sql in outputs.items()}
        bad = sorted({r[0] for r in con.sql(bad_sql).fetchall()}) if bad_sql else []
    finally:
        for name in inputs:
            con.unregister(name)
    return tables, bad


def canonical(table: str, rows: pa.Table) -> pa.Table:
    """``rows`` with every canonical column of ``table`` (absent ones null), cast to its
    schema, plus the ``_unit`` column it carries: what ``Emitter.rows`` takes."""
    schema = TABLES[table].schema
    n = rows.num_rows
    cols = [
        rows.column(f.name).cast(f.type) if f.name in rows.column_names else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(
        [*cols, rows.column("_unit").cast(pa.int32())],
        schema=pa.schema([*schema, pa.field("_unit", pa.int32())]),
    )


def emit_batch(out, tables: dict[str, pa.Table], unit_of: Callable[[pa.Array], pa.Array]) -> None:
    """Hand each converted table to the emitter, its ``_idx`` turned into source units."""
    for name, rows in tables.items():
        if rows.num_rows == 0:
            continue
        unit = unit_of(rows.column("_idx"))
        out.rows(name, canonical(name, rows.drop_columns(["_idx"]).append_column("_unit", unit)))


def parse_batched(
    units: list,
    start: int,
    out,
    tick,
    takes: Callable,
    convert: Callable,
    parse_one: Callable,
    size: int,
) -> None:
    """The driver of a vectorised reader: runs of up to ``size`` units that ``takes`` accepts
    go to ``convert(units, out, first_unit_index)``, which emits what it converts and returns
    the positions it hands back; those, every other unit, and a whole run whose conversion
    raised are parsed one by one with ``parse_one`` (isolated: one file's failure is its own
    reject)."""
    from graphlake.ingest.base import parse_isolated

    i = 0
    while i < len(units):
        j = i
        while j < len(units) and j - i < size and takes(units[j]):
            j += 1
        if j == i:
            parse_isolated(parse_one, units[i], out, start + i)
            if tick:
                tick(units[i], 1)
            i += 1
            continue
        try:
            fallback = convert(units[i:j], out, start + i)
        except Exception:  # noqa: BLE001 - the record path judges each file on its own
            fallback = range(j - i)
        for k in fallback:
            parse_isolated(parse_one, units[i + k], out, start + i + k)
        if tick:
            tick(units[j - 1], j - i)
        i = j


class TupleBatch:
    """Rows of one canonical table that a record-by-record reader collects as tuples, in the
    order of ``names`` after the source unit, and hands the emitter as one Arrow table a
    batch. A reader that makes a row per source line spends more on a dict per row, and on
    converting dicts one by one, than on reading the line itself.

    ``consts`` are columns with one value for every row. Columns the table has and neither
    names are null. A batch Arrow refuses (a value that does not fit its column, such as
    ``false`` where a count belongs) goes through the emitter's row path, which makes each
    such row a reject naming the column.
    """

    def __init__(self, table: str, names: tuple[str, ...], consts: dict | None = None):
        self.table = table
        self.names = ("_unit", *names)
        self.consts = consts or {}
        self.rows: list[tuple] = []
        self.append = self.rows.append

    def __len__(self) -> int:
        return len(self.rows)

    def truncate(self, n: int) -> None:
        """Forget the rows after the first ``n`` (a unit that failed half-read)."""
        del self.rows[n:]

    def emit(self, out) -> None:
        rows = self.rows.copy()
        self.rows.clear()  # the same list: an ``append`` a reader holds stays valid
        if not rows:
            return
        schema = TABLES[self.table].schema
        try:
            cols = zip(*rows, strict=True)
            arrays = {"_unit": pa.array(next(cols), pa.int32())}
            for name, col in zip(self.names[1:], cols, strict=True):
                arrays[name] = pa.array(col, schema.field(name).type)
            for name, value in {"corpus": out.corpus, **self.consts}.items():
                arrays[name] = pa.repeat(pa.scalar(value, schema.field(name).type), len(rows))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError):
            was = out.unit
            for row in rows:
                record = dict(zip(self.names, row, strict=True))
                out.unit = record.pop("_unit")
                out.row(self.table, record | self.consts)
            out.unit = was
            return
        out.rows(self.table, canonical(self.table, pa.table(arrays)))


class Batches:
    """The :class:`TupleBatch` es a reader fills together (a log's events and its episode
    rows), handed over together once they hold ``size`` rows, and taken back together to a
    mark when a unit fails half-read."""

    size = 50_000

    def __init__(self, *batches: TupleBatch):
        self.all = batches

    def mark(self) -> tuple[int, ...]:
        return tuple(map(len, self.all))

    def undo(self, mark: tuple[int, ...]) -> None:
        for batch, n in zip(self.all, mark, strict=True):
            batch.truncate(n)

    def full(self) -> bool:
        return sum(map(len, self.all)) >= self.size

    def emit(self, out) -> None:
        for batch in self.all:
            batch.emit(out)
